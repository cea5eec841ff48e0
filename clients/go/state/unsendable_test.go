package state

import (
	"encoding/json"
	"errors"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A write Go's json cannot encode (a NaN cap) fails as Go's save fails, with json's error (named
// with the call it was not sent with): the change stays in this State (as in Go's
// memory), and the file keeps what it had.
func TestAWriteOfANaNFailsAndStaysInTheState(t *testing.T) {
	t.Parallel()
	path := filepath.Join(stateDir(t), "state.json")
	st := mustLoad(t, path)
	if err := st.AddSession(Session{Name: "a"}); err != nil {
		t.Fatal(err)
	}
	before, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	_, want := json.Marshal(math.NaN())
	if err := st.SetBudget("a", math.NaN(), 1, 0, 0, "paused"); err == nil || want == nil || !strings.HasSuffix(err.Error(), ": "+want.Error()) {
		t.Fatalf("SetBudget with a NaN cap: %v, want Go's %v", err, want)
	}
	var unsupported *json.UnsupportedValueError
	if err := st.SetBudget("a", math.NaN(), 1, 0, 0, "paused"); !errors.As(err, &unsupported) {
		t.Fatalf("SetBudget with a NaN cap: %v (%T), want json's *UnsupportedValueError inside, as Go's Save returns", err, err)
	}
	if a, _ := st.FindSession("a"); !math.IsNaN(a.CostCap) || a.PausedReason != "paused" {
		t.Fatalf("the change is not kept in the State: %+v", a)
	}
	st2 := mustLoad(t, path)
	st2.Sessions[0].CostCap = math.NaN()
	if err := st2.Save(); err == nil || !strings.HasSuffix(err.Error(), ": "+want.Error()) {
		t.Fatalf("Save with a NaN cap: %v, want Go's %v", err, want)
	}
	if !math.IsNaN(st2.Sessions[0].CostCap) {
		t.Fatal("the edit is not kept in the State")
	}
	if after, err := os.ReadFile(path); err != nil || string(after) != string(before) {
		t.Fatalf("the file changed: %s", after)
	}
}

// A row needs filling in by the server when it has no id or no incarnation.
func TestNeedsFillIsARowWithoutIDOrIncarnation(t *testing.T) {
	t.Parallel()
	full := Session{Name: "a", ID: "s_a", Incarnation: "inc"}
	for _, c := range []struct {
		rows []Session
		want bool
	}{
		{nil, false},
		{[]Session{full}, false},
		{[]Session{full, {Name: "b", Incarnation: "inc"}}, true},
		{[]Session{full, {Name: "b", ID: "s_b"}}, true},
	} {
		if got := needsFill(document{Sessions: c.rows}); got != c.want {
			t.Errorf("needsFill(%+v) = %v", c.rows, got)
		}
	}
}
