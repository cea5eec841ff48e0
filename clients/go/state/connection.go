package state

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	stateclient "github.com/herrscher/herrscher-state/clients/go"
)

// connection is this process's connection to the server of one state file, with the replica
// of its document that the change feed keeps current. Every State of that file shares it.
//
// mu guards the fields and is only ever held for memory work: never across a server start, a
// dial or a wait for an answer, so a read of the replica never waits behind a write in flight.
type connection struct {
	statePath string
	// writerID and writeSeq make the idempotency key of each document write (state/save, the
	// session setters): a write sent again after its connection ended without an answer keeps
	// its key, and the server answers it as it did if it was applied (never twice).
	writerID string
	writeSeq uint64

	mu     sync.Mutex
	client *stateclient.Client
	// connecting is closed when the connect under way ends (nil: none under way); the calls
	// that need the connection meanwhile wait for it, each within its own deadline.
	connecting chan struct{}
	// epoch counts connections: revisions restart with each server process.
	epoch int
	// remote is the persisted document as of the server's revision remoteRev, plus the
	// changes of this process's own session setters whose commits the feed has not
	// announced yet. version counts every change of remote (States compare it).
	remote    document
	remoteRev int
	remoteRun string
	version   uint64
	// applying is the revision whose feed events are being applied (one commit announces
	// several); stale: the feed announced what it cannot describe, read state/get again.
	applying int
	stale    bool
	loaded   bool
	// readRev is the revision of the last document read (state/get) on this connection: an
	// answer older than it (two reads crossed) is not installed over the newer one.
	readRev int
	// inUse counts calls in flight; uses counts calls ever (the idle closer compares it).
	inUse int
	uses  uint64

	// feed holds the change feed's events as the connection's reader hands them over, in
	// order, until a caller holding mu applies them (drainLocked): the reader never waits
	// for mu and no goroutine is woken per event. A mutation's own event comes before its
	// answer, so it is here when the mutation returns. queued says whether feed has
	// anything, read without feedMu by every read of the replica.
	feedMu sync.Mutex
	feed   []fed
	queued int32
}

// fed is one event of connection c; ev nil: events were dropped (the queue was at its
// bound), so the replica must be read again.
type fed struct {
	c  *stateclient.Client
	ev stateclient.Event
}

// feedLimit bounds the events held for a process that does not read: past it they are
// dropped and the document is read again at the next read.
const feedLimit = 4096

var (
	serversMu sync.Mutex
	servers   = map[string]*connection{}
)

// idleClose is how long a connection stays open without calls (one to two ticks of it). Closed,
// it leaves no goroutine of this package behind once a process (a test) is done with a state,
// and lets the server drop a state nobody uses and stop once nobody uses it at all. The next
// call dials again: about a millisecond to a running server.
var idleClose = 200 * time.Millisecond

// connectTimeout bounds finding or starting a server.
var connectTimeout = 30 * time.Second

func connectionFor(statePath string) *connection {
	serversMu.Lock()
	defer serversMu.Unlock()
	cn := servers[statePath]
	if cn == nil {
		cn = &connection{statePath: statePath, writerID: newWriterID()}
		servers[statePath] = cn
	}
	return cn
}

// knownStateIn is a state file of dir this process already talks to, or "".
func knownStateIn(dir string) string {
	serversMu.Lock()
	defer serversMu.Unlock()
	for p := range servers {
		if filepath.Dir(p) == dir {
			return p
		}
	}
	return ""
}

// connected: a connection to the server is open (its calls need no dial).
func (cn *connection) connected() bool {
	cn.mu.Lock()
	defer cn.mu.Unlock()
	return cn.client != nil && cn.client.Err() == nil
}

// lease is one use of the connection: release it when the call is done.
type lease struct {
	cn     *connection
	client *stateclient.Client
	epoch  int
}

func (l lease) release() {
	l.cn.mu.Lock()
	l.cn.inUse--
	l.cn.uses++
	l.cn.mu.Unlock()
}

// use connects if needed (one connect at a time; the others wait for it within ctx) and
// counts a call in flight. mu is not held while the server is found, started or dialled.
func (cn *connection) use(ctx context.Context) (lease, error) {
	for {
		cn.mu.Lock()
		if cn.client != nil && cn.client.Err() == nil {
			cn.inUse++
			l := lease{cn: cn, client: cn.client, epoch: cn.epoch}
			cn.mu.Unlock()
			return l, nil
		}
		if cn.client != nil {
			// It ended and the follower has not seen it yet: a call on it was never sent.
			cn.forgetLocked(cn.client)
		}
		if wait := cn.connecting; wait != nil {
			cn.mu.Unlock()
			select {
			case <-wait:
				continue
			case <-ctx.Done():
				return lease{}, bounded(ctx, cn.statePath, ctx.Err())
			}
		}
		done := make(chan struct{})
		cn.connecting = done
		cn.mu.Unlock()
		err := cn.connect(ctx)
		cn.mu.Lock()
		cn.connecting = nil
		cn.mu.Unlock()
		close(done)
		if err != nil {
			return lease{}, bounded(ctx, cn.statePath, err)
		}
	}
}

