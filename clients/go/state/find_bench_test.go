package state

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	stateclient "github.com/herrscher/herrscher-state/clients/go"
)

// FindSession's own cost from the replica (no server asked: the replica is current), 21
// rows as in bench/go-state: `go test -run '^$' -bench FindSession` in clients/go/state.
func BenchmarkFindSessionFromTheReplica(b *testing.B) {
	var d document
	for i := 0; i < 21; i++ {
		d.Sessions = append(d.Sessions, Session{Name: fmt.Sprint("s", i), ChannelID: fmt.Sprint(i), Type: "text", Cmd: "claude"})
	}
	srv := &connection{statePath: "/nonexistent/state.json", client: &stateclient.Client{}, remote: d, version: 1, loaded: true}
	st := &State{path: srv.statePath, srv: srv}
	if _, ok := st.FindSession("s10"); !ok {
		b.Fatal("no row")
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		st.FindSession("s10")
	}
}

// FindSession right after another process changed a row: the feed's event waits in the queue
// and the read applies it (one row replaced, the fields merged) before it scans.
func BenchmarkFindSessionAfterAFeedEvent(b *testing.B) {
	var d document
	for i := 0; i < 21; i++ {
		d.Sessions = append(d.Sessions, Session{Name: fmt.Sprint("s", i), ChannelID: fmt.Sprint(i), Type: "text", Cmd: "claude"})
	}
	c := &stateclient.Client{}
	srv := &connection{statePath: "/nonexistent/state.json", client: c, remote: d, version: 1, loaded: true}
	st := &State{path: srv.statePath, srv: srv}
	queue := srv.queue(c)
	row := stateclient.Session{Name: "s3", ChannelID: "3", Type: "text", Cmd: "claude"}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		row.ResumeToken = fmt.Sprint(i)
		r := row
		queue(&stateclient.SessionDidChangeParams{Revision: i + 1, Kind: "changed", Name: "s3", Session: &r})
		if s, ok := st.FindSession("s3"); !ok || s.ResumeToken != row.ResumeToken {
			b.Fatalf("FindSession gave %+v, %v: the event was not applied", s, ok)
		}
	}
}

// The first write on a new state, with the shared server running (its start is not counted):
// a dial, initialize with the state (the server opens it), the feed's subscription, the read of
// the document, and AddSession's save. `go test -run '^$' -bench FirstWrite` in clients/go/state.
func BenchmarkFirstWriteOnANewState(b *testing.B) {
	dir := b.TempDir()
	warm := NewState(filepath.Join(dir, "warm.json"))
	if err := warm.SetWorkspace("/ws"); err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		d := filepath.Join(dir, fmt.Sprint("s", i))
		if err := os.Mkdir(d, 0o700); err != nil {
			b.Fatal(err)
		}
		if err := NewState(filepath.Join(d, "state.json")).AddSession(Session{Name: "a"}); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	closeAll()
}

// A call on a state whose connection closed for idleness: the dial again, initialize (the state
// still open in the server), the feed's subscription and the read of the document.
func BenchmarkReconnectAfterIdleClose(b *testing.B) {
	path := filepath.Join(b.TempDir(), "state.json")
	st := NewState(path)
	if err := st.AddSession(Session{Name: "a"}); err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		closeAll()
		if err := st.SetResumeToken("a", fmt.Sprint(i)); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	closeAll()
}
