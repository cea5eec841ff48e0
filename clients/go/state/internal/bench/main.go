// Command bench measures the state package against what Herrscher's Go package does
// in-process, for bench/go-state.bench.ts (npm run bench): each pair is measured back to back
// in the same repetition, and one JSON object of samples is printed on stdout.
//
// The package runs as Herrscher's daemon does: this process holds the state's lock, so the
// server it starts serves under that lock over stdio.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"sync"
	"syscall"
	"time"

	stateclient "github.com/herrscher/herrscher-state/clients/go"
	"github.com/herrscher/herrscher-state/clients/go/state"
)

const sessions = 21

var entry = state.TranscriptEntry{Ts: "2026-07-26T00:00:00Z", Role: "assistant", Text: "Done: the build passes and the two flaky tests are fixed; see the diff for details.", Cost: 0.0123, TokensIn: 5200, TokensOut: 810, DurMs: 14200}

func main() {
	dir := flag.String("dir", "", "a scratch dir")
	reps := flag.Int("reps", 5, "repetitions measured")
	warmup := flag.Int("warmup", 1, "repetitions discarded first")
	n := flag.Int("n", 2000, "calls per latency sample")
	spawns := flag.Int("spawns", 5, "spawns per repetition")
	echoScript := flag.String("echo", "", "bench/fixtures/echo-server.mjs: the floor rows (a bare echo round trip + the in-process operation)")
	child := flag.String("child", "", "internal: one timed start in a fresh process (load|shared|bare|baresock)")
	flag.Parse()
	if *child != "" {
		fmt.Println(childStart(*child, *dir))
		return
	}
	out := map[string][]float64{}
	record := func(rep int, key string, v float64) {
		fmt.Fprintf(os.Stderr, "[go-state] rep %d %s=%.3f\n", rep+1, key, v)
		if rep >= 0 {
			out[key] = append(out[key], v)
		}
	}
	modes := map[string]*state.State{}
	for _, mode := range []string{"write", "sync"} {
		modes[mode] = open(filepath.Join(*dir, mode), mode)
	}
	raw := filepath.Join(*dir, "raw")
	must(os.MkdirAll(raw, 0o755))
	goState := inProcess(modes["write"].SnapshotSessions())
	var floor *echo
	if *echoScript != "" {
		floor = startEcho(*echoScript)
		defer floor.stop()
	}
	spawnSeq := 0
	for rep := -*warmup; rep < *reps; rep++ {
		record(rep, "find.ours", perCall(*n, func() { modes["write"].FindSession("s10") }))
		record(rep, "find.scan", perCall(*n, func() { goState.find("s10") }))
		for _, mode := range []string{"write", "sync"} {
			st := modes[mode]
			path := state.TranscriptPath(filepath.Join(*dir, mode), "s1")
			record(rep, "append."+mode, p50(*n, func() { must(state.AppendTranscript(path, entry)) }))
			tok := 0
			record(rep, "token."+mode, p50(*n, func() {
				tok++
				must(st.SetResumeToken("s1", fmt.Sprintf("3f0c2a9e-0b1d-4c8e-9f7a-%012d", tok)))
			}))
			must(state.RemoveTranscript(path)) // no repetition crosses the compaction trigger
		}
		// A turn that ends after its session closed: the name has no row (Go's rule writes the
		// file all the same). Each append must cost what one with a row costs, whatever the
		// file's size: n appends grow it to ~0.5 MB.
		gone := state.TranscriptPath(filepath.Join(*dir, "write"), "closed")
		record(rep, "append.rowless", p50(*n, func() { must(state.AppendTranscript(gone, entry)) }))
		must(state.RemoveTranscript(gone))
		rawLine := filepath.Join(raw, "t.jsonl")
		record(rep, "append.raw", p50(*n, func() { must(appendLine(rawLine, entry)) }))
		_ = os.Remove(rawLine)
		tok := 0
		record(rep, "token.raw", p50(*n, func() {
			tok++
			must(goState.setResumeToken("s1", fmt.Sprintf("3f0c2a9e-0b1d-4c8e-9f7a-%012d", tok), filepath.Join(raw, "state.json")))
		}))
		if floor != nil {
			// What a call to another process costs at least, with the stack the server is built
			// on: a bare vscode-jsonrpc round trip carrying the same entry, then the same
			// in-process operation as the ceilings above.
			record(rep, "append.echo+raw", p50(*n, func() {
				floor.call("s1", entry)
				must(appendLine(rawLine, entry))
			}))
			_ = os.Remove(rawLine)
			record(rep, "token.echo+raw", p50(*n, func() {
				tok++
				token := fmt.Sprintf("3f0c2a9e-0b1d-4c8e-9f7a-%012d", tok)
				floor.call("s1", map[string]string{"token": token})
				must(goState.setResumeToken("s1", token, filepath.Join(raw, "state.json")))
			}))
		}
		var load, shared, bare, bareSock []float64
		for i := 0; i < *spawns; i++ {
			spawnSeq++
			load = append(load, runChild("load", filepath.Join(*dir, fmt.Sprintf("spawn-%d", spawnSeq))))
			bare = append(bare, runChild("bare", filepath.Join(*dir, fmt.Sprintf("bare-%d", spawnSeq))))
			shared = append(shared, runChild("shared", filepath.Join(*dir, fmt.Sprintf("shared-%d", spawnSeq))))
			bareSock = append(bareSock, runChild("baresock", filepath.Join(*dir, fmt.Sprintf("baresock-%d", spawnSeq))))
		}
		record(rep, "load.ours", median(load))
		record(rep, "load.shared", median(shared))
		record(rep, "load.bare", median(bare))
		record(rep, "load.bare.socket", median(bareSock))
	}
	must(json.NewEncoder(os.Stdout).Encode(out))
}

