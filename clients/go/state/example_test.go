package state

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// Herrscher's flow, in processes: examples/daemon locks, loads, adds and records; an
// operator process archives and the daemon sees it; the daemon is killed with -9 and a
// restarted one finds every acknowledged entry.
func TestExampleDaemonFlow(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs processes")
	}
	t.Parallel()
	bin := exampleBinary(t)
	dir := t.TempDir()
	daemon := exec.Command(bin, "-dir", dir, "-name", "main")
	stdin, err := daemon.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := daemon.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr lockedWriter
	daemon.Stderr = &stderr
	if err := daemon.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = daemon.Process.Kill(); _ = daemon.Wait() })
	lines := make(chan string, 100)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
	}()
	expect := func(want string) {
		t.Helper()
		select {
		case got, ok := <-lines:
			if !ok || got != want {
				t.Fatalf("daemon said %q (open %v), want %q; stderr:\n%s", got, ok, want, stderr.String())
			}
		case <-time.After(30 * time.Second):
			t.Fatalf("daemon never said %q; stderr:\n%s", want, stderr.String())
		}
	}
	expect("ready")
	acked := []string{}
	for i := 0; i < 3; i++ {
		fmt.Fprintf(stdin, "turn %d\n", i)
		expect(fmt.Sprintf("ok turn %d", i))
		acked = append(acked, fmt.Sprintf("turn %d", i))
	}
	op := exec.Command(bin, "-dir", dir, "-name", "main", "-operator")
	if out, err := op.CombinedOutput(); err != nil {
		t.Fatalf("operator: %v\n%s", err, out)
	}
	expect("archived")
	for i := 3; i < 6; i++ {
		fmt.Fprintf(stdin, "turn %d\n", i)
		expect(fmt.Sprintf("ok turn %d", i))
		acked = append(acked, fmt.Sprintf("turn %d", i))
	}
	fmt.Fprintf(stdin, "unacknowledged\n") // may or may not land: not counted
	if err := daemon.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = daemon.Wait()

	check := exec.Command(bin, "-dir", dir, "-name", "main", "-check")
	check.Stderr = os.Stderr
	out, err := check.Output()
	if err != nil {
		t.Fatalf("restart: %v", err)
	}
	var got struct {
		Found      bool
		Session    Session
		Transcript []TranscriptEntry
	}
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	if !got.Found || !got.Session.Archived || got.Session.Incarnation == "" {
		t.Fatalf("the row after the restart: %+v", got)
	}
	texts := []string{}
	for _, e := range got.Transcript {
		texts = append(texts, e.Text)
	}
	if len(texts) < len(acked) || strings.Join(texts[:len(acked)], "|") != strings.Join(acked, "|") {
		t.Fatalf("acknowledged entries lost: got %v, acknowledged %v", texts, acked)
	}
}

var (
	buildOnce sync.Once
	built     string
	buildErr  error
)

// exampleBinary builds examples/daemon once for the tests that run it.
func exampleBinary(t *testing.T) string {
	t.Helper()
	buildOnce.Do(func() {
		built = filepath.Join(root, "daemon-example")
		// Linked without the symbol table and DWARF, which nothing here reads (less link CPU).
		out, err := exec.Command("go", "build", "-ldflags=-s -w", "-o", built, "./examples/daemon").CombinedOutput()
		if err != nil {
			buildErr = fmt.Errorf("build: %v\n%s", err, out)
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return built
}

// Processes without the lock starting at once share one server: the servers that lose the
// race for the lock exit, and their processes use the winner's.
func TestProcessesStartingAtOnceShareOneServer(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs processes")
	}
	t.Parallel()
	bin := exampleBinary(t)
	dir := stateDir(t)
	errs := make(chan error, 4)
	for i := 0; i < 4; i++ {
		go func() {
			out, err := exec.Command(bin, "-dir", dir, "-name", "main", "-operator").CombinedOutput()
			if err != nil {
				err = fmt.Errorf("%v: %s", err, out)
			}
			errs <- err
		}()
	}
	for i := 0; i < 4; i++ {
		if err := <-errs; err != nil {
			t.Fatalf("an operator failed: %v", err)
		}
	}
}

// lockedWriter collects a child's stderr, written by exec's goroutine.
type lockedWriter struct {
	mu sync.Mutex
	b  strings.Builder
}

func (w *lockedWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.Write(p)
}

func (w *lockedWriter) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.String()
}

var _ io.Writer = (*lockedWriter)(nil)