// callKind says whether a call may be sent again after its connection ended without an
// answer: a read may, and a write with an idempotency key (the server answers it as it did if
// it was applied); a write without one may not (it may have been applied), only when the
// server said it did not take it (-32030: the server is stopping).
type callKind int

const (
	readCall callKind = iota
	writeCall
	keyedWriteCall
)

// maxResends bounds how often one call is carried to another connection.
const maxResends = 50

// call runs f on the connection within ctx. A call the server refused because it is stopping
// (-32030: nothing was taken) is carried to the next server, as a read whose connection ended
// is; both within the same deadline.
func (cn *connection) call(ctx context.Context, kind callKind, f func(ctx context.Context, c *stateclient.Client) error) error {
	var err error
	for attempt := 0; attempt < maxResends; attempt++ {
		var l lease
		l, err = cn.use(ctx)
		if err != nil {
			return err
		}
		if h := callSentHook; h != nil {
			h()
		}
		err = f(ctx, l.client)
		l.release()
		if !cn.resend(ctx, kind, l.client, err) {
			return bounded(ctx, cn.statePath, err)
		}
	}
	return err
}

// resend says whether a failed call goes to the next connection, and drops the one it failed
// on when that one is done with.
func (cn *connection) resend(ctx context.Context, kind callKind, c *stateclient.Client, err error) bool {
	if err == nil || ctx.Err() != nil {
		return false
	}
	if errors.Is(err, stateclient.ErrShuttingDown) {
		// The server is stopping: its successor (started by the next use, once this one has
		// released the state) takes the call. The connection is only forgotten, not closed: the
		// stopping server still answers the other calls in flight on it, then ends it. A short
		// pause, so the loop does not spin on the stopping server.
		cn.mu.Lock()
		cn.forgetLocked(c)
		cn.mu.Unlock()
		pause(ctx, stoppingPause)
		return true
	}
	if errors.Is(err, stateclient.ErrClosed) {
		cn.dropped(c)
		return kind == readCall || kind == keyedWriteCall
	}
	return false
}

// stoppingPause is how long a call the server refused as stopping waits before it goes to the
// next server (a variable: tests of the resend bound shorten it).
var stoppingPause = 20 * time.Millisecond

// pause waits d or until ctx ends.
func pause(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
	}
}

// dropped forgets a connection that ended (or whose server is stopping).
func (cn *connection) dropped(c *stateclient.Client) {
	cn.mu.Lock()
	cn.forgetLocked(c)
	cn.mu.Unlock()
	_ = c.Close()
}

func (cn *connection) forgetLocked(c *stateclient.Client) {
	if cn.client == c {
		cn.client = nil
	}
}

// connect finds or starts the server, subscribes to the feed and reads the document, all
// without mu, then installs the connection.
func (cn *connection) connect(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, connectTimeout)
	defer cancel()
	c, err := findOrStart(ctx, cn.statePath)
	if err != nil {
		return err
	}
	w, err := c.Watch(ctx, stateclient.WatchOptions{Sessions: true, Handle: cn.queue(c)})
	var r getResult
	if err == nil {
		err = c.Call(ctx, "state/get", getParams{Persisted: true}, &r)
	}
	if err != nil {
		_ = c.Close()
		return fmt.Errorf("state: connect to the server of %s: %w", cn.statePath, err)
	}
	cn.mu.Lock()
	cn.client = c
	cn.epoch++
	cn.installLocked(r)
	cn.mu.Unlock()
	go cn.follow(c, w)
	go cn.closeWhenIdle(c)
	return nil
}

// queue is the feed's handler for connection c (WatchOptions.Handle): row events replace,
// append or drop rows exactly as the server's row methods do (the server says "sessions" in
// state/didChange when they cannot tell); a top-level change, which the feed names without
// values, is read at the next call that reads. They are applied by drainLocked.
func (cn *connection) queue(c *stateclient.Client) func(stateclient.Event) {
	return func(ev stateclient.Event) {
		if _, overflow := ev.(*stateclient.WatchOverflowParams); overflow {
			ev = nil // events were lost: read the document again
		}
		cn.feedMu.Lock()
		if len(cn.feed) >= feedLimit {
			cn.feed = append(cn.feed[:0], fed{c: c})
		} else {
			cn.feed = append(cn.feed, fed{c: c, ev: ev})
		}
		atomic.StoreInt32(&cn.queued, 1)
		cn.feedMu.Unlock()
	}
}

