package state

import (
	"context"
	"fmt"
	"path/filepath"
	"reflect"
	"sync"
	"testing"
)

// Many goroutines of one process mutate and read at once while another client changes other
// rows: each goroutine reads its own write as soon as the setter returns (the feed's events
// are applied by whichever read comes next, never lost or applied twice), and at the end the
// process's reads equal a fresh load.
func TestGoroutinesReadTheirOwnWritesWhileAnotherClientWrites(t *testing.T) {
	t.Parallel()
	path := filepath.Join(stateDir(t), "state.json")
	st := mustLoad(t, path)
	const workers, rounds = 8, 25
	for i := 0; i < workers; i++ {
		if err := st.AddSession(Session{Name: fmt.Sprint("w", i)}); err != nil {
			t.Fatal(err)
		}
	}
	if err := st.AddSession(Session{Name: "other"}); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	other := otherClient(t, path)
	errs := make(chan error, workers+1)
	var wg sync.WaitGroup
	for i := 0; i < workers; i++ {
		wg.Add(1)
		go func(name string) {
			defer wg.Done()
			// Each goroutine its own State, as Herrscher's handlers load theirs, and the shared one.
			own, err := LoadState(path)
			if err != nil {
				errs <- err
				return
			}
			for k := 0; k < rounds; k++ {
				s := st
				if k%2 == 1 {
					s = own
				}
				token := fmt.Sprint(name, "-", k)
				if err := s.SetResumeToken(name, token); err != nil {
					errs <- err
					return
				}
				for _, r := range []*State{st, own} {
					if got, _ := r.FindSession(name); got.ResumeToken != token {
						errs <- fmt.Errorf("%s round %d: read %q after setting %q", name, k, got.ResumeToken, token)
						return
					}
				}
			}
		}(fmt.Sprint("w", i))
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		for k := 0; k < rounds; k++ {
			if _, err := other.SetArchived(ctx, "other", k%2 == 0); err != nil {
				errs <- err
				return
			}
		}
	}()
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if _, err := other.SetPausedReason(ctx, "other", "done"); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the other client's last change is read", func() bool {
		o, _ := st.FindSession("other")
		return o.PausedReason == "done"
	})
	want := mustLoad(t, path).SnapshotSessions()
	if got := st.SnapshotSessions(); !reflect.DeepEqual(got, want) {
		t.Fatalf("the process's rows differ from a load:\n%+v\n%+v", got, want)
	}
	for i := 0; i < workers; i++ {
		if r, _ := st.FindSession(fmt.Sprint("w", i)); r.ResumeToken != fmt.Sprint("w", i, "-", rounds-1) {
			t.Fatalf("row %d: %+v", i, r)
		}
	}
}
