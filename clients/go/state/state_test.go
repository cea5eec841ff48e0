package state

import (
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"testing"
)

// A state file that does not exist yet, as LoadState, NewState and Save meet it. One state dir
// (one server) for the three steps, in this order: each leaves the file missing and the state
// empty for the next (the Save step removes what it wrote).
func TestAMissingStateFile(t *testing.T) {
	t.Parallel()
	path := filepath.Join(stateDir(t), "state.json")
	t.Run("LoadStateMissingFileIsEmpty", func(t *testing.T) { loadStateMissingFileIsEmpty(t, path) })
	// Go's Save writes the file whatever changed: a Save of an unchanged state whose file does not
	// exist (NewState, or LoadState of a missing file) makes it.
	t.Run("SaveOfAnUnchangedStateWritesAMissingFile", func(t *testing.T) { saveOfAnUnchangedStateWritesAMissingFile(t, path) })
	t.Run("NewStateWritesNothingUntilSaved", func(t *testing.T) { newStateWritesNothingUntilSaved(t, path) })
}

func loadStateMissingFileIsEmpty(t *testing.T, path string) {
	st := mustLoad(t, path)
	if st.Sessions != nil || st.Home != (HomeRef{}) || st.InstanceID != "" {
		t.Fatalf("not empty: %+v", st)
	}
	if _, ok := st.FindSession("x"); ok {
		t.Fatal("found a session in an empty state")
	}
	if _, err := os.Stat(path); !os.IsNotExist(err) {
		t.Fatalf("LoadState wrote the file: %v", err)
	}
}

func saveOfAnUnchangedStateWritesAMissingFile(t *testing.T, path string) {
	want := "{\n  \"home\": {\n    \"id\": \"\",\n    \"type\": \"\"\n  },\n  \"sessions\": null\n}"
	for _, st := range []*State{NewState(path), mustLoad(t, path)} {
		if err := st.Save(); err != nil {
			t.Fatal(err)
		}
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatalf("Save wrote no file: %v", err)
		}
		if string(b) != want {
			t.Fatalf("empty state saved as\n%s\nwant\n%s", b, want)
		}
		if err := os.Remove(path); err != nil {
			t.Fatal(err)
		}
	}
}

func newStateWritesNothingUntilSaved(t *testing.T, path string) {
	st := NewState(path)
	if st.Sessions != nil {
		t.Fatal("NewState has sessions")
	}
	if _, err := os.Stat(path); !os.IsNotExist(err) {
		t.Fatal("NewState wrote the file")
	}
	if err := st.SetStatusMessageID("m"); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	want := "{\n  \"home\": {\n    \"id\": \"\",\n    \"type\": \"\"\n  },\n  \"sessions\": null,\n  \"statusMessageID\": \"m\"\n}"
	if string(b) != want {
		t.Fatalf("empty state written as\n%s\nwant\n%s", b, want)
	}
}

var incarnation = regexp.MustCompile(`^inc_[A-Z2-7]{26}$`)