// drainLocked applies the queued events of the current connection to the replica (mu held).
// While the replica is to be read again (not loaded yet, or stale) they stay queued: the read
// under way applies those newer than what it got once it is in (apply skips older ones).
func (cn *connection) drainLocked() {
	if atomic.LoadInt32(&cn.queued) == 0 || !cn.loaded || cn.stale {
		return
	}
	cn.feedMu.Lock()
	q := cn.feed
	cn.feed = nil
	atomic.StoreInt32(&cn.queued, 0)
	cn.feedMu.Unlock()
	for _, f := range q {
		if f.c != cn.client {
			continue // an older connection's
		}
		if f.ev == nil {
			cn.stale = true
			continue
		}
		if !cn.stale {
			cn.apply(f.ev)
		}
	}
}

// follow waits for the end of the watch: after an overflow it subscribes again; when the
// connection ended it is forgotten.
func (cn *connection) follow(c *stateclient.Client, w *stateclient.Watcher) {
	for {
		for range w.Events() {
			// Handle takes the events; this only ends with the watch.
		}
		if !errors.Is(w.Err(), stateclient.ErrWatchOverflow) || c.Err() != nil {
			break
		}
		// This process fell behind the feed (it was stalled): subscribe again on the same
		// connection and read the document again once the new watch has begun.
		cn.markStale(c)
		ctx, cancel := context.WithTimeout(context.Background(), connectTimeout)
		next, err := c.Watch(ctx, stateclient.WatchOptions{Sessions: true, Handle: cn.queue(c)})
		cancel()
		if err != nil {
			break
		}
		cn.markStale(c)
		w = next
	}
	// The watch ended with the connection (or could not begin again): without it the
	// replica cannot be trusted, so the next call connects again.
	cn.mu.Lock()
	if cn.client == c {
		cn.client = nil
	}
	cn.mu.Unlock()
	_ = c.Close()
}

func (cn *connection) markStale(c *stateclient.Client) {
	cn.mu.Lock()
	if cn.client == c {
		cn.stale = true
	}
	cn.mu.Unlock()
}

func (cn *connection) apply(ev stateclient.Event) {
	rev := 0
	switch e := ev.(type) {
	case *stateclient.SessionDidChangeParams:
		rev = e.Revision
	case *stateclient.StateDidChangeParams:
		rev = e.Revision
	default:
		return
	}
	if rev <= cn.remoteRev && rev != cn.applying {
		return // already in the document read (state/get, or a save of ours)
	}
	cn.remoteRev, cn.applying = rev, rev
	cn.version++
	switch e := ev.(type) {
	case *stateclient.StateDidChangeParams:
		cn.stale = true
	case *stateclient.SessionDidChangeParams:
		switch {
		case e.Kind == "removed":
			if cn.remote.Sessions != nil {
				out := cn.remote.Sessions[:0]
				for _, r := range cn.remote.Sessions {
					if r.Name != e.Name {
						out = append(out, r)
					}
				}
				cn.remote.Sessions = out
			}
		case e.Session == nil:
			cn.stale = true
		case e.Kind == "added":
			cn.remote.Sessions = append(cn.remote.Sessions, fromWire(*e.Session))
		default:
			if r := row(&cn.remote, e.Name); r != nil {
				*r = fromWire(*e.Session)
			} else {
				cn.stale = true
			}
		}
	}
}

// fromWire converts the generated client's row to ours. The two structs have the same fields
// in the same order with the same types, so this is a Go conversion: the compiler checks the
// fields, and TestFromWireIsTheSameRow the JSON names (a conversion ignores tags).
func fromWire(w stateclient.Session) Session {
	return copySession(Session(w))
}

func (cn *connection) closeWhenIdle(c *stateclient.Client) {
	t := time.NewTicker(idleClose)
	defer t.Stop()
	var last uint64
	for {
		select {
		case <-c.Done():
			return
		case <-t.C:
		}
		cn.mu.Lock()
		if cn.client != c {
			cn.mu.Unlock()
			return
		}
		if cn.inUse == 0 && cn.uses == last {
			cn.client = nil
			cn.mu.Unlock()
			_ = c.Close()
			return
		}
		last = cn.uses
		cn.mu.Unlock()
	}
}

