package state

import (
	"bytes"
	"log"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// lockedBuffer is a log output the test reads while the package may still write to it.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// captureLog sends the standard logger to a buffer for the rest of the test.
func captureLog(t *testing.T) *lockedBuffer {
	t.Helper()
	out, flags := log.Writer(), log.Flags()
	b := &lockedBuffer{}
	log.SetOutput(b)
	log.SetFlags(0)
	t.Cleanup(func() {
		log.SetOutput(out)
		log.SetFlags(flags)
	})
	return b
}

// noSharedServer points the package at a socket folder where no shared server runs.
func noSharedServer(t *testing.T) {
	t.Helper()
	runtime, err := os.MkdirTemp("", "hs-rt") // short: a socket path has a bound
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(runtime) })
	t.Setenv("XDG_RUNTIME_DIR", runtime)
}

func TestReadersThatCannotReachTheServerSayWhyInTheLog(t *testing.T) {
	dir := stateDir(t)
	noSharedServer(t)
	t.Setenv("HERRSCHER_STATE_BIN", filepath.Join(dir, "no-such-herrscher-state"))
	// A state dir (its state.json exists), so its transcripts and journals are served.
	if err := os.WriteFile(filepath.Join(dir, "state.json"), []byte("{}"), 0o600); err != nil {
		t.Fatal(err)
	}
	logged := captureLog(t)
	tp := TranscriptPath(dir, "s1")
	pp := ParticipantsPath(dir, "s1")

	// Files there (a missing one is answered empty without a server): the readers ask the
	// server, and without one read the files themselves.
	for p, line := range map[string]string{tp: `{"ts":"t1","role":"user","text":"x"}`, pp: "u1"} {
		if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(line+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
	}

	if got := ReadTranscript(tp, 0); len(got) != 1 || got[0].Text != "x" {
		t.Fatalf("ReadTranscript without a server = %v, want the file's entry", got)
	}
	if got := ReadTranscriptLast(tp); got != "t1" {
		t.Fatalf("ReadTranscriptLast without a server = %q, want t1", got)
	}
	if got := ReadParticipants(pp); len(got) != 1 || got[0] != "u1" {
		t.Fatalf("ReadParticipants without a server = %v, want the file's id", got)
	}
	st := NewState(filepath.Join(dir, "state.json"))
	if _, ok := st.FindSession("s1"); ok {
		t.Fatal("FindSession found a session in a state no server could load")
	}
	text := logged.String()
	for _, want := range []string{
		"state: ReadTranscript " + tp + ": ",
		"state: ReadTranscriptLast " + tp + ": ",
		"state: ReadParticipants " + pp + ": ",
		"state: reading " + filepath.Join(dir, "state.json") + ": ",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("the log lacks %q:\n%s", want, text)
		}
	}
	if !strings.Contains(text, "no-such-herrscher-state") {
		t.Errorf("the log does not say why (the missing executable):\n%s", text)
	}
	if !strings.Contains(text, "set HERRSCHER_STATE_BIN to the herrscher-state executable") {
		t.Errorf("the log does not name HERRSCHER_STATE_BIN, what to set:\n%s", text)
	}

	// A reader called in a loop logs its reason once, not once per call.
	before := strings.Count(logged.String(), "state: ReadTranscript "+tp+": ")
	for i := 0; i < 5; i++ {
		ReadTranscript(tp, 0)
	}
	if after := strings.Count(logged.String(), "state: ReadTranscript "+tp+": "); after != before {
		t.Errorf("5 more failing reads logged %d more lines, want 0", after-before)
	}
}

func TestAStateWithoutAPathLogsNothing(t *testing.T) {
	logged := captureLog(t)
	var st State
	if _, ok := st.FindSession("s1"); ok {
		t.Fatal("an empty State found a session")
	}
	_ = st.SnapshotSessions()
	if text := logged.String(); text != "" {
		t.Errorf("an empty State logged %q", text)
	}
}

// SetBackendTarget returns no error, as Go's: when the server cannot be reached it answers
// from this State's copy (the session exists: true, not "no such session"), keeps the change
// there as Go keeps it in memory, and says why in the log instead of swallowing the failure.
func TestSetBackendTargetWithoutTheServerKeepsTheChangeAndSaysWhy(t *testing.T) {
	dir := stateDir(t)
	path := filepath.Join(dir, "state.json")
	st := mustLoad(t, path)
	if err := st.AddSession(Session{Name: "s1", Vendor: "claude", Cmd: "old", ResumeToken: "r"}); err != nil {
		t.Fatal(err)
	}
	// This process's connection closed, and from now on no server can be found (a socket
	// folder without one) or started.
	closeUnder(dir)
	noSharedServer(t)
	t.Setenv("HERRSCHER_STATE_BIN", filepath.Join(dir, "no-such-herrscher-state"))
	// A state dir (its state.json exists), so its transcripts and journals are served.
	if err := os.WriteFile(filepath.Join(dir, "state.json"), []byte("{}"), 0o600); err != nil {
		t.Fatal(err)
	}
	logged := captureLog(t)

	if !st.SetBackendTarget("s1", "codex", "new", "m1") {
		t.Fatal("SetBackendTarget said there is no session s1")
	}
	got, ok := st.FindSession("s1")
	if !ok || got.Vendor != "codex" || got.Cmd != "new" || got.ModelID != "m1" || got.ResumeToken != "" {
		t.Fatalf("the change is not in the State: %+v %v", got, ok)
	}
	if st.SetBackendTarget("nope", "codex", "new", "m1") {
		t.Fatal("SetBackendTarget found a session this State does not have")
	}
	if text := logged.String(); !strings.Contains(text, "state: SetBackendTarget "+path+": ") || !strings.Contains(text, "no-such-herrscher-state") {
		t.Fatalf("the log does not say why the change was not saved:\n%s", text)
	}
}
