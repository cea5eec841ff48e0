package stateclient

import (
	"bufio"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// The examples run as Herrscher would run them: the host takes the lock, spawns the server
// with it and appends a turn; the bridge finds the server through the state file's record,
// watches the transcript and replies; the host sees the reply and shuts the server down.
func TestTheHostAndBridgeExamplesTalkThroughTheServer(t *testing.T) {
	t.Parallel()
	// One go build for both (each go command costs its own start and cache checks), linked
	// without the symbol table and DWARF, which nothing here reads (a third less link CPU).
	bin := t.TempDir()
	if out, err := exec.Command("go", "build", "-ldflags=-s -w", "-o", bin+string(filepath.Separator), "./examples/host", "./examples/bridge").CombinedOutput(); err != nil {
		t.Fatalf("go build the examples: %v\n%s", err, out)
	}
	dir := t.TempDir()
	state := filepath.Join(dir, "state.json")
	env := testEnv(t)
	stderr := &lockedBuffer{}

	host := exec.Command(filepath.Join(bin, "host"), "-state", state, "-server", strings.Join(serverCommand(t), " "))
	host.Env = env
	host.Stderr = stderr
	hostOut, err := host.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := host.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = host.Process.Kill() })
	lines := bufio.NewScanner(hostOut)
	var hostSaid []string
	for lines.Scan() {
		hostSaid = append(hostSaid, lines.Text())
		if strings.HasPrefix(lines.Text(), "appended") {
			break
		}
	}
	if len(hostSaid) < 2 || !strings.HasPrefix(hostSaid[0], "socket ") {
		t.Fatalf("the host said %q; stderr: %s", hostSaid, stderr.String())
	}

	bridge := exec.Command(filepath.Join(bin, "bridge"), "-state", state)
	bridge.Env = env
	bridgeOut, err := bridge.CombinedOutput()
	if err != nil {
		t.Fatalf("bridge: %v\n%s", err, bridgeOut)
	}
	for lines.Scan() {
		hostSaid = append(hostSaid, lines.Text())
	}
	if err := host.Wait(); err != nil {
		t.Fatalf("host: %v; said %q; stderr: %s", err, hostSaid, stderr.String())
	}
	if got := hostSaid[len(hostSaid)-1]; got != "reply seq 1: echo: hello from the host" {
		t.Fatalf("the host's last line: %q", got)
	}
	if !strings.Contains(string(bridgeOut), "replied to seq 0") {
		t.Fatalf("bridge said %q", bridgeOut)
	}
	data, err := os.ReadFile(filepath.Join(dir, "transcripts", "main.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(data), "\n"); n != 2 || !strings.Contains(string(data), `"text":"echo: hello from the host"`) {
		t.Fatalf("the transcript:\n%s", data)
	}
	// The host is gone and the lock with it: whoever starts next (a daemon, a server) gets it.
	f, err := os.OpenFile(filepath.Join(dir, ".state.json.lock"), os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		t.Fatalf("the lock is still held after the host exited: %v", err)
	}
}

// Herrscher's daemon lock is the daemon's: while a host holds it, a server spawned without the
// lock fd serves beside it (its single-writer lock is its own, in .herrscher-state/) and the
// host keeps its lock; handed over with the lock fd, the server holds it too. Close of that
// spawned server shuts it down: it exits 0, Close has waited for it, what it acknowledged is in
// its files, and the host keeps its lock.
func TestSpawnBesideTheHostsLockAndUnderIt(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	state := filepath.Join(dir, "state.json")
	f, err := os.OpenFile(filepath.Join(dir, ".state.json.lock"), os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		t.Fatal(err)
	}
	beside, err := Spawn(ctxT(t), state, SpawnOptions{Command: serverCommand(t), Env: testEnv(t), Stderr: &lockedBuffer{}, Args: append([]string{"--no-socket"}, serveArgs...)})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := beside.SnapshotSessions(ctxT(t)); err != nil {
		t.Fatalf("a server beside the host's lock did not answer: %v", err)
	}
	other, err := os.OpenFile(filepath.Join(dir, ".state.json.lock"), os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	if err := syscall.Flock(int(other.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); !errors.Is(err, syscall.EWOULDBLOCK) {
		t.Fatalf("the host's lock is not held by the host alone while a server serves beside it: %v", err)
	}
	other.Close()
	if err := beside.Close(); err != nil {
		t.Fatalf("close: %v", err)
	}

	c, err := Spawn(ctxT(t), state, SpawnOptions{Command: serverCommand(t), Env: testEnv(t), Stderr: &lockedBuffer{}, LockFile: f, Args: append([]string{"--no-socket"}, serveArgs...)})
	if err != nil {
		t.Fatal(err)
	}
	must(c.AddSession(ctxT(t), Session{Name: "locked"}))(t)
	must(c.AppendTranscript(ctxT(t), "locked", TranscriptEntry{Ts: "t", Role: "user", Text: "x"}))(t)
	if err := c.Close(); err != nil {
		t.Fatalf("close: %v", err)
	}
	if ps, err := c.Process().Wait(); err == nil || ps != nil {
		// Close already waited for the process: a second Wait must say so.
		t.Fatalf("the server was not waited for by Close: %v %v", ps, err)
	}
	// The append is in its file once Close returned (read as Go reads it; the restart tests
	// read a server's files back through a new one).
	if data, err := os.ReadFile(filepath.Join(dir, "transcripts", "locked.jsonl")); err != nil || strings.Count(string(data), "\n") != 1 || !strings.Contains(string(data), `"text":"x"`) {
		t.Fatalf("the append did not survive Close: %q, %v", data, err)
	}
	// The lock is still ours: the server never unlocks what it did not take.
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		t.Fatalf("the host lost its lock: %v", err)
	}
}
