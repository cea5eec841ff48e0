package stateclient

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"
)

// restartable is a socket server that a test kills and starts again on the same state.
type restartable struct {
	t             *testing.T
	state, socket string
	cmd           *exec.Cmd
	exited        chan struct{}
	stderr        *lockedBuffer
}

func startRestartable(t *testing.T) *restartable {
	dir := t.TempDir()
	r := &restartable{t: t, state: filepath.Join(dir, "state.json"), socket: filepath.Join(dir, "s.sock")}
	t.Cleanup(r.stop)
	r.start()
	return r
}

func (r *restartable) start() { r.startAt(r.socket) }

// startAt serves the state on socket: another one than r.socket is one its clients do not
// dial, so what is done there is done while they are away.
func (r *restartable) startAt(socket string) {
	t := r.t
	t.Helper()
	command := serverCommand(t)
	r.stderr = &lockedBuffer{}
	r.cmd = exec.Command(command[0], append(append(command[1:], "serve", "--state", r.state, "--socket", socket), serveArgs...)...)
	r.cmd.Stderr = r.stderr
	r.cmd.Env = testEnv(t)
	if err := r.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	r.exited = exited
	go func(cmd *exec.Cmd) {
		_ = cmd.Wait()
		close(exited)
	}(r.cmd)
	deadline := time.Now().Add(20 * time.Second)
	for {
		if conn, err := net.Dial("unix", socket); err == nil {
			conn.Close()
			if rec, _ := ReadServerRecord(r.state); rec != nil && rec.Pid == r.cmd.Process.Pid {
				return
			}
		}
		select {
		case <-exited:
			t.Fatalf("the server exited: %s", r.stderr.String())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("the server never listened: %s", r.stderr.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// stop kills the server (SIGKILL: what it acknowledged is on disk).
func (r *restartable) stop() {
	_ = r.cmd.Process.Kill()
	<-r.exited
}

// waitLost returns once c knows its connection is gone (it is reconnecting).
func waitLost(t *testing.T, c *Client) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		c.mu.Lock()
		lost := c.reconnecting
		c.mu.Unlock()
		if lost {
			return
		}
		if time.Now().After(deadline) {
			t.Fatal("the client never noticed the server had gone")
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func TestAWatcherSeesEveryAcknowledgedAppendOnceInOrderAcrossARestart(t *testing.T) {
	t.Parallel()
	srv := startRestartable(t)
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	fast := &ReconnectOptions{InitialDelay: 50 * time.Millisecond, MaxDelay: 500 * time.Millisecond}
	writer, err := Dial(ctx, DialOptions{Socket: srv.socket, Reconnect: fast})
	if err != nil {
		t.Fatal(err)
	}
	defer writer.Close()
	reader, err := Dial(ctx, DialOptions{Socket: srv.socket, Reconnect: fast})
	if err != nil {
		t.Fatal(err)
	}
	defer reader.Close()
	must(writer.AddSession(ctx, Session{Name: "r"}))(t)
	must(writer.AppendTranscript(ctx, "r", TranscriptEntry{Ts: "2026-01-01T00:00:00Z", Role: "user", Text: "before"}))(t)
	watch, err := reader.Watch(ctx, WatchOptions{Sessions: true, Transcripts: []string{"r"}})
	if err != nil {
		t.Fatal(err)
	}
	defer watch.Close()

	var mu sync.Mutex
	var acked []string
	var unexpected error
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := 1; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			text := fmt.Sprintf("e%d", i)
			cctx, ccancel := context.WithTimeout(ctx, 30*time.Second)
			_, err := writer.AppendTranscript(cctx, "r", TranscriptEntry{Ts: "2026-01-01T00:00:00Z", Role: "user", Text: text})
			ccancel()
			mu.Lock()
			if err == nil {
				acked = append(acked, text)
			} else if !errors.Is(err, ErrClosed) && unexpected == nil {
				unexpected = err // ErrClosed: in flight when the server went, perhaps applied
			}
			mu.Unlock()
		}
	}()
	count := func() int {
		mu.Lock()
		defer mu.Unlock()
		return len(acked)
	}
	waitFor := func(n int) {
		for count() < n {
			if ctx.Err() != nil {
				t.Fatalf("only %d appends acknowledged", count())
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	waitFor(20)
	srv.stop()
	srv.start()
	waitFor(count() + 20)
	close(stop)
	<-done
	if unexpected != nil {
		t.Fatalf("the writer failed: %v", unexpected)
	}
	if writer.Err() != nil || reader.Err() != nil {
		t.Fatalf("a client ended: %v %v", writer.Err(), reader.Err())
	}
	entries := must(writer.ReadTranscript(ctx, "r", 0))(t)
	var inFile []string
	for _, e := range entries[1:] { // "before" was there when the watch began
		inFile = append(inFile, e.Text)
	}
	var seqs []int
	var seen []string
	for len(seen) < len(inFile) {
		select {
		case ev, ok := <-watch.Events():
			if !ok {
				t.Fatalf("the watch ended: %v", watch.Err())
			}
			if e, ok := ev.(*TranscriptDidAppendParams); ok {
				if e.Subscription != watch.ID {
					t.Fatalf("an event under subscription %q, not %q", e.Subscription, watch.ID)
				}
				seqs = append(seqs, e.Seq)
				seen = append(seen, e.Entry.Text)
			}
		case <-ctx.Done():
			t.Fatalf("saw %d of %d appends", len(seen), len(inFile))
		}
	}
	for i := range seqs {
		if seqs[i] != seqs[0]+i {
			t.Fatalf("a gap or a duplicate: seqs %v", seqs)
		}
	}
	if fmt.Sprint(seen) != fmt.Sprint(inFile) {
		t.Fatalf("saw %v, the file holds %v", seen, inFile)
	}
	in := map[string]bool{}
	for _, a := range acked {
		in[a] = true
	}
	var ackedSeen []string
	for _, s := range seen {
		if in[s] {
			ackedSeen = append(ackedSeen, s)
		}
	}
	if fmt.Sprint(ackedSeen) != fmt.Sprint(acked) {
		t.Fatalf("acknowledged %v, saw %v of them", acked, ackedSeen)
	}
	// Nothing more: the next append seen is one made now (events come in commit order).
	must(writer.AppendTranscript(ctx, "r", TranscriptEntry{Ts: "2026-01-01T00:00:00Z", Role: "user", Text: "marker"}))(t)
	for {
		select {
		case ev, ok := <-watch.Events():
			if !ok {
				t.Fatalf("the watch ended: %v", watch.Err())
			}
			if e, ok := ev.(*TranscriptDidAppendParams); ok {
				if e.Entry.Text != "marker" {
					t.Fatalf("one more append than the file holds: %+v", e)
				}
				return
			}
		case <-ctx.Done():
			t.Fatal("the marker append was never seen")
		}
	}
}

// A watcher of every session ("*") that saw nothing of a session (made after it subscribed, or
// one it saw no append of) still gets what was appended to it while the watcher was away: its
// since named only the sessions it had seen, so those entries were never sent.
func TestAWatcherOfEverySessionSeesWhatSessionsItSawNothingOfGotWhileItWasAway(t *testing.T) {
	t.Parallel()
	srv := startRestartable(t)
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	entry := func(text string) TranscriptEntry {
		return TranscriptEntry{Ts: "2026-01-01T00:00:00Z", Role: "user", Text: text}
	}
	setup, err := Dial(ctx, DialOptions{Socket: srv.socket})
	if err != nil {
		t.Fatal(err)
	}
	must(setup.AddSession(ctx, Session{Name: "old"}))(t)
	for i := 0; i < 3; i++ {
		must(setup.AppendTranscript(ctx, "old", entry(fmt.Sprintf("before%d", i))))(t)
	}
	setup.Close()
	fast := &ReconnectOptions{InitialDelay: 20 * time.Millisecond, MaxDelay: 100 * time.Millisecond}
	reader, err := Dial(ctx, DialOptions{Socket: srv.socket, Reconnect: fast})
	if err != nil {
		t.Fatal(err)
	}
	defer reader.Close()
	watch, err := reader.Watch(ctx, WatchOptions{Transcripts: AllSessions})
	if err != nil {
		t.Fatal(err)
	}
	defer watch.Close()
	srv.stop()
	waitLost(t, reader)
	// The writes while it is away, on a run it does not dial; then the run it comes back to.
	away := filepath.Join(filepath.Dir(srv.socket), "away.sock")
	srv.startAt(away)
	writer, err := Dial(ctx, DialOptions{Socket: away})
	if err != nil {
		t.Fatal(err)
	}
	must(writer.AddSession(ctx, Session{Name: "c"}))(t)
	must(writer.AppendTranscript(ctx, "c", entry("while-away")))(t)
	must(writer.AppendTranscript(ctx, "old", entry("old-while-away")))(t)
	writer.Close()
	srv.stop()
	srv.start()
	must(reader.Status(ctx))(t) // a call waits until the watch is subscribed again
	writer, err = Dial(ctx, DialOptions{Socket: srv.socket})
	if err != nil {
		t.Fatal(err)
	}
	defer writer.Close()
	must(writer.AppendTranscript(ctx, "old", entry("marker")))(t)
	var all []string
	for len(all) == 0 || !strings.HasSuffix(all[len(all)-1], ":marker") {
		select {
		case ev, ok := <-watch.Events():
			if !ok {
				t.Fatalf("the watch ended: %v", watch.Err())
			}
			if e, ok := ev.(*TranscriptDidAppendParams); ok {
				all = append(all, fmt.Sprintf("%s#%d:%s", e.Name, e.Seq, e.Entry.Text))
			}
		case <-ctx.Done():
			t.Fatalf("saw %v; want c#0:while-away and old#3:old-while-away, then the marker", all)
		}
	}
	got := append([]string(nil), all[:len(all)-1]...)
	sort.Strings(got)
	if fmt.Sprint(got) != "[c#0:while-away old#3:old-while-away]" || all[len(all)-1] != "old#4:marker" {
		t.Fatalf("saw %v; want c#0:while-away and old#3:old-while-away, each once, then old#4:marker", all)
	}
}