type getParams struct {
	Persisted bool `json:"persisted"`
}

type getResult struct {
	State    document `json:"state"`
	Revision int      `json:"revision"`
	// Run is the server run's epoch: a save names it, so a save sent again to another run
	// of the server cannot match a revision of that run by chance.
	Run string `json:"epoch"`
}

// installLocked makes a document read from the server (state/get) the replica, then applies
// the events that came after it (mu held).
func (cn *connection) installLocked(r getResult) {
	cn.remote, cn.remoteRev, cn.applying, cn.readRev, cn.remoteRun = r.State, r.Revision, 0, r.Revision, r.Run
	cn.loaded, cn.stale = true, false
	cn.version++
	cn.drainLocked()
}

// replica is what current gives a State.
type replica struct {
	doc     document
	rev     int    // the server revision a save must name
	run     string // the server run rev belongs to (state/get's epoch)
	epoch   int    // the connection rev belongs to
	version uint64
}

// current gives the replica, read again first when the feed announced what it cannot
// describe. same: nothing changed since knownVersion (the common case: one lock, a compare).
// The read of the document is made without mu.
func (cn *connection) current(ctx context.Context, knownVersion uint64) (r replica, same bool, err error) {
	if r, same, ok := cn.currentNow(knownVersion); ok {
		return r, same, nil
	}
	for attempt := 0; attempt < maxResends; attempt++ {
		l, err := cn.use(ctx)
		if err != nil {
			return replica{}, false, err
		}
		cn.mu.Lock()
		cn.drainLocked()
		if cn.client == l.client && cn.loaded && !cn.stale {
			r, same = cn.replicaLocked(knownVersion)
			cn.mu.Unlock()
			l.release()
			return r, same, nil
		}
		cn.mu.Unlock()
		var got getResult
		err = l.client.Call(ctx, "state/get", getParams{Persisted: true}, &got)
		if err == nil {
			cn.mu.Lock()
			// An answer older than one another read installed meanwhile is not installed.
			if cn.client == l.client && (!cn.loaded || got.Revision >= cn.readRev) {
				cn.installLocked(got)
			}
			cn.mu.Unlock()
		}
		l.release()
		if err != nil && !cn.resend(ctx, readCall, l.client, err) {
			return replica{}, false, bounded(ctx, cn.statePath, err)
		}
	}
	return replica{}, false, fmt.Errorf("state: %s kept changing while it was read (%d reads)", cn.statePath, maxResends)
}

// currentNow is current's common case in one lock, with no deadline to make: connected and
// the replica current once the feed's waiting events are applied (memory work: another
// process's change costs no timer and no second lock), else ok false: ask current. It counts
// as a use for the idle closer, as use and release do.
func (cn *connection) currentNow(knownVersion uint64) (r replica, same, ok bool) {
	cn.mu.Lock()
	defer cn.mu.Unlock()
	if cn.client == nil || !cn.loaded || cn.stale {
		return replica{}, false, false
	}
	cn.drainLocked()
	if cn.stale {
		return replica{}, false, false
	}
	r, same = cn.replicaLocked(knownVersion)
	cn.uses++
	return r, same, true
}

// replicaLocked is the replica for a State that has knownVersion (mu held).
func (cn *connection) replicaLocked(knownVersion uint64) (replica, bool) {
	r := replica{rev: cn.remoteRev, run: cn.remoteRun, epoch: cn.epoch, version: cn.version}
	same := cn.version == knownVersion
	if !same {
		r.doc = cn.remote.clone()
	}
	return r, same
}

// newWriterID is a random writer id for the idempotency keys (16 bytes, hex).
func newWriterID() string {
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		// No randomness: a time-based id still tells this process's writes from another's.
		return fmt.Sprintf("t%x-%x", time.Now().UnixNano(), os.Getpid())
	}
	return hex.EncodeToString(b[:])
}

// nextKey is the idempotency key of one new write.
func (cn *connection) nextKey() *stateclient.WriterKey {
	return &stateclient.WriterKey{ID: cn.writerID, Seq: int(atomic.AddUint64(&cn.writeSeq, 1))}
}

