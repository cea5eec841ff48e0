// Command host is what Herrscher's daemon does with herrscher-state: it takes the state lock
// (flock on <dir>/.state.json.lock) before anything else, spawns the server with the lock handed
// over (--lock-fd 3), lets its bridges reach the server's socket, and appends a turn.
//
//	host -state ~/.config/herrscher/state.json [-server "node dist/src/cli.js"] [-session main]
//
// It prints the socket its bridges use ("socket <path>"), appends a user turn, waits for one
// assistant reply (from a bridge), prints it, and ends the server in order (shutdown, exit).
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	stateclient "github.com/herrscher/herrscher-state/clients/go"
)

func main() {
	state := flag.String("state", "", "the state.json to serve")
	server := flag.String("server", "herrscher-state", "the server command (space-separated)")
	session := flag.String("session", "main", "the session to append to")
	wait := flag.Duration("wait", 30*time.Second, "how long to wait for a reply")
	flag.Parse()
	if *state == "" {
		log.Fatal("host: -state is required")
	}
	if err := run(*state, strings.Fields(*server), *session, *wait); err != nil {
		log.Fatalf("host: %v", err)
	}
}

func run(state string, server []string, session string, wait time.Duration) error {
	ctx := context.Background()
	lockFile, err := lock(state)
	if err != nil {
		return err
	}
	defer lockFile.Close()

	// The server serves stdio (ours) and its default socket (the bridges'), under our lock.
	c, err := stateclient.Spawn(ctx, state, stateclient.SpawnOptions{Command: server, LockFile: lockFile})
	if err != nil {
		return err
	}
	defer c.Close()
	st, err := c.Status(ctx)
	if err != nil {
		return err
	}
	if st.Socket == nil {
		return errors.New("the server serves no socket, so no bridge can reach it")
	}
	fmt.Printf("socket %s\n", *st.Socket)

	if _, err := c.AddSession(ctx, stateclient.Session{Name: session, Cmd: "bridge"}); err != nil && !errors.Is(err, stateclient.ErrSessionExists) {
		return err
	}
	w, err := c.Watch(ctx, stateclient.WatchOptions{Transcripts: []string{session}})
	if err != nil {
		return err
	}
	defer w.Close()
	turn := stateclient.TranscriptEntry{Ts: time.Now().UTC().Format(time.RFC3339), Role: "user", Text: "hello from the host"}
	seq, err := c.AppendTranscript(ctx, session, turn)
	if err != nil {
		return err
	}
	fmt.Printf("appended seq %d\n", seq)

	timeout := time.After(wait)
	for {
		select {
		case ev, open := <-w.Events():
			if !open {
				return fmt.Errorf("the watch ended: %v", w.Err())
			}
			if a, ok := ev.(*stateclient.TranscriptDidAppendParams); ok && a.Entry.Role == "assistant" {
				fmt.Printf("reply seq %d: %s\n", a.Seq, a.Entry.Text)
				return c.Close() // shutdown, exit, wait: every write is in the files
			}
		case <-timeout:
			return fmt.Errorf("no reply within %s", wait)
		}
	}
}

// lock takes the flock Herrscher's host takes (core/host/lock.go): one daemon per state dir.
func lock(state string) (*os.File, error) {
	abs, err := filepath.Abs(state)
	if err != nil {
		return nil, err
	}
	path := filepath.Join(filepath.Dir(abs), "."+filepath.Base(abs)+".lock")
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, err
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		return nil, fmt.Errorf("another daemon holds %s: %w", path, err)
	}
	return f, nil
}
