package state

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// Herrscher's daemon holds the lock before LoadState: the package finds its descriptor and
// the server serves under it (a server not given it would refuse: the lock is taken).
func TestLoadStateUnderTheCallersLock(t *testing.T) {
	t.Parallel()
	dir := stateDir(t)
	path := filepath.Join(dir, "state.json")
	lockLikeHerrscher(t, path)
	st := mustLoad(t, path)
	if err := st.AddSession(Session{Name: "a"}); err != nil {
		t.Fatal(err)
	}
	if err := AppendTranscript(TranscriptPath(dir, "a"), TranscriptEntry{Ts: "t", Role: "user", Text: "x"}); err != nil {
		t.Fatal(err)
	}
	if _, ok := mustLoad(t, path).FindSession("a"); !ok {
		t.Fatal("not found")
	}
	srv := connectionFor(path)
	srv.mu.Lock()
	owned := srv.owned
	srv.mu.Unlock()
	if !owned {
		t.Fatal("the server was not started under the caller's lock")
	}
}

func TestHeldLockFileIsFoundOnlyWhenThisProcessHoldsIt(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "state.json")
	if heldLockFile(lockPathOf(path)) != nil {
		t.Fatal("found a lock file that does not exist")
	}
	f := lockLikeHerrscher(t, path)
	got := heldLockFile(lockPathOf(path))
	if got == nil {
		t.Fatal("the held lock was not found")
	}
	var a, b syscall.Stat_t
	_ = syscall.Fstat(int(got.Fd()), &a)
	_ = syscall.Fstat(int(f.Fd()), &b)
	got.Close()
	if a.Ino != b.Ino {
		t.Fatal("another file")
	}
	// A lock file this process has not open is not held by it.
	other := filepath.Join(dir, "other.json")
	if err := os.WriteFile(lockPathOf(other), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if heldLockFile(lockPathOf(other)) != nil {
		t.Fatal("a lock file not open here was taken for held")
	}
}

// Without the lock the package starts a shared server that stops once idle: the lock is
// free again afterwards, as a daemon starting later needs it.
func TestASharedServerReleasesTheLockOnceIdle(t *testing.T) {
	t.Parallel()
	dir := stateDir(t)
	path := filepath.Join(dir, "state.json")
	st := mustLoad(t, path)
	if err := st.SetWorkspace("/ws"); err != nil {
		t.Fatal(err)
	}
	srv := connectionFor(path)
	srv.mu.Lock()
	owned := srv.owned
	srv.mu.Unlock()
	if owned {
		t.Fatal("owned without a lock")
	}
	f, err := os.OpenFile(lockPathOf(path), os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB) == nil {
		t.Fatal("the server does not hold the lock while in use")
	}
	eventually(t, "the idle server releases the lock", func() bool {
		return syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB) == nil
	})
	// The State still works: the next call starts a server again (the lock is ours now,
	// so under it).
	if st.WorkspaceRoot() != "/ws" {
		t.Fatal("after the restart")
	}
}
