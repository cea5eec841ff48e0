package state

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	stateclient "github.com/herrscher/herrscher-state/clients/go"
)

// The bounded retries of the connection, against a fake shared server that keeps giving the
// answer that makes a call go round again: it counts what it was asked, and after more rounds
// than the bound it gives in, so a loop with no bound ends too (and the test says so) instead
// of hanging.

// retryFake is a shared server (on the socket findOrStart dials, in a socket folder of the
// test's own) that answers initialize, watch/subscribe and state/get as a server does, and the
// test's method "test/op" as op says. Not for parallel tests (t.Setenv).
type retryFake struct {
	statePath string
	// changing: every state/get is preceded by a state/didChange of a newer revision, so the
	// document read is stale before it is installed.
	changing bool
	// op answers test/op's n-th call (from 1): false ends the connection without an answer.
	op func(n int) bool
	// refuse, when set, answers the n-th call (from 1) of any other method (and of initialize)
	// with an error: nil lets the fake answer as a server does ({} for a method of its own).
	refuse func(method string, n int) *rpcError
	// doc is what state/get gives.
	doc map[string]interface{}

	mu    sync.Mutex
	calls map[string]int
	gets  int
	ops   int
	dials int
}

type rpcError struct {
	Code    int         `json:"code"`
	Message string      `json:"message"`
	Data    interface{} `json:"data,omitempty"`
}

// called counts a call of method and gives its number (from 1).
func (f *retryFake) called(method string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls[method]++
	return f.calls[method]
}

func (f *retryFake) count(method string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.calls[method]
}

const retryFakeGivesIn = serverLockedRetries + 20 // more rounds than any bound here

func newRetryFake(t *testing.T) *retryFake {
	t.Helper()
	dir, err := os.MkdirTemp("", "hs-rl") // not t.TempDir(): a socket path must stay short
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	t.Setenv("XDG_RUNTIME_DIR", dir)
	t.Setenv("HERRSCHER_STATE_BIN", filepath.Join(dir, "no-server-is-started"))
	socket := stateclient.SharedSocketPath(os.Getenv)
	if err := os.MkdirAll(filepath.Dir(socket), 0o700); err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("unix", socket)
	if err != nil {
		t.Fatal(err)
	}
	f := &retryFake{statePath: filepath.Join(dir, "state.json"), doc: map[string]interface{}{}, calls: map[string]int{}}
	var conns sync.WaitGroup
	var open sync.Map
	t.Cleanup(func() {
		ln.Close()
		open.Range(func(k, _ interface{}) bool { k.(net.Conn).Close(); return true })
		conns.Wait()
	})
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			open.Store(c, nil)
			conns.Add(1)
			go func() {
				defer conns.Done()
				defer c.Close()
				f.serve(c)
			}()
		}
	}()
	return f
}

func (f *retryFake) serve(c net.Conn) {
	f.mu.Lock()
	f.dials++
	f.mu.Unlock()
	r := bufio.NewReader(c)
	send := func(v interface{}) {
		b, _ := json.Marshal(v)
		_, _ = c.Write(append(b, '\n'))
	}
	for {
		line, err := r.ReadBytes('\n')
		if err != nil {
			return
		}
		var req struct {
			ID     *int64 `json:"id"`
			Method string `json:"method"`
		}
		if json.Unmarshal(line, &req) != nil || req.ID == nil {
			continue // a notification ($/cancelRequest): nothing to answer
		}
		answer := func(result interface{}) {
			send(map[string]interface{}{"jsonrpc": "2.0", "id": *req.ID, "result": result})
		}
		n := f.called(req.Method)
		if f.refuse != nil && req.Method != "test/op" {
			if e := f.refuse(req.Method, n); e != nil {
				send(map[string]interface{}{"jsonrpc": "2.0", "id": *req.ID, "error": e})
				continue
			}
		}
		switch req.Method {
		case "initialize":
			answer(map[string]interface{}{
				"serverInfo": map[string]string{"name": "fake", "version": "0"}, "protocolVersion": "1.4.0",
				"statePath": f.statePath, "capabilities": map[string]interface{}{"methods": []string{}, "params": map[string]interface{}{}},
			})
		case "watch/subscribe":
			answer(map[string]interface{}{"subscription": "w1", "revision": 0, "epoch": "run1"})
		case "state/get":
			f.mu.Lock()
			f.gets++
			n := f.gets
			f.mu.Unlock()
			rev := 2 * n
			if f.changing && n <= retryFakeGivesIn {
				send(map[string]interface{}{"jsonrpc": "2.0", "method": "state/didChange",
					"params": map[string]interface{}{"subscription": "w1", "revision": rev + 1, "fields": []string{"workspace"}}})
			}
			answer(map[string]interface{}{"state": f.doc, "revision": rev, "epoch": "run1"})
		case "test/op":
			f.mu.Lock()
			f.ops++
			n := f.ops
			f.mu.Unlock()
			if !f.op(n) {
				return
			}
			answer(map[string]interface{}{})
		default:
			answer(map[string]interface{}{})
		}
	}
}