func addSessionAssignsIDAndIncarnationAndRefusesATakenName(t *testing.T, path string) {
	st := mustLoad(t, path)
	if err := st.AddSession(Session{Name: "a", ChannelID: "c1", Type: "text", Cmd: "claude", Incarnation: "inc_GIVEN"}); err != nil {
		t.Fatal(err)
	}
	got, ok := st.FindSession("a")
	if !ok || got.ID != "s_a" || !incarnation.MatchString(got.Incarnation) || got.ChannelID != "c1" {
		t.Fatalf("after AddSession: %+v %v", got, ok)
	}
	err := st.AddSession(Session{Name: "a"})
	if err == nil || err.Error() != `session "a" already exists` {
		t.Fatalf("a taken name: %v", err)
	}
	// A name colliding with an id's base, and a caller-supplied id, as Go.
	if err := st.AddSession(Session{Name: "s_a"}); err != nil {
		t.Fatal(err)
	}
	if err := st.AddSession(Session{Name: "b", ID: "s_a"}); err != nil {
		t.Fatal(err)
	}
	ids := []string{}
	for _, s := range st.SnapshotSessions() {
		ids = append(ids, s.ID)
	}
	if !reflect.DeepEqual(ids, []string{"s_a", "s_s_a", "s_a"}) {
		t.Fatalf("ids %v", ids)
	}
	// Another State (as another LoadState in the process) and the file both have them.
	other := mustLoad(t, path)
	if !reflect.DeepEqual(other.SnapshotSessions(), st.SnapshotSessions()) {
		t.Fatalf("reload differs:\n%+v\n%+v", other.Sessions, st.Sessions)
	}
	rows := onDisk(t, path)["sessions"].([]interface{})
	if len(rows) != 3 || rows[0].(map[string]interface{})["incarnation"] != got.Incarnation {
		t.Fatalf("on disk: %v", rows)
	}
}

// RemoveSession, ApplyDefaults and direct edits on one state dir (one server), in this order:
// the removals first, on the empty state they check; ApplyDefaults then, on a file whose
// top-level fields nothing has set (its own session added beside the re-added "a"); the direct
// edits last, on rows of their own added after the others.
func TestRemoveThenApplyDefaultsThenDirectEdits(t *testing.T) {
	t.Parallel()
	path := filepath.Join(stateDir(t), "state.json")
	t.Run("RemoveSessionAndReAddGetsTheSameIDAndANewIncarnation", func(t *testing.T) { removeSessionAndReAddGetsTheSameIDAndANewIncarnation(t, path) })
	t.Run("ApplyDefaultsSeedsOnlyThisStateAndIsNeverWritten", func(t *testing.T) { applyDefaultsSeedsOnlyThisStateAndIsNeverWritten(t, path) })
	t.Run("DirectEditsAreSavedAsGoSavesThem", func(t *testing.T) { directEditsAreSavedAsGoSavesThem(t, path) })
}

func removeSessionAndReAddGetsTheSameIDAndANewIncarnation(t *testing.T, path string) {
	st := mustLoad(t, path)
	if err := st.RemoveSession("nope"); err != nil { // still saves, as Go
		t.Fatal(err)
	}
	if _, err := os.Stat(path); err == nil && onDisk(t, path)["sessions"] != nil {
		t.Fatal("removing from no sessions wrote a list")
	}
	if err := st.AddSession(Session{Name: "a"}); err != nil {
		t.Fatal(err)
	}
	first, _ := st.FindSession("a")
	if err := st.RemoveSession("a"); err != nil {
		t.Fatal(err)
	}
	if _, ok := st.FindSession("a"); ok {
		t.Fatal("still there")
	}
	if s, ok := onDisk(t, path)["sessions"].([]interface{}); !ok || len(s) != 0 {
		t.Fatalf("the last removal must write [] as Go: %v", onDisk(t, path)["sessions"])
	}
	if err := st.AddSession(Session{Name: "a"}); err != nil {
		t.Fatal(err)
	}
	again, _ := st.FindSession("a")
	if again.ID != first.ID || again.Incarnation == first.Incarnation || !incarnation.MatchString(again.Incarnation) {
		t.Fatalf("re-added %+v after %+v", again, first)
	}
}

// AddSession, then the setters of one session and of the top-level fields, on one state dir
// (one server): AddSession runs first, on the empty state whose ids it checks; the session step
// then sets a row of its own; the top-level step's readers of an empty state do not look at
// sessions.
func TestAddSessionThenSetters(t *testing.T) {
	t.Parallel()
	path := filepath.Join(stateDir(t), "state.json")
	t.Run("AddSessionAssignsIDAndIncarnationAndRefusesATakenName", func(t *testing.T) { addSessionAssignsIDAndIncarnationAndRefusesATakenName(t, path) })
	t.Run("SessionSettersPersistOnlyOnChangeAndIgnoreUnknownNames", func(t *testing.T) { sessionSettersPersistOnlyOnChangeAndIgnoreUnknownNames(t, path) })
	t.Run("TopLevelSettersAndReaders", func(t *testing.T) { topLevelSettersAndReaders(t, path) })
}

