package state

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	stateclient "github.com/herrscher/herrscher-state/clients/go"
)

// fakeServer makes HERRSCHER_STATE_BIN a script that records each start (one line in the file
// it returns), writes words to its stderr and exits with code, and gives the test a socket
// folder of its own (XDG_RUNTIME_DIR). Not for parallel tests (t.Setenv).
func fakeServer(t *testing.T, words string, code string) (starts, socket string) {
	t.Helper()
	// Not t.TempDir(): a socket path must stay short.
	dir, err := os.MkdirTemp("", "hs-fk")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	starts = filepath.Join(dir, "starts")
	bin := filepath.Join(dir, "fake-server")
	script := "#!/bin/sh\necho \"$@\" >> '" + starts + "'\nprintf '%s\\n' \"$FAKE_WORDS\" >&2\nexit $FAKE_EXIT\n"
	if err := os.WriteFile(bin, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("HERRSCHER_STATE_BIN", bin)
	t.Setenv("XDG_RUNTIME_DIR", dir)
	t.Setenv("FAKE_WORDS", words)
	t.Setenv("FAKE_EXIT", code)
	return starts, stateclient.SharedSocketPath(os.Getenv)
}

func startsOf(t *testing.T, starts string) []string {
	t.Helper()
	b, err := os.ReadFile(starts)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	return strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
}

// A started server that exits is named with what it wrote to shared.log at this start (not
// what an earlier start wrote there); one that exits 4 lost the race to another start.
func TestStartSharedSaysWhyItsServerExited(t *testing.T) {
	starts, socket := fakeServer(t, "cannot open the socket folder", "3")
	if err := os.MkdirAll(filepath.Dir(socket), 0o700); err != nil {
		t.Fatal(err)
	}
	logPath := filepath.Join(filepath.Dir(socket), sharedLogName)
	if err := os.WriteFile(logPath, []byte("an earlier start's words\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	lost, err := startShared(ctx, socket)
	if lost || err == nil || !strings.HasSuffix(err.Error(), ": cannot open the socket folder") || strings.Contains(err.Error(), "earlier") {
		t.Fatalf("startShared: lost %v, %v", lost, err)
	}
	if got := startsOf(t, starts); len(got) != 1 || !strings.Contains(got[0], "serve --shared --socket "+socket+" --exit-when-idle") {
		t.Fatalf("started %q", got)
	}
	t.Setenv("FAKE_EXIT", "4")
	lost, err = startShared(ctx, socket)
	var ee interface{ ExitCode() int }
	if !lost || !errors.As(err, &ee) || ee.ExitCode() != inUseExit {
		t.Fatalf("a start that exits 4: lost %v, %v", lost, err)
	}
}

// While another start holds the start lock (its flock on shared.log), a start waits for it
// within its deadline and starts nothing.
func TestStartSharedWaitsForTheStartUnderWay(t *testing.T) {
	starts, socket := fakeServer(t, "", "1")
	if err := os.MkdirAll(filepath.Dir(socket), 0o700); err != nil {
		t.Fatal(err)
	}
	held, err := os.OpenFile(filepath.Join(filepath.Dir(socket), sharedLogName), os.O_CREATE|os.O_WRONLY, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	defer held.Close()
	if err := syscall.Flock(int(held.Fd()), syscall.LOCK_EX); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	if lost, err := startShared(ctx, socket); lost || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("startShared under another's start lock: lost %v, %v", lost, err)
	}
	if got := startsOf(t, starts); got != nil {
		t.Fatalf("started %q under another's start lock", got)
	}
}

// A server that cannot start is started maxStartExits times, not until the deadline, and the
// error says why in its words; a record of a server whose socket is gone does not stand in for
// one.
func TestFindOrStartGivesUpOnAServerThatCannotStart(t *testing.T) {
	starts, _ := fakeServer(t, "no such option", "1")
	dir := t.TempDir()
	path := filepath.Join(dir, "state.json")
	rec, err := stateclient.ServerRecordPath(path)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(stateclient.ServerRecord{Pid: os.Getpid(), Socket: filepath.Join(dir, "gone.sock"), State: path})
	if err := os.MkdirAll(filepath.Dir(rec), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(rec, b, 0o600); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := findOrStart(ctx, path)
	if c != nil || err == nil || !strings.HasSuffix(err.Error(), ": no such option") || !strings.Contains(err.Error(), "no server for "+path) {
		t.Fatalf("findOrStart: %v %v", c, err)
	}
	if got := startsOf(t, starts); len(got) != maxStartExits {
		t.Fatalf("started %d times, want %d", len(got), maxStartExits)
	}
}

// logTail is what the log got from an offset on, its last 2 KiB at most.
func TestLogTailIsTheLogsNewWordsAtMostTwoKiB(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "shared.log")
	if logTail(path, 0) != "" {
		t.Fatal("a missing log has words")
	}
	old := strings.Repeat("o", 3000)
	if err := os.WriteFile(path, []byte(old+"\n  new words \n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if got := logTail(path, int64(len(old))); got != "new words" {
		t.Fatalf("tail from the start's offset: %q", got)
	}
	long := strings.Repeat("n", 2060) + "the end"
	if err := os.WriteFile(path, []byte(old+long), 0o600); err != nil {
		t.Fatal(err)
	}
	if got := logTail(path, int64(len(old))); got != long[len(long)-2048:] {
		t.Fatalf("tail of %d new bytes is %d bytes", len(long), len(got))
	}
}

// Two paths name the same state file when they are equal, or when their folders are the same
// folder (a link to it) and their base names are equal.
func TestSameFileFollowsTheFolder(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	real := filepath.Join(dir, "real")
	if err := os.Mkdir(real, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(dir, "other"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(real, filepath.Join(dir, "link")); err != nil {
		t.Fatal(err)
	}
	missing := filepath.Join(dir, "missing", "state.json")
	for _, c := range []struct {
		a, b string
		same bool
	}{
		{missing, missing, true},
		{filepath.Join(real, "state.json"), filepath.Join(dir, "link", "state.json"), true},
		{filepath.Join(real, "state.json"), filepath.Join(real, "other.json"), false},
		{filepath.Join(real, "state.json"), filepath.Join(dir, "other", "state.json"), false},
		{dir + "/missing/../missing/state.json", missing, false}, // a folder that cannot be looked at
	} {
		if got := sameFile(c.a, c.b); got != c.same {
			t.Errorf("sameFile(%s, %s) = %v", c.a, c.b, got)
		}
	}
}

// A look for a server whose deadline has already passed ends with the deadline's error.
func TestFindOrStartPastItsDeadlineSaysSo(t *testing.T) {
	starts, _ := fakeServer(t, "", "1")
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if c, err := findOrStart(ctx, filepath.Join(t.TempDir(), "state.json")); c != nil || !errors.Is(err, context.Canceled) {
		t.Fatalf("findOrStart: %v %v", c, err)
	}
	if got := startsOf(t, starts); got != nil {
		t.Fatalf("started %q past the deadline", got)
	}
}

// A state a dedicated server recorded itself for is reached through its record: no shared
// server is started, or needed, for it.
func TestADedicatedServerIsFoundByItsRecord(t *testing.T) {
	path := filepath.Join(stateDir(t), "state.json")
	sock, err := os.MkdirTemp("", "hs-sock") // short: a socket path has a bound
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(sock)
	cmd := startDedicated(t, path, "--socket", filepath.Join(sock, "s.sock"))
	eventually(t, "the dedicated server recorded itself", func() bool {
		rec, err := stateclient.ReadServerRecord(path)
		return err == nil && rec != nil
	})
	starts, _ := fakeServer(t, "no shared server here", "1")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := findOrStart(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if st, err := c.Status(ctx); err != nil || st.Pid != cmd.Process.Pid {
		t.Fatalf("served by %d (%v), not by the dedicated server %d", st.Pid, err, cmd.Process.Pid)
	}
	if got := startsOf(t, starts); got != nil {
		t.Fatalf("a shared server was started: %q", got)
	}
}
