package state

import (
	"fmt"
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