// open locks dir's state as Herrscher's LockState does, then loads it and adds the sessions.
func open(dir, mode string) *state.State {
	must(os.MkdirAll(dir, 0o755))
	path := filepath.Join(dir, "state.json")
	lock(path)
	os.Setenv("HERRSCHER_STATE_DURABILITY", mode)
	st, err := state.LoadState(path)
	must(err)
	for i := 0; i < sessions; i++ {
		name := "s" + strconv.Itoa(i)
		must(st.AddSession(state.Session{Name: name, ChannelID: fmt.Sprintf("1%017d", i), Type: "text", Cmd: "claude --dangerously-skip-permissions", Vendor: "claude", Dir: "/home/user/src/project-" + name}))
	}
	return st
}

func lock(statePath string) *os.File {
	f, err := os.OpenFile(filepath.Join(filepath.Dir(statePath), "."+filepath.Base(statePath)+".lock"), os.O_CREATE|os.O_RDWR, 0o600)
	must(err)
	must(syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB))
	return f
}

// goPackage is what Herrscher's Go package does in-process: a mutex-guarded slice scanned
// for FindSession, MarshalIndent + temp file + rename for each save.
type goPackage struct {
	mu       sync.Mutex
	Home     state.HomeRef   `json:"home"`
	Sessions []state.Session `json:"sessions"`
}

func inProcess(rows []state.Session) *goPackage { return &goPackage{Sessions: rows} }

func (g *goPackage) find(name string) (state.Session, bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	for _, s := range g.Sessions {
		if s.Name == name {
			return s, true
		}
	}
	return state.Session{}, false
}

func (g *goPackage) setResumeToken(name, token, path string) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	for i := range g.Sessions {
		if g.Sessions[i].Name == name {
			g.Sessions[i].ResumeToken = token
			buf, err := json.MarshalIndent(g, "", "  ")
			if err != nil {
				return err
			}
			if err := os.WriteFile(path+".tmp", buf, 0o600); err != nil {
				return err
			}
			return os.Rename(path+".tmp", path)
		}
	}
	return nil
}

