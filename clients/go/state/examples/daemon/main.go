// Command daemon plays Herrscher's own flow on the state package, unchanged but for the
// import: a daemon that takes the state's lock as Herrscher's LockState does and then loads
// the state, adds a session and records its turns; an operator command (a second process)
// that archives it; and a restarted daemon that checks what survived.
//
//	daemon -dir D -name N      lock, LoadState, AddSession(N), then one acknowledged
//	                           AppendTranscript per stdin line ("ok <i>" on stdout), and
//	                           "archived" once another process archived N
//	daemon -dir D -name N -operator   LoadState + SetArchived(N, true), then exit
//	daemon -dir D -name N -check      lock, LoadState, print the row and the transcript
package main

import (
	"bufio"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"time"

	"github.com/herrscher/herrscher-state/clients/go/state"
)

func main() {
	dir := flag.String("dir", "", "the state dir")
	name := flag.String("name", "main", "the session")
	operator := flag.Bool("operator", false, "archive the session, as an operator command")
	check := flag.Bool("check", false, "print what the state holds, as a restarted daemon")
	flag.Parse()
	statePath := filepath.Join(*dir, "state.json")
	if err := run(statePath, *name, *operator, *check); err != nil {
		fmt.Fprintln(os.Stderr, "daemon:", err)
		os.Exit(1)
	}
}

func run(statePath, name string, operator, check bool) error {
	if operator {
		st, err := state.LoadState(statePath)
		if err != nil {
			return err
		}
		return st.SetArchived(name, true)
	}
	release, err := lockState(statePath)
	if err != nil {
		return err
	}
	defer release()
	st, err := state.LoadState(statePath)
	if err != nil {
		return err
	}
	dir := filepath.Dir(statePath)
	if check {
		row, ok := st.FindSession(name)
		out, _ := json.Marshal(map[string]interface{}{"found": ok, "session": row, "transcript": state.ReadTranscript(state.TranscriptPath(dir, name), 0)})
		fmt.Println(string(out))
		return nil
	}
	if err := st.AddSession(state.Session{Name: name, ChannelID: "c1", Type: "text", Cmd: "claude"}); err != nil {
		return err
	}
	fmt.Println("ready")
	archived := make(chan struct{})
	go func() {
		for {
			if s, ok := st.FindSession(name); ok && s.Archived {
				close(archived)
				return
			}
			time.Sleep(5 * time.Millisecond)
		}
	}()
	lines := make(chan string)
	go func() {
		sc := bufio.NewScanner(os.Stdin)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
	}()
	for {
		select {
		case <-archived:
			fmt.Println("archived")
			archived = nil
		case text, ok := <-lines:
			if !ok {
				return nil
			}
			e := state.TranscriptEntry{Ts: time.Now().UTC().Format(time.RFC3339), Role: "user", Text: text}
			if err := state.AppendTranscript(state.TranscriptPath(dir, name), e); err != nil {
				return err
			}
			fmt.Println("ok " + text)
		}
	}
}

// lockState is Herrscher's LockState: flock on <dir>/.<base>.lock, the pid written for
// messages, a release func only. A lock still held by the server of a daemon killed a moment
// ago (it stops once it sees its parent gone) is waited for briefly.
func lockState(statePath string) (func(), error) {
	lockPath := filepath.Join(filepath.Dir(statePath), "."+filepath.Base(statePath)+".lock")
	if err := os.MkdirAll(filepath.Dir(lockPath), 0o755); err != nil {
		return nil, err
	}
	f, err := os.OpenFile(lockPath, os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return nil, err
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		err = syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if err == nil {
			break
		}
		if time.Now().After(deadline) {
			f.Close()
			return nil, fmt.Errorf("another herrscher is already serving %s: %v", statePath, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
	_ = f.Truncate(0)
	_, _ = f.WriteAt([]byte(fmt.Sprint(os.Getpid())), 0)
	return func() { f.Close() }, nil
}
