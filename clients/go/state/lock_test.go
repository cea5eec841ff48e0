package state

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// pollerProcess is a bridge: it loads the state and reads session "a" through the package every
// 100 ms, printing "ready" after its first read and each resume token it sees change, until its
// stdin closes.
func pollerProcess(path string) int {
	defer closeAll()
	st, err := LoadState(path)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	done := make(chan struct{})
	go func() {
		_, _ = bufio.NewReader(os.Stdin).ReadString('\n')
		close(done)
	}()
	last := "\x00"
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for first := true; ; first = false {
		a, _ := st.FindSession("a")
		if first {
			fmt.Println("ready")
		}
		if a.ResumeToken != last {
			last = a.ResumeToken
			fmt.Println("token", last)
		}
		select {
		case <-done:
			return 0
		case <-tick.C:
		}
	}
}

// Herrscher's daemon takes its own lock (LockState flocks <dir>/.state.json.lock) while a bridge
// polls the state every 100 ms through the package: no server holds that lock, so it is
// granted, and the daemon's own writes through the package land on the server the bridge reads.
func TestADaemonsLockStateSucceedsWhileABridgePolls(t *testing.T) {
	t.Parallel()
	dir := stateDir(t)
	path := filepath.Join(dir, "state.json")
	if err := mustLoad(t, path).AddSession(Session{Name: "a"}); err != nil {
		t.Fatal(err)
	}
	bridge := exec.Command(os.Args[0])
	bridge.Env = append(os.Environ(), otherProcessEnv+"=poll "+path)
	in, err := bridge.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, err := bridge.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	bridge.Stderr = os.Stderr
	if err := bridge.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { in.Close(); _ = bridge.Wait() }()
	lines := bufio.NewScanner(out)
	await := func(want string) {
		t.Helper()
		for lines.Scan() {
			if lines.Text() == want {
				return
			}
		}
		t.Fatalf("the bridge ended before it said %q", want)
	}
	await("ready")

	// The daemon: its lock first, as LockState, then its state through the package.
	f, err := os.OpenFile(lockPathOf(path), os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		t.Fatalf("the daemon's LockState is refused while a bridge polls: %v", err)
	}
	daemon := mustLoad(t, path)
	if err := daemon.SetResumeToken("a", "from-the-daemon"); err != nil {
		t.Fatal(err)
	}
	if err := AppendTranscript(TranscriptPath(dir, "a"), TranscriptEntry{Ts: "t1", Role: "user", Text: "x"}); err != nil {
		t.Fatal(err)
	}
	await("token from-the-daemon")
	if got := ReadTranscript(TranscriptPath(dir, "a"), 0); len(got) != 1 {
		t.Fatalf("the daemon's append: %+v", got)
	}
}

// A process that is no server holding the state's single-writer lock (the store's
// <dir>/.herrscher-state/server.lock): the call fails at once with one error that names the
// lock and the holder, and no server is started for it beyond the one shared server.
func TestAForeignHolderOfTheStatesLockGetsOneClearError(t *testing.T) {
	starts, _ := ownSharedServer(t)
	dir := stateDir(t)
	path := filepath.Join(dir, "state.json")
	if err := os.WriteFile(path, []byte(`{"home":{"id":"","type":""},"sessions":[]}`), 0o600); err != nil {
		t.Fatal(err)
	}
	lock := filepath.Join(dir, ".herrscher-state", "server.lock")
	if lock != serverLockOf(path) {
		t.Fatalf("serverLockOf says %s", serverLockOf(path))
	}
	if err := os.MkdirAll(filepath.Dir(lock), 0o700); err != nil {
		t.Fatal(err)
	}
	f, err := os.OpenFile(lock, os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString(fmt.Sprint(os.Getpid())); err != nil {
		t.Fatal(err)
	}
	for i, call := range []func() error{
		func() error { _, err := LoadState(path); return err },
		func() error { return NewState(path).AddSession(Session{Name: "a"}) },
	} {
		err := call()
		var locked *lockedError
		if !errors.As(err, &locked) {
			t.Fatalf("call %d: %v, want the foreign holder's error", i, err)
		}
		if !strings.Contains(err.Error(), lock) {
			t.Fatalf("call %d: the error does not name the lock %s: %v", i, lock, err)
		}
	}
	if n := len(startedPids(starts)); n != 1 {
		t.Fatalf("%d servers started, want the one shared server", n)
	}
}

// serverLockOf names the lock the server takes for a state (the store's rule, src/store/paths.ts:
// .herrscher-state/ for state.json, .herrscher-state/<base>.d/ for any other base): the one its
// errors name is the one held while the state is served.
func TestServerLockOfIsTheLockTheServerHolds(t *testing.T) {
	t.Parallel()
	dir := stateDir(t)
	for _, base := range []string{"state.json", "other.json"} {
		path := filepath.Join(dir, base)
		if err := mustLoad(t, path).SetWorkspace("/ws"); err != nil {
			t.Fatal(err)
		}
		f, err := os.OpenFile(serverLockOf(path), os.O_RDWR, 0)
		if err != nil {
			t.Fatalf("%s: %v", base, err)
		}
		held := !tryFlock(f)
		f.Close()
		if !held {
			t.Fatalf("%s: %s is not held while the state is served", base, serverLockOf(path))
		}
	}
}
