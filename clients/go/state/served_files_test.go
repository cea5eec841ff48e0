package state

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// Transcripts and participant journals of a state dir with a state file go through its server:
// a read's limit keeps the last entries, a negative one all; a participant is added once, a
// blank id is answered as Go's package answers it (added, nothing a read shows).
func TestTranscriptAndParticipantCallsOfAServedState(t *testing.T) {
	t.Parallel()
	dir := stateDir(t)
	st := mustLoad(t, filepath.Join(dir, "state.json"))
	if err := st.AddSession(Session{Name: "served"}); err != nil {
		t.Fatal(err)
	}

	path := TranscriptPath(dir, "served")
	for i, ts := range []string{"2026-07-26T00:00:00Z", "2026-07-26T00:00:01Z", "2026-07-26T00:00:02Z"} {
		if err := AppendTranscript(path, TranscriptEntry{Ts: ts, Role: "user", Text: strings.Repeat("x", i+1)}); err != nil {
			t.Fatal(err)
		}
	}
	all := ReadTranscript(path, 0)
	if len(all) != 3 || all[0].Text != "x" || all[2].Text != "xxx" {
		t.Fatalf("all: %+v", all)
	}
	if got := ReadTranscript(path, -1); !reflect.DeepEqual(got, all) {
		t.Fatalf("limit -1: %+v, want all", got)
	}
	if got := ReadTranscript(path, 2); len(got) != 2 || got[0].Ts != "2026-07-26T00:00:01Z" || got[1].Ts != "2026-07-26T00:00:02Z" {
		t.Fatalf("limit 2: %+v, want the last two", got)
	}
	if got := ReadTranscript(path, 1); len(got) != 1 || got[0].Text != "xxx" {
		t.Fatalf("limit 1: %+v, want the last", got)
	}

	journal := ParticipantsPath(dir, "served")
	for _, c := range []struct {
		id    string
		added bool
	}{{"u1", true}, {"u1", false}, {"u2", true}, {"   ", true}} {
		added, err := AppendParticipant(journal, c.id)
		if err != nil || added != c.added {
			t.Fatalf("AppendParticipant(%q) = %v, %v; want %v", c.id, added, err, c.added)
		}
	}
	if got := ReadParticipants(journal); !reflect.DeepEqual(got, []string{"u1", "u2"}) {
		t.Fatalf("ReadParticipants = %q", got)
	}
	b, err := os.ReadFile(journal)
	if err != nil || string(b) != "u1\nu2\n" {
		// Go's own write would have added the blank id's line: the server's answer leaves none.
		t.Fatalf("the journal holds %q (%v), want each id once and no blank line", b, err)
	}
}
