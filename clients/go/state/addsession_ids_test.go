package state

import (
	"path/filepath"
	"testing"
)

// AddSession of a State with an unsaved edit saves the whole document with the row, and gives
// the row Go's id: s_<name>, else s_<name>_1, _2… the first no row has.
func TestAddSessionWithUnsavedEditsGivesGosNextFreeID(t *testing.T) {
	t.Parallel()
	path := filepath.Join(stateDir(t), "state.json")
	st := mustLoad(t, path)
	for _, s := range []Session{{Name: "p", ID: "s_x"}, {Name: "q", ID: "s_x_1"}, {Name: "r", ID: "s_y"}} {
		if err := st.AddSession(s); err != nil {
			t.Fatal(err)
		}
	}
	st.Workspace = "/edited"
	if err := st.AddSession(Session{Name: "x"}); err != nil {
		t.Fatal(err)
	}
	st.Workspace = "/edited again"
	if err := st.AddSession(Session{Name: "y"}); err != nil {
		t.Fatal(err)
	}
	other := mustLoad(t, path)
	for name, want := range map[string]string{"x": "s_x_2", "y": "s_y_1"} {
		if got, ok := other.FindSession(name); !ok || got.ID != want {
			t.Errorf("%s: id %q, want %q", name, got.ID, want)
		}
	}
	if other.Workspace != "/edited again" {
		t.Errorf("workspace %q: the unsaved edit was not saved with the row", other.Workspace)
	}
}
