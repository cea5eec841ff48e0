package state

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// A state file the server cannot open (as Go's LoadState cannot: an empty file, a top-level
// array) and no server running yet: the server started for it exits saying why, and LoadState
// returns that reason, instead of starting it again and again until the connect bound and then
// naming only the bound. The file is left as it was.
func TestLoadStateOfAnUnloadableFileSaysWhy(t *testing.T) {
	t.Parallel()
	dir := stateDir(t)
	for _, c := range []struct{ content, why string }{
		{"", "invalid JSON"},
		{"[]", "must be an object"},
	} {
		path := filepath.Join(dir, "state.json")
		if err := os.WriteFile(path, []byte(c.content), 0o600); err != nil {
			t.Fatal(err)
		}
		st, err := LoadState(path)
		if err == nil || st != nil {
			t.Fatalf("%q: LoadState = %v, %v; want an error", c.content, st, err)
		}
		if !strings.Contains(err.Error(), c.why) {
			t.Fatalf("%q: the error does not say why: %v", c.content, err)
		}
		if b, _ := os.ReadFile(path); string(b) != c.content {
			t.Fatalf("%q: the file was changed to %q", c.content, b)
		}
	}
}

// The same file broken by hand while a server serves it (an operator's edit gone wrong): a
// LoadState gets why, as Go's LoadState does, not the last good document the server keeps
// answering from memory; fixed, it loads again.
func TestLoadStateOfAFileBrokenWhileServedSaysWhy(t *testing.T) {
	t.Parallel()
	path := filepath.Join(stateDir(t), "state.json")
	st := mustLoad(t, path)
	if err := st.AddSession(Session{Name: "a"}); err != nil {
		t.Fatal(err)
	}
	good, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(`{"sessions": [`), 0o600); err != nil {
		t.Fatal(err)
	}
	if got, err := LoadState(path); err == nil || !strings.Contains(err.Error(), "cannot be loaded") {
		t.Fatalf("LoadState of a broken file = %+v, %v; want why it cannot be loaded", got, err)
	}
	if b, _ := os.ReadFile(path); string(b) != `{"sessions": [` {
		t.Fatalf("the broken file was changed to %q", b)
	}
	if err := os.WriteFile(path, good, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, ok := mustLoad(t, path).FindSession("a"); !ok {
		t.Fatal("the fixed file does not load")
	}
}

// A server started while another process holds the state's lock says so in the words
// findOrStart looks for: such a start lost a race, and is retried until the caller's
// deadline instead of counting towards maxStartExits.
func TestALostLockRaceIsRecognised(t *testing.T) {
	t.Parallel()
	dir := stateDir(t)
	path := filepath.Join(dir, "state.json")
	f, err := os.OpenFile(lockPathOf(path), os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		t.Fatal(err)
	}
	command := serverCommand()
	args := append(append([]string{}, command[1:]...), "serve", "--state", path, "--socket", filepath.Join(dir, "s.sock"))
	out, err := exec.Command(command[0], args...).CombinedOutput()
	if err == nil {
		t.Fatalf("the server started although the lock is held: %s", out)
	}
	if !lostLockRace(err) {
		t.Fatalf("the server's refusal (%v) does not exit with the lock's code %d: %s", err, lockHeldExit, out)
	}
}
