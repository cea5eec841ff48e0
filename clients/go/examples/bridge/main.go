// Command bridge is what a Herrscher bridge does with herrscher-state: it finds the server by
// itself (the socket the live server of the state file recorded, or $HERRSCHER_STATE_SOCKET),
// watches one session's transcript, and appends a reply to every user turn.
//
//	bridge [-state ~/.config/herrscher/state.json] [-session main] [-turns 1]
//
// It watches first and then reads what is already there, dropping by seq what it has seen:
// a turn appended between the two is handled once.
package main

import (
	"context"
	"flag"
	"fmt"
	"log"
	"time"

	stateclient "github.com/herrscher/herrscher-state/clients/go"
)

func main() {
	state := flag.String("state", "", "the state.json whose server to reach (default: Herrscher's)")
	session := flag.String("session", "main", "the session to serve")
	turns := flag.Int("turns", 1, "reply to this many user turns, then exit (0: forever)")
	flag.Parse()
	if err := run(*state, *session, *turns); err != nil {
		log.Fatalf("bridge: %v", err)
	}
}

func run(state, session string, turns int) error {
	ctx := context.Background()
	c, err := stateclient.Dial(ctx, stateclient.DialOptions{State: state})
	if err != nil {
		return err
	}
	defer c.Close()
	w, err := c.Watch(ctx, stateclient.WatchOptions{Transcripts: []string{session}})
	if err != nil {
		return err
	}
	defer w.Close()

	next := 0 // the first seq not yet looked at
	replied := 0
	handle := func(seq int, e stateclient.TranscriptEntry) (bool, error) {
		if seq < next {
			return false, nil // seen already (read, then its event)
		}
		next = seq + 1
		if e.Role != "user" {
			return false, nil
		}
		reply := stateclient.TranscriptEntry{Ts: time.Now().UTC().Format(time.RFC3339), Role: "assistant", Text: "echo: " + e.Text}
		if _, err := c.AppendTranscript(ctx, session, reply); err != nil {
			return false, err
		}
		replied++
		fmt.Printf("replied to seq %d\n", seq)
		return turns > 0 && replied >= turns, nil
	}

	page, err := c.ReadPage(ctx, session)
	if err != nil {
		return err
	}
	for i, e := range page.Entries {
		if done, err := handle(page.FirstSeq+i, e); done || err != nil {
			return err
		}
	}
	for ev := range w.Events() {
		if a, ok := ev.(*stateclient.TranscriptDidAppendParams); ok {
			if done, err := handle(a.Seq, a.Entry); done || err != nil {
				return err
			}
		}
	}
	return fmt.Errorf("the watch ended: %v", w.Err())
}
