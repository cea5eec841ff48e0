package state

import (
	"path/filepath"
	"testing"
)

// stateGets is how many state/get calls path's server has answered.
func stateGets(t *testing.T, path string) int {
	t.Helper()
	ctx, cancel := callContext()
	defer cancel()
	st, err := otherClient(t, path).Status(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return st.Counters.Calls["state/get"].Calls
}

// A save's own feed events reach the replica before its answer, with what the server filled in
// (the new row's incarnation): AddSession reads nothing back, and its row shows filled in at once.
func TestAddSessionReadsNothingBack(t *testing.T) {
	// Not parallel: it counts the server's state/get calls.
	path := filepath.Join(stateDir(t), "state.json")
	st := mustLoad(t, path)
	if err := st.AddSession(Session{Name: "a"}); err != nil {
		t.Fatal(err)
	}
	before := stateGets(t, path)
	if err := st.AddSession(Session{Name: "b"}); err != nil {
		t.Fatal(err)
	}
	if b, _ := st.FindSession("b"); b.Incarnation == "" || b.ID != "s_b" {
		t.Fatalf("the new row, as this State shows it: %+v", b)
	}
	if got := stateGets(t, path) - before; got != 0 {
		t.Fatalf("AddSession read the document back %d times", got)
	}
}
