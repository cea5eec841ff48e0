package stateclient

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"sync"
	"syscall"
)

// StartError is why a spawned server ended before it answered anything: its exit status and the
// last lines it wrote to stderr, the reason among them (`cannot open the state …: invalid JSON`).
// Calls on such a client fail with an error that is ErrClosed (errors.Is) and a *StartError
// (errors.As), as the TypeScript and Python clients' StartError.
type StartError struct {
	// ExitCode is the server's exit code, -1 when a signal ended it.
	ExitCode int
	// Signal names the signal that ended it ("killed"), or is "".
	Signal string
	// Stderr holds its last lines on stderr, oldest first (at most stderrTailLines).
	Stderr []string
}

func (e *StartError) Error() string {
	last := ""
	if n := len(e.Stderr); n > 0 {
		last = ": " + e.Stderr[n-1]
	}
	if e.Signal != "" {
		return fmt.Sprintf("herrscher-state serve was ended by signal %s before it answered%s", e.Signal, last)
	}
	return fmt.Sprintf("herrscher-state serve exited with code %d before it answered%s", e.ExitCode, last)
}

// startErrorOf is the StartError of a server whose Wait returned err, nil when it did not exit.
func startErrorOf(err error, stderr []string) *StartError {
	if err == nil {
		return &StartError{ExitCode: 0, Stderr: stderr}
	}
	var ee *exec.ExitError
	if !errors.As(err, &ee) {
		return nil
	}
	if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return &StartError{ExitCode: -1, Signal: ws.Signal().String(), Stderr: stderr}
	}
	return &StartError{ExitCode: ee.ExitCode(), Stderr: stderr}
}

// The last lines of a server's stderr kept for its StartError, and the longest line kept whole.
const (
	stderrTailLines = 20
	stderrLineBytes = 4096
)

// stderrTail passes the server's stderr on to w and keeps its last lines.
type stderrTail struct {
	w       io.Writer
	mu      sync.Mutex
	partial []byte
	lines   []string
}

func (t *stderrTail) Write(p []byte) (int, error) {
	t.mu.Lock()
	t.partial = append(t.partial, p...)
	for {
		i := bytes.IndexByte(t.partial, '\n')
		if i < 0 {
			break
		}
		t.keep(t.partial[:i])
		t.partial = t.partial[i+1:]
	}
	if len(t.partial) > stderrLineBytes {
		t.keep(t.partial)
		t.partial = nil
	}
	t.mu.Unlock()
	return t.w.Write(p)
}

func (t *stderrTail) keep(line []byte) {
	if len(line) > stderrLineBytes {
		line = line[:stderrLineBytes]
	}
	t.lines = append(t.lines, string(line))
	if over := len(t.lines) - stderrTailLines; over > 0 {
		t.lines = append([]string(nil), t.lines[over:]...)
	}
}

// last is the lines kept, an unfinished last line included.
func (t *stderrTail) last() []string {
	t.mu.Lock()
	defer t.mu.Unlock()
	out := append([]string(nil), t.lines...)
	if len(t.partial) > 0 {
		out = append(out, string(t.partial))
	}
	if over := len(out) - stderrTailLines; over > 0 {
		out = out[over:]
	}
	return out
}
