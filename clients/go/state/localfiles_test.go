package state

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// lineOf is an entry whose JSON line (newline included) is exactly size bytes.
func lineOf(t *testing.T, ts string, size int) (TranscriptEntry, []byte) {
	t.Helper()
	e := TranscriptEntry{Ts: ts, Role: "user"}
	base, err := json.Marshal(e)
	if err != nil {
		t.Fatal(err)
	}
	e.Text = strings.Repeat("x", size-1-len(base))
	b, err := json.Marshal(e)
	if err != nil || len(b)+1 != size {
		t.Fatalf("entry of %d bytes: %d %v", size, len(b)+1, err)
	}
	return e, append(b, '\n')
}

func tsList(es []TranscriptEntry) []string {
	out := make([]string, len(es))
	for i, e := range es {
		out[i] = e.Ts
	}
	return out
}

func tsRange(from, to int) []string {
	var out []string
	for i := from; i < to; i++ {
		out = append(out, fmt.Sprintf("t%03d", i))
	}
	return out
}

// A transcript of no state dir's layout is bounded as Go's is: an append that takes the file
// past 4 MiB (not one that reaches it exactly) rewrites it with the newest entries that fit in
// 2 MiB.
func TestALocalTranscriptIsCompactedPastFourMiB(t *testing.T) {
	t.Parallel()
	const line = 64 << 10 // 64 lines make 4 MiB exactly, 32 make 2 MiB
	path := filepath.Join(t.TempDir(), "t.jsonl")
	ts := tsRange(0, 65)
	var file []byte
	for i, s := range ts[:63] {
		size := line
		// The entry before the newest 32 is a short one (its line's newline counts: without
		// it, it would fit), and the one before it makes up for it.
		switch i {
		case 31:
			size = 2*line - 60
		case 32:
			size = 60
		}
		_, b := lineOf(t, s, size)
		file = append(file, b...)
	}
	if err := os.WriteFile(path, file, 0o644); err != nil {
		t.Fatal(err)
	}
	e, _ := lineOf(t, ts[63], line)
	if err := AppendTranscript(path, e); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(path); err != nil || fi.Size() != 4<<20 {
		t.Fatalf("a file of exactly 4 MiB was compacted: %v %v", fi.Size(), err)
	}
	e, _ = lineOf(t, ts[64], line)
	if err := AppendTranscript(path, e); err != nil {
		t.Fatal(err)
	}
	got := ReadTranscript(path, 0)
	if want := ts[33:]; !reflect.DeepEqual(tsList(got), want) {
		t.Fatalf("kept %v, want the newest 32 %v", tsList(got), want)
	}
	if fi, err := os.Stat(path); err != nil || fi.Size() != 2<<20 {
		t.Fatalf("compacted to %v bytes %v", fi.Size(), err)
	}
	if _, err := os.Stat(path + ".tmp"); !errors.Is(err, fs.ErrNotExist) {
		t.Fatal("the compaction's temporary file is left:", err)
	}
	// A later read with a limit is the last entries of the compacted file.
	if got := tsList(ReadTranscript(path, 2)); !reflect.DeepEqual(got, ts[63:]) {
		t.Fatalf("limit 2: %v", got)
	}
	if got := ReadTranscriptLast(path); got != ts[64] {
		t.Fatalf("last %q", got)
	}
}

// The newest entry is kept even when it alone is over 2 MiB.
func TestALocalTranscriptKeepsItsNewestEntryWhateverItsSize(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "t.jsonl")
	_, small := lineOf(t, "old", 1<<20)
	if err := os.WriteFile(path, append(small, small...), 0o644); err != nil {
		t.Fatal(err)
	}
	big, _ := lineOf(t, "new", 3<<20)
	if err := AppendTranscript(path, big); err != nil {
		t.Fatal(err)
	}
	if got := tsList(ReadTranscript(path, 0)); !reflect.DeepEqual(got, []string{"new"}) {
		t.Fatalf("kept %v", got)
	}
}

// Lines that are not entries (a torn write, another tool's text) take room in the file but
// are not entries: the compaction drops them and keeps every entry when they all fit, the
// file's first one too.
func TestALocalTranscriptsCompactionDropsLinesThatAreNoEntries(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "t.jsonl")
	_, first := lineOf(t, "first", 100)
	junk := strings.Repeat(strings.Repeat("x", 64<<10-1)+"\n", 64)
	if err := os.WriteFile(path, append(first, junk...), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := AppendTranscript(path, TranscriptEntry{Ts: "second", Role: "user"}); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if want := string(first) + `{"ts":"second","role":"user","text":""}` + "\n"; string(b) != want {
		t.Fatalf("compacted to %d bytes, want the two entries", len(b))
	}
}

// A compaction that cannot write its temporary file leaves the transcript as it is, and the
// append is still done (Go reports no compaction failure); what sits at the temporary name is
// not touched.
func TestALocalTranscriptsFailedCompactionLeavesTheFile(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	path := filepath.Join(dir, "t.jsonl")
	if err := os.Mkdir(path+".tmp", 0o755); err != nil {
		t.Fatal(err)
	}
	_, b := lineOf(t, "a", 4<<20)
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := AppendTranscript(path, TranscriptEntry{Ts: "b", Role: "user"}); err != nil {
		t.Fatal(err)
	}
	if got := tsList(ReadTranscript(path, 0)); !reflect.DeepEqual(got, []string{"a", "b"}) {
		t.Fatalf("read %v", got)
	}
	if fi, err := os.Stat(path + ".tmp"); err != nil || !fi.IsDir() {
		t.Fatal("the folder at the temporary name is gone:", err)
	}
}

// A local journal read as Go reads it: ids trimmed, blank lines and repeats skipped, first-seen
// order; a read of a limit of a local transcript is its last entries.
func TestLocalJournalAndTranscriptReads(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	journal := filepath.Join(dir, "a.log")
	if err := os.WriteFile(journal, []byte("u1\n\n  u2 \nu1\nu3"), 0o644); err != nil {
		t.Fatal(err)
	}
	if got := ReadParticipants(journal); !reflect.DeepEqual(got, []string{"u1", "u2", "u3"}) {
		t.Fatalf("read %q", got)
	}
	if added, err := AppendParticipant(journal, "u2"); added || err != nil {
		t.Fatal("u2 again:", added, err)
	}
	tr := filepath.Join(dir, "t.jsonl")
	if err := os.WriteFile(tr, []byte(`{"ts":"1"}`+"\n"+`{"ts":"2"}`+"\n\n"+`{"ts":"3"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	if got := tsList(ReadTranscript(tr, 2)); !reflect.DeepEqual(got, []string{"2", "3"}) {
		t.Fatalf("limit 2: %v", got)
	}
	if got := tsList(ReadTranscript(tr, 3)); !reflect.DeepEqual(got, []string{"1", "2", "3"}) {
		t.Fatalf("limit 3: %v", got)
	}
	if got := ReadTranscriptLast(tr); got != "3" {
		t.Fatalf("last %q", got)
	}
}

// A remove that fails for another reason than a missing file says so.
func TestALocalRemoveThatFailsSaysSo(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	for _, p := range []string{filepath.Join(dir, "t.jsonl", "x"), filepath.Join(dir, "a.log", "x")} {
		if err := os.MkdirAll(p, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := RemoveTranscript(filepath.Join(dir, "t.jsonl")); err == nil {
		t.Fatal("removing a folder that is not empty gave no error")
	}
	if err := RemoveParticipantJournal(filepath.Join(dir, "a.log")); err == nil {
		t.Fatal("removing a folder that is not empty gave no error")
	}
}
