package stateclient

import (
	"fmt"
	"sync"
	"testing"
)

// 64 goroutines share one client and append to 8 transcripts: every entry lands once, and each
// goroutine's entries keep the order it appended them in (seq order = file order).
func TestSixtyFourGoroutinesAppendingOverOneClient(t *testing.T) {
	t.Parallel()
	const goroutines, transcripts, perGoroutine = 64, 8, 20
	s := sharedSocketServer(t)
	c := dialTest(t, s)
	ctx := ctxT(t)
	for i := 0; i < transcripts; i++ {
		must(c.AddSession(ctx, Session{Name: fmt.Sprintf("conc-t%d", i)}))(t)
	}
	var wg sync.WaitGroup
	errs := make(chan error, goroutines)
	for g := 0; g < goroutines; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			name := fmt.Sprintf("conc-t%d", g%transcripts)
			last := -1
			for i := 0; i < perGoroutine; i++ {
				seq, err := c.AppendTranscript(ctx, name, TranscriptEntry{Ts: "2026-01-01T00:00:00Z", Role: "user", Text: fmt.Sprintf("g%d-%d", g, i)})
				if err != nil {
					errs <- err
					return
				}
				if seq <= last {
					errs <- fmt.Errorf("goroutine %d: seq %d after %d", g, seq, last)
					return
				}
				last = seq
			}
		}(g)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	for i := 0; i < transcripts; i++ {
		entries := must(c.ReadTranscript(ctx, fmt.Sprintf("conc-t%d", i), 0))(t)
		if len(entries) != goroutines/transcripts*perGoroutine {
			t.Fatalf("t%d holds %d entries", i, len(entries))
		}
		next := map[int]int{} // goroutine → next index expected
		for _, e := range entries {
			var g, n int
			if _, err := fmt.Sscanf(e.Text, "g%d-%d", &g, &n); err != nil {
				t.Fatal(err)
			}
			if g%transcripts != i || n != next[g] {
				t.Fatalf("t%d: %q out of order or in the wrong transcript (want g%d-%d)", i, e.Text, g, next[g])
			}
			next[g]++
		}
	}
}
