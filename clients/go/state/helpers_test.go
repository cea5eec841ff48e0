package state

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	stateclient "github.com/herrscher/herrscher-state/clients/go"
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
	bin, starts, err := startRecorder(runtime, cli)
	if err != nil {
		panic(err)
	}
	os.Setenv("HERRSCHER_STATE_BIN", bin)
	os.Setenv("XDG_RUNTIME_DIR", runtime)
	os.Setenv("HERRSCHER_STATE_SOCKET", "")
	os.Setenv("HERRSCHER_STATE_DURABILITY", "write")
	root, err = os.MkdirTemp("", "hs-state-test")
	if err != nil {
		panic(err)
	}
	code := m.Run()
	closeAll()
	stopStarted(starts)
	os.RemoveAll(root)
	os.RemoveAll(runtime)
	os.Exit(code)
}

// startRecorder writes, in dir, an executable that records its pid in a file (starts) and then
// runs the server cli with its arguments as that same process: each start of a server shows
// there, with the pid it runs as.
func startRecorder(dir, cli string) (bin, starts string, err error) {
	// Not named herrscher-state: that is the socket folder's name in dir.
	bin, starts = filepath.Join(dir, "serve-recorder"), filepath.Join(dir, "starts")
	// The arguments of each start go to starts.args, one line each.
	script := fmt.Sprintf("#!/bin/sh\necho $$ >> '%s'\necho \"$@\" >> '%s.args'\nexec node '%s' \"$@\"\n", starts, starts, cli)
	return bin, starts, os.WriteFile(bin, []byte(script), 0o755)
}

// startedPids are the pids the recorder of starts recorded.
func startedPids(starts string) []int {
	b, _ := os.ReadFile(starts)
	var pids []int
	for _, f := range strings.Fields(string(b)) {
		if pid, err := strconv.Atoi(f); err == nil {
			pids = append(pids, pid)
		}
	}
	return pids
}

// stopStarted ends the servers recorded in starts that still run (SIGTERM: an ordered stop)
// and waits until they are gone, so no test leaves a server behind.
func stopStarted(starts string) {
	deadline := time.Now().Add(15 * time.Second)
	for _, pid := range startedPids(starts) {
		if !holderIsServer(pid) {
			continue
		}
		_ = syscall.Kill(pid, syscall.SIGTERM)
		for holderIsServer(pid) && time.Now().Before(deadline) {
			time.Sleep(10 * time.Millisecond)
		}
	}
}

// ownSharedServer gives the test a socket folder of its own (so a shared server of its own,
// which it may stop or kill without touching the other tests'), whose starts are recorded in
// the file it returns; the server is stopped at the end. Not for parallel tests (t.Setenv).
func ownSharedServer(t *testing.T) (starts, socketFolder string) {
	t.Helper()
	// Not t.TempDir(): a socket path must stay short.
	runtime, err := os.MkdirTemp("", "hs-rt")
	if err != nil {
		t.Fatal(err)
	}
	cli, _ := filepath.Abs(os.Getenv("HERRSCHER_STATE_CLI"))
	if os.Getenv("HERRSCHER_STATE_CLI") == "" {
		cli, _ = filepath.Abs("../../../dist/src/cli.js")
	}
	bin, starts, err := startRecorder(runtime, cli)
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv("HERRSCHER_STATE_BIN", bin)
	t.Setenv("XDG_RUNTIME_DIR", runtime)
	t.Cleanup(func() {
		closeAll()
		stopStarted(starts)
		os.RemoveAll(runtime)
	})
	return starts, filepath.Join(runtime, "herrscher-state")
}

// servingPid is the pid of the server that serves path (asked through its status).
func servingPid(t *testing.T, path string) int {
	t.Helper()
	pid, err := servingPidNow(path)
	if err != nil {
		t.Fatal(err)
	}
	return pid
}

func servingPidNow(path string) (int, error) {
	ctx, cancel := callContext()
	defer cancel()
	c, err := findOrStart(ctx, path)
	if err != nil {
		return 0, err
	}
	defer c.Close()
	st, err := c.Status(ctx)
	return st.Pid, err
}

// otherClient is another client of path's server (as another process would be), closed at the
// end of the test.
func otherClient(t *testing.T, path string) *stateclient.Client {
	t.Helper()
	ctx, cancel := callContext()
	defer cancel()
	c, err := findOrStart(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// root holds the tests' state dirs.
var root string

// lockPathOf is Herrscher's StateLockPath: <dir>/.<base>.lock, its daemon's lock.
func lockPathOf(statePath string) string {
	return filepath.Join(filepath.Dir(statePath), "."+filepath.Base(statePath)+".lock")
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

// tryFlock: a non-blocking exclusive flock through f succeeds (and is released at once).
func tryFlock(f *os.File) bool {
	if syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB) != nil {
		return false
	}
	_ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
	return true
}
