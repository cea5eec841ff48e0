package state

import (
	"errors"
	"os/exec"
	"reflect"
	"strings"
	"testing"
)

// A lock holder is a herrscher-state server exactly when its command line has the argument
// "serve"; no pid, a process without it and a process that is gone are not.
func TestHolderIsServerReadsTheHoldersArguments(t *testing.T) {
	for _, pid := range []int{0, -1} {
		if holderIsServer(pid) {
			t.Errorf("pid %d is a server", pid)
		}
	}
	// sh's own arguments: -c, the script and $0, here "serve".
	server := exec.Command("sh", "-c", "read _", "serve")
	other := exec.Command("sh", "-c", "read _", "served")
	for _, c := range []*exec.Cmd{server, other} {
		in, err := c.StdinPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := c.Start(); err != nil {
			t.Fatal(err)
		}
		defer func(c *exec.Cmd) { in.Close(); c.Wait() }(c)
	}
	if !holderIsServer(server.Process.Pid) {
		t.Error("a process with the argument serve is not taken for a server")
	}
	if holderIsServer(other.Process.Pid) {
		t.Error("a process with the argument served is taken for a server")
	}
	gone := exec.Command("sh", "-c", "exit 0", "serve")
	if err := gone.Run(); err != nil {
		t.Fatal(err)
	}
	if holderIsServer(gone.Process.Pid) {
		t.Error("a process that is gone is taken for a server")
	}
}

// The serve options of a started server: the log level, and the durability the environment
// names, else write.
func TestServerArgsTakeTheDurabilityFromTheEnvironment(t *testing.T) {
	t.Setenv("HERRSCHER_STATE_DURABILITY", "")
	if got, want := serverArgs(), []string{"--log-level", "warn", "--durability", "write"}; !reflect.DeepEqual(got, want) {
		t.Errorf("serverArgs() = %q, want %q", got, want)
	}
	t.Setenv("HERRSCHER_STATE_DURABILITY", "sync")
	if got := serverArgs(); got[len(got)-1] != "sync" {
		t.Errorf("serverArgs() = %q, want durability sync", got)
	}
}

// The locked error names the holder as well as it is known.
func TestLockedErrorNamesTheHolder(t *testing.T) {
	cause := errors.New("held")
	for _, c := range []struct {
		e    lockedError
		want string
	}{
		{lockedError{statePath: "/s/state.json", err: cause}, "locked by another process, which"},
		{lockedError{statePath: "/s/state.json", pid: 42, err: cause}, "locked by process 42, which"},
		{lockedError{statePath: "/s/state.json", pid: 42, server: true, err: cause}, "locked by a herrscher-state server (process 42), which"},
		{lockedError{statePath: "/s/state.json", server: true, err: cause}, "locked by a herrscher-state server (another process), which"},
	} {
		msg := c.e.Error()
		if !strings.Contains(msg, c.want) || !strings.Contains(msg, "/s/.herrscher-state/server.lock") || !strings.HasSuffix(msg, ": held") {
			t.Errorf("%q does not say %q, the lock and the cause", msg, c.want)
		}
		if !errors.Is(&c.e, cause) {
			t.Error("the locked error does not unwrap to its cause")
		}
	}
}
