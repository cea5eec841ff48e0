package state

import (
	"path/filepath"
	"testing"
)

// A write whose connection ends before it is sent is sent on the next connection, within the
// same call: the setter returns no error, the server takes the write once, and every State of
// the process shows it.
func TestASetterWhoseConnectionEndsIsSentOnTheNext(t *testing.T) {
	// Not parallel: it sets a package hook, and counts the server's calls.
	dir := stateDir(t)
	path := filepath.Join(dir, "state.json")
	st := mustLoad(t, path)
	if err := st.AddSession(Session{Name: "a"}); err != nil {
		t.Fatal(err)
	}
	before := callsOf(t, path, "session/setResumeToken")
	ended := 0
	writeSentHook = func() {
		writeSentHook = nil
		ended++
		closeUnder(dir) // this process's connection ends under the write about to be sent
	}
	t.Cleanup(func() { writeSentHook = nil })
	if err := st.SetResumeToken("a", "tok"); err != nil {
		t.Fatal("a setter whose connection ended before it was sent:", err)
	}
	if ended != 1 {
		t.Fatal("the hook did not run: the test tested nothing")
	}
	if got := callsOf(t, path, "session/setResumeToken") - before; got != 1 {
		t.Fatalf("the server took the setter %d times", got)
	}
	for _, s := range []*State{st, mustLoad(t, path)} {
		if a, _ := s.FindSession("a"); a.ResumeToken != "tok" {
			t.Fatalf("the row after the setter: %+v", a)
		}
	}
}

// endNextCall ends this process's connections under dir as the next call of a file function is
// about to be sent; the returned func says whether that happened.
func endNextCall(t *testing.T, dir string) func() bool {
	ended := false
	callSentHook = func() {
		callSentHook = nil
		ended = true
		closeUnder(dir)
	}
	t.Cleanup(func() { callSentHook = nil })
	return func() bool { return ended }
}

// A file function's call whose connection ends before it is sent: a read and a keyed write
// (a transcript append) are sent on the next connection and answered by the server; a write
// without a key (a remove) is not sent again, and says why.
func TestAFileCallWhoseConnectionEndsIsSentAgainWhenItMayBe(t *testing.T) {
	// Not parallel: it sets a package hook, and counts the server's calls.
	dir := stateDir(t)
	path := filepath.Join(dir, "state.json")
	if err := mustLoad(t, path).AddSession(Session{Name: "a"}); err != nil {
		t.Fatal(err)
	}
	tr := TranscriptPath(dir, "a")
	appends, reads, removes := callsOf(t, path, "transcript/append"), callsOf(t, path, "transcript/read"), callsOf(t, path, "transcript/remove")

	ended := endNextCall(t, dir)
	if err := AppendTranscript(tr, TranscriptEntry{Ts: "t1", Role: "user", Text: "hi"}); err != nil || !ended() {
		t.Fatalf("an append whose connection ended (%v): %v", ended(), err)
	}
	ended = endNextCall(t, dir)
	if got := ReadTranscript(tr, 0); len(got) != 1 || got[0].Ts != "t1" || !ended() {
		t.Fatalf("a read whose connection ended (%v): %+v", ended(), got)
	}
	if a, r := callsOf(t, path, "transcript/append")-appends, callsOf(t, path, "transcript/read")-reads; a != 1 || r != 1 {
		t.Fatalf("the server answered %d appends and %d reads, want each once", a, r)
	}

	ended = endNextCall(t, dir)
	if err := RemoveTranscript(tr); err == nil || !ended() {
		t.Fatalf("a remove whose connection ended (%v) was sent again: %v", ended(), err)
	}
	if got := callsOf(t, path, "transcript/remove") - removes; got != 0 {
		t.Fatalf("the server took the remove %d times", got)
	}
	if got := ReadTranscript(tr, 0); len(got) != 1 {
		t.Fatalf("after the remove that was not sent: %+v", got)
	}
}
