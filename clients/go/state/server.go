package state

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	stateclient "github.com/herrscher/herrscher-state/clients/go"
)

// server is this process's connection to the server of one state file and the replica of
// its document that the change feed keeps current. Every State of that file shares it.
type server struct {
	statePath string

	mu     sync.Mutex
	client *stateclient.Client
	// owned: the server is our child serving under our lock; it lives as long as we do, so
	// the connection is never closed for idleness.
	owned bool
	// epoch counts connections: revisions restart with each server process.
	epoch int
	// remote is the persisted document as of the server's revision remoteRev, plus the
	// changes of this process's own session setters whose commits the feed has not
	// announced yet. version counts every change of remote (States compare it).
	remote    document
	remoteRev int
	version   uint64
	// applying is the revision whose feed events are being applied (one commit announces
	// several); stale: the feed announced what it cannot describe, read state/get again.
	applying int
	stale    bool
	loaded   bool
	// inUse counts calls in flight; uses counts calls ever (the idle closer compares it).
	inUse int
	uses  uint64

	// feed holds the change feed's events as the connection's reader hands them over, in
	// order, until a caller holding mu applies them (drainLocked): the reader never waits
	// for mu (held across calls) and no goroutine is woken per event. A mutation's own event
	// comes before its answer, so it is here when the mutation returns. queued says whether
	// feed has anything, read without feedMu by every read of the replica.
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
	servers   = map[string]*server{}
)

// idleClose is how long a connection to a server we do not own stays open without calls (one
// to two ticks of it): closed, it lets a server started with --exit-when-idle stop and release
// the state's lock.
var idleClose = 200 * time.Millisecond

// connectTimeout bounds finding or starting a server.
var connectTimeout = 30 * time.Second

