package state

// What Go's package does to a transcript or journal path of no state dir's layout (a test's
// own file, a path outside transcripts/ or participants/): no server serves such a file, so
// the package reads and writes it itself, exactly as Go's functions do.

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

const (
	transcriptMaxBytes  = 4 << 20
	transcriptKeepBytes = 2 << 20
)

func appendTranscriptFile(path string, e TranscriptEntry) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	line, err := json.Marshal(e)
	if err != nil {
		f.Close()
		return err
	}
	if _, err := f.Write(append(line, '\n')); err != nil {
		f.Close()
		return err
	}
	fi, statErr := f.Stat()
	f.Close()
	if statErr == nil && fi.Size() > transcriptMaxBytes {
		compactTranscriptFile(path)
	}
	return nil
}

// compactTranscriptFile keeps the newest entries that fit in transcriptKeepBytes (the newest
// always); its failures are not reported, as in Go.
func compactTranscriptFile(path string) {
	all := readTranscriptFile(path, 0)
	if len(all) == 0 {
		return
	}
	total, start := 0, len(all)
	for i := len(all) - 1; i >= 0; i-- {
		b, err := json.Marshal(all[i])
		if err != nil {
			break
		}
		size := len(b) + 1
		if i != len(all)-1 && total+size > transcriptKeepBytes {
			break
		}
		total += size
		start = i
	}
	tmp := path + ".tmp"
	f, err := os.OpenFile(tmp, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o644)
	if err != nil {
		return
	}
	w := bufio.NewWriter(f)
	for _, e := range all[start:] {
		b, _ := json.Marshal(e)
		w.Write(append(b, '\n'))
	}
	if w.Flush() != nil || f.Close() != nil {
		os.Remove(tmp)
		return
	}
	_ = os.Rename(tmp, path)
}

func readTranscriptFile(path string, limit int) []TranscriptEntry {
	f, err := os.Open(path)
	if err != nil {
		return nil
	}
	defer f.Close()
	var out []TranscriptEntry
	r := bufio.NewReader(f)
	for {
		line, err := r.ReadBytes('\n')
		if t := bytes.TrimSpace(line); len(t) > 0 {
			var e TranscriptEntry
			if json.Unmarshal(t, &e) == nil {
				out = append(out, e)
			}
		}
		if err != nil {
			break
		}
	}
	if limit > 0 && len(out) > limit {
		out = out[len(out)-limit:]
	}
	return out
}

// readTranscriptLastFile gives what Go's tail read gives: the ts of the last entry a full
// read returns.
func readTranscriptLastFile(path string) string {
	all := readTranscriptFile(path, 1)
	if len(all) == 0 {
		return ""
	}
	return all[0].Ts
}

func removeFile(path string) error {
	if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	return nil
}

func appendParticipantFile(path, userID string) (bool, error) {
	for _, id := range readParticipantsFile(path) {
		if id == userID {
			return false, nil
		}
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return false, err
	}
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return false, err
	}
	defer f.Close()
	if _, err := io.WriteString(f, userID+"\n"); err != nil {
		return false, err
	}
	return true, nil
}

func readParticipantsFile(path string) []string {
	f, err := os.Open(path)
	if err != nil {
		return nil
	}
	defer f.Close()
	var out []string
	seen := map[string]bool{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		id := strings.TrimSpace(sc.Text())
		if id == "" || seen[id] {
			continue
		}
		seen[id] = true
		out = append(out, id)
	}
	return out
}
