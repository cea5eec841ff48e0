package stateclient

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A spawned server that cannot open its state says why through every call's error: exit code
// and last stderr lines in a *StartError that is also ErrClosed, as the TS and Python clients do.
func TestASpawnedServerThatCannotStartSaysWhyInEveryCall(t *testing.T) {
	dir := t.TempDir()
	state := filepath.Join(dir, "state.json")
	if err := os.WriteFile(state, []byte("{not json"), 0o600); err != nil {
		t.Fatal(err)
	}
	stderr := &lockedBuffer{}
	c, err := Spawn(ctxT(t), state, SpawnOptions{Command: serverCommand(t), Env: testEnv(t), Stderr: stderr, Args: append([]string{"--no-socket"}, serveArgs...)})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	for i := 0; i < 2; i++ { // the pending call, then a later one
		_, err := c.SnapshotSessions(ctxT(t))
		var se *StartError
		if !errors.Is(err, ErrClosed) || !errors.As(err, &se) {
			t.Fatalf("call %d: %v, want ErrClosed and a *StartError", i, err)
		}
		if se.ExitCode != 1 || se.Signal != "" {
			t.Fatalf("exit %d signal %q, want 1", se.ExitCode, se.Signal)
		}
		if n := len(se.Stderr); n == 0 || !strings.Contains(se.Stderr[n-1], "invalid JSON") {
			t.Fatalf("last stderr lines %q do not say why", se.Stderr)
		}
		if !strings.Contains(err.Error(), "exited with code 1 before it answered") || !strings.Contains(err.Error(), "invalid JSON") {
			t.Fatalf("message: %v", err)
		}
	}
	if !strings.Contains(stderr.String(), "invalid JSON") {
		t.Fatalf("the server's stderr was not passed on: %q", stderr.String())
	}
}

// A server that answered and then ended is a closed connection, not a start error.
func TestAServerThatAnsweredThenEndedIsNoStartError(t *testing.T) {
	c, _ := spawnTest(t, SpawnOptions{})
	must(c.SnapshotSessions(ctxT(t)))(t)
	if err := c.process.Kill(); err != nil {
		t.Fatal(err)
	}
	<-c.Done()
	_, err := c.SnapshotSessions(ctxT(t))
	var se *StartError
	if !errors.Is(err, ErrClosed) || errors.As(err, &se) {
		t.Fatalf("%v: want ErrClosed without a StartError", err)
	}
}

func TestStderrTailKeepsTheLastLinesAndBoundsThem(t *testing.T) {
	var out strings.Builder
	tail := &stderrTail{w: &out}
	for i := 0; i < 30; i++ {
		if _, err := tail.Write([]byte("line " + string(rune('a'+i%26)) + "\n")); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := tail.Write([]byte(strings.Repeat("x", stderrLineBytes+10))); err != nil {
		t.Fatal(err)
	}
	got := tail.last()
	if len(got) != stderrTailLines || len(got[len(got)-1]) != stderrLineBytes || got[0] != "line l" {
		t.Fatalf("kept %d lines, first %q, last %d bytes", len(got), got[0], len(got[len(got)-1]))
	}
	if out.Len() != 30*7+stderrLineBytes+10 {
		t.Fatalf("passed on %d bytes", out.Len())
	}
}
