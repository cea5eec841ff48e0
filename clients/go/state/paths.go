package state

import (
	"os"
	"path/filepath"
	"strings"

	stateclient "github.com/herrscher/herrscher-state/clients/go"
)

// TranscriptPath returns the transcript path for session name under dir
// (dir/transcripts/<name>.jsonl), beside participants/<name>.log.
func TranscriptPath(dir, name string) string {
	return filepath.Join(dir, "transcripts", name+".jsonl")
}

// ParticipantsPath returns the journal path for session name under dir
// (dir/participants/<name>.log).
func ParticipantsPath(dir, name string) string {
	return filepath.Join(dir, "participants", name+".log")
}

// served maps a transcript or journal path to the server of its state dir and the session
// name: path must be <dir>/<sub>/<name><ext>. ok is false for a path of no state dir's
// layout (the package then does what Go's does, on that file itself).
func served(path, sub, ext string) (cn *connection, name string, ok bool) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, "", false
	}
	parent := filepath.Dir(abs)
	base := filepath.Base(abs)
	if filepath.Base(parent) != sub || !strings.HasSuffix(base, ext) || len(base) == len(ext) {
		return nil, "", false
	}
	statePath, ok := servedStateIn(filepath.Dir(parent))
	if !ok {
		return nil, "", false
	}
	return connectionFor(statePath), strings.TrimSuffix(base, ext), true
}

// servedStateIn is the state file of dir when dir is a state dir: one this process already
// uses, one a live server recorded itself for, or an existing state.json. A folder that is none
// of these (transcripts written by a test or a tool, with no state beside them) is not one: the
// package reads and writes its files as Go's does, and adds nothing to it (no side folder, no
// server). Herrscher's daemon lock (.<base>.lock) says nothing here: it is the daemon's, not the
// state's.
func servedStateIn(dir string) (string, bool) {
	p := stateFileIn(dir)
	if knownStateIn(dir) != "" {
		return p, true
	}
	if rec, err := stateclient.ReadServerRecord(p); err == nil && rec != nil {
		return p, true
	}
	if _, err := os.Lstat(p); err == nil {
		return p, true
	}
	return "", false
}

// stateFileIn is the state file whose dir is dir: one this process already uses, else one
// whose server recorded itself there (any base name), else dir/state.json.
func stateFileIn(dir string) string {
	if p := knownStateIn(dir); p != "" {
		return p
	}
	records, _ := filepath.Glob(filepath.Join(dir, ".herrscher-state", "*.serving.json"))
	for _, r := range records {
		p := filepath.Join(dir, strings.TrimSuffix(filepath.Base(r), ".serving.json"))
		if rec, err := stateclient.ReadServerRecord(p); err == nil && rec != nil {
			return p
		}
	}
	return filepath.Join(dir, "state.json")
}