func (f *retryFake) counts() (gets, ops, dials int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.gets, f.ops, f.dials
}

// endsUntilItGivesIn: test/op's connection ends unanswered, up to the fake's giving in.
func endsUntilItGivesIn(n int) bool { return n > retryFakeGivesIn }

func testOp(ctx context.Context, c *stateclient.Client) error {
	return c.Call(ctx, "test/op", struct{}{}, nil)
}

func retryCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// A read whose connection keeps ending is sent maxResends times (each on a new connection),
// then fails with the connection's end.
func TestACallWhoseConnectionKeepsEndingIsSentABoundedNumberOfTimes(t *testing.T) {
	f := newRetryFake(t)
	f.op = endsUntilItGivesIn
	cn := &connection{statePath: f.statePath, writerID: "w"}
	defer cn.closeClient() // the fake's goroutines end with it at the cleanup
	err := cn.call(retryCtx(t), readCall, testOp)
	_, ops, dials := f.counts()
	if ops != maxResends || !errors.Is(err, stateclient.ErrClosed) {
		t.Fatalf("sent %d times (want %d) on %d connections: %v", ops, maxResends, dials, err)
	}
	if dials != maxResends {
		t.Fatalf("%d connections for %d sendings", dials, ops)
	}
}

// A keyed write whose connection keeps ending is sent maxResends times, then fails with the
// connection's end.
func TestAKeyedWriteWhoseConnectionKeepsEndingIsSentABoundedNumberOfTimes(t *testing.T) {
	f := newRetryFake(t)
	f.op = endsUntilItGivesIn
	cn := &connection{statePath: f.statePath, writerID: "w"}
	defer cn.closeClient() // the fake's goroutines end with it at the cleanup
	ctx := retryCtx(t)
	l, err := cn.use(ctx)
	if err != nil {
		t.Fatal(err)
	}
	l.release()
	err = cn.callOn(ctx, l.epoch, testOp)
	_, ops, _ := f.counts()
	if ops != maxResends || !errors.Is(err, stateclient.ErrClosed) {
		t.Fatalf("sent %d times (want %d): %v", ops, maxResends, err)
	}
}

// A document that is changed again before every read of it is read maxResends times, then the
// read fails saying so.
func TestADocumentThatKeepsChangingIsReadABoundedNumberOfTimes(t *testing.T) {
	f := newRetryFake(t)
	f.changing = true
	cn := &connection{statePath: f.statePath, writerID: "w"}
	defer cn.closeClient() // the fake's goroutines end with it at the cleanup
	_, _, err := cn.current(retryCtx(t), 0)
	gets, _, dials := f.counts()
	// One read is the connect's own; then the bounded reads again, on the same connection.
	if gets != 1+maxResends || err == nil || !strings.Contains(err.Error(), "kept changing while it was read") {
		t.Fatalf("read %d times (want %d) on %d connections: %v", gets, 1+maxResends, dials, err)
	}
}

