package stateclient

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// fakes is one test/fixtures/fake-server.mjs serving every mode, each on its own socket
// (--dir), for the tests that need a broken peer: each makes connections of its own. The first
// test that asks starts it; TestMain stops it.
var fakes struct {
	once sync.Once
	dir  string
	cmd  *exec.Cmd
	err  error
}

// fakeSocket is the socket of the shared fake server that misbehaves in mode.
func fakeSocket(t *testing.T, mode string) string {
	t.Helper()
	fakes.once.Do(func() {
		if fakes.dir, fakes.err = os.MkdirTemp("", "hs-fake"); fakes.err == nil {
			fakes.cmd, fakes.err = launchFake("--dir", fakes.dir)
		}
	})
	if fakes.err != nil {
		t.Fatal(fakes.err)
	}
	return filepath.Join(fakes.dir, mode+".sock")
}

func stopFakes() {
	if fakes.cmd != nil {
		_ = fakes.cmd.Process.Signal(os.Interrupt)
		_ = fakes.cmd.Wait()
	}
	if fakes.dir != "" {
		os.RemoveAll(fakes.dir)
	}
}

// launchFake runs the fake server with args and waits until it listens.
func launchFake(args ...string) (*exec.Cmd, error) {
	script, err := filepath.Abs(filepath.Join("..", "..", "test", "fixtures", "fake-server.mjs"))
	if err != nil {
		return nil, err
	}
	cmd := exec.Command("node", append([]string{script}, args...)...)
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	line, err := bufio.NewReader(out).ReadString('\n')
	if !strings.HasPrefix(line, "listening") {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		return nil, fmt.Errorf("the fake server did not start: %q %v", line, err)
	}
	return cmd, nil
}

// startFakeServerAt runs a fake server of its own on sock, stopped when the test ends.
func startFakeServerAt(t *testing.T, sock, mode string) {
	t.Helper()
	cmd, err := launchFake("--socket", sock, "--mode", mode)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Signal(os.Interrupt)
		_ = cmd.Wait()
	})
}

// Every pending call of a connection to a broken peer fails with ErrClosed, and Err says why.
func TestABrokenPeerEndsTheConnectionAndEveryPendingCall(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ mode, why string }{
		{"garbage", "malformed reply"},
		{"huge", "message limit"},
		{"non-object", "not an object"},
		{"array", "not an object"},
		{"list-id", "id"},
		{"wrong-id", "no call waits for"},
		{"null-id", "refused a message"},
		{"deep-array", "not an object"},
		{"close-mid-reply", ""},
		// Taken for a success with no result before: a write's caller was told it was done.
		{"no-result", "neither"},
		{"null-error", "neither"},
		{"string-error", "error"},
		{"bad-error-code", "error"},
	} {
		tc := tc
		t.Run(tc.mode, func(t *testing.T) {
			t.Parallel()
			sock := fakeSocket(t, tc.mode)
			ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
			defer cancel()
			c, err := Dial(ctx, DialOptions{Socket: sock})
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			errs := make([]error, 2)
			var wg sync.WaitGroup
			for i := range errs {
				wg.Add(1)
				go func(i int) {
					defer wg.Done()
					_, errs[i] = c.Status(ctx)
				}(i)
			}
			wg.Wait()
			for _, err := range errs {
				if !errors.Is(err, ErrClosed) {
					t.Fatalf("want ErrClosed, got %v", err)
				}
			}
			select {
			case <-c.Done():
			default:
				t.Fatal("Done is not closed")
			}
			if c.Err() == nil || !strings.Contains(c.Err().Error(), tc.why) {
				t.Fatalf("Err() = %v, want it to say %q", c.Err(), tc.why)
			}
			if _, err := c.Status(ctx); !errors.Is(err, ErrClosed) {
				t.Fatalf("a later call: want ErrClosed, got %v", err)
			}
		})
	}
}

func TestAServerThatNeverAnswersReturnsAtTheDeadline(t *testing.T) {
	t.Parallel()
	sock := fakeSocket(t, "silent")
	c, err := Dial(ctxT(t), DialOptions{Socket: sock})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	if _, err := c.Status(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("want DeadlineExceeded, got %v", err)
	}
	if c.Err() != nil {
		t.Fatalf("the connection ended: %v", c.Err())
	}
}

func TestNaNAndInfinityAreRefusedBeforeSending(t *testing.T) {
	t.Parallel()
	sock := fakeSocket(t, "echo")
	c, err := Dial(ctxT(t), DialOptions{Socket: sock})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	for _, bad := range []float64{math.NaN(), math.Inf(1), math.Inf(-1)} {
		_, err := c.AppendTranscript(ctxT(t), "x", TranscriptEntry{Ts: "t", Role: "user", Cost: bad})
		if err == nil || errors.Is(err, ErrClosed) || !strings.Contains(err.Error(), "params not sent") {
			t.Fatalf("want a params-not-sent error, got %v", err)
		}
	}
	if c.nextID != 0 {
		t.Fatalf("an id was taken: %d", c.nextID)
	}
	if err := c.Call(ctxT(t), "status", nil, nil); err != nil {
		t.Fatalf("the connection is unusable: %v", err)
	}
}
