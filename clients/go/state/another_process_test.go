package state

import (
	"context"
	"path/filepath"
	"testing"

	stateclient "github.com/herrscher/herrscher-state/clients/go"
)

// Every read of a State shows what another process committed, at the first read after this
// process's connection has had the change's event. A round trip on that connection is the
// barrier: the server sends a commit's events to each subscriber before any answer it gives
// later, and the client hands an event to the State's feed before the answers read after it.
// Each read is checked against its own change, so a reader that answers from a stale copy
// fails here by name.
func TestEveryReadShowsAnotherProcessesChange(t *testing.T) {
	t.Parallel()
	path := filepath.Join(stateDir(t), "state.json")
	st := mustLoad(t, path)
	if err := st.AddSession(Session{Name: "a"}); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	other := otherClient(t, path)
	barrier := func() {
		t.Helper()
		if err := connectionFor(st.path).call(ctx, readCall, func(ctx context.Context, c *stateclient.Client) error {
			_, err := c.Status(ctx)
			return err
		}); err != nil {
			t.Fatal(err)
		}
	}

	for _, c := range []struct {
		read   string
		change func() error
		shows  func() bool
	}{
		{"FindSession", func() error { _, err := other.SetResumeToken(ctx, "a", "tok-1"); return err },
			func() bool { a, _ := st.FindSession("a"); return a.ResumeToken == "tok-1" }},
		{"SnapshotSessions", func() error { _, err := other.AddSession(ctx, stateclient.Session{Name: "b"}); return err },
			func() bool { rows := st.SnapshotSessions(); return len(rows) == 2 && rows[1].Name == "b" }},
		{"WorkspaceRoot", func() error { _, err := other.SetWorkspace(ctx, "/elsewhere"); return err },
			func() bool { return st.WorkspaceRoot() == "/elsewhere" }},
		{"SourceDir", func() error { _, err := other.SetSource(ctx, "/src/other"); return err },
			func() bool { return st.SourceDir() == "/src/other" }},
		{"QualifiedName", func() error { _, err := other.SetInstanceID(ctx, "other"); return err },
			func() bool { return st.QualifiedName("x") == "other__x" }},
		{"FindSession after a removal", func() error { _, err := other.RemoveSession(ctx, "b"); return err },
			func() bool { _, found := st.FindSession("b"); return !found }},
		{"the fields, after a read", func() error { _, err := other.SetStatusMessageID(ctx, "m-9"); return err },
			func() bool { _ = st.SourceDir(); return st.StatusMessageID == "m-9" }},
	} {
		if err := c.change(); err != nil {
			t.Fatalf("%s: the other process's change: %v", c.read, err)
		}
		barrier()
		if !c.shows() {
			t.Errorf("%s answers from a stale copy after another process's change", c.read)
		}
	}
}
