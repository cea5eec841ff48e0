package state

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	stateclient "github.com/herrscher/herrscher-state/clients/go"
)

// startDedicated runs `serve --state path` with more args, stopped at the end of the test.
func startDedicated(t *testing.T, path string, args ...string) *exec.Cmd {
	t.Helper()
	command := serverCommand()
	all := append(append(append([]string{}, command[1:]...), "serve", "--state", path), args...)
	cmd := exec.Command(command[0], all...)
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe() // --stdio: it serves until stdin ends
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		stdin.Close()
		_ = cmd.Process.Signal(os.Interrupt)
		_ = cmd.Wait()
	})
	return cmd
}

// A state a dedicated server serves (it recorded itself) is served by that server, not by the
// shared one.
func TestADedicatedServersStateIsServedByIt(t *testing.T) {
	t.Parallel()
	dir := stateDir(t)
	path := filepath.Join(dir, "state.json")
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
	if err := mustLoad(t, path).AddSession(Session{Name: "a"}); err != nil {
		t.Fatal(err)
	}
	if pid := servingPid(t, path); pid != cmd.Process.Pid {
		t.Fatalf("served by %d, not by the dedicated server %d", pid, cmd.Process.Pid)
	}
}

// A herrscher-state server that serves the state on stdio alone (a host's --no-socket
// sidecar) lets no other process in: the call fails with an error that names it, within a
// bound, and no server is started for it.
func TestAStateServedWithoutASocketIsNamedInTheError(t *testing.T) {
	starts, _ := ownSharedServer(t)
	dir := stateDir(t)
	path := filepath.Join(dir, "state.json")
	if err := os.WriteFile(path, []byte(`{"home":{"id":"","type":""},"sessions":[]}`), 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := startDedicated(t, path, "--stdio", "--no-socket")
	eventually(t, "the sidecar holds the state's lock", func() bool {
		f, err := os.OpenFile(serverLockOf(path), os.O_RDWR, 0)
		if err != nil {
			return false
		}
		defer f.Close()
		return !tryFlock(f)
	})
	_, err := LoadState(path)
	var locked *lockedError
	if !errors.As(err, &locked) || !locked.server || locked.pid != cmd.Process.Pid {
		t.Fatalf("LoadState: %v, want the error naming the server %d", err, cmd.Process.Pid)
	}
	var others []int
	for _, pid := range startedPids(starts) {
		if pid != cmd.Process.Pid {
			others = append(others, pid)
		}
	}
	if len(others) > 1 {
		t.Fatalf("servers started for it: %v, want the shared one at most", others)
	}
}
