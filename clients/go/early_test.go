package stateclient

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"testing"
	"time"
)

// Notifications read before a watch/subscribe answer has been handled are held for it, at most
// earlyLimit. Past that bound the watcher must end with ErrWatchOverflow (subscribe and read
// again), never go on with a silent gap: they were once dropped without a word.
func TestNotificationsHeldPastTheBoundEndTheWatcherWithOverflow(t *testing.T) {
	t.Parallel()
	client, server := net.Pipe()
	c := NewClient(client)
	defer c.Close()
	const sent = earlyLimit + 10
	go func() {
		r := bufio.NewReader(server)
		id, err := readRequestID(r)
		if err != nil {
			return
		}
		// Read before the answer is handled (the reader runs ahead of the subscribing call).
		for i := 0; i < sent; i++ {
			c.notification("transcript/didAppend", json.RawMessage(fmt.Sprintf(
				`{"subscription":"w1","name":"a","seq":%d,"entry":{"ts":"t","role":"user","text":"x"}}`, i)))
		}
		_, _ = fmt.Fprintf(server, `{"jsonrpc":"2.0","id":%d,"result":{"subscription":"w1","revision":0,"epoch":"e"}}`+"\n", id)
		_, _ = r.ReadBytes('\n') // hold the connection open
	}()
	w, err := c.Watch(ctxT(t), WatchOptions{Transcripts: []string{"a"}})
	if err != nil {
		t.Fatal(err)
	}
	seen := 0
	for {
		select {
		case ev, ok := <-w.Events():
			if !ok {
				if !errors.Is(w.Err(), ErrWatchOverflow) {
					t.Fatalf("ended after %d events with %v, want ErrWatchOverflow", seen, w.Err())
				}
				return
			}
			if _, ok := ev.(*TranscriptDidAppendParams); ok {
				seen++
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("%d of %d events, then nothing: the rest were dropped without a word", seen, sent)
		}
	}
}