func sessionSettersPersistOnlyOnChangeAndIgnoreUnknownNames(t *testing.T, path string) {
	st := mustLoad(t, path)
	rows := len(st.SnapshotSessions()) // an earlier step's
	if err := st.AddSession(Session{Name: "s", ChannelID: "c", Type: "text"}); err != nil {
		t.Fatal(err)
	}
	for name, f := range map[string]func() error{
		"SetResumeToken":  func() error { return st.SetResumeToken("nope", "t") },
		"SetPausedReason": func() error { return st.SetPausedReason("nope", "cost") },
		"SetArchived":     func() error { return st.SetArchived("nope", true) },
		"SetBudget":       func() error { return st.SetBudget("nope", 1, 2, 3, 4, "cost") },
	} {
		if err := f(); err != nil {
			t.Fatalf("%s on an unknown name: %v", name, err)
		}
	}
	if st.SetBackendTarget("nope", "v", "c", "m") {
		t.Fatal("SetBackendTarget found an unknown name")
	}
	if len(st.SnapshotSessions()) != rows+1 {
		t.Fatal("an unknown name made a row")
	}
	if err := st.SetResumeToken("s", "tok"); err != nil {
		t.Fatal(err)
	}
	if err := st.SetArchived("s", true); err != nil {
		t.Fatal(err)
	}
	if err := st.SetPausedReason("s", "tokens"); err != nil {
		t.Fatal(err)
	}
	if err := st.SetBudget("s", 1.5, 100, 2.5, 200, "cost"); err != nil {
		t.Fatal(err)
	}
	got, _ := mustLoad(t, path).FindSession("s")
	if got.ResumeToken != "tok" || !got.Archived || got.PausedReason != "cost" || got.CostCap != 1.5 || got.TokenCap != 100 || got.CohortCostCap != 2.5 || got.CohortTokenCap != 200 {
		t.Fatalf("persisted: %+v", got)
	}
	if !st.SetBackendTarget("s", "codex", "codex --model x", "x") {
		t.Fatal("SetBackendTarget missed the row")
	}
	got, _ = mustLoad(t, path).FindSession("s")
	if got.Vendor != "codex" || got.Cmd != "codex --model x" || got.ModelID != "x" || got.ResumeToken != "" {
		t.Fatalf("after SetBackendTarget: %+v", got)
	}
}

func topLevelSettersAndReaders(t *testing.T, path string) {
	st := mustLoad(t, path)
	if st.QualifiedName("main") != "main" || st.WorkspaceRoot() != "" || st.SourceDir() != "" {
		t.Fatal("an empty state's readers")
	}
	steps := []error{
		st.SetHome(HomeRef{ID: "h", Type: "forum"}),
		st.SetWorkspace("/ws"),
		st.SetSource("/src"),
		st.SetStatusMessageID("m1"),
		st.SetInstanceID("alice"),
	}
	for i, err := range steps {
		if err != nil {
			t.Fatalf("setter %d: %v", i, err)
		}
	}
	if st.Home != (HomeRef{ID: "h", Type: "forum"}) || st.StatusMessageID != "m1" || st.InstanceID != "alice" {
		t.Fatalf("fields: %+v", st)
	}
	if st.QualifiedName("main") != "alice__main" || st.WorkspaceRoot() != "/ws" || st.SourceDir() != "/src" {
		t.Fatal("readers after the setters")
	}
	re := mustLoad(t, path)
	if re.Home.ID != "h" || re.Workspace != "/ws" || re.Source != "/src" || re.StatusMessageID != "m1" || re.InstanceID != "alice" {
		t.Fatalf("reloaded: %+v", re)
	}
	// The legacy Repo answers WorkspaceRoot when there is no workspace.
	re.Repo = "/repo"
	re.Workspace = ""
	if err := re.Save(); err != nil {
		t.Fatal(err)
	}
	if mustLoad(t, path).WorkspaceRoot() != "/repo" {
		t.Fatal("WorkspaceRoot does not fall back to Repo")
	}
}

