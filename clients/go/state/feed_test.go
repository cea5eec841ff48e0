package state

import (
	"context"
	"path/filepath"
	"reflect"
	"testing"

	stateclient "github.com/herrscher/herrscher-state/clients/go"
)

// Another client's changes reach a State through the change feed: rows added, updated and
// removed, and top-level fields, until the State's reads equal a fresh load.
func TestAnotherClientsChangesReachTheFields(t *testing.T) {
	path := filepath.Join(stateDir(t), "state.json")
	lockLikeHerrscher(t, path) // the package's server lives as long as this test process
	st := mustLoad(t, path)
	for _, n := range []string{"a", "b", "c"} {
		if err := st.AddSession(Session{Name: n}); err != nil {
			t.Fatal(err)
		}
	}
	rec, err := stateclient.ReadServerRecord(path)
	if err != nil || rec == nil {
		t.Fatalf("no record of the package's server: %v", err)
	}
	ctx := context.Background()
	other, err := stateclient.Dial(ctx, stateclient.DialOptions{Socket: rec.Socket})
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
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