// shortPauses makes the pauses before a retry (a stopping server's, a locked state's) short,
// so a test of a bound of 50 or 60 rounds takes milliseconds.
func shortPauses(t *testing.T) {
	saved := [2]time.Duration{stoppingPause, lockedPause}
	stoppingPause, lockedPause = time.Microsecond, time.Microsecond
	t.Cleanup(func() { stoppingPause, lockedPause = saved[0], saved[1] })
}

// untilItGivesIn refuses method with code (and data) up to the fake's giving in.
func untilItGivesIn(method string, code int, data interface{}) func(string, int) *rpcError {
	return func(m string, n int) *rpcError {
		if m != method || n > retryFakeGivesIn {
			return nil
		}
		return &rpcError{Code: code, Message: "refused by the test", Data: data}
	}
}

// loadFrom is a State of the fake's state file, loaded (one connection, one read), its
// connection ended at the test's end.
func loadFrom(t *testing.T, f *retryFake) *State {
	t.Helper()
	s, err := LoadState(f.statePath)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { closeWhere(func(p string) bool { return p == f.statePath }) })
	return s
}

const (
	shuttingDownCode = -32030
	conflictCode     = -32050
	stateLockedCode  = -32060
)

// A save that keeps meeting another writer's commit (Conflict) is built again and sent
// maxSaveAttempts times, then fails saying so.
func TestASaveThatKeepsConflictingIsSentABoundedNumberOfTimes(t *testing.T) {
	f := newRetryFake(t)
	s := loadFrom(t, f)
	f.refuse = untilItGivesIn("state/save", conflictCode, nil)
	err := s.RemoveSession("a")
	if saves := f.count("state/save"); saves != maxSaveAttempts || err == nil || !strings.Contains(err.Error(), "other writers kept changing it") {
		t.Fatalf("saved %d times (want %d): %v", saves, maxSaveAttempts, err)
	}
}

// AddSession and a row setter refused by a server that keeps stopping (ShuttingDown: nothing
// taken) go to the next connection, maxSaveAttempts times, then fail saying so.
func TestRowWritesToAServerThatKeepsStoppingAreSentABoundedNumberOfTimes(t *testing.T) {
	shortPauses(t)
	for method, write := range map[string]func(s *State) error{
		"session/add":            func(s *State) error { return s.AddSession(Session{Name: "b"}) },
		"session/setResumeToken": func(s *State) error { return s.SetResumeToken("a", "tok") },
	} {
		t.Run(method, func(t *testing.T) {
			f := newRetryFake(t)
			f.doc = map[string]interface{}{"sessions": []interface{}{map[string]interface{}{"name": "a", "id": "s_a", "incarnation": "i1"}}}
			s := loadFrom(t, f)
			f.refuse = untilItGivesIn(method, shuttingDownCode, nil)
			err := write(s)
			if sent := f.count(method); sent != maxSaveAttempts || err == nil || !strings.Contains(err.Error(), "the connection to its server kept changing") {
				t.Fatalf("sent %d times (want %d): %v", sent, maxSaveAttempts, err)
			}
		})
	}
}

// A state locked by a process that serves it on no socket is asked for lockedRetries+1
// times when the holder is no server, serverLockedRetries+1 times when it is one (a server
// stopping or starting lets go soon), then the look fails naming the holder.
func TestALockedStateIsAskedForABoundedNumberOfTimes(t *testing.T) {
	shortPauses(t)
	// A live process whose command line has the argument "serve", as a server's has.
	holder := exec.Command("sh", "-c", "read x", "serve")
	stdin, err := holder.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := holder.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { stdin.Close(); _ = holder.Wait() })
	for _, c := range []struct {
		pid   int
		asked int
	}{{0, lockedRetries + 1}, {holder.Process.Pid, serverLockedRetries + 1}} {
		f := newRetryFake(t)
		f.refuse = untilItGivesIn("initialize", stateLockedCode, map[string]int{"pid": c.pid})
		_, err := findOrStart(retryCtx(t), f.statePath)
		var locked *lockedError
		if asked := f.count("initialize"); asked != c.asked || !errors.As(err, &locked) || locked.server != (c.pid != 0) {
			t.Fatalf("holder %d: asked %d times (want %d): %v", c.pid, asked, c.asked, err)
		}
	}
}
