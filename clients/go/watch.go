package stateclient

import (
	"context"
	"errors"
	"sync"
)

// Event is one change-feed notification, in commit order: *SessionDidChangeParams,
// *StateDidChangeParams, *TranscriptDidAppendParams, *ParticipantsDidAddParams, or
// *WatchOverflowParams (the subscriber fell behind and the subscription ended: subscribe and
// read again). Tell them apart with a type switch.
type Event interface{ isEvent() }

// AllSessions, as WatchOptions.Transcripts or .Participants, watches every session.
var AllSessions = []string{"*"}

// WatchOptions says what a Watch delivers.
type WatchOptions struct {
	// Sessions: session/didChange and state/didChange events.
	Sessions bool
	// Transcripts: transcript/didAppend events for these session names (AllSessions: every one).
	Transcripts []string
	// Participants: participants/didAdd events for these session names (AllSessions: every one).
	Participants []string
	// Handle, when set, takes each event instead of Events: it is called on the connection's
	// reader, in commit order, before any answer read after the event is handed to its caller
	// (a call that committed a change returns after Handle has had that change's event, when
	// the server sends it first, as it does on the calling connection). No goroutine is woken
	// per event. Handle must return quickly and must not call the client; Events is then
	// only closed when the watch ends (Err says why), and an overflow is handed to Handle
	// as a *WatchOverflowParams before the watch ends.
	Handle func(Event)
}

// watchQueueLimit bounds the events a Watcher holds for a reader that does not keep up: past
// it the watch ends with a *WatchOverflowParams event, as the server's own bound does.
var watchQueueLimit = 8192

// Watcher is one subscription to the change feed. Read Events until it is closed; Err then
// says why it ended (nil after Close). With DialOptions.Reconnect it stays open across a server
// restart: it is subscribed again with since and goes on with what the server sent meanwhile,
// each change once, under the same ID.
type Watcher struct {
	c *Client
	// ID is the server's subscription id (the first one's, after a reconnection).
	ID string
	// Revision is the state revision when the watch began: a later state/didChange or
	// session/didChange carries a larger one.
	Revision int

	// Guarded by c.mu: the server's current id, the subscribe params, and what was seen (for
	// since): the epoch, the last state revision, the last seq per transcript.
	current  string
	filter   subscribeParams
	epoch    string
	revision *int
	seqs     map[string]int

	events chan Event
	// handle takes the events instead of events (WatchOptions.Handle): no pump then.
	handle func(Event)
	mu     sync.Mutex
	queue  []Event
	wake   chan struct{}
	ended  bool
	err    error
	stop   chan struct{}
}

func names(n []string) interface{} {
	if len(n) == 1 && n[0] == "*" {
		return "*"
	}
	if n == nil {
		return nil
	}
	return n
}

// Watch subscribes this connection to the change feed. Events arrive on w.Events() in commit
// order, each after its change is in the file; a reader that reads then watches (or watches
// then reads) drops what it has seen by seq (transcripts) or revision (state).
func (c *Client) Watch(ctx context.Context, opts WatchOptions) (*Watcher, error) {
	filter := subscribeParams{Sessions: opts.Sessions, Transcripts: names(opts.Transcripts), Participants: names(opts.Participants)}
	w, r, err := c.subscribeOn(ctx, nil, filter, false, opts.Handle)
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	_, tracked := c.tracked[w]
	if tracked {
		if w.epoch == "" {
			w.epoch = r.Epoch
		}
		w.sawRevision(r.Revision)
	}
	c.mu.Unlock()
	if tracked {
		// Where each listed transcript (with "*", each session's) stands now, so a reconnection
		// asks for what follows (a later entry is notified, and a seq only moves forward).
		list, _ := filter.Transcripts.([]string)
		if filter.Transcripts == "*" {
			list, _ = c.sessionNames(ctx, false)
		}
		for _, name := range list {
			limit := 1
			page, err := c.ReadPage(ctx, name, ReadPageOptions{Limit: &limit})
			if err != nil {
				continue // no such session yet: its entries will all be new
			}
			seq := page.FirstSeq + len(page.Entries) - 1
			c.mu.Lock()
			if cur, ok := w.seqs[name]; !ok || cur < seq {
				w.seqs[name] = seq
			}
			c.mu.Unlock()
		}
	}
	return w, nil
}