// appendLine is Go's AppendTranscript: open O_APPEND, marshal, one write, stat, close.
func appendLine(path string, e state.TranscriptEntry) error {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	line, err := json.Marshal(e)
	if err != nil {
		f.Close()
		return err
	}
	if _, err := f.Write(append(line, '\n')); err != nil {
		f.Close()
		return err
	}
	_, _ = f.Stat()
	return f.Close()
}

// perCall is the median over batches of 1 000 calls of the µs a batch took (so the µs per
// 1 000 calls): one call is too short to time alone.
func perCall(n int, f func()) float64 {
	const batch = 1000
	var xs []float64
	for i := 0; i < n || len(xs) < 3; i += batch {
		t0 := time.Now()
		for j := 0; j < batch; j++ {
			f()
		}
		xs = append(xs, float64(time.Since(t0).Nanoseconds())/1000)
	}
	return median(xs)
}

// p50 is the median µs of n timed calls.
func p50(n int, f func()) float64 {
	xs := make([]float64, n)
	for i := range xs {
		t0 := time.Now()
		f()
		xs[i] = float64(time.Since(t0).Nanoseconds()) / 1000
	}
	return median(xs)
}

func median(xs []float64) float64 {
	s := append([]float64(nil), xs...)
	sort.Float64s(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

// runChild times one start in a fresh process (so no connection or server of this one
// helps), returning ms.
func runChild(kind, dir string) float64 {
	must(os.MkdirAll(dir, 0o755))
	out, err := exec.Command(os.Args[0], "-child", kind, "-dir", dir).Output()
	must(err)
	v, err := strconv.ParseFloat(string(out[:len(out)-1]), 64)
	must(err)
	return v
}

// childStart: load = LoadState under the caller's lock (the daemon's start, no server
// running) to its answer; shared = the same without the lock (a shared server started);
// bare = spawning the server over stdio to its first answer (initialize), no package;
// baresock = the same on a socket.
func childStart(kind, dir string) float64 {
	path := filepath.Join(dir, "state.json")
	os.Setenv("HERRSCHER_STATE_DURABILITY", "write")
	switch kind {
	case "load", "shared":
		if kind == "load" {
			lock(path)
		}
		t0 := time.Now()
		_, err := state.LoadState(path)
		must(err)
		return float64(time.Since(t0).Microseconds()) / 1000
	case "baresock":
		// The server on a socket, dialled every 2 ms until it answers: what the package does
		// for a shared server, without the package.
		sock := filepath.Join(dir, "s.sock")
		t0 := time.Now()
		cmd := exec.Command("node", os.Getenv("HERRSCHER_STATE_BIN"), "serve", "--state", path, "--socket", sock, "--durability", "write", "--log-level", "warn")
		must(cmd.Start())
		defer func() { _ = cmd.Process.Signal(syscall.SIGTERM); _ = cmd.Wait() }()
		for {
			c, err := stateclient.Dial(context.Background(), stateclient.DialOptions{Socket: sock})
			if err == nil {
				_, err = c.Initialize(context.Background())
				_ = c.Close()
				if err == nil {
					return float64(time.Since(t0).Microseconds()) / 1000
				}
			}
			time.Sleep(2 * time.Millisecond)
		}
	default:
		cli := os.Getenv("HERRSCHER_STATE_BIN")
		t0 := time.Now()
		c, err := stateclient.Spawn(context.Background(), path, stateclient.SpawnOptions{Command: []string{"node", cli}, Args: []string{"--no-socket", "--durability", "write", "--log-level", "warn"}})
		must(err)
		_, err = c.Initialize(context.Background())
		must(err)
		ms := float64(time.Since(t0).Microseconds()) / 1000
		_ = c.Close()
		return ms
	}
}

func must(err error) {
	if err != nil {
		fmt.Fprintln(os.Stderr, "go-state bench:", err)
		os.Exit(1)
	}
}
