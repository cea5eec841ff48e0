package stateclient

import (
	"context"
	"encoding/json"
	"errors"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func env(m map[string]string) func(string) string { return func(k string) string { return m[k] } }

func TestTheDiscoveryRuleTakesTheFirstStepThatApplies(t *testing.T) {
	dir := t.TempDir()
	state := filepath.Join(dir, "state.json")
	e := map[string]string{"XDG_RUNTIME_DIR": "/run/user/7", "HERRSCHER_STATE_DIR": dir}

	p, src, err := FindSocket(DialOptions{Getenv: env(e)})
	if err != nil || p != "/run/user/7/herrscher-state/herrscher-state.sock" || src != SourceDefault {
		t.Fatalf("default: %s %s %v", p, src, err)
	}
	p, _, _ = FindSocket(DialOptions{Getenv: env(e), Instance: "alice"})
	if p != "/run/user/7/herrscher-state/herrscher-state-alice.sock" {
		t.Fatalf("instance: %s", p)
	}
	p, _, _ = FindSocket(DialOptions{Getenv: env(map[string]string{"TMPDIR": "/tmp/x", "HERRSCHER_STATE_DIR": dir})})
	if want := filepath.Join("/tmp/x", "herrscher-state-"+itoa(os.Getuid()), "herrscher-state.sock"); p != want {
		t.Fatalf("TMPDIR default: %s, want %s", p, want)
	}

	// A record by a live process (this one) beats the default; a dead pid's is ignored.
	rec, _ := ServerRecordPath(state)
	if err := os.MkdirAll(filepath.Dir(rec), 0o700); err != nil {
		t.Fatal(err)
	}
	write := func(pid int) {
		b, _ := json.Marshal(ServerRecord{Pid: pid, Socket: "/x/recorded.sock", State: state})
		if err := os.WriteFile(rec, b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write(os.Getpid())
	p, src, _ = FindSocket(DialOptions{Getenv: env(e)})
	if p != "/x/recorded.sock" || src != SourceRecord {
		t.Fatalf("record: %s %s", p, src)
	}
	write(1 << 22) // above pid_max's default: no such process
	if _, src, _ = FindSocket(DialOptions{Getenv: env(e)}); src != SourceDefault {
		t.Fatalf("a dead server's record was used: %s", src)
	}
	write(os.Getpid())

	e["HERRSCHER_STATE_SOCKET"] = "/e/env.sock"
	if p, src, _ = FindSocket(DialOptions{Getenv: env(e)}); p != "/e/env.sock" || src != SourceEnv {
		t.Fatalf("env: %s %s", p, src)
	}
	if p, src, _ = FindSocket(DialOptions{Getenv: env(e), Socket: "/given.sock"}); p != "/given.sock" || src != SourceExplicit {
		t.Fatalf("explicit: %s %s", p, src)
	}
}

func itoa(n int) string {
	b, _ := json.Marshal(n)
	return string(b)
}

func TestASocketOthersCouldHavePlacedIsRefusedBeforeAnythingIsSent(t *testing.T) {
	dir := t.TempDir()
	if err := os.Chmod(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	sock := filepath.Join(dir, "s.sock")
	l, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if err := CheckSocket(sock); err != nil {
		t.Fatalf("our socket in our folder: %v", err)
	}
	if err := os.Chmod(dir, 0o777); err != nil {
		t.Fatal(err)
	}
	err = CheckSocket(sock)
	if !errors.Is(err, ErrUntrustedSocket) || !strings.Contains(err.Error(), "writable by others") {
		t.Fatalf("a world-writable folder: %v", err)
	}
	if _, err := Dial(ctxT(t), DialOptions{Socket: sock}); !errors.Is(err, ErrUntrustedSocket) {
		t.Fatalf("Dial must refuse too: %v", err)
	}
	if err := os.Chmod(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	plain := filepath.Join(dir, "plain")
	if err := os.WriteFile(plain, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	// A regular file or a folder is a wrong path, not an attack: no server, said as such.
	for path, what := range map[string]string{plain: "a regular file", dir: "a folder"} {
		err := CheckSocket(path)
		if !errors.Is(err, ErrNoServer) || errors.Is(err, ErrUntrustedSocket) || !strings.Contains(err.Error(), "it is "+what+", not a server's socket") || strings.Contains(err.Error(), "impersonat") {
			t.Fatalf("%s at the socket path: %v", what, err)
		}
		if _, err := Dial(ctxT(t), DialOptions{Socket: path}); !errors.Is(err, ErrNoServer) || !strings.Contains(err.Error(), what) {
			t.Fatalf("Dial of %s: %v", what, err)
		}
		// Not waited on either: a server never replaces it, so Wait returns at once.
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		_, err = Dial(ctx, DialOptions{Socket: path, Wait: true})
		waited := ctx.Err()
		cancel()
		if !errors.Is(err, ErrNoServer) || waited != nil {
			t.Fatalf("Dial with Wait of %s: %v (waited until %v)", what, err, waited)
		}
	}
}

// Dial with only the state file named reaches its server through the record it wrote.
func TestDialFindsTheServerOfAStateFileThroughItsRecord(t *testing.T) {
	t.Parallel()
	s := sharedSocketServer(t)
	c, err := Dial(ctxT(t), DialOptions{State: s.state, Getenv: env(map[string]string{"XDG_RUNTIME_DIR": t.TempDir()})})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if got := must(c.Status(ctxT(t)))(t); got.Socket == nil || *got.Socket != s.socket {
		t.Fatalf("reached %+v", got)
	}
}

// Dial with no socket named reaches the server through $HERRSCHER_STATE_SOCKET.
func TestDialFollowsTheEnvironment(t *testing.T) {
	t.Parallel()
	s := sharedSocketServer(t)
	c, err := Dial(ctxT(t), DialOptions{Getenv: env(map[string]string{"HERRSCHER_STATE_SOCKET": s.socket})})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if got := must(c.Initialize(ctxT(t)))(t); got.StatePath != s.state {
		t.Fatalf("reached %s", got.StatePath)
	}
}

// Dial told a state whose server is not the one at the socket found (here through
// $HERRSCHER_STATE_SOCKET, as the default socket would be) fails with ErrNoServer; the same
// state under another name (a symlinked folder) is the same server.
func TestDialNamingAStateReachesThatStatesServerOrNone(t *testing.T) {
	t.Parallel()
	s := sharedSocketServer(t)
	other := filepath.Join(t.TempDir(), "state.json")
	e := env(map[string]string{"HERRSCHER_STATE_SOCKET": s.socket})
	c, err := Dial(ctxT(t), DialOptions{State: other, Getenv: e})
	if !errors.Is(err, ErrNoServer) || !strings.Contains(err.Error(), "no server for "+other) || !strings.Contains(err.Error(), s.state) {
		if c != nil {
			c.Close()
		}
		t.Fatalf("Dial for another state: %v", err)
	}
	if _, err := Dial(ctxT(t), DialOptions{State: filepath.Join(t.TempDir(), "state.json"), Socket: filepath.Join(t.TempDir(), "none.sock")}); !errors.Is(err, ErrNoServer) {
		t.Fatalf("Dial for a state where nothing listens: %v", err)
	}
	link := filepath.Join(t.TempDir(), "b")
	if err := os.Symlink(filepath.Dir(s.state), link); err != nil {
		t.Fatal(err)
	}
	c, err = Dial(ctxT(t), DialOptions{State: filepath.Join(link, "state.json"), Getenv: e})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if got := must(c.Status(ctxT(t)))(t); got.StatePath != s.state {
		t.Fatalf("reached %s", got.StatePath)
	}
}
