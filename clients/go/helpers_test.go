package stateclient

import (
	"bytes"
	"context"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
	"time"
)

// The tests run the real built server: $HERRSCHER_STATE_CLI, else the checkout's
// dist/src/cli.js (`npm run build` makes it), with node from PATH.
func serverCommand(t *testing.T) []string {
	t.Helper()
	cli := os.Getenv("HERRSCHER_STATE_CLI")
	if cli == "" {
		abs, err := filepath.Abs("../../dist/src/cli.js")
		if err != nil {
			t.Fatal(err)
		}
		cli = abs
	}
	if _, err := os.Stat(cli); err != nil {
		t.Fatalf("the built server is missing (%v): run `npm run build` in the repository first", err)
	}
	return []string{"node", cli}
}

// testEnv is the server's environment: its own default socket folder, so no test reaches
// another's (or a real) server by the default rule.
func testEnv(t *testing.T) []string {
	// Not t.TempDir(): its path holds the test's name, and the default socket beneath it must
	// stay under the 107 bytes a unix socket path may have whatever TMPDIR is.
	runtime, err := os.MkdirTemp("", "hs")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(runtime) })
	if err := os.Chmod(runtime, 0o700); err != nil {
		t.Fatal(err)
	}
	return append(os.Environ(), "XDG_RUNTIME_DIR="+runtime, "HERRSCHER_STATE_SOCKET=")
}

// lockedBuffer collects a child's stderr for failure messages.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

type socketServer struct {
	dir, state, socket string
	cmd                *exec.Cmd
	stderr             *lockedBuffer
}

// startSocketServer runs `serve --socket` in a temp dir and waits until the socket accepts and
// the server has recorded it in the state dir (it records after it listens).
func startSocketServer(t *testing.T) *socketServer {
	t.Helper()
	dir := t.TempDir()
	s := &socketServer{dir: dir, state: filepath.Join(dir, "state.json"), socket: filepath.Join(dir, "s.sock"), stderr: &lockedBuffer{}}
	command := serverCommand(t)
	s.cmd = exec.Command(command[0], append(command[1:], "serve", "--state", s.state, "--socket", s.socket)...)
	s.cmd.Stderr = s.stderr
	s.cmd.Env = testEnv(t)
	if err := s.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() {
		_ = s.cmd.Wait()
		close(exited)
	}()
	t.Cleanup(func() {
		_ = s.cmd.Process.Kill()
		<-exited
	})
	deadline := time.Now().Add(20 * time.Second)
	for {
		conn, err := net.Dial("unix", s.socket)
		if err == nil {
			conn.Close()
			if rec, _ := ReadServerRecord(s.state); rec != nil {
				return s
			}
		}
		select {
		case <-exited:
			t.Fatalf("the server exited: %s", s.stderr.String())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("the server never listened on %s: %s", s.socket, s.stderr.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func dialTest(t *testing.T, s *socketServer) *Client {
	t.Helper()
	c, err := Dial(context.Background(), DialOptions{Socket: s.socket})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func spawnTest(t *testing.T, o SpawnOptions) (*Client, string) {
	t.Helper()
	dir := t.TempDir()
	state := filepath.Join(dir, "state.json")
	o.Command = serverCommand(t)
	if o.Env == nil {
		o.Env = testEnv(t)
	}
	if o.Stderr == nil {
		o.Stderr = &lockedBuffer{}
	}
	c, err := Spawn(context.Background(), state, o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if c.Err() == nil {
			c.Close()
		}
	})
	return c, dir
}

func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// must(c.X(ctx, …))(t) is X's value, or the test fails with X's error.
func must[T any](v T, err error) func(*testing.T) T {
	return func(t *testing.T) T {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
}