func serverFor(statePath string) *server {
	serversMu.Lock()
	defer serversMu.Unlock()
	srv := servers[statePath]
	if srv == nil {
		srv = &server{statePath: statePath}
		servers[statePath] = srv
	}
	return srv
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

// conn is one use of the connection: release it when the call is done.
type conn struct {
	srv    *server
	client *stateclient.Client
	epoch  int
}

func (c conn) release() {
	c.srv.mu.Lock()
	c.srv.inUse--
	c.srv.uses++
	c.srv.mu.Unlock()
}

// use connects if needed and counts a call in flight.
func (srv *server) use() (conn, error) {
	srv.mu.Lock()
	defer srv.mu.Unlock()
	if srv.client == nil {
		if err := srv.connectLocked(); err != nil {
			return conn{}, err
		}
	}
	srv.inUse++
	return conn{srv: srv, client: srv.client, epoch: srv.epoch}, nil
}

// call runs f on the connection, reconnecting once when the connection ended under it (the
// server stopped for idleness or was restarted).
func (srv *server) call(f func(ctx context.Context, c *stateclient.Client) error) error {
	for attempt := 0; ; attempt++ {
		c, err := srv.use()
		if err != nil {
			return err
		}
		err = f(context.Background(), c.client)
		c.release()
		if err != nil && errors.Is(err, stateclient.ErrClosed) && attempt == 0 {
			srv.dropped(c.client)
			continue
		}
		return err
	}
}

// dropped forgets a connection that ended.
func (srv *server) dropped(c *stateclient.Client) {
	srv.mu.Lock()
	defer srv.mu.Unlock()
	if srv.client == c {
		srv.client = nil
		srv.owned = false
	}
	_ = c.Close()
}

func (srv *server) connectLocked() error {
	ctx, cancel := context.WithTimeout(context.Background(), connectTimeout)
	defer cancel()
	c, owned, err := findOrStart(ctx, srv.statePath)
	if err != nil {
		return err
	}
	w, err := c.Watch(ctx, stateclient.WatchOptions{Sessions: true, Handle: srv.queue(c)})
	if err != nil {
		_ = c.Close()
		return fmt.Errorf("state: watch %s: %w", srv.statePath, err)
	}
	srv.client, srv.owned = c, owned
	srv.epoch++
	srv.loaded = false
	go srv.follow(c, w)
	if !owned {
		go srv.closeWhenIdle(c)
	}
	if err := srv.refreshLocked(ctx); err != nil {
		srv.client = nil
		_ = c.Close()
		return err
	}
	return nil
}

// queue is the feed's handler for connection c (WatchOptions.Handle): row events replace,
// append or drop rows exactly as the server's row methods do (the server says "sessions" in
// state/didChange when they cannot tell); a top-level change, which the feed names without
// values, is read at the next call that reads. They are applied by drainLocked.
func (srv *server) queue(c *stateclient.Client) func(stateclient.Event) {
	return func(ev stateclient.Event) {
		if _, overflow := ev.(*stateclient.WatchOverflowParams); overflow {
			ev = nil // events were lost: read the document again
		}
		srv.feedMu.Lock()
		if len(srv.feed) >= feedLimit {
			srv.feed = append(srv.feed[:0], fed{c: c})
		} else {
			srv.feed = append(srv.feed, fed{c: c, ev: ev})
		}
		atomic.StoreInt32(&srv.queued, 1)
		srv.feedMu.Unlock()
	}
}

// drainLocked applies the queued events of the current connection to the replica (mu held).
func (srv *server) drainLocked() {
	if atomic.LoadInt32(&srv.queued) == 0 {
		return
	}
	srv.feedMu.Lock()
	q := srv.feed
	srv.feed = nil
	atomic.StoreInt32(&srv.queued, 0)
	srv.feedMu.Unlock()
	for _, f := range q {
		if f.c != srv.client || !srv.loaded {
			continue // an older connection's, or before the document was read (it has them)
		}
		if f.ev == nil {
			srv.stale = true
			continue
		}
		if !srv.stale {
			srv.apply(f.ev)
		}
	}
}

// follow waits for the end of the watch: after an overflow it subscribes again; when the
// connection ended it is forgotten.
func (srv *server) follow(c *stateclient.Client, w *stateclient.Watcher) {
	for {
		for range w.Events() {
			// Handle takes the events; this only ends with the watch.
		}
		if !errors.Is(w.Err(), stateclient.ErrWatchOverflow) || c.Err() != nil {
			break
		}
		// This process fell behind the feed (it was stalled): subscribe again on the same
		// connection (closing it would stop a server we own, under our bridges) and read the
		// document again once the new watch has begun.
		srv.markStale(c)
		ctx, cancel := context.WithTimeout(context.Background(), connectTimeout)
		next, err := c.Watch(ctx, stateclient.WatchOptions{Sessions: true, Handle: srv.queue(c)})
		cancel()
		if err != nil {
			break
		}
		srv.markStale(c)
		w = next
	}
	// The watch ended with the connection (or could not begin again): without it the
	// replica cannot be trusted, so the next call connects again.
	srv.mu.Lock()
	if srv.client == c {
		srv.client = nil
		srv.owned = false
	}
	srv.mu.Unlock()
	_ = c.Close()
}

func (srv *server) markStale(c *stateclient.Client) {
	srv.mu.Lock()
	if srv.client == c {
		srv.stale = true
	}
	srv.mu.Unlock()
}

func (srv *server) apply(ev stateclient.Event) {
	rev := 0
	switch e := ev.(type) {
	case *stateclient.SessionDidChangeParams:
		rev = e.Revision
	case *stateclient.StateDidChangeParams:
		rev = e.Revision
	default:
		return
	}
	if rev <= srv.remoteRev && rev != srv.applying {
		return // already in the document read (state/get, or a save of ours)
	}
	srv.remoteRev, srv.applying = rev, rev
	srv.version++
	switch e := ev.(type) {
	case *stateclient.StateDidChangeParams:
		srv.stale = true
	case *stateclient.SessionDidChangeParams:
		switch {
		case e.Kind == "removed":
			if srv.remote.Sessions != nil {
				out := srv.remote.Sessions[:0]
				for _, r := range srv.remote.Sessions {
					if r.Name != e.Name {
						out = append(out, r)
					}
				}
				srv.remote.Sessions = out
			}
		case e.Session == nil:
			srv.stale = true
		case e.Kind == "added":
			srv.remote.Sessions = append(srv.remote.Sessions, fromWire(*e.Session))
		default:
			if r := row(&srv.remote, e.Name); r != nil {
				*r = fromWire(*e.Session)
			} else {
				srv.stale = true
			}
		}
	}
}

// fromWire converts the generated client's row (the same fields and tags) to ours.
func fromWire(w stateclient.Session) Session {
	return copySession(Session{
		ID: w.ID, Incarnation: w.Incarnation, Name: w.Name, ChannelID: w.ChannelID, Type: w.Type, Cmd: w.Cmd,
		Backend: w.Backend, Vendor: w.Vendor, ModelID: w.ModelID, Worktree: w.Worktree, Dir: w.Dir, Project: w.Project,
		Agent: w.Agent, ResumeToken: w.ResumeToken, Archived: w.Archived, Owned: w.Owned, Extractor: w.Extractor,
		Journal: w.Journal, ConsolidateEvery: w.ConsolidateEvery, Gateways: w.Gateways, Participants: w.Participants,
		Parent: w.Parent, CostCap: w.CostCap, TokenCap: w.TokenCap, CohortCostCap: w.CohortCostCap,
		CohortTokenCap: w.CohortTokenCap, PausedReason: w.PausedReason,
	})
}

func (srv *server) closeWhenIdle(c *stateclient.Client) {
	t := time.NewTicker(idleClose)
	defer t.Stop()
	var last uint64
	for {
		select {
		case <-c.Done():
			return
		case <-t.C:
		}
		srv.mu.Lock()
		if srv.client != c {
			srv.mu.Unlock()
			return
		}
		if srv.inUse == 0 && srv.uses == last {
			srv.client = nil
			srv.mu.Unlock()
			_ = c.Close()
			return
		}
		last = srv.uses
		srv.mu.Unlock()
	}
}

type getParams struct {
	Persisted bool `json:"persisted"`
}

type getResult struct {
	State    document `json:"state"`
	Revision int      `json:"revision"`
}

func (srv *server) refreshLocked(ctx context.Context) error {
	var r getResult
	if err := srv.client.Call(ctx, "state/get", getParams{Persisted: true}, &r); err != nil {
		return err
	}
	srv.remote, srv.remoteRev, srv.applying = r.State, r.Revision, 0
	srv.loaded, srv.stale = true, false
	srv.version++
	return nil
}

// replica is what current gives a State.
type replica struct {
	doc     document
	rev     int // the server revision a save must name
	epoch   int // the connection rev belongs to
	version uint64
}

// current gives the replica, read again first when the feed announced what it cannot
// describe. same: nothing changed since knownVersion (the common case: one lock, a compare).
func (srv *server) current(knownVersion uint64) (r replica, same bool, err error) {
	// The common case in one lock: connected, the replica current, no event waiting. It
	// counts as a use for the idle closer, as use and release do.
	srv.mu.Lock()
	if srv.client != nil && srv.loaded && !srv.stale && atomic.LoadInt32(&srv.queued) == 0 {
		r = replica{rev: srv.remoteRev, epoch: srv.epoch, version: srv.version}
		same = srv.version == knownVersion
		if !same {
			r.doc = srv.remote.clone()
		}
		srv.uses++
		srv.mu.Unlock()
		return r, same, nil
	}
	srv.mu.Unlock()
	for attempt := 0; ; attempt++ {
		c, err := srv.use()
		if err != nil {
			return replica{}, false, err
		}
		srv.mu.Lock()
		srv.drainLocked()
		if srv.client == c.client && srv.loaded && !srv.stale {
			r = replica{rev: srv.remoteRev, epoch: srv.epoch, version: srv.version}
			same = srv.version == knownVersion
			if !same {
				r.doc = srv.remote.clone()
			}
			srv.mu.Unlock()
			c.release()
			return r, same, nil
		}
		if srv.client != c.client {
			srv.mu.Unlock()
			c.release()
			continue
		}
		ctx, cancel := context.WithTimeout(context.Background(), connectTimeout)
		err = srv.refreshLocked(ctx)
		cancel()
		srv.mu.Unlock()
		c.release()
		if err != nil {
			if errors.Is(err, stateclient.ErrClosed) && attempt == 0 {
				srv.dropped(c.client)
				continue
			}
			return replica{}, false, err
		}
	}
}

// callOn runs f on the connection of epoch; errStale when that connection is gone (a
// revision of another server process means nothing to the new one).
func (srv *server) callOn(epoch int, f func(ctx context.Context, c *stateclient.Client) error) error {
	c, err := srv.use()
	if err != nil {
		return err
	}
	defer c.release()
	if c.epoch != epoch {
		return errStale
	}
	err = f(context.Background(), c.client)
	if err != nil && errors.Is(err, stateclient.ErrClosed) {
		srv.dropped(c.client)
		return errStale
	}
	return err
}

var errStale = errors.New("state: the connection changed; read again")

// saved records a document this process saved at rev, so its own reads see it at once.
// refetch: the server filled in what the document left out (incarnations): read it back.
func (srv *server) saved(epoch int, d document, rev int, refetch bool) {
	srv.mu.Lock()
	defer srv.mu.Unlock()
	if srv.epoch != epoch || srv.client == nil {
		return
	}
	srv.drainLocked()
	if rev > srv.remoteRev {
		srv.remote, srv.remoteRev, srv.applying = d.clone(), rev, 0
		srv.version++
	}
	if refetch {
		srv.stale = true
	}
}

// changed makes a change this process's session setter made on the server show in the
// replica, so every read in the process sees it when the setter returns. The feed's event of
// that change came before the setter's answer and is applied first; set then finds nothing to
// change (and the States' copies stay as they are) unless the event was missing.
func (srv *server) changed(epoch int, name string, set func(r *Session) bool) {
	srv.mu.Lock()
	defer srv.mu.Unlock()
	if srv.epoch != epoch || srv.client == nil {
		return
	}
	srv.drainLocked()
	r := row(&srv.remote, name)
	if r == nil {
		return
	}
	before := copySession(*r)
	set(r)
	if !sameSession(&before, r) {
		srv.version++
	}
}

// conflicted: a save was refused because someone wrote first: read the document again.
func (srv *server) conflicted(epoch int) {
	srv.mu.Lock()
	defer srv.mu.Unlock()
	if srv.epoch == epoch {
		srv.stale = true
	}
}

// reload makes the next read of the replica ask the server.
func (srv *server) reload() {
	srv.mu.Lock()
	srv.stale = true
	srv.mu.Unlock()
}

// closeAll ends every connection of this process (tests: the servers may then stop).
func closeAll() { closeWhere(func(string) bool { return true }) }

// closeWhere ends this process's connections to the servers of the state files mine names.
func closeWhere(mine func(statePath string) bool) {
	serversMu.Lock()
	var all []*server
	for p, s := range servers {
		if mine(p) {
			all = append(all, s)
		}
	}
	serversMu.Unlock()
	for _, srv := range all {
		srv.mu.Lock()
		c := srv.client
		srv.client, srv.owned = nil, false
		srv.mu.Unlock()
		if c != nil {
			_ = c.Close()
		}
	}
}
