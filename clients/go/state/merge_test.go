package state

import (
	"bytes"
	"fmt"
	"log"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"
)

// otherProcessEnv runs the test binary as another process that writes the same state: its
// value is "<step> <state path>" (TestMain hands it to runOtherProcess).
const otherProcessEnv = "HS_STATE_TEST_OTHER_PROCESS"

// otherProcess runs one step of writes in another process and waits for it to finish.
func otherProcess(t *testing.T, step, path string) {
	t.Helper()
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), otherProcessEnv+"="+step+" "+path)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("the other process's step %s: %v\n%s", step, err, out)
	}
}

// runOtherProcess is the other process: each step's writes must all be acknowledged.
func runOtherProcess(arg string) int {
	step, path, _ := strings.Cut(arg, " ")
	if id := strings.TrimPrefix(step, "writer:"); id != step {
		return writerProcess(id, path)
	}
	if step == "poll" {
		return pollerProcess(path)
	}
	if n := strings.TrimPrefix(step, "states:"); n != step {
		return manyStatesProcess(n, path)
	}
	defer closeAll()
	st, err := LoadState(path)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	var errs []error
	switch step {
	case "setters":
		errs = append(errs, st.SetResumeToken("b", "their-b"), st.AddSession(Session{Name: "c"}), st.SetResumeToken("a", "their-a"))
	case "in-place":
		for i := range st.Sessions {
			if st.Sessions[i].Name == "b" {
				st.Sessions[i].Project = "their-project"
			}
		}
		errs = append(errs, st.Save(), st.SetArchived("c", true))
	case "source":
		errs = append(errs, st.SetSource("/their/source"))
	case "conflict":
		if !st.SetBackendTarget("a", "their-vendor", "their-cmd", "their-model") {
			errs = append(errs, fmt.Errorf("no row a"))
		}
	default:
		errs = append(errs, fmt.Errorf("no step %q", step))
	}
	for _, err := range errs {
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
	}
	return 0
}

// Two processes interleave in-place edits, setters and Save(): every acknowledged change is in
// the file, one process's Save never undoes the other's. Both changing the same field of the
// same row is a conflict: this State's value is saved (as Go's Save writes it) and the conflict
// is logged.
func TestSaveMergesAnotherProcessesChangesPerRowAndField(t *testing.T) {
	// Not parallel: it captures the standard logger.
	path := filepath.Join(stateDir(t), "state.json")
	st := mustLoad(t, path)
	for _, n := range []string{"a", "b"} {
		if err := st.AddSession(Session{Name: n, Cmd: "cmd-" + n}); err != nil {
			t.Fatal(err)
		}
	}
	row := func(st *State, name string) *Session {
		for i := range st.Sessions {
			if st.Sessions[i].Name == name {
				return &st.Sessions[i]
			}
		}
		t.Fatalf("no row %s in %+v", name, st.Sessions)
		return nil
	}

	// A edits row a in place; B sets b's token, adds c, sets a's token; A saves.
	row(st, "a").Dir = "/mine"
	otherProcess(t, "setters", path)
	if err := st.Save(); err != nil {
		t.Fatal(err)
	}
	// B edits row b in place and saves, archives c; A sets a setter meanwhile and saves again.
	row(st, "a").Agent = "mine-agent"
	otherProcess(t, "in-place", path)
	if err := st.SetPausedReason("b", "cost"); err != nil {
		t.Fatal(err)
	}
	if err := st.Save(); err != nil {
		t.Fatal(err)
	}

	// A true conflict: both change a's Cmd.
	row(st, "a").Cmd = "mine-cmd"
	otherProcess(t, "conflict", path)
	var logged bytes.Buffer
	var logMu sync.Mutex
	log.SetOutput(writerFunc(func(p []byte) (int, error) {
		logMu.Lock()
		defer logMu.Unlock()
		return logged.Write(p)
	}))
	defer log.SetOutput(os.Stderr)
	if err := st.Save(); err != nil {
		t.Fatal(err)
	}
	logMu.Lock()
	got := logged.String()
	logMu.Unlock()
	if !strings.Contains(got, `session "a" field Cmd: kept this State's mine-cmd over another writer's their-cmd`) {
		t.Errorf("the conflict was not reported: %q", got)
	}

	fresh := mustLoad(t, path)
	a, b, c := row(fresh, "a"), row(fresh, "b"), row(fresh, "c")
	want := []struct {
		what      string
		got, want interface{}
	}{
		{"a.Dir (A in place)", a.Dir, "/mine"},
		{"a.Agent (A in place)", a.Agent, "mine-agent"},
		{"a.Cmd (the conflict: A's)", a.Cmd, "mine-cmd"},
		{"a.Vendor (B's SetBackendTarget)", a.Vendor, "their-vendor"},
		{"a.ModelID (B's SetBackendTarget)", a.ModelID, "their-model"},
		{"a.ResumeToken (B's SetBackendTarget cleared it)", a.ResumeToken, ""},
		{"b.ResumeToken (B's setter)", b.ResumeToken, "their-b"},
		{"b.Project (B in place)", b.Project, "their-project"},
		{"b.PausedReason (A's setter)", b.PausedReason, "cost"},
		{"c.Archived (B's setter)", c.Archived, true},
	}
	for _, w := range want {
		if w.got != w.want {
			t.Errorf("%s: %v, want %v", w.what, w.got, w.want)
		}
	}
	if len(fresh.Sessions) != 3 {
		t.Errorf("rows: %+v", fresh.Sessions)
	}
}

