package stateclient

import (
	"fmt"
	"testing"
)

// Watch delivers each append once, in seq order, for the transcripts asked for only.
func TestWatchSeesEachAppendOnceInSeqOrder(t *testing.T) {
	t.Parallel()
	s := sharedSocketServer(t)
	c := dialTest(t, s)
	writer := dialTest(t, s)
	ctx := ctxT(t)
	must(c.AddSession(ctx, Session{Name: "watched"}))(t)
	must(c.AddSession(ctx, Session{Name: "unwatched"}))(t)
	w := must(c.Watch(ctx, WatchOptions{Transcripts: []string{"watched"}}))(t)
	defer w.Close()
	const n = 200
	done := make(chan error, 1)
	go func() {
		for i := 0; i < n; i++ {
			if _, err := writer.AppendTranscript(ctx, "unwatched", TranscriptEntry{Ts: "t", Role: "user", Text: "not watched"}); err != nil {
				done <- err
				return
			}
			if _, err := writer.AppendTranscript(ctx, "watched", TranscriptEntry{Ts: "t", Role: "user", Text: fmt.Sprint(i)}); err != nil {
				done <- err
				return
			}
		}
		done <- nil
	}()
	for i := 0; i < n; i++ {
		ev, open := <-w.Events()
		if !open {
			t.Fatalf("events closed after %d: %v", i, w.Err())
		}
		a, ok := ev.(*TranscriptDidAppendParams)
		if !ok || a.Name != "watched" || a.Seq != i || a.Entry.Text != fmt.Sprint(i) {
			t.Fatalf("event %d: %#v", i, ev)
		}
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	// One more append from the watching client itself: its event comes after its answer's seq.
	seq := must(c.AppendTranscript(ctx, "watched", TranscriptEntry{Ts: "t", Role: "user", Text: "last"}))(t)
	ev := <-w.Events()
	if a, ok := ev.(*TranscriptDidAppendParams); !ok || a.Seq != seq || seq != n {
		t.Fatalf("last event %#v, seq %d", ev, seq)
	}
}

// A watcher whose reader never reads does not stall the connection: the client ends that watch
// with an overflow event past its bound, and calls go on.
func TestAWatcherThatIsNotReadEndsWithOverflowAndCallsGoOn(t *testing.T) {
	defer func(n int) { watchQueueLimit = n }(watchQueueLimit)
	watchQueueLimit = 50
	s := sharedSocketServer(t)
	c := dialTest(t, s)
	ctx := ctxT(t)
	must(c.AddSession(ctx, Session{Name: "overflowed"}))(t)
	w := must(c.Watch(ctx, WatchOptions{Transcripts: AllSessions}))(t)
	for i := 0; i < watchQueueLimit+10; i++ {
		must(c.AppendTranscript(ctx, "overflowed", TranscriptEntry{Ts: "t", Role: "user", Text: "x"}))(t)
		if w.Err() != nil {
			break
		}
	}
	var last Event
	count := 0
	for ev := range w.Events() {
		last = ev
		count++
	}
	if _, ok := last.(*WatchOverflowParams); !ok {
		t.Fatalf("the last of %d events is %#v, want an overflow", count, last)
	}
	if w.Err() != ErrWatchOverflow {
		t.Fatalf("err %v", w.Err())
	}
	must(c.SnapshotSessions(ctx))(t)
}
