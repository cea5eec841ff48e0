package state

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// The tests run the real built server: $HERRSCHER_STATE_CLI, else the checkout's
// dist/src/cli.js (`npm run build` makes it). The servers the package starts get a socket
// folder of the tests' own, so no test reaches a real server.
func TestMain(m *testing.M) {
	if step := os.Getenv(otherProcessEnv); step != "" {
		// This binary run as the other process of a test (otherProcess): one step, then exit.
		os.Exit(runOtherProcess(step))
	}
	cli := os.Getenv("HERRSCHER_STATE_CLI")
	if cli == "" {
		cli, _ = filepath.Abs("../../../dist/src/cli.js")
	}
	if _, err := os.Stat(cli); err != nil {
		fmt.Fprintf(os.Stderr, "the built server is missing (%v): run `npm run build` in the repository first\n", err)
		os.Exit(2)
	}
	runtime, err := os.MkdirTemp("", "hs-rt")
	if err != nil {
		panic(err)
	}
	os.Setenv("HERRSCHER_STATE_BIN", cli)
	os.Setenv("XDG_RUNTIME_DIR", runtime)
	os.Setenv("HERRSCHER_STATE_SOCKET", "")
	os.Setenv("HERRSCHER_STATE_DURABILITY", "write")
	root, err = os.MkdirTemp("", "hs-state-test")
	if err != nil {
		panic(err)
	}
	code := m.Run()
	closeAll()
	// The servers stop once idle; their dirs stay until then, so none logs a vanished dir.
	deadline := time.Now().Add(15 * time.Second)
	locks, _ := filepath.Glob(filepath.Join(root, "*", ".*.lock"))
	for _, l := range locks {
		for !lockFree(l) && time.Now().Before(deadline) {
			time.Sleep(20 * time.Millisecond)
		}
	}
	os.RemoveAll(root)
	os.RemoveAll(runtime)
	os.Exit(code)
}

// root holds the tests' state dirs until every server the tests started has stopped.
var root string

func lockFree(path string) bool {
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		return true
	}
	defer f.Close()
	return syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB) == nil
}

// stateDir is a fresh state dir whose connections are closed at the end of the test, so the
// servers started for it stop. Only its own: the tests that use one run in parallel.
func stateDir(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp(root, "d")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { closeUnder(dir) })
	return dir
}

// closeUnder ends this process's connections to the servers of the state files under dir.
func closeUnder(dir string) {
	closeWhere(func(p string) bool { return strings.HasPrefix(p, dir+string(filepath.Separator)) })
}

// onDisk is state.json as the server wrote it.
func onDisk(t *testing.T, path string) map[string]interface{} {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("read %s: %v", path, err)
	}
	var m map[string]interface{}
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatalf("%s: %v\n%s", path, err, b)
	}
	return m
}

func mustLoad(t *testing.T, path string) *State {
	t.Helper()
	st, err := LoadState(path)
	if err != nil {
		t.Fatalf("LoadState(%s): %v", path, err)
	}
	return st
}

// lockLikeHerrscher takes the state's lock as Herrscher's LockState does and keeps the
// descriptor open until the test ends.
func lockLikeHerrscher(t *testing.T, statePath string) *os.File {
	t.Helper()
	f, err := os.OpenFile(lockPathOf(statePath), os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		t.Fatalf("flock: %v", err)
	}
	t.Cleanup(func() { f.Close() })
	return f
}

// eventually polls cond until it holds or the bound passes (a wait for an event, not a
// timed assertion).
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("never happened: %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
