package stateclient

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"syscall"
	"testing"
	"time"
)

// One socket server of its own for the steps that need a fresh state or break, pause or kill
// the server, run in that order (each leaves the server serving for the next, but the last):
// every method (on the fresh state), the errors it answers (a transcript's file made a folder,
// then removed), a cancelled call while it is paused, then killed mid-call.
func TestASocketServerEveryMethodThenBrokenThenPausedThenKilled(t *testing.T) {
	t.Parallel()
	s := startSocketServer(t)
	t.Run("EveryMethodOverTheSocket", func(t *testing.T) { checkAllCalled(t, exerciseAll(t, dialTest(t, s), s.state)) })
	t.Run("TheServersErrorsAreTypedAndCarryTheirData", func(t *testing.T) { theServersErrorsAreTyped(t, s) })
	t.Run("ACancelledCallReturnsAtOnceAndTheConnectionStaysUsable", func(t *testing.T) { aCancelledCallReturnsAtOnce(t, s) })
	t.Run("TheServerKilledMidCallIsAnErrorNotAHangAndAWatchWithoutReconnectEnds", func(t *testing.T) { theServerKilledMidCall(t, s) })
}

// A call whose context is cancelled returns at once with ctx.Err(), and the connection serves
// the next call. The server is stopped (SIGSTOP) so the call cannot be answered meanwhile.
func aCancelledCallReturnsAtOnce(t *testing.T, s *socketServer) {
	c := dialTest(t, s)
	ctx := ctxT(t)
	must(c.AddSession(ctx, Session{Name: "c"}))(t)
	if err := s.cmd.Process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	stopped := true
	defer func() {
		if stopped {
			_ = s.cmd.Process.Signal(syscall.SIGCONT)
		}
	}()
	cctx, cancel := context.WithCancel(ctx)
	result := make(chan error, 1)
	go func() {
		_, err := c.ReadTranscript(cctx, "c", 0)
		result <- err
	}()
	cancel()
	if err := <-result; !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled call: %v", err)
	}
	_ = s.cmd.Process.Signal(syscall.SIGCONT)
	stopped = false
	if got := must(c.FindSession(ctx, "c"))(t); got == nil || got.Name != "c" {
		t.Fatalf("after a cancel: %+v", got)
	}
	if seq := must(c.AppendTranscript(ctx, "c", TranscriptEntry{Ts: "t", Role: "user", Text: "x"}))(t); seq != 0 {
		t.Fatalf("seq %d", seq)
	}
}

// The server killed while calls wait: every call returns ErrClosed, none hangs, and later calls
// fail at once. A watch of another connection, dialled without Reconnect, ends with the server.
func theServerKilledMidCall(t *testing.T, s *socketServer) {
	c := dialTest(t, s)
	ctx := ctxT(t)
	must(c.AddSession(ctx, Session{Name: "k"}))(t)
	watcher := dialTest(t, s)
	w := must(watcher.Watch(ctx, WatchOptions{Transcripts: AllSessions}))(t)
	if err := s.cmd.Process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	results := make(chan error, 4)
	for i := 0; i < 4; i++ {
		go func() {
			_, err := c.AppendTranscript(ctx, "k", TranscriptEntry{Ts: "t", Role: "user", Text: "x"})
			results <- err
		}()
	}
	// Wait until the four requests are in flight (sent, not answered) before the kill.
	for deadline := time.Now().Add(10 * time.Second); ; {
		c.mu.Lock()
		n := len(c.pending)
		c.mu.Unlock()
		if n == 4 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d calls in flight", n)
		}
		time.Sleep(5 * time.Millisecond)
	}
	if err := s.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 4; i++ {
		if err := <-results; !errors.Is(err, ErrClosed) {
			t.Fatalf("call %d: %v, want ErrClosed", i, err)
		}
	}
	if _, err := c.SnapshotSessions(ctx); !errors.Is(err, ErrClosed) {
		t.Fatalf("a call after the end: %v", err)
	}
	select {
	case _, ok := <-w.Events():
		if ok {
			t.Fatal("an event from a dead server")
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the watch did not end")
	}
	if !errors.Is(w.Err(), ErrClosed) || !errors.Is(watcher.Err(), ErrClosed) {
		t.Fatalf("the watch: want ErrClosed, got %v / %v", w.Err(), watcher.Err())
	}
}

// A spawned server that dies is seen the same way.
func TestASpawnedServerThatDiesFailsTheCall(t *testing.T) {
	t.Parallel()
	c, _ := spawnTest(t, SpawnOptions{})
	ctx := ctxT(t)
	must(c.SnapshotSessions(ctx))(t)
	if err := c.Process().Kill(); err != nil {
		t.Fatal(err)
	}
	<-c.Done()
	if _, err := c.SnapshotSessions(ctx); !errors.Is(err, ErrClosed) {
		t.Fatalf("%v, want ErrClosed", err)
	}
}

// Cancelling a call's context sends the server $/cancelRequest with the call's id, and an
// answer that still comes for it is dropped without disturbing the next call.
func TestACancelledCallSendsCancelRequestAndItsLateAnswerIsDropped(t *testing.T) {
	client, server := net.Pipe()
	c := NewClient(client)
	defer c.Close()
	r := bufio.NewReader(server)
	ctx := ctxT(t)
	cctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- c.Call(cctx, "transcript/read", map[string]string{"name": "a"}, nil) }()
	var req struct {
		ID     int64  `json:"id"`
		Method string `json:"method"`
	}
	line, err := r.ReadBytes('\n')
	if err != nil || json.Unmarshal(line, &req) != nil || req.Method != "transcript/read" {
		t.Fatalf("request %s %v", line, err)
	}
	cancel()
	var note struct {
		ID     *int64 `json:"id"`
		Method string `json:"method"`
		Params struct {
			ID int64 `json:"id"`
		} `json:"params"`
	}
	line, err = r.ReadBytes('\n')
	if err != nil || json.Unmarshal(line, &note) != nil || note.Method != "$/cancelRequest" || note.ID != nil || note.Params.ID != req.ID {
		t.Fatalf("after the cancel the server got %s (%v)", line, err)
	}
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("the cancelled call: %v", err)
	}
	go func() {
		fmt.Fprintf(server, `{"jsonrpc":"2.0","id":%d,"error":{"code":-32800,"message":"cancelled"}}`+"\n", req.ID)
		line, _ := r.ReadBytes('\n')
		var next struct {
			ID int64 `json:"id"`
		}
		_ = json.Unmarshal(line, &next)
		fmt.Fprintf(server, `{"jsonrpc":"2.0","id":%d,"result":{"ts":"x"}}`+"\n", next.ID)
	}()
	if ts := must(c.LastTranscriptTimestamp(ctx, "a"))(t); ts != "x" {
		t.Fatalf("the next call got %q", ts)
	}
}