// callOn runs a keyed write f (its key chosen by the caller, the same for every sending) on the
// connection of epoch within ctx; errStale when that connection is gone before it was sent (a
// revision of another server process means nothing to the new one), or when the server said it
// is stopping (nothing was taken: the caller builds the write again, with a new key). A write
// whose connection ended without an answer is sent again with the same key on the next
// connection, within the same deadline: the server answers it as it did if it was applied.
func (cn *connection) callOn(ctx context.Context, epoch int, f func(ctx context.Context, c *stateclient.Client) error) error {
	var err error
	for sent := 0; sent < maxResends; sent++ {
		var l lease
		l, err = cn.use(ctx)
		if err != nil {
			return err
		}
		if sent == 0 && l.epoch != epoch {
			l.release()
			return errStale
		}
		if h := writeSentHook; h != nil {
			h()
		}
		err = f(ctx, l.client)
		l.release()
		if errors.Is(err, stateclient.ErrShuttingDown) && cn.resend(ctx, writeCall, l.client, err) {
			return errStale
		}
		if !errors.Is(err, stateclient.ErrClosed) {
			if sent > 0 && err == nil {
				cn.reload() // answered by another connection: read the document again
			}
			return bounded(ctx, cn.statePath, err)
		}
		cn.dropped(l.client)
		if ctx.Err() != nil {
			break
		}
	}
	return bounded(ctx, cn.statePath, err)
}

// writeSentHook, when set (tests), runs as a write is about to be sent: a test orders its
// reads after a write in flight by it, not by a sleep.
var writeSentHook func()

// callSentHook, when set (tests), runs as a call of call (a file function's read or write) is
// about to be sent: a test ends the connection under it there.
var callSentHook func()

var errStale = errors.New("state: the connection changed; read again")

// saved records a document this process saved at rev, so its own reads see it at once.
// refetch: the server filled in what the document left out (incarnations). The commit's feed
// events came before the save's answer and are applied first: with them the replica holds the
// server's rows, filled in, and nothing is read back. Only when they did not describe it (the
// replica is to be read again anyway, or the events were dropped) is d installed, and read back
// at the next read when it needs filling.
func (cn *connection) saved(epoch int, d document, rev int, refetch bool) {
	cn.mu.Lock()
	defer cn.mu.Unlock()
	if cn.epoch != epoch || cn.client == nil {
		return
	}
	cn.drainLocked()
	if rev > cn.remoteRev {
		cn.remote, cn.remoteRev, cn.applying = d.clone(), rev, 0
		cn.version++
		if refetch {
			cn.stale = true
		}
	}
}

// changed makes a change this process's session setter made on the server show in the
// replica, so every read in the process sees it when the setter returns. The feed's event of
// that change came before the setter's answer and is applied first; set then finds nothing to
// change (and the States' copies stay as they are) unless the event was missing.
func (cn *connection) changed(epoch int, name string, set func(r *Session) bool) {
	cn.mu.Lock()
	defer cn.mu.Unlock()
	if cn.epoch != epoch || cn.client == nil {
		return
	}
	cn.drainLocked()
	r := row(&cn.remote, name)
	if r == nil {
		return
	}
	before := copySession(*r)
	set(r)
	if !sameSession(&before, r) {
		cn.version++
	}
}

// added makes a row this process's AddSession added on the server show in the replica. The
// feed's event of that commit, with the row as the server filled it in, came before the answer
// and is applied first; without it (events dropped) the document is read again at the next read.
func (cn *connection) added(epoch int, name string) {
	cn.mu.Lock()
	defer cn.mu.Unlock()
	if cn.epoch != epoch || cn.client == nil {
		return
	}
	cn.drainLocked()
	if row(&cn.remote, name) == nil {
		cn.stale = true
	}
}

// conflicted: a save was refused because someone wrote first: read the document again.
func (cn *connection) conflicted(epoch int) {
	cn.mu.Lock()
	defer cn.mu.Unlock()
	if cn.epoch == epoch {
		cn.stale = true
	}
}

// reload makes the next read of the replica ask the server.
func (cn *connection) reload() {
	cn.mu.Lock()
	cn.stale = true
	cn.mu.Unlock()
}

// closeAll ends every connection of this process (tests: the servers may then stop).
func closeAll() { closeWhere(func(string) bool { return true }) }

// closeWhere ends this process's connections to the servers of the state files mine names.
func closeWhere(mine func(statePath string) bool) {
	serversMu.Lock()
	var all []*connection
	for p, s := range servers {
		if mine(p) {
			all = append(all, s)
		}
	}
	serversMu.Unlock()
	for _, cn := range all {
		cn.closeClient()
	}
}

// closeClient ends cn's connection to its server, if it has one; the next call dials again.
func (cn *connection) closeClient() {
	cn.mu.Lock()
	c := cn.client
	cn.client = nil
	cn.mu.Unlock()
	if c != nil {
		_ = c.Close()
	}
}
