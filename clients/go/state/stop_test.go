package state

import (
	"fmt"
	"path/filepath"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
)

// SIGTERM under load: the server stops in order and refuses what comes after with -32030;
// each such call is carried to the next server (started by the package), so no call fails,
// and every acknowledged append is in the transcript once.
func TestAServerStoppingUnderLoadFailsNoCall(t *testing.T) {
	ownSharedServer(t) // stopped here: the other tests' server runs on
	dir := stateDir(t)
	path := filepath.Join(dir, "state.json")
	st := mustLoad(t, path)
	const writers, stops = 4, 3
	for i := 0; i < writers; i++ {
		if err := st.AddSession(Session{Name: fmt.Sprint("w", i)}); err != nil {
			t.Fatal(err)
		}
	}
	var acked int64
	stop := make(chan struct{})
	errs := make(chan error, writers)
	sent := make([][]string, writers)
	var wg sync.WaitGroup
	for i := 0; i < writers; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			name := fmt.Sprint("w", i)
			for k := 0; ; k++ {
				select {
				case <-stop:
					return
				default:
				}
				ts := fmt.Sprint(name, "-", k)
				if err := AppendTranscript(TranscriptPath(dir, name), TranscriptEntry{Ts: ts, Role: "user", Text: "x"}); err != nil {
					errs <- fmt.Errorf("append %s: %w", ts, err)
					return
				}
				sent[i] = append(sent[i], ts)
				if err := st.SetResumeToken(name, ts); err != nil {
					errs <- fmt.Errorf("SetResumeToken %s: %w", ts, err)
					return
				}
				atomic.AddInt64(&acked, 1)
			}
		}(i)
	}
	for round := 0; round < stops; round++ {
		var pid int
		eventually(t, "a server serves", func() bool {
			p, err := servingPidNow(path)
			pid = p
			return err == nil || len(errs) > 0
		})
		if len(errs) > 0 {
			break
		}
		before := atomic.LoadInt64(&acked)
		eventually(t, "writes acknowledged by this server", func() bool { return atomic.LoadInt64(&acked) > before+20 || len(errs) > 0 })
		if err := syscall.Kill(pid, syscall.SIGTERM); err != nil {
			t.Fatal(err)
		}
		eventually(t, "the stopped server's successor", func() bool {
			p, err := servingPidNow(path)
			return (err == nil && p != pid) || len(errs) > 0
		})
	}
	close(stop)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	for i := 0; i < writers; i++ {
		name := fmt.Sprint("w", i)
		got := ReadTranscript(TranscriptPath(dir, name), 0)
		if len(got) != len(sent[i]) {
			t.Fatalf("%s: %d entries in the transcript, %d acknowledged", name, len(got), len(sent[i]))
		}
		for k, e := range got {
			if e.Ts != sent[i][k] {
				t.Fatalf("%s: entry %d is %s, acknowledged %s", name, k, e.Ts, sent[i][k])
			}
		}
	}
}
