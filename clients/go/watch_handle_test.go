package stateclient

import (
	"fmt"
	"sync"
	"testing"
)

// With WatchOptions.Handle, a call that commits a change returns after Handle has had that
// change's event (read-your-writes for a replica kept by the feed), in commit order, and
// nothing is sent on Events, which closes when the watch ends. On the shared server: Handle
// keeps the events of this test's session, the others' changes come between them.
func TestWatchHandleHasACallsOwnEventWhenTheCallReturns(t *testing.T) {
	t.Parallel()
	s := sharedSocketServer(t)
	c := dialTest(t, s)
	ctx := ctxT(t)
	const name = "handled-h"
	must(c.AddSession(ctx, Session{Name: name}))(t)
	var mu sync.Mutex
	var got []Event
	w := must(c.Watch(ctx, WatchOptions{Sessions: true, Handle: func(ev Event) {
		if d, ok := ev.(*SessionDidChangeParams); ok && d.Name != name {
			return
		}
		mu.Lock()
		got = append(got, ev)
		mu.Unlock()
	}}))(t)
	last := w.Revision
	for i := 0; i < 50; i++ {
		token := fmt.Sprint("tok-", i)
		must(c.SetResumeToken(ctx, name, token))(t)
		mu.Lock()
		n := len(got)
		var ev Event
		if n > 0 {
			ev = got[n-1]
		}
		mu.Unlock()
		d, ok := ev.(*SessionDidChangeParams)
		if !ok || d.Name != name || d.Session == nil || d.Session.ResumeToken != token {
			t.Fatalf("after setResumeToken %d returned, the last handled event is %#v (of %d)", i, ev, n)
		}
		if d.Revision <= last || d.Subscription != w.ID {
			t.Fatalf("event %d: revision %d after %d, subscription %q (watch %q)", i, d.Revision, last, d.Subscription, w.ID)
		}
		last = d.Revision
	}
	select {
	case ev, open := <-w.Events():
		t.Fatalf("Events carried %#v (open %v) while Handle takes the events", ev, open)
	default:
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if _, open := <-w.Events(); open || w.Err() != nil {
		t.Fatalf("after Close: Events open %v, Err %v", open, w.Err())
	}
	mu.Lock()
	n := len(got)
	mu.Unlock()
	must(c.SetResumeToken(ctx, name, "after close"))(t)
	mu.Lock()
	defer mu.Unlock()
	if len(got) != n {
		t.Fatalf("Handle called after Close: %#v", got[n:])
	}
}

// A handled watch ends with its connection: Events closes and Err says why.
func TestWatchHandleEndsWithTheConnection(t *testing.T) {
	t.Parallel()
	s := sharedSocketServer(t)
	c := dialTest(t, s)
	ctx := ctxT(t)
	w := must(c.Watch(ctx, WatchOptions{Sessions: true, Handle: func(Event) {}}))(t)
	_ = c.Close()
	if _, open := <-w.Events(); open {
		t.Fatal("Events open after the connection ended")
	}
	if w.Err() == nil {
		t.Fatal("no error for a watch ended by its connection")
	}
}