type writerFunc func(p []byte) (int, error)

func (f writerFunc) Write(p []byte) (int, error) { return f(p) }

// The row rules of the merge, one by one: an add or a removal of either side is kept; a row one
// side removed and the other changed is kept with the change; a field only one side changed
// comes from that side.
func TestMergeRowRules(t *testing.T) {
	rows := func(rs ...Session) []Session { return rs }
	base := rows(Session{Name: "x", Cmd: "1"}, Session{Name: "y", Cmd: "1"}, Session{Name: "z", Cmd: "1"})
	mine := rows(Session{Name: "x", Cmd: "2"}, Session{Name: "z", Cmd: "1"}, Session{Name: "m", Cmd: "1"})             // x edited, y removed, m added
	theirs := rows(Session{Name: "y", Cmd: "1"}, Session{Name: "x", Cmd: "1", Dir: "d"}, Session{Name: "t", Cmd: "1"}) // z removed, t added, x.Dir set
	got, conflicts := mergeRows(base, mine, theirs)
	want := rows(Session{Name: "x", Cmd: "2", Dir: "d"}, Session{Name: "t", Cmd: "1"}, Session{Name: "m", Cmd: "1"})
	if !reflect.DeepEqual(got, want) || len(conflicts) != 0 {
		t.Fatalf("merged %+v (conflicts %v), want %+v", got, conflicts, want)
	}
	// Removed by one side, changed by the other: kept, with the change.
	theirs = rows(Session{Name: "x", Cmd: "1"}, Session{Name: "y", Cmd: "3"}, Session{Name: "z", Cmd: "1"})
	got, _ = mergeRows(base, mine, theirs)
	if i := rowIndex(got, "y"); i < 0 || got[i].Cmd != "3" {
		t.Fatalf("a row mine removed and theirs changed: %+v", got)
	}
	theirs = rows(Session{Name: "x", Cmd: "1"}, Session{Name: "y", Cmd: "1"})
	mine = rows(Session{Name: "x", Cmd: "1"}, Session{Name: "y", Cmd: "1"}, Session{Name: "z", Cmd: "4"})
	got, _ = mergeRows(base, mine, theirs)
	if i := rowIndex(got, "z"); i < 0 || got[i].Cmd != "4" {
		t.Fatalf("a row theirs removed and mine changed: %+v", got)
	}
}