// sessionNames is the names of the session rows (session/list) that follow sessionNameRule
// (session_name_gen.go);
// internal: a reconnection's own call.
func (c *Client) sessionNames(ctx context.Context, internal bool) ([]string, error) {
	var r snapshotSessionsResult
	if err := c.callOn(ctx, "session/list", struct{}{}, &r, internal); err != nil {
		return nil, err
	}
	var out []string
	for _, s := range r.Sessions {
		if sessionNameRule.MatchString(s.Name) {
			out = append(out, s.Name)
		}
	}
	return out, nil
}

// subscribeOn sends watch/subscribe for w (nil: a new watcher); the notifications that come
// before its reply is handled are held, then queued first, in order.
func (c *Client) subscribeOn(ctx context.Context, w *Watcher, p subscribeParams, internal bool, handle func(Event)) (*Watcher, subscribeResult, error) {
	c.mu.Lock()
	c.subscribing++
	c.mu.Unlock()
	defer func() {
		c.mu.Lock()
		c.subscribing--
		if c.subscribing == 0 {
			c.early = map[string][]notification{}
			c.earlyLost = map[string]bool{}
		}
		c.mu.Unlock()
	}()
	var r subscribeResult
	if err := c.callOn(ctx, "watch/subscribe", p, &r, internal); err != nil {
		return nil, r, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.err != nil {
		return nil, r, c.err
	}
	if w == nil {
		p.Since = nil
		w = &Watcher{c: c, ID: r.Subscription, Revision: r.Revision, filter: p, seqs: map[string]int{}, events: make(chan Event), wake: make(chan struct{}, 1), stop: make(chan struct{}), handle: handle}
		if c.reconnect != nil {
			c.tracked[w] = struct{}{}
		}
		if handle == nil {
			go w.pump()
		}
	}
	w.current = r.Subscription
	c.watchers[w.current] = w
	early := c.early[w.current]
	delete(c.early, w.current)
	for _, n := range early {
		c.deliverLocked(w, n)
	}
	if c.earlyLost[w.current] {
		// More came before the answer was handled than were kept: the watcher ends as a slow
		// one does (subscribe and read again), and the server's subscription goes.
		delete(c.earlyLost, w.current)
		cur := w.current
		if _, open := c.watchers[cur]; open {
			c.dropLocked(w)
			w.finish(&WatchOverflowParams{Subscription: w.ID}, ErrWatchOverflow)
			go func() { _, _ = c.unsubscribe(context.Background(), cur) }()
		}
	}
	return w, r, nil
}

// since is what w saw, for watch/subscribe (c.mu held). The revision is sent whenever sessions
// are watched and one is known, 0 included (nothing committed yet in that run).
func (w *Watcher) since() *WatchSince {
	s := &WatchSince{Epoch: w.epoch}
	if w.filter.Sessions && w.revision != nil {
		r := *w.revision
		s.Revision = &r
	}
	if len(w.seqs) > 0 {
		s.Transcripts = make(map[string]int, len(w.seqs))
		for k, v := range w.seqs {
			s.Transcripts[k] = v
		}
	}
	return s
}

func (w *Watcher) sawRevision(r int) {
	if w.revision == nil || *w.revision < r {
		w.revision = &r
	}
}

// saw notes what ev tells (c.mu held) and puts it under the watcher's first ID.
func (w *Watcher) saw(ev Event) {
	switch e := ev.(type) {
	case *TranscriptDidAppendParams:
		w.seqs[e.Name] = e.Seq
		e.Subscription = w.ID
	case *StateResyncParams:
		r := e.Revision
		w.revision = &r
		w.epoch = e.Epoch
		e.Subscription = w.ID
	case *SessionDidChangeParams:
		w.sawRevision(e.Revision)
		e.Subscription = w.ID
	case *StateDidChangeParams:
		w.sawRevision(e.Revision)
		e.Subscription = w.ID
	case *ParticipantsDidAddParams:
		e.Subscription = w.ID
	case *WatchOverflowParams:
		e.Subscription = w.ID
	}
}

// Events is the channel of events; it is closed when the watch ends.
func (w *Watcher) Events() <-chan Event { return w.events }

// Err is why the watch ended: nil after Close, the connection's error when it ended, or
// ErrWatchOverflow after an overflow.
func (w *Watcher) Err() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.err
}

