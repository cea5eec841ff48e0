package state

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// writerProcess is the other process of the kill test: it adds sessions and appends entries
// until its stdin closes, and says on stdout what each call answered ("ok add <name>",
// "err app <ts> <why>"…). Both go with keys (sent again after a lost connection).
func writerProcess(id, path string) int {
	defer closeAll()
	dir := filepath.Dir(path)
	st, err := LoadState(path)
	if err != nil {
		fmt.Println("err load", err)
		return 1
	}
	stop := make(chan struct{})
	go func() {
		_, _ = bufio.NewReader(os.Stdin).ReadString('\n')
		close(stop)
	}()
	out := bufio.NewWriter(os.Stdout)
	say := func(format string, a ...interface{}) {
		fmt.Fprintf(out, format+"\n", a...)
		out.Flush()
	}
	for k := 0; ; k++ {
		select {
		case <-stop:
			return 0
		default:
		}
		name := fmt.Sprintf("%s-%d", id, k)
		if err := st.AddSession(Session{Name: name}); err != nil {
			say("err add %s %s", name, strings.ReplaceAll(err.Error(), "\n", " "))
		} else {
			say("ok add %s", name)
		}
		e := TranscriptEntry{Ts: name, Role: "assistant", Text: "x", Cost: float64(k%7 + 1), TokensIn: k%5 + 1}
		if err := AppendTranscript(TranscriptPath(dir, "log-"+id), e); err != nil {
			say("err app %s %s", name, strings.ReplaceAll(err.Error(), "\n", " "))
		} else {
			say("ok app %s", name)
		}
	}
}

// kill -9 of the server at chosen points while three processes add sessions and append: no call
// fails (each write whose connection was lost is sent again with its key); every acknowledged
// add and append is in the files exactly once, nothing else is there, nothing twice; the usage
// the server sums is the sum of the acknowledged entries.
func TestKillNineUnderConcurrentWritersLosesAndDoublesNothingAcknowledged(t *testing.T) {
	t.Setenv("HERRSCHER_STATE_DURABILITY", "sync") // servers the processes start
	ownSharedServer(t)                             // killed here: the other tests' server runs on
	dir := stateDir(t)
	path := filepath.Join(dir, "state.json")
	if err := os.WriteFile(path, []byte(`{"home":{"id":"","type":""},"sessions":null}`), 0o600); err != nil {
		t.Fatal(err)
	}
	const procs, kills, perRound = 3, 4, 15
	type line struct{ proc, text string }
	lines := make(chan line, 1024)
	var stdins []interface{ Close() error }
	var cmds []*exec.Cmd
	for p := 0; p < procs; p++ {
		id := fmt.Sprint("p", p)
		cmd := exec.Command(os.Args[0])
		cmd.Env = append(os.Environ(), otherProcessEnv+"=writer:"+id+" "+path)
		in, err := cmd.StdinPipe()
		if err != nil {
			t.Fatal(err)
		}
		outPipe, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		cmd.Stderr = os.Stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		stdins, cmds = append(stdins, in), append(cmds, cmd)
		go func(id string) {
			sc := bufio.NewScanner(outPipe)
			for sc.Scan() {
				lines <- line{id, sc.Text()}
			}
			lines <- line{id, ""}
		}(id)
	}
	acked := map[string]map[string]bool{"add": {}, "app": {}}
	failed := map[string]map[string]string{"add": {}, "app": {}}
	ended := 0
	take := func(l line) {
		if l.text == "" {
			ended++
			return
		}
		f := strings.SplitN(l.text, " ", 4)
		if len(f) < 3 {
			t.Fatalf("%s said %q", l.proc, l.text)
		}
		if f[0] == "ok" {
			acked[f[1]][f[2]] = true
		} else {
			failed[f[1]][f[2]] = l.text
		}
	}
	waitAcks := func(n int) {
		for got := 0; got < n && ended == 0; {
			l := <-lines
			take(l)
			if strings.HasPrefix(l.text, "ok ") {
				got++
			}
		}
	}
	for round := 0; round < kills; round++ {
		waitAcks(perRound * (round%2 + 1))
		pid, err := servingPidNow(path)
		if err != nil {
			continue // between servers: the next round kills the next one
		}
		_ = syscall.Kill(pid, syscall.SIGKILL)
	}
	waitAcks(perRound)
	for _, in := range stdins {
		in.Close()
	}
	for ended < procs {
		take(<-lines)
	}
	for _, cmd := range cmds {
		if err := cmd.Wait(); err != nil {
			t.Errorf("a writer process: %v", err)
		}
	}
	for kind, names := range failed {
		for name, why := range names {
			t.Errorf("%s %s failed: %s", kind, name, why)
		}
	}

	st := mustLoad(t, path)
	rows := map[string]int{}
	for _, s := range st.SnapshotSessions() {
		rows[s.Name]++
	}
	for name, n := range rows {
		if n != 1 {
			t.Errorf("session %s is in the state %d times", name, n)
		}
	}
	for name := range acked["add"] {
		if rows[name] != 1 {
			t.Errorf("acknowledged session %s is in the state %d times", name, rows[name])
		}
	}
	c := otherClient(t, path)
	seen := map[string]int{}
	for p := 0; p < procs; p++ {
		tr := TranscriptPath(dir, fmt.Sprint("log-p", p))
		var cost float64
		var tokens int
		for _, e := range ReadTranscript(tr, 0) {
			seen[e.Ts]++
			cost += e.Cost
			tokens += e.TokensIn
		}
		u, err := c.Usage(context.Background(), fmt.Sprint("log-p", p))
		if err != nil {
			t.Fatal(err)
		}
		if u.Cost != cost || u.TokensIn != tokens {
			t.Errorf("log-p%d: the server's usage is %v / %d, the entries sum to %v / %d", p, u.Cost, u.TokensIn, cost, tokens)
		}
	}
	for ts, n := range seen {
		if n != 1 {
			t.Errorf("entry %s is in its transcript %d times", ts, n)
		}
		if !acked["app"][ts] {
			t.Errorf("entry %s is in its transcript but was not acknowledged", ts)
		}
	}
	for ts := range acked["app"] {
		if seen[ts] != 1 {
			t.Errorf("acknowledged entry %s is in its transcript %d times", ts, seen[ts])
		}
	}
	t.Logf("%d adds and %d appends acknowledged", len(acked["add"]), len(acked["app"]))
}
