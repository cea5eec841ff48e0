package state

import (
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// The transcript and participant files of one state dir (one server): each step touches only
// its own kind of file, and neither makes a session row.
func TestTranscriptAndParticipantFiles(t *testing.T) {
	t.Parallel()
	dir := stateDir(t)
	t.Run("TranscriptsAreWrittenForAnyNameAndReadAsGo", func(t *testing.T) { transcriptsAreWrittenForAnyNameAndReadAsGo(t, dir) })
	t.Run("ParticipantJournalAppendAndRead", func(t *testing.T) { participantJournalAppendAndRead(t, dir) })
}

func transcriptsAreWrittenForAnyNameAndReadAsGo(t *testing.T, dir string) {
	path := TranscriptPath(dir, "closed")
	if path != filepath.Join(dir, "transcripts", "closed.jsonl") {
		t.Fatalf("TranscriptPath %s", path)
	}
	if ReadTranscript(path, 0) != nil || ReadTranscriptLast(path) != "" {
		t.Fatal("a missing transcript is not nil / \"\"")
	}
	// No session row has the name: Go writes the file anyway (a turn that ends after its
	// session closed), and no row is made.
	for i, ts := range []string{"2026-07-26T00:00:00Z", "2026-07-26T00:00:01Z", "2026-07-26T00:00:02Z"} {
		if err := AppendTranscript(path, TranscriptEntry{Ts: ts, Role: "user", Text: strings.Repeat("x", i+1), TokensIn: i}); err != nil {
			t.Fatal(err)
		}
	}
	all := ReadTranscript(path, 0)
	if len(all) != 3 || all[2].Text != "xxx" || all[2].TokensIn != 2 {
		t.Fatalf("read %+v", all)
	}
	if !reflect.DeepEqual(ReadTranscript(path, -1), all) {
		t.Fatal("limit < 0 is not all")
	}
	last2 := ReadTranscript(path, 2)
	if len(last2) != 2 || last2[0].Ts != "2026-07-26T00:00:01Z" {
		t.Fatalf("limit 2: %+v", last2)
	}
	if ReadTranscriptLast(path) != "2026-07-26T00:00:02Z" {
		t.Fatal("ReadTranscriptLast")
	}
	b, err := os.ReadFile(path)
	if err != nil || !strings.HasPrefix(string(b), `{"ts":"2026-07-26T00:00:00Z","role":"user","text":"x"}`+"\n") {
		t.Fatalf("file: %q %v", b, err)
	}
	if st := mustLoad(t, filepath.Join(dir, "state.json")); st.Sessions != nil {
		t.Fatal("an append made a session row")
	}
	for _, cost := range []float64{math.NaN(), math.Inf(1), math.Inf(-1)} {
		e := TranscriptEntry{Cost: cost}
		_, want := json.Marshal(e)
		if err := AppendTranscript(path, e); err == nil || want == nil || err.Error() != want.Error() {
			t.Fatalf("cost %v: %v, want Go's %v", cost, err, want)
		}
	}
	if got := ReadTranscript(path, 0); len(got) != 3 {
		t.Fatalf("after refused appends the transcript holds %d entries", len(got))
	}
	if err := RemoveTranscript(path); err != nil {
		t.Fatal(err)
	}
	if err := RemoveTranscript(path); err != nil {
		t.Fatal("removing a missing transcript:", err)
	}
	if ReadTranscript(path, 0) != nil {
		t.Fatal("read after remove")
	}
	if AppendTranscript("", TranscriptEntry{}) != nil || ReadTranscript("", 0) != nil || ReadTranscriptLast("") != "" || RemoveTranscript("") != nil {
		t.Fatal("an empty path is not a no-op")
	}
}

func participantJournalAppendAndRead(t *testing.T, dir string) {
	path := ParticipantsPath(dir, "a")
	if path != filepath.Join(dir, "participants", "a.log") {
		t.Fatalf("ParticipantsPath %s", path)
	}
	if len(ReadParticipants(path)) != 0 {
		t.Fatal("a missing journal is not empty")
	}
	added, err := AppendParticipant(path, "u1")
	if err != nil || !added {
		t.Fatalf("first append: %v %v", added, err)
	}
	if added, _ := AppendParticipant(path, "u1"); added {
		t.Fatal("second append of u1 added")
	}
	if _, err := AppendParticipant(path, "u2"); err != nil {
		t.Fatal(err)
	}
	if got := ReadParticipants(path); !reflect.DeepEqual(got, []string{"u1", "u2"}) {
		t.Fatalf("read %v", got)
	}
	if added, err := AppendParticipant(path, ""); added || err != nil {
		t.Fatal("an empty id")
	}
	if added, err := AppendParticipant(path, "   "); !added || err != nil {
		t.Fatal("a blank id is added, as Go says")
	}
	if got := ReadParticipants(path); !reflect.DeepEqual(got, []string{"u1", "u2"}) {
		t.Fatalf("a blank id shows: %v", got)
	}
	if err := RemoveParticipantJournal(path); err != nil {
		t.Fatal(err)
	}
	if len(ReadParticipants(path)) != 0 {
		t.Fatal("read after remove")
	}
	if err := RemoveParticipantJournal(path); err != nil {
		t.Fatal("removing again:", err)
	}
}

// A path of no state dir's layout is Go's own file, written by the package as Go does.
func TestAPathOutsideTheLayoutIsHandledAsGo(t *testing.T) {
	dir := t.TempDir()
	journal := filepath.Join(dir, "p", "a.log")
	if added, err := AppendParticipant(journal, "u1"); !added || err != nil {
		t.Fatal(added, err)
	}
	if added, _ := AppendParticipant(journal, "u1"); added {
		t.Fatal("u1 twice")
	}
	if got := ReadParticipants(journal); !reflect.DeepEqual(got, []string{"u1"}) {
		t.Fatal(got)
	}
	if err := RemoveParticipantJournal(journal); err != nil || RemoveParticipantJournal(journal) != nil {
		t.Fatal(err)
	}
	tr := filepath.Join(dir, "t.jsonl")
	if err := AppendTranscript(tr, TranscriptEntry{Ts: "1", Role: "user", Text: "hi"}); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(tr); string(b) != `{"ts":"1","role":"user","text":"hi"}`+"\n" {
		t.Fatalf("%q", b)
	}
	if ReadTranscriptLast(tr) != "1" || len(ReadTranscript(tr, 0)) != 1 {
		t.Fatal("reads")
	}
	if err := RemoveTranscript(tr); err != nil || RemoveTranscript(tr) != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, ".herrscher-state")); !os.IsNotExist(err) {
		t.Fatal("a server was started for a path of no state dir")
	}
}

// Any state file base name: the transcripts of a dir go to the server of the state file the
// process uses there.
func TestTranscriptsGoToTheServerOfTheStateFileInUse(t *testing.T) {
	t.Parallel()
	dir := stateDir(t)
	st := mustLoad(t, filepath.Join(dir, "herrscher.json"))
	if err := st.AddSession(Session{Name: "a"}); err != nil {
		t.Fatal(err)
	}
	if err := AppendTranscript(TranscriptPath(dir, "a"), TranscriptEntry{Ts: "t", Role: "user", Text: "x"}); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, ".state.json.lock")); !os.IsNotExist(err) {
		t.Fatal("a second server was started for state.json")
	}
	if len(ReadTranscript(TranscriptPath(dir, "a"), 0)) != 1 {
		t.Fatal("not read back")
	}
}