// ErrWatchOverflow ends a watch whose reader fell too far behind (the server's bound or this
// client's); the last event was a *WatchOverflowParams.
var ErrWatchOverflow = errors.New("herrscher-state: watch overflow: subscribe and read again")

// Close ends the watch (watch/unsubscribe) and closes the event channel.
func (w *Watcher) Close() error {
	c := w.c
	c.mu.Lock()
	cur := w.current
	_, live := c.watchers[cur]
	c.dropLocked(w)
	reconnecting := c.reconnecting
	c.mu.Unlock()
	w.end(nil)
	if !live || reconnecting || c.Err() != nil {
		return nil // a reconnection does not subscribe it again
	}
	_, err := c.unsubscribe(context.Background(), cur)
	return err
}

// dropLocked forgets w (c.mu held): no more notifications, no re-subscription.
func (c *Client) dropLocked(w *Watcher) {
	if c.watchers[w.current] == w {
		delete(c.watchers, w.current)
	}
	delete(c.tracked, w)
}

// deliverLocked queues one notification for w (c.mu held).
func (c *Client) deliverLocked(w *Watcher, n notification) {
	ev, err := n.ev, n.err
	if err != nil {
		c.dropLocked(w)
		w.finish(nil, err)
		return
	}
	if ev == nil {
		return // a notification of a newer server: not ours to type
	}
	w.saw(ev)
	if w.handle != nil {
		w.handle(ev)
		if _, overflow := ev.(*WatchOverflowParams); overflow {
			c.dropLocked(w)
			w.end(ErrWatchOverflow)
		}
		return
	}
	if _, overflow := ev.(*WatchOverflowParams); overflow {
		c.dropLocked(w)
		w.finish(ev, ErrWatchOverflow)
		return
	}
	if !w.push(ev) {
		cur := w.current
		c.dropLocked(w)
		w.finish(&WatchOverflowParams{Subscription: w.ID}, ErrWatchOverflow)
		go func() { _, _ = c.unsubscribe(context.Background(), cur) }()
	}
}

// push queues ev for the reader of Events; false when the queue is at its bound.
func (w *Watcher) push(ev Event) bool {
	w.mu.Lock()
	if w.ended {
		w.mu.Unlock()
		return true
	}
	if len(w.queue) >= watchQueueLimit {
		w.mu.Unlock()
		return false
	}
	w.queue = append(w.queue, ev)
	w.mu.Unlock()
	w.poke()
	return true
}

// finish queues a last event (may be nil) and ends the watch with err.
func (w *Watcher) finish(last Event, err error) {
	w.mu.Lock()
	if !w.ended && last != nil {
		w.queue = append(w.queue, last)
	}
	w.mu.Unlock()
	w.end(err)
}

func (w *Watcher) end(err error) {
	w.mu.Lock()
	if w.ended {
		w.mu.Unlock()
		return
	}
	w.ended = true
	w.err = err
	w.mu.Unlock()
	if err == nil {
		close(w.stop) // Close: queued events are dropped
	}
	if w.handle != nil {
		close(w.events) // no pump: nothing is ever sent on it
		return
	}
	w.poke()
}

func (w *Watcher) poke() {
	select {
	case w.wake <- struct{}{}:
	default:
	}
}

// pump hands queued events to the reader of Events, so the connection's reader never waits on
// a slow watcher.
func (w *Watcher) pump() {
	defer close(w.events)
	for {
		w.mu.Lock()
		if len(w.queue) == 0 {
			ended := w.ended
			w.mu.Unlock()
			if ended {
				return
			}
			select {
			case <-w.wake:
			case <-w.stop:
				return
			}
			continue
		}
		ev := w.queue[0]
		w.queue[0] = nil
		w.queue = w.queue[1:]
		w.mu.Unlock()
		select {
		case w.events <- ev:
		case <-w.stop:
			return
		}
	}
}
