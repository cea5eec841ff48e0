package state

import (
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync/atomic"
	"testing"
)

// files lists what is under dir, relative to it.
func files(t *testing.T, dir string) []string {
	t.Helper()
	var out []string
	err := filepath.Walk(dir, func(p string, _ os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		if p != dir {
			rel, _ := filepath.Rel(dir, p)
			out = append(out, rel)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(out)
	return out
}

// A folder with no state in it (no state.json, no server, no lock): the transcript and journal
// functions do what Go's do, and the folder gets nothing Go's would not write there, whatever
// its mode.
func TestAFolderWithoutStateGetsGosFilesOnly(t *testing.T) {
	t.Parallel()
	for _, mode := range []os.FileMode{0o755, 0o775} {
		dir := filepath.Join(stateDir(t), "plain")
		if err := os.Mkdir(dir, mode); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(dir, mode); err != nil { // past the umask
			t.Fatal(err)
		}
		tr := TranscriptPath(dir, "x")
		if err := AppendTranscript(tr, TranscriptEntry{Ts: "t1", Role: "user", Text: "hi"}); err != nil {
			t.Fatalf("%o: AppendTranscript: %v", mode, err)
		}
		if added, err := AppendParticipant(ParticipantsPath(dir, "x"), "u1"); err != nil || !added {
			t.Fatalf("%o: AppendParticipant: %v %v", mode, added, err)
		}
		if got := ReadTranscript(tr, 0); len(got) != 1 || got[0].Text != "hi" {
			t.Fatalf("%o: ReadTranscript: %+v", mode, got)
		}
		if got := ReadParticipants(ParticipantsPath(dir, "x")); len(got) != 1 || got[0] != "u1" {
			t.Fatalf("%o: ReadParticipants: %+v", mode, got)
		}
		want := "participants participants/x.log transcripts transcripts/x.jsonl"
		if got := strings.Join(files(t, dir), " "); got != want {
			t.Fatalf("%o: the folder holds %q, Go's package writes %q", mode, got, want)
		}
	}
}

// A state dir the server refuses to serve (group-writable: anyone in the group could plant
// files there): LoadState and writes fail at once with the server's words, which say what to
// change; readers read the files as Go's package does, never an empty answer where Go reads data.
func TestAStateDirTheServerRefusesFailsAtOnceAndReadsLikeGo(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(stateDir(t), "shared")
	if err := os.MkdirAll(filepath.Join(dir, "transcripts"), 0o700); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "state.json")
	if err := os.WriteFile(path, []byte(`{"home":{"id":"","type":""},"sessions":null}`), 0o600); err != nil {
		t.Fatal(err)
	}
	tr := TranscriptPath(dir, "x")
	if err := os.WriteFile(tr, []byte("{\"ts\":\"t1\",\"role\":\"user\",\"text\":\"written by Go\"}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(dir, 0o775); err != nil {
		t.Fatal(err)
	}
	_, err := LoadState(path)
	if err == nil || !strings.Contains(err.Error(), "chmod") {
		t.Fatalf("LoadState in a 0775 state dir: %v, want the server's words naming the fix", err)
	}
	if err := AppendTranscript(tr, TranscriptEntry{Ts: "t2", Role: "user", Text: "x"}); err == nil || !strings.Contains(err.Error(), "chmod") {
		t.Fatalf("AppendTranscript in a 0775 state dir: %v, want the server's words naming the fix", err)
	}
	if got := ReadTranscript(tr, 0); len(got) != 1 || got[0].Text != "written by Go" {
		t.Fatalf("ReadTranscript in a 0775 state dir: %+v, want what Go reads", got)
	}
	if got := ReadTranscriptLast(tr); got != "t1" {
		t.Fatalf("ReadTranscriptLast in a 0775 state dir: %q", got)
	}
}

// Another process's change is seen by the next State this process loads, at once (LoadState
// asks the server, whatever the replica holds), and by the States already loaded with it.
func TestAnotherProcessesSetSourceIsSeenAtOnceByTheNextLoad(t *testing.T) {
	t.Parallel()
	path := filepath.Join(stateDir(t), "state.json")
	first := mustLoad(t, path)
	if got := first.SourceDir(); got != "" {
		t.Fatalf("SourceDir before: %q", got)
	}
	otherProcess(t, "source", path)
	// The feed's news of it has not been read yet (dropped here, as on a busy machine where
	// the reader is late): only asking the server can show the change.
	cn := connectionFor(first.path)
	cn.feedMu.Lock()
	cn.feed = nil
	atomic.StoreInt32(&cn.queued, 0)
	cn.feedMu.Unlock()
	second := mustLoad(t, path)
	if got := second.SourceDir(); got != "/their/source" {
		t.Fatalf("a State loaded after the other process's SetSource: SourceDir %q", got)
	}
	// The load brought the process's replica up to date: the first State sees it too.
	if got := first.SourceDir(); got != "/their/source" {
		t.Fatalf("the first State after the second's load: SourceDir %q", got)
	}
}
