package state

import (
	"path/filepath"
	"testing"
)

// callsOf is how many calls of method path's server has answered.
func callsOf(t *testing.T, path, method string) int {
	t.Helper()
	ctx, cancel := callContext()
	defer cancel()
	st, err := otherClient(t, path).Status(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return st.Counters.Calls[method].Calls
}

// AddSession of a State without unsaved edits sends the one row (session/add), not the whole
// document, and its feed event reaches the replica before the answer with what the server filled
// in (the row's id and incarnation): nothing is read back, and the row shows filled in at once.
// With an unsaved edit in the State, the whole document is saved, as Go's AddSession saves it.
func TestAddSessionSendsOneRowAndReadsNothingBack(t *testing.T) {
	// Not parallel: it counts the server's calls.
	path := filepath.Join(stateDir(t), "state.json")
	st := mustLoad(t, path)
	if err := st.AddSession(Session{Name: "a"}); err != nil {
		t.Fatal(err)
	}
	gets, adds, saves := callsOf(t, path, "state/get"), callsOf(t, path, "session/add"), callsOf(t, path, "state/save")
	if err := st.AddSession(Session{Name: "b"}); err != nil {
		t.Fatal(err)
	}
	if b, _ := st.FindSession("b"); b.Incarnation == "" || b.ID != "s_b" {
		t.Fatalf("the new row, as this State shows it: %+v", b)
	}
	if got := callsOf(t, path, "state/get") - gets; got != 0 {
		t.Fatalf("AddSession read the document back %d times", got)
	}
	if a, s := callsOf(t, path, "session/add")-adds, callsOf(t, path, "state/save")-saves; a != 1 || s != 0 {
		t.Fatalf("AddSession sent %d session/add and %d state/save, want the row alone", a, s)
	}
	if err := st.AddSession(Session{Name: "b"}); err == nil || err.Error() != `session "b" already exists` {
		t.Fatalf("a taken name: %v, want Go's error", err)
	}

	st.Workspace = "/edited" // an unsaved edit: saved with the row, as Go's AddSession saves memory
	if err := st.AddSession(Session{Name: "c"}); err != nil {
		t.Fatal(err)
	}
	if got := onDisk(t, path)["workspace"]; got != "/edited" {
		t.Fatalf("the unsaved edit was not saved with the row: workspace %v", got)
	}
	if c, _ := mustLoad(t, path).FindSession("c"); c.Incarnation == "" || c.ID != "s_c" {
		t.Fatalf("the row saved with the whole document: %+v", c)
	}
}
