package state

import (
	"context"
	"errors"
	"path/filepath"
	"syscall"
	"testing"
)

// A server that keeps its connections open and answers nothing (SIGSTOP): every call returns
// an error at its deadline ($HERRSCHER_STATE_CALL_TIMEOUT_MS), a reader answers from the
// State's copy, FindSession does not wait behind a setter in flight, and the State works again
// once the server does.
func TestAStoppedServerBoundsEveryCall(t *testing.T) {
	// Not parallel: it sets the environment and a package hook.
	ownSharedServer(t) // stopped here: the other tests' server runs on
	dir := stateDir(t)
	path := filepath.Join(dir, "state.json")
	st := mustLoad(t, path)
	if err := st.AddSession(Session{Name: "a"}); err != nil {
		t.Fatal(err)
	}
	tr := TranscriptPath(dir, "a")
	if err := AppendTranscript(tr, TranscriptEntry{Ts: "t0", Role: "user", Text: "hi"}); err != nil {
		t.Fatal(err)
	}
	if _, ok := st.FindSession("a"); !ok {
		t.Fatal("no row a")
	}
	// The bound is set once the server is up: its start (a node process, seconds on a loaded
	// machine under -race) is not what this test bounds.
	t.Setenv(callTimeoutEnv, "2000")
	pid := servingPid(t, path)
	if err := syscall.Kill(pid, syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = syscall.Kill(pid, syscall.SIGCONT) })

	// A setter waits for its answer; FindSession, asked meanwhile, answers from the replica.
	sent := make(chan struct{})
	writeSentHook = func() { close(sent); writeSentHook = nil }
	t.Cleanup(func() { writeSentHook = nil })
	setter := make(chan error, 1)
	go func() { setter <- st.SetResumeToken("a", "tok") }()
	<-sent
	if a, ok := st.FindSession("a"); !ok || a.ResumeToken != "" {
		t.Fatalf("FindSession during the setter: %+v %v", a, ok)
	}
	select {
	case err := <-setter:
		t.Fatalf("the setter returned (%v) before FindSession did: the read waited behind the write", err)
	default:
	}
	if err := <-setter; !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("SetResumeToken on a stopped server: %v, want its deadline", err)
	}

	t.Setenv(callTimeoutEnv, "300")
	mustTimeOut := func(what string, err error) {
		t.Helper()
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("%s on a stopped server: %v, want its deadline", what, err)
		}
	}
	mustTimeOut("AppendTranscript", AppendTranscript(tr, TranscriptEntry{Ts: "t1", Role: "user", Text: "x"}))
	mustTimeOut("SetSource", st.SetSource("/src"))
	mustTimeOut("Save", st.Save())
	_, err := AppendParticipant(ParticipantsPath(dir, "a"), "u1")
	mustTimeOut("AppendParticipant", err)
	_, err = LoadState(path)
	mustTimeOut("LoadState", err)
	if got := ReadTranscript(tr, 0); len(got) == 0 || got[0].Ts != "t0" {
		t.Fatalf("ReadTranscript on a stopped server: %+v, want the file's entries (read as Go reads it)", got)
	}
	// A new connection: the dial reaches the stopped server's socket, which never answers.
	closeUnder(dir)
	mustTimeOut("AppendTranscript on a new connection", AppendTranscript(tr, TranscriptEntry{Ts: "t2", Role: "user", Text: "y"}))

	// The server runs again: the same State and the file functions work.
	if err := syscall.Kill(pid, syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	t.Setenv(callTimeoutEnv, "")
	if err := st.SetResumeToken("a", "after"); err != nil {
		t.Fatal(err)
	}
	if a, _ := st.FindSession("a"); a.ResumeToken != "after" {
		t.Fatalf("after the server came back: %+v", a)
	}
	if got := ReadTranscript(tr, 0); len(got) == 0 || got[0].Ts != "t0" {
		t.Fatalf("ReadTranscript after the server came back: %+v", got)
	}
}
