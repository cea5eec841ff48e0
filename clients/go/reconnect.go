package stateclient

import (
	"context"
	"fmt"
	"io"
	"math/rand"
	"time"
)

// ReconnectOptions: how a client from Dial comes back after the connection is lost (the server
// restarted). The zero value is the default backoff, the TypeScript client's: 100 ms doubling
// to 5 s (±20 % jitter, so the clients of one restarted server do not all come back at once),
// until Close.
type ReconnectOptions struct {
	// InitialDelay is the wait before the first attempt (default 100 ms).
	InitialDelay time.Duration
	// MaxDelay is the longest wait between attempts (default 5 s).
	MaxDelay time.Duration
	// MaxAttempts: attempts before giving up (0: until Close).
	MaxAttempts int
}

// backoff is the wait before attempt (1-based).
func (o ReconnectOptions) backoff(attempt int) time.Duration {
	initial, max := o.InitialDelay, o.MaxDelay
	if initial <= 0 {
		initial = 100 * time.Millisecond
	}
	if max <= 0 {
		max = 5 * time.Second
	}
	d := initial
	for i := 1; i < attempt && d < max; i++ {
		d *= 2
	}
	if d > max {
		d = max
	}
	return time.Duration(float64(d) * (0.8 + rand.Float64()*0.4))
}

// restoreTimeout bounds one attempt's dial, check and re-subscriptions.
const restoreTimeout = 30 * time.Second

// retry dials again with backoff until a connection is up and every watcher subscribed again.
func (c *Client) retry(last error) {
	c.mu.Lock()
	o, dial := *c.reconnect, c.dial
	c.mu.Unlock()
	for attempt := 1; o.MaxAttempts <= 0 || attempt <= o.MaxAttempts; attempt++ {
		t := time.NewTimer(o.backoff(attempt))
		select {
		case <-t.C:
		case <-c.wakeUp:
			t.Stop()
			return // Close ends the client
		}
		ctx, cancel := context.WithTimeout(context.Background(), restoreTimeout)
		err := c.attempt(ctx, dial)
		cancel()
		if err == nil {
			return
		}
		last = err
	}
	c.fail(&closedError{cause: fmt.Errorf("the server did not come back: %v", last)})
}

// attempt opens one connection and restores the client on it, or closes it.
func (c *Client) attempt(ctx context.Context, dial func(context.Context) (io.ReadWriteCloser, error)) error {
	rw, err := dial(ctx)
	if err != nil {
		return err
	}
	c.mu.Lock()
	if c.userClosed {
		c.mu.Unlock()
		_ = rw.Close()
		return ErrClosed
	}
	c.gen++
	gen := c.gen
	c.rw = rw
	c.mu.Unlock()
	go c.read(rw, gen)
	if err = c.restore(ctx, gen); err == nil {
		return nil
	}
	c.mu.Lock()
	if gen == c.gen {
		c.gen++ // the end of this connection is no news
	}
	c.mu.Unlock()
	_ = rw.Close()
	return err
}

// restore checks the new connection and subscribes every watcher again with since, then lets
// the calls waiting for it go.
func (c *Client) restore(ctx context.Context, gen int) error {
	if c.onConnect != nil {
		if err := c.onConnect(ctx); err != nil {
			return err
		}
	}
	c.mu.Lock()
	c.watchers = map[string]*Watcher{}
	ws := make([]*Watcher, 0, len(c.tracked))
	for w := range c.tracked {
		ws = append(ws, w)
	}
	c.mu.Unlock()
	for _, w := range ws {
		c.mu.Lock()
		if _, open := c.tracked[w]; !open {
			c.mu.Unlock()
			continue // closed meanwhile
		}
		p := w.filter
		p.Since = w.since()
		c.mu.Unlock()
		if p.Transcripts == "*" {
			// A session the watcher saw nothing of was made after it subscribed (Watch read
			// where every one there then stood), so all its entries are new to it: -1. Without
			// this, what was appended to it while the watcher was away was never sent.
			names, err := c.sessionNames(ctx, true)
			if err != nil {
				return err
			}
			for _, name := range names {
				if _, seen := p.Since.Transcripts[name]; !seen {
					if p.Since.Transcripts == nil {
						p.Since.Transcripts = map[string]int{}
					}
					p.Since.Transcripts[name] = -1
				}
			}
		}
		if _, _, err := c.subscribeOn(ctx, w, p, true, w.handle); err != nil {
			return err
		}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if gen != c.gen || c.err != nil {
		return fmt.Errorf("the connection ended while subscribing again")
	}
	c.reconnecting = false
	c.lostBy = nil
	close(c.ready)
	c.up = true
	return nil
}
