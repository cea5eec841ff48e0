package stateclient

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"sync"
	"time"
)

// startErrorWait bounds how long a call waits, after the server closed stdout before any
// answer, for its exit status (a server closes stdout as it exits).
const startErrorWait = 2 * time.Second

// SpawnOptions says how Spawn starts the server.
type SpawnOptions struct {
	// Command runs the server; default {"herrscher-state"} from PATH. A checkout uses
	// {"node", "<repo>/dist/src/cli.js"}.
	Command []string
	// LockFile is the open lock file (<dir>/.<base>.lock) on which the caller holds the flock,
	// as Herrscher's host does before anything else; it is handed to the server as fd 3
	// (--lock-fd 3), so the server serves under the caller's lock instead of refusing.
	LockFile *os.File
	// Args are more `serve` arguments (--no-socket, --socket P, --durability write…).
	Args []string
	// Stderr receives the server's log; default os.Stderr.
	Stderr io.Writer
	// Env is the server's environment; default the caller's.
	Env []string
	// ShutdownTimeout bounds how long Close waits for shutdown; default 10s.
	ShutdownTimeout time.Duration
}

type stdioPipes struct {
	io.ReadCloser
	io.WriteCloser
}

func (p stdioPipes) Close() error {
	werr := p.WriteCloser.Close()
	rerr := p.ReadCloser.Close()
	if werr != nil {
		return werr
	}
	return rerr
}

// Spawn starts `herrscher-state serve --stdio --state statePath` as a child and speaks to it over
// its stdin and stdout, as the host does. ctx bounds the start only (the process outlives it).
// Close ends the server in order: shutdown (pending writes finish), exit, then waits for it.
func Spawn(ctx context.Context, statePath string, o SpawnOptions) (*Client, error) {
	command := o.Command
	if len(command) == 0 {
		command = []string{"herrscher-state"}
	}
	args := append(append([]string{}, command[1:]...), "serve", "--stdio", "--state", statePath)
	if o.LockFile != nil {
		args = append(args, "--lock-fd", "3")
	}
	args = append(args, o.Args...)
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	cmd := exec.Command(command[0], args...)
	if o.LockFile != nil {
		cmd.ExtraFiles = []*os.File{o.LockFile} // fd 3 in the child
	}
	tail := &stderrTail{w: o.Stderr}
	if tail.w == nil {
		tail.w = os.Stderr
	}
	cmd.Stderr = tail
	cmd.Env = o.Env
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("herrscher-state: start %s: %w", command[0], err)
	}
	var waitOnce sync.Once
	var waitErr error
	wait := func() error { // cmd.Wait may run once; after stdout's EOF, so stdout is drained
		waitOnce.Do(func() { waitErr = cmd.Wait() })
		return waitErr
	}
	waited := make(chan error, 1)
	c := NewClient(stdioPipes{ReadCloser: stdout, WriteCloser: stdin})
	c.endedSilent = func(cause error) error {
		// The server ended before it answered anything: its exit status and its last words are
		// the reason (a start that failed), not the closed pipe.
		exited := make(chan error, 1)
		go func() { exited <- wait() }()
		select {
		case err := <-exited:
			if se := startErrorOf(err, tail.last()); se != nil {
				return se
			}
		case <-time.After(startErrorWait):
		}
		return cause
	}
	go func() {
		<-c.Done()
		waited <- wait()
	}()
	timeout := o.ShutdownTimeout
	if timeout == 0 {
		timeout = 10 * time.Second
	}
	c.onClose = func() error {
		if c.Err() == nil {
			sctx, cancel := context.WithTimeout(context.Background(), timeout)
			err := c.Shutdown(sctx)
			cancel()
			if err == nil {
				_ = c.Exit(context.Background())
			}
		}
		_ = stdin.Close() // EOF: a server without shutdown also ends
		select {
		case err := <-waited:
			return exitError(err)
		case <-time.After(timeout):
			_ = cmd.Process.Kill()
			return fmt.Errorf("herrscher-state: the server did not exit within %s after shutdown; killed", timeout)
		}
	}
	c.process = cmd.Process
	return c, nil
}

func exitError(err error) error {
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		// Wrapped, so a caller can read the exit code (errors.As an *exec.ExitError).
		return fmt.Errorf("herrscher-state: the server exited: %w", ee)
	}
	return err
}

// Process is the spawned server's process (nil for a dialled client).
func (c *Client) Process() *os.Process { return c.process }
