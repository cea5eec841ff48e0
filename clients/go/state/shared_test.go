package state

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"

	stateclient "github.com/herrscher/herrscher-state/clients/go"
)

// The pattern of Herrscher's tests: a state in t.TempDir(), the package's calls, and the
// folder removed right after the last one returned. The removal succeeds (the testing package
// fails the test if it does not: nothing is written there after a call returned) and the folder
// stays removed (a round trip to the same server afterwards is the barrier).
func TestATempDirStateIsRemovedCleanlyAfterItsLastCall(t *testing.T) {
	t.Parallel()
	for i := 0; i < 3; i++ {
		var dir string
		t.Run(fmt.Sprint("round", i), func(t *testing.T) {
			dir = t.TempDir()
			path := filepath.Join(dir, "state.json")
			st := mustLoad(t, path)
			if err := st.AddSession(Session{Name: "a"}); err != nil {
				t.Fatal(err)
			}
			if err := st.SetResumeToken("a", "tok"); err != nil {
				t.Fatal(err)
			}
			if err := AppendTranscript(TranscriptPath(dir, "a"), TranscriptEntry{Ts: "t", Role: "user", Text: "x"}); err != nil {
				t.Fatal(err)
			}
			if added, err := AppendParticipant(ParticipantsPath(dir, "a"), "u1"); err != nil || !added {
				t.Fatalf("AppendParticipant: %v %v", added, err)
			}
			if a, _ := mustLoad(t, path).FindSession("a"); a.ResumeToken != "tok" {
				t.Fatalf("read back: %+v", a)
			}
		})
		// The server has answered a later call on another state.
		other := filepath.Join(stateDir(t), "state.json")
		if err := mustLoad(t, other).SetWorkspace("/ws"); err != nil {
			t.Fatal(err)
		}
		if _, err := os.Lstat(dir); !os.IsNotExist(err) {
			t.Fatalf("round %d: the removed folder is back (%v): %v", i, err, files(t, dir))
		}
	}
}

// manyStatesProcess makes n states under dir (one folder each) through the package, then prints
// the pid of the server that serves them, once for each distinct one.
func manyStatesProcess(n, dir string) int {
	defer closeAll()
	count, err := strconv.Atoi(n)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	pids, err := makeStates(dir, count)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	for _, pid := range pids {
		fmt.Println(pid)
	}
	return 0
}

// makeStates creates count state folders under dir, with a session, a resume token, a
// transcript entry and a participant each, and gives the distinct pids of their servers.
func makeStates(dir string, count int) ([]int, error) {
	seen := map[int]bool{}
	for i := 0; i < count; i++ {
		d := filepath.Join(dir, fmt.Sprint("s", i))
		if err := os.Mkdir(d, 0o700); err != nil {
			return nil, err
		}
		path := filepath.Join(d, "state.json")
		st, err := LoadState(path)
		if err != nil {
			return nil, err
		}
		if err := st.AddSession(Session{Name: "a"}); err != nil {
			return nil, err
		}
		if err := st.SetResumeToken("a", fmt.Sprint("tok", i)); err != nil {
			return nil, err
		}
		if err := AppendTranscript(TranscriptPath(d, "a"), TranscriptEntry{Ts: "t", Role: "user", Text: "x"}); err != nil {
			return nil, err
		}
		if _, err := AppendParticipant(ParticipantsPath(d, "a"), "u1"); err != nil {
			return nil, err
		}
		ctx, cancel := callContext()
		c, err := findOrStart(ctx, path)
		if err == nil {
			var s stateclient.StatusResult
			s, err = c.Status(ctx)
			seen[s.Pid] = true
			c.Close()
		}
		cancel()
		if err != nil {
			return nil, err
		}
	}
	var pids []int
	for pid := range seen {
		pids = append(pids, pid)
	}
	sort.Ints(pids)
	return pids, nil
}

// rssOf is the resident memory of pid as /proc says it (VmRSS), for the log.
func rssOf(pid int) string {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return "?"
	}
	for _, l := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(l, "VmRSS:") {
			return strings.TrimSpace(strings.TrimPrefix(l, "VmRSS:"))
		}
	}
	return "?"
}

// onlySocketAndLog fails unless the socket folder holds the shared socket, the server's lifetime
// lock beside it (the socket's name with .lock) and its log alone.
func onlySocketAndLog(t *testing.T, folder string) {
	t.Helper()
	sock := stateclient.SharedSocketName
	want := []string{strings.TrimSuffix(sock, ".sock") + ".lock", sock, sharedLogName}
	sort.Strings(want)
	got := files(t, folder)
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Fatalf("the socket folder holds %v, want %v", got, want)
	}
}

