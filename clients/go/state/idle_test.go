package state

import (
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// connectionGoroutines counts this process's goroutines that belong to a connection: the
// feed's follower, the idle closer, the client's reader.
func connectionGoroutines() int {
	buf := make([]byte, 1<<20)
	buf = buf[:runtime.Stack(buf, true)]
	n := 0
	for _, g := range strings.Split(string(buf), "\n\n") {
		if strings.Contains(g, "(*connection).follow") || strings.Contains(g, "(*connection).closeWhenIdle") || strings.Contains(g, "(*Client).read(") {
			n++
		}
	}
	return n
}

// A connection closes by itself once its calls stop: nothing of the package stays behind a test
// that is done with its state (no goroutine, no connection keeping the state open in the shared
// server), and the next call dials again.
func TestAnIdleConnectionLeavesNothingBehind(t *testing.T) {
	// Not parallel: it counts every connection's goroutines in the process.
	dir := stateDir(t)
	path := filepath.Join(dir, "state.json")
	st := mustLoad(t, path)
	if err := st.AddSession(Session{Name: "a"}); err != nil {
		t.Fatal(err)
	}
	if connectionGoroutines() == 0 {
		t.Fatal("no goroutine of the connection while it is open: the count sees nothing")
	}
	eventually(t, "the idle connection closed and its goroutines ended", func() bool { return connectionGoroutines() == 0 })
	if err := st.SetResumeToken("a", "again"); err != nil {
		t.Fatal(err)
	}
	if a, _ := mustLoad(t, path).FindSession("a"); a.ResumeToken != "again" {
		t.Fatalf("after the reconnect: %+v", a)
	}
}
