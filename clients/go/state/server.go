package state

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"sync"
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
	// remote is the persisted document at remoteRev; seenRev is the newest revision the feed
	// announced (remote is stale while seenRev > remoteRev).
	remote    document
	remoteRev int
	seenRev   int
	loaded    bool
	// inUse counts calls in flight; uses counts calls ever (the idle closer compares it).
	inUse int
	uses  uint64
}

var (
	serversMu sync.Mutex
	servers   = map[string]*server{}
)

// idleClose is how long a connection to a server we do not own stays open without calls:
// closed, it lets a server started with --exit-when-idle stop and release the state's lock.
var idleClose = 250 * time.Millisecond

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
	w, err := c.Watch(ctx, stateclient.WatchOptions{Sessions: true})
	if err != nil {
		_ = c.Close()
		return fmt.Errorf("state: watch %s: %w", srv.statePath, err)
	}
	srv.client, srv.owned = c, owned
	srv.epoch++
	srv.seenRev, srv.remoteRev, srv.loaded = w.Revision, 0, false
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

// follow notes each revision the feed announces; the replica is fetched again at the next
// call that reads it, so a burst of changes costs one fetch.
func (srv *server) follow(c *stateclient.Client, w *stateclient.Watcher) {
	for ev := range w.Events() {
		rev := 0
		switch e := ev.(type) {
		case *stateclient.SessionDidChangeParams:
			rev = e.Revision
		case *stateclient.StateDidChangeParams:
			rev = e.Revision
		}
		srv.mu.Lock()
		if srv.client == c && rev > srv.seenRev {
			srv.seenRev = rev
		}
		srv.mu.Unlock()
	}
	// The watch ended (the connection closed, or the feed overflowed): without it the
	// replica cannot be trusted, so the next call connects again.
	srv.mu.Lock()
	if srv.client == c {
		srv.client = nil
		srv.owned = false
	}
	srv.mu.Unlock()
	_ = c.Close()
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
	srv.remote, srv.remoteRev, srv.loaded = r.State, r.Revision, true
	if r.Revision > srv.seenRev {
		srv.seenRev = r.Revision
	}
	return nil
}

// current gives the replica, fetched again first when the feed announced a newer revision.
// The common case (nothing changed) is one lock and two compares.
func (srv *server) current(knownEpoch, knownRev int) (doc document, rev, epoch int, same bool, err error) {
	for attempt := 0; ; attempt++ {
		c, err := srv.use()
		if err != nil {
			return document{}, 0, 0, false, err
		}
		srv.mu.Lock()
		if srv.client == c.client && srv.loaded && srv.seenRev <= srv.remoteRev {
			if srv.epoch == knownEpoch && srv.remoteRev == knownRev {
				srv.mu.Unlock()
				c.release()
				return document{}, knownRev, knownEpoch, true, nil
			}
			doc, rev, epoch = srv.remote.clone(), srv.remoteRev, srv.epoch
			srv.mu.Unlock()
			c.release()
			return doc, rev, epoch, false, nil
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
			return document{}, 0, 0, false, err
		}
	}
}

// saved records a document this process saved at rev, so its own reads see it at once.
func (srv *server) saved(epoch int, d document, rev int, refetch bool) {
	srv.mu.Lock()
	defer srv.mu.Unlock()
	if srv.epoch != epoch || srv.client == nil {
		return
	}
	if rev > srv.remoteRev {
		srv.remote, srv.remoteRev = d.clone(), rev
		if refetch {
			// The server filled in what the document left out (incarnations): read it back.
			srv.loaded = false
		}
	}
	if rev > srv.seenRev {
		srv.seenRev = rev
	}
}

// stale marks the replica older than rev (a save was refused: someone wrote first).
func (srv *server) stale(epoch, rev int) {
	srv.mu.Lock()
	defer srv.mu.Unlock()
	if srv.epoch == epoch {
		if rev > srv.seenRev {
			srv.seenRev = rev
		}
		if rev <= srv.remoteRev {
			srv.loaded = false
		}
	}
}

// reload makes the next read of the replica ask the server.
func (srv *server) reload() {
	srv.mu.Lock()
	srv.loaded = false
	srv.mu.Unlock()
}

// closeAll ends every connection of this process (tests: the servers may then stop).
func closeAll() {
	serversMu.Lock()
	all := make([]*server, 0, len(servers))
	for _, s := range servers {
		all = append(all, s)
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
