package state

import (
	"context"
	"fmt"
	"path/filepath"
	"reflect"
	"testing"

	stateclient "github.com/herrscher/herrscher-state/clients/go"
)

// The change feed, on one state dir: another client's changes first; the queued-events step then adds its
// own row "a" (the first step removed its "a") and ends with a read of the document.
func TestChangeFeed(t *testing.T) {
	t.Parallel()
	path := filepath.Join(stateDir(t), "state.json")
	t.Run("AnotherClientsChangesReachTheFields", func(t *testing.T) { anotherClientsChangesReachTheFields(t, path) })
	t.Run("QueuedFeedEventsAreAppliedAtTheNextReadOrDroppedPastTheirBound", func(t *testing.T) {
		queuedFeedEventsAreAppliedAtTheNextReadOrDroppedPastTheirBound(t, path)
	})
}

// Another client's changes reach a State through the change feed: rows added, updated and
// removed, and top-level fields, until the State's reads equal a fresh load.
func anotherClientsChangesReachTheFields(t *testing.T, path string) {
	st := mustLoad(t, path)
	for _, n := range []string{"a", "b", "c"} {
		if err := st.AddSession(Session{Name: n}); err != nil {
			t.Fatal(err)
		}
	}
	ctx := context.Background()
	other := otherClient(t, path)
	if _, err := other.SetArchived(ctx, "b", true); err != nil {
		t.Fatal(err)
	}
	if _, err := other.AddSession(ctx, stateclient.Session{Name: "d", Cmd: "x"}); err != nil {
		t.Fatal(err)
	}
	if _, err := other.RemoveSession(ctx, "a"); err != nil {
		t.Fatal(err)
	}
	if _, err := other.SetWorkspace(ctx, "/other"); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the State follows the other client", func() bool {
		return st.WorkspaceRoot() == "/other" && len(st.SnapshotSessions()) == 3
	})
	want := mustLoad(t, path).SnapshotSessions()
	if got := st.SnapshotSessions(); !reflect.DeepEqual(got, want) {
		t.Fatalf("the followed rows differ from a load:\n%+v\n%+v", got, want)
	}
	if b, _ := st.FindSession("b"); !b.Archived {
		t.Fatal("b not archived")
	}
	// And a session setter of this State builds on what it followed.
	if err := st.SetResumeToken("d", "tok"); err != nil {
		t.Fatal(err)
	}
	r, err := other.FindSession(ctx, "d")
	if err != nil || r == nil || r.ResumeToken != "tok" || r.Cmd != "x" {
		t.Fatalf("the other client sees %+v %v", r, err)
	}
}

// The feed's events wait for the next read of the replica, which applies them in order; past
// the bound they are dropped and that read asks the server for the document instead.
func queuedFeedEventsAreAppliedAtTheNextReadOrDroppedPastTheirBound(t *testing.T, path string) {
	st := mustLoad(t, path)
	if err := st.AddSession(Session{Name: "a"}); err != nil {
		t.Fatal(err)
	}
	srv := connectionFor(st.path)
	srv.mu.Lock()
	c, rev := srv.client, srv.remoteRev
	srv.mu.Unlock()
	handle := srv.queue(c)
	// Events no server sent (the file never had this token): what a read shows says whether
	// they were applied or the document was read again.
	fake := func(n int) {
		for i := 1; i <= n; i++ {
			handle(&stateclient.SessionDidChangeParams{Revision: rev + i, Kind: "changed", Name: "a", Session: &stateclient.Session{Name: "a", ResumeToken: fmt.Sprint("queued-", i)}})
		}
	}
	fake(3)
	if a, _ := st.FindSession("a"); a.ResumeToken != "queued-3" {
		t.Fatalf("after 3 queued events the row is %+v", a)
	}
	srv.reload()
	if a, _ := st.FindSession("a"); a.ResumeToken != "" {
		t.Fatalf("after a reload the row is %+v", a)
	}
	srv.mu.Lock()
	rev = srv.remoteRev
	srv.mu.Unlock()
	fake(feedLimit + 1)
	if a, _ := st.FindSession("a"); a.ResumeToken != "" {
		t.Fatalf("past the bound the queued events were applied: %+v", a)
	}
	srv.feedMu.Lock()
	held := len(srv.feed)
	srv.feedMu.Unlock()
	if held != 0 {
		t.Fatalf("%d events still held after a read", held)
	}
}
