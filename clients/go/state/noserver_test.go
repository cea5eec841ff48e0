package state

import (
	"os"
	"path/filepath"
	"sort"
	"testing"
)

// noServerMayStart makes any server start visible: HERRSCHER_STATE_BIN is a script that
// records each run and fails, and the socket folder is a fresh one (no shared server of
// another test to dial). The test fails at its end if the script ran.
func noServerMayStart(t *testing.T) {
	t.Helper()
	dir := t.TempDir()
	runs := filepath.Join(dir, "runs")
	bin := filepath.Join(dir, "herrscher-state")
	if err := os.WriteFile(bin, []byte("#!/bin/sh\necho \"$@\" >> '"+runs+"'\nexit 1\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	runtime := filepath.Join(dir, "rt")
	if err := os.Mkdir(runtime, 0o700); err != nil {
		t.Fatal(err)
	}
	t.Setenv("HERRSCHER_STATE_BIN", bin)
	t.Setenv("XDG_RUNTIME_DIR", runtime)
	t.Cleanup(func() {
		if b, err := os.ReadFile(runs); err == nil {
			t.Errorf("a server was started: %s", b)
		}
	})
}

// entries lists everything under dir (relative paths), to show what a call created.
func entries(t *testing.T, dir string) []string {
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

// Go's LoadState of a missing file answers an empty State and creates nothing; so do the reads
// of that State and of the state dir's missing transcripts and journals: no server is asked.
func TestLoadStateOfAMissingFileCreatesNothingAndStartsNoServer(t *testing.T) {
	noServerMayStart(t)
	dir := t.TempDir()
	for _, path := range []string{filepath.Join(dir, "state.json"), filepath.Join(dir, "not", "yet", "state.json")} {
		st, err := LoadState(path)
		if err != nil {
			t.Fatalf("LoadState(%s): %v", path, err)
		}
		if len(st.Sessions) != 0 || st.Home != (HomeRef{}) || st.InstanceID != "" {
			t.Fatalf("not empty: %+v", st)
		}
		if _, ok := st.FindSession("a"); ok {
			t.Fatal("found a session in a missing file")
		}
		if st.WorkspaceRoot() != "" || st.SourceDir() != "" || st.QualifiedName("x") != "x" || len(st.SnapshotSessions()) != 0 {
			t.Fatal("a read of a missing file answered something")
		}
		d := filepath.Dir(path)
		if got := ReadTranscript(TranscriptPath(d, "a"), 0); got != nil {
			t.Fatalf("ReadTranscript: %v", got)
		}
		if got := ReadTranscriptLast(TranscriptPath(d, "a")); got != "" {
			t.Fatalf("ReadTranscriptLast: %q", got)
		}
		if got := ReadParticipants(ParticipantsPath(d, "a")); got != nil {
			t.Fatalf("ReadParticipants: %v", got)
		}
	}
	if got := entries(t, dir); len(got) != 0 {
		t.Fatalf("created %v", got)
	}
}

// A state dir whose state.json exists is served, but a transcript or journal it does not have
// is read as Go reads it (nothing) without a server.
func TestReadsOfAMissingTranscriptOrJournalAskNoServer(t *testing.T) {
	noServerMayStart(t)
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "state.json"), []byte(`{"home":{"id":"","type":""},"sessions":[]}`), 0o600); err != nil {
		t.Fatal(err)
	}
	if got := ReadTranscript(TranscriptPath(dir, "a"), 5); got != nil {
		t.Fatalf("ReadTranscript: %v", got)
	}
	if got := ReadTranscriptLast(TranscriptPath(dir, "a")); got != "" {
		t.Fatalf("ReadTranscriptLast: %q", got)
	}
	if got := ReadParticipants(ParticipantsPath(dir, "a")); got != nil {
		t.Fatalf("ReadParticipants: %v", got)
	}
	if got := entries(t, dir); len(got) != 1 || got[0] != "state.json" {
		t.Fatalf("the folder holds %v", got)
	}
}

// chdir makes dir the working directory until the test ends.
func chdir(t *testing.T, dir string) {
	t.Helper()
	was, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Chdir(dir); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := os.Chdir(was); err != nil {
			t.Fatal(err)
		}
	})
}

// A relative path means the working directory's file, as in Go's package: with no state file
// there, the transcript and journal are that folder's own files, and no server is started for
// ./state.json.
func TestRelativePathsAreTheWorkingDirectorysFiles(t *testing.T) {
	noServerMayStart(t)
	dir := t.TempDir()
	chdir(t, dir)
	e := TranscriptEntry{Ts: "2026-01-01T00:00:00Z", Role: "user", Text: "hi"}
	if err := AppendTranscript("transcripts/x.jsonl", e); err != nil {
		t.Fatal(err)
	}
	if got := ReadTranscript("transcripts/x.jsonl", 0); len(got) != 1 || got[0] != e {
		t.Fatalf("ReadTranscript: %+v", got)
	}
	if got := ReadTranscriptLast("transcripts/x.jsonl"); got != e.Ts {
		t.Fatalf("ReadTranscriptLast: %q", got)
	}
	if added, err := AppendParticipant("participants/x.log", "u1"); err != nil || !added {
		t.Fatalf("AppendParticipant: %v %v", added, err)
	}
	if got := ReadParticipants("participants/x.log"); len(got) != 1 || got[0] != "u1" {
		t.Fatalf("ReadParticipants: %v", got)
	}
	st, err := LoadState("state.json")
	if err != nil {
		t.Fatal(err)
	}
	if st.path != filepath.Join(dir, "state.json") {
		t.Fatalf("bound to %s", st.path)
	}
	if b, err := os.ReadFile(filepath.Join(dir, "transcripts", "x.jsonl")); err != nil || len(b) == 0 {
		t.Fatalf("the working directory's transcript: %q %v", b, err)
	}
	want := []string{"participants", "participants/x.log", "transcripts", "transcripts/x.jsonl"}
	if got := entries(t, dir); len(got) != len(want) {
		t.Fatalf("the folder holds %v, want %v", got, want)
	}
}
