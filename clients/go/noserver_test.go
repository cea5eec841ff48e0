package stateclient

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// Nothing at the socket is ErrNoServer with or without a state named, and the dial's own error
// is still there to inspect.
func TestDialWithNothingListeningIsErrNoServer(t *testing.T) {
	dir := t.TempDir()
	sock := filepath.Join(dir, "none.sock")
	_, err := Dial(ctxT(t), DialOptions{Socket: sock})
	if !errors.Is(err, ErrNoServer) || !errors.Is(err, syscall.ENOENT) {
		t.Fatalf("want ErrNoServer wrapping ENOENT, got %v", err)
	}
	// It says what to do next: the command that starts a server there.
	if want := "; start one with `herrscher-state serve --socket " + sock + "`"; !strings.HasSuffix(err.Error(), want) {
		t.Fatalf("want the error to end with %q, got %v", want, err)
	}
	state := filepath.Join(dir, "state.json")
	_, err = Dial(ctxT(t), DialOptions{Socket: sock, State: state})
	if want := "; start one with `herrscher-state serve --state " + state + "`"; !errors.Is(err, ErrNoServer) || !strings.HasSuffix(err.Error(), want) {
		t.Fatalf("want the error to end with %q, got %v", want, err)
	}
}

// With Wait, Dial keeps trying until a server listens; without, it fails at once; ctx bounds it.
func TestDialWaitsForAServerToListen(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	if err := os.Chmod(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	sock := filepath.Join(dir, "late.sock")
	short, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	if _, err := Dial(short, DialOptions{Socket: sock, Wait: true}); !errors.Is(err, ErrNoServer) || !strings.Contains(err.Error(), "waited until") {
		t.Fatalf("want ErrNoServer after the deadline, got %v", err)
	}
	ctx, cancel2 := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel2()
	type dialed struct {
		c   *Client
		err error
	}
	done := make(chan dialed, 1)
	waiting := make(chan struct{})
	var once sync.Once
	go func() {
		c, err := Dial(ctx, DialOptions{Socket: sock, Wait: true, waiting: func(error) { once.Do(func() { close(waiting) }) }})
		done <- dialed{c, err}
	}()
	// The server starts once the Dial has found none and waits: it must try again.
	select {
	case <-waiting:
	case d := <-done:
		t.Fatalf("the Dial returned before any server listened: %v", d.err)
	}
	startFakeServerAt(t, sock, "echo")
	d := <-done
	if d.err != nil {
		t.Fatal(d.err)
	}
	c := d.c
	defer c.Close()
	if err := c.Call(ctx, "status", nil, nil); err != nil {
		t.Fatal(err)
	}
}