func directEditsAreSavedAsGoSavesThem(t *testing.T, path string) {
	st := mustLoad(t, path)
	n := len(st.Sessions) // earlier steps' rows come first
	for _, name := range []string{"ea", "eb", "ec"} {
		if err := st.AddSession(Session{Name: name}); err != nil {
			t.Fatal(err)
		}
	}
	st.Sessions[n], st.Sessions[n+2] = st.Sessions[n+2], st.Sessions[n]
	st.Sessions[n+1].Worktree = "/wt/b"
	st.Sessions[n+1].ID = "custom"
	st.Sessions[n+1].Gateways = []string{"chat"}
	want := append([]Session(nil), st.Sessions...)
	if err := st.Save(); err != nil {
		t.Fatal(err)
	}
	got := mustLoad(t, path).SnapshotSessions()
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("saved\n%+v\nwant\n%+v", got, want)
	}
	b, _ := os.ReadFile(path)
	if strings.Index(string(b), `"name": "ec"`) > strings.Index(string(b), `"name": "ea"`) {
		t.Fatalf("row order not kept:\n%s", b)
	}
}

func applyDefaultsSeedsOnlyThisStateAndIsNeverWritten(t *testing.T, path string) {
	st := mustLoad(t, path)
	st.ApplyDefaults(nil, "", "")
	st.ApplyDefaults(&HomeRef{ID: ""}, "", "")
	if st.Home.ID != "" {
		t.Fatal("an empty home was applied")
	}
	st.ApplyDefaults(&HomeRef{ID: "h1", Type: "category"}, "/ws", "/src")
	if st.Home != (HomeRef{ID: "h1", Type: "category"}) || st.Workspace != "/ws" || st.Source != "/src" || st.WorkspaceRoot() != "/ws" || st.SourceDir() != "/src" {
		t.Fatalf("not seeded: %+v", st)
	}
	if err := st.AddSession(Session{Name: "seeded"}); err != nil {
		t.Fatal(err)
	}
	if st.Home.ID != "h1" || st.Workspace != "/ws" {
		t.Fatal("the seeds left this State at its save")
	}
	disk := onDisk(t, path)
	if disk["workspace"] != nil || disk["source"] != nil || disk["home"].(map[string]interface{})["id"] != "" {
		t.Fatalf("ApplyDefaults' values were written: %v", disk)
	}
	other := mustLoad(t, path)
	if other.Home.ID != "" || other.Workspace != "" || other.Source != "" {
		t.Fatalf("another State sees the seeds: %+v", other)
	}
	// Set fields win over the defaults.
	if err := other.SetWorkspace("/live"); err != nil {
		t.Fatal(err)
	}
	other.ApplyDefaults(&HomeRef{ID: "cfg"}, "/cfg", "")
	if other.Workspace != "/live" {
		t.Fatal("ApplyDefaults overrode a set field")
	}
	// A value persisted meanwhile by someone else shows through the seed.
	if st.WorkspaceRoot() != "/live" {
		t.Fatalf("persisted > config: %q", st.WorkspaceRoot())
	}
}

