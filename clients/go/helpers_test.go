package stateclient

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
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
func serverCLI() (string, error) {
	cli := os.Getenv("HERRSCHER_STATE_CLI")
	if cli == "" {
		abs, err := filepath.Abs("../../dist/src/cli.js")
		if err != nil {
			return "", err
		}
		cli = abs
	}
	if _, err := os.Stat(cli); err != nil {
		return "", fmt.Errorf("the built server is missing (%v): run `npm run build` in the repository first", err)
	}
	return cli, nil
}

// serveArgs go to every server the tests start: it answers a write once write(2) returned, as
// Go's state package writes, instead of after an fdatasync. What these tests check is the client
// and the wire, not the flush (test/store checks each durability mode), and the syncs were most
// of a write's cost here; a server killed with SIGKILL still leaves what it acknowledged in the
// page cache, where the restarted one reads it.
var serveArgs = []string{"--durability", "write"}

func serverCommand(t *testing.T) []string {
	t.Helper()
	cli, err := serverCLI()
	if err != nil {
		t.Fatal(err)
	}
	return []string{"node", cli}
}

// envWithRuntime is the server's environment: its own default socket folder, so no test
// reaches another's (or a real) server by the default rule.
func envWithRuntime(runtime string) []string {
	return append(os.Environ(), "XDG_RUNTIME_DIR="+runtime, "HERRSCHER_STATE_SOCKET=")
}

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
	return envWithRuntime(runtime)
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
	exited             chan struct{}
}

// launchSocketServer runs `serve --socket` in dir and waits until the socket accepts and the
// server has recorded it in the state dir (it records after it listens). On an error the
// server is stopped.
func launchSocketServer(dir string, env []string) (*socketServer, error) {
	cli, err := serverCLI()
	if err != nil {
		return nil, err
	}
	s := &socketServer{dir: dir, state: filepath.Join(dir, "state.json"), socket: filepath.Join(dir, "s.sock"), stderr: &lockedBuffer{}, exited: make(chan struct{})}
	s.cmd = exec.Command("node", append([]string{cli, "serve", "--state", s.state, "--socket", s.socket}, serveArgs...)...)
	s.cmd.Stderr = s.stderr
	s.cmd.Env = env
	if err := s.cmd.Start(); err != nil {
		return nil, err
	}
	go func() {
		_ = s.cmd.Wait()
		close(s.exited)
	}()
	deadline := time.Now().Add(20 * time.Second)
	for {
		conn, err := net.Dial("unix", s.socket)
		if err == nil {
			conn.Close()
			if rec, _ := ReadServerRecord(s.state); rec != nil {
				return s, nil
			}
		}
		select {
		case <-s.exited:
			return nil, fmt.Errorf("the server exited: %s", s.stderr.String())
		default:
		}
		if time.Now().After(deadline) {
			s.kill()
			return nil, fmt.Errorf("the server never listened on %s: %s", s.socket, s.stderr.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// kill ends the server (SIGKILL) and waits for it.
func (s *socketServer) kill() {
	_ = s.cmd.Process.Kill()
	<-s.exited
}

// startSocketServer is a server on a state file of the test's own, killed when the test ends.
func startSocketServer(t *testing.T) *socketServer {
	t.Helper()
	s, err := launchSocketServer(t.TempDir(), testEnv(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.kill)
	return s
}

// shared is one server for the tests that need a server but not a state file of their own;
// each uses session names no other test uses, and none stops, pauses or breaks the server.
// The first such test starts it; TestMain kills it.
var shared struct {
	once sync.Once
	dir  string
	s    *socketServer
	err  error
}

func sharedSocketServer(t *testing.T) *socketServer {
	t.Helper()
	shared.once.Do(func() {
		if shared.dir, shared.err = os.MkdirTemp("", "hs-shared"); shared.err != nil {
			return
		}
		state, runtime := filepath.Join(shared.dir, "state"), filepath.Join(shared.dir, "runtime")
		for _, d := range []string{state, runtime} {
			if shared.err = os.Mkdir(d, 0o700); shared.err != nil {
				return
			}
		}
		shared.s, shared.err = launchSocketServer(state, envWithRuntime(runtime))
	})
	if shared.err != nil {
		t.Fatal(shared.err)
	}
	return shared.s
}

func TestMain(m *testing.M) {
	code := m.Run()
	stopFakes()
	if shared.s != nil {
		shared.s.kill()
	}
	if shared.dir != "" {
		os.RemoveAll(shared.dir)
	}
	os.Exit(code)
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
	o.Args = append(append([]string{}, serveArgs...), o.Args...)
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

// readRequestID reads the next request line a fake peer gets and returns its id.
func readRequestID(r *bufio.Reader) (int64, error) {
	line, err := r.ReadBytes('\n')
	if err != nil {
		return 0, err
	}
	var req struct {
		ID int64 `json:"id"`
	}
	err = json.Unmarshal(line, &req)
	return req.ID, err
}