// How many state files the package's "one server for every state" tests make. The server's side
// of many states (200 open at once, 400 connections, its memory bounded) is
// test/e2e/shared-server.test.ts's; here the subject is the package: each state's first call
// finds the one running server instead of starting another, which every state past the first
// shows (the package keeps nothing per state but a connection it closes when idle).
const manyStates, manyStatesProcs = 40, 4

// manyStates state files from one process: one server process serves them all (one start), and
// the socket folder holds its socket and its log, nothing per state.
func TestManyStatesInOneProcessUseOneServer(t *testing.T) {
	starts, folder := ownSharedServer(t)
	pids, err := makeStates(stateDir(t), manyStates)
	if err != nil {
		t.Fatal(err)
	}
	if len(pids) != 1 {
		t.Fatalf("served by %v, want one server", pids)
	}
	if started := startedPids(starts); len(started) != 1 || started[0] != pids[0] {
		t.Fatalf("started %v, served by %v", started, pids)
	}
	t.Logf("one server (pid %d) for %d states: RSS %s", pids[0], manyStates, rssOf(pids[0]))
	onlySocketAndLog(t, folder)
}

// manyStates state files across manyStatesProcs processes started at once: they all use one
// server process (the starts that lost the race exited at once), and the socket folder holds its
// socket and log.
func TestManyStatesAcrossFourProcessesUseOneServer(t *testing.T) {
	starts, folder := ownSharedServer(t)
	dir := stateDir(t)
	const procs = manyStatesProcs
	outs := make([]*bufio.Scanner, procs)
	var cmds []*exec.Cmd
	for p := 0; p < procs; p++ {
		d := filepath.Join(dir, fmt.Sprint("p", p))
		if err := os.Mkdir(d, 0o700); err != nil {
			t.Fatal(err)
		}
		cmd := exec.Command(os.Args[0])
		cmd.Env = append(os.Environ(), otherProcessEnv+"=states:"+fmt.Sprint(manyStates/procs)+" "+d)
		cmd.Stderr = os.Stderr
		out, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		outs[p], cmds = bufio.NewScanner(out), append(cmds, cmd)
	}
	served := map[string]bool{}
	for p, cmd := range cmds {
		for outs[p].Scan() {
			served[outs[p].Text()] = true
		}
		if err := cmd.Wait(); err != nil {
			t.Fatalf("process %d: %v", p, err)
		}
	}
	if len(served) != 1 {
		t.Fatalf("served by %v, want one server", served)
	}
	var running []int
	for _, pid := range startedPids(starts) {
		if holderIsServer(pid) {
			running = append(running, pid)
		}
	}
	if len(running) != 1 || !served[fmt.Sprint(running[0])] {
		t.Fatalf("servers running: %v; served by %v", running, served)
	}
	t.Logf("%d starts, one server (pid %d) for %d×%d states: RSS %s", len(startedPids(starts)), running[0], procs, manyStates/procs, rssOf(running[0]))
	onlySocketAndLog(t, folder)
}

// A `serve --shared` started while the shared server runs exits with the code findOrStart takes
// for "another start won" (then dials that one), and leaves the running server's socket alone.
func TestALostStartRaceIsRecognised(t *testing.T) {
	t.Parallel()
	path := filepath.Join(stateDir(t), "state.json")
	if err := mustLoad(t, path).SetWorkspace("/ws"); err != nil {
		t.Fatal(err)
	}
	pid := servingPid(t, path)
	command := serverCommand()
	args := append(append([]string{}, command[1:]...), "serve", "--shared", "--socket", stateclient.SharedSocketPath(os.Getenv), "--exit-when-idle", sharedIdleExitMs)
	out, err := exec.Command(command[0], args...).CombinedOutput()
	var ee *exec.ExitError
	if err == nil || !errors.As(err, &ee) || ee.ExitCode() != inUseExit {
		t.Fatalf("a second shared server: %v, want exit %d: %s", err, inUseExit, out)
	}
	if got := servingPid(t, path); got != pid {
		t.Fatalf("served by %d after the lost start, was %d", got, pid)
	}
}

// The server the package starts writes as Go's package does (no fsync) unless
// $HERRSCHER_STATE_DURABILITY asks for another durability.
func TestTheStartedServerWritesAsGoDoesUnlessTold(t *testing.T) {
	for _, c := range []struct{ env, want string }{{"", "--durability write"}, {"sync", "--durability sync"}} {
		t.Run("env="+c.env, func(t *testing.T) {
			t.Setenv("HERRSCHER_STATE_DURABILITY", c.env)
			starts, _ := ownSharedServer(t)
			if err := mustLoad(t, filepath.Join(stateDir(t), "state.json")).SetWorkspace("/ws"); err != nil {
				t.Fatal(err)
			}
			args, err := os.ReadFile(starts + ".args")
			if err != nil || !strings.Contains(string(args), "serve --shared") || !strings.Contains(string(args), c.want) {
				t.Fatalf("started with %q (%v), want %s", args, err, c.want)
			}
		})
	}
}
