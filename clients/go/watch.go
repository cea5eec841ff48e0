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
}

// watchQueueLimit bounds the events a Watcher holds for a reader that does not keep up: past
// it the watch ends with a *WatchOverflowParams event, as the server's own bound does.
var watchQueueLimit = 8192

// Watcher is one subscription to the change feed. Read Events until it is closed; Err then
// says why it ended (nil after Close).
type Watcher struct {
	c *Client
	// ID is the server's subscription id.
	ID string
	// Revision is the state revision when the watch began: a later state/didChange or
	// session/didChange carries a larger one.
	Revision int

	events chan Event
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
	c.mu.Lock()
	c.subscribing++
	c.mu.Unlock()
	defer func() {
		c.mu.Lock()
		c.subscribing--
		if c.subscribing == 0 {
			c.early = map[string][]notification{}
		}
		c.mu.Unlock()
	}()
	r, err := c.subscribe(ctx, subscribeOptions{Sessions: opts.Sessions, Transcripts: names(opts.Transcripts), Participants: names(opts.Participants)})
	if err != nil {
		return nil, err
	}
	w := &Watcher{c: c, ID: r.Subscription, Revision: r.Revision, events: make(chan Event), wake: make(chan struct{}, 1), stop: make(chan struct{})}
	c.mu.Lock()
	if c.err != nil {
		err := c.err
		c.mu.Unlock()
		return nil, err
	}
	c.watchers[w.ID] = w
	early := c.early[w.ID]
	delete(c.early, w.ID)
	c.mu.Unlock()
	go w.pump()
	for _, n := range early {
		w.deliver(n)
	}
	return w, nil
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
	w.c.mu.Lock()
	_, live := w.c.watchers[w.ID]
	delete(w.c.watchers, w.ID)
	w.c.mu.Unlock()
	w.end(nil)
	if !live || w.c.Err() != nil {
		return nil
	}
	_, err := w.c.unsubscribe(context.Background(), w.ID)
	return err
}

func (w *Watcher) deliver(n notification) {
	ev, err := decodeEvent(n.method, n.params)
	if err != nil {
		w.endWith(nil, err)
		return
	}
	if ev == nil {
		return // a notification of a newer server: not ours to type
	}
	if _, overflow := ev.(*WatchOverflowParams); overflow {
		w.endWith(ev, ErrWatchOverflow)
		return
	}
	w.mu.Lock()
	if w.ended {
		w.mu.Unlock()
		return
	}
	if len(w.queue) >= watchQueueLimit {
		w.mu.Unlock()
		w.endWith(&WatchOverflowParams{Subscription: w.ID}, ErrWatchOverflow)
		go func() { _, _ = w.c.unsubscribe(context.Background(), w.ID) }()
		return
	}
	w.queue = append(w.queue, ev)
	w.mu.Unlock()
	w.poke()
}

// endWith queues a last event (may be nil) and ends the watch with err.
func (w *Watcher) endWith(last Event, err error) {
	w.c.mu.Lock()
	delete(w.c.watchers, w.ID)
	w.c.mu.Unlock()
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