// Writes by another State and by hand on one state dir (one server): the hand edit first, on a
// file without a statusMessageID (the edit adds one); the merged-save step then writes its own
// session and statusMessageID over whatever the file holds.
func TestOtherWriters(t *testing.T) {
	t.Parallel()
	path := filepath.Join(stateDir(t), "state.json")
	t.Run("AnOutsideEditOfTheFileIsLoaded", func(t *testing.T) { anOutsideEditOfTheFileIsLoaded(t, path) })
	t.Run("ReadYourWritesAcrossStatesAndMergedSaves", func(t *testing.T) { readYourWritesAcrossStatesAndMergedSaves(t, path) })
}

func readYourWritesAcrossStatesAndMergedSaves(t *testing.T, path string) {
	a := mustLoad(t, path)
	b := mustLoad(t, path)
	if err := a.AddSession(Session{Name: "x"}); err != nil {
		t.Fatal(err)
	}
	if _, ok := b.FindSession("x"); !ok {
		t.Fatal("b does not see a's session after AddSession returned")
	}
	// b edits a field without saving; a saves meanwhile; b's save keeps a's change too.
	b.StatusMessageID = "from-b"
	if err := a.SetArchived("x", true); err != nil {
		t.Fatal(err)
	}
	if err := b.Save(); err != nil {
		t.Fatal(err)
	}
	got := mustLoad(t, path)
	s, _ := got.FindSession("x")
	if got.StatusMessageID != "from-b" || !s.Archived {
		t.Fatalf("a merged save lost a change: %+v %+v", got, s)
	}
	if a.StatusMessageID != "from-b" {
		a.FindSession("x")
		if a.StatusMessageID != "from-b" {
			t.Fatal("a's fields did not follow b's save")
		}
	}
}

func anOutsideEditOfTheFileIsLoaded(t *testing.T, path string) {
	st := mustLoad(t, path)
	if err := st.AddSession(Session{Name: "a"}); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(path)
	edited := strings.Replace(string(b), "\n}", ",\n  \"statusMessageID\": \"by-hand\"\n}", 1)
	if err := os.WriteFile(path+".edit", []byte(edited), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(path+".edit", path); err != nil {
		t.Fatal(err)
	}
	if got := mustLoad(t, path); got.StatusMessageID != "by-hand" {
		t.Fatalf("a LoadState after the edit: %q", got.StatusMessageID)
	}
	// The next write is built on the edit, never over it.
	if err := st.SetArchived("a", true); err != nil {
		t.Fatal(err)
	}
	if onDisk(t, path)["statusMessageID"] != "by-hand" {
		t.Fatal("a write overwrote the hand edit")
	}
}

func TestLegacyFileGetsIDsAndIncarnationsPersisted(t *testing.T) {
	t.Parallel()
	dir := stateDir(t)
	path := filepath.Join(dir, "state.json")
	legacy := `{"home":{"id":"h","type":"category"},"sessions":[{"name":"a","channelID":"","type":"","cmd":""},{"id":"s_a","name":"x","channelID":"","type":"","cmd":""},{"name":"a","channelID":"","type":"","cmd":""}]}`
	if err := os.WriteFile(path, []byte(legacy), 0o600); err != nil {
		t.Fatal(err)
	}
	st := mustLoad(t, path)
	ids := []string{}
	for _, s := range st.SnapshotSessions() {
		ids = append(ids, s.ID)
		if !incarnation.MatchString(s.Incarnation) {
			t.Fatalf("no incarnation: %+v", s)
		}
	}
	if !reflect.DeepEqual(ids, []string{"s_a_1", "s_a", "s_a_2"}) {
		t.Fatalf("ids %v", ids)
	}
	rows := onDisk(t, path)["sessions"].([]interface{})
	if rows[0].(map[string]interface{})["incarnation"] == nil {
		t.Fatal("the incarnation backfill was not persisted")
	}
}

func TestAPathWithNoStateFileIsAnError(t *testing.T) {
	if _, err := LoadState(""); err == nil {
		t.Fatal("LoadState(\"\") succeeded")
	}
	if err := NewState("").Save(); err == nil {
		t.Fatal("Save of a State without a path succeeded")
	}
}
