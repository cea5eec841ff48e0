package stateclient

// What Herrscher's Go `state` package does with its files, written out with encoding/json as
// that package does it, so the differential fuzz can compare the server with Go on the same
// values: state.json is json.MarshalIndent of State (two spaces, no trailing newline, written
// to <path>.tmp and renamed); a transcript line is json.Marshal of TranscriptEntry plus "\n",
// appended with O_APPEND in one write; a participant is the id plus "\n", appended unless a
// trimmed line already equals it. The readers are Go's too: json.Unmarshal (keys matched with
// Unicode case folding, unknown keys dropped), bytes.TrimSpace, bufio.Scanner's 64 KiB lines.

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strings"
)

type goHomeRef struct {
	ID   string `json:"id"`
	Type string `json:"type"`
}

// goSession is the Go package's Session, field for field (names match the generated Session,
// so one converts to the other).
type goSession struct {
	ID               string   `json:"id,omitempty"`
	Incarnation      string   `json:"incarnation,omitempty"`
	Name             string   `json:"name"`
	ChannelID        string   `json:"channelID"`
	Type             string   `json:"type"`
	Cmd              string   `json:"cmd"`
	Backend          string   `json:"backend,omitempty"`
	Vendor           string   `json:"vendor,omitempty"`
	ModelID          string   `json:"modelId,omitempty"`
	Worktree         string   `json:"worktree,omitempty"`
	Dir              string   `json:"dir,omitempty"`
	Project          string   `json:"project,omitempty"`
	Agent            string   `json:"agent,omitempty"`
	ResumeToken      string   `json:"resumeToken,omitempty"`
	Archived         bool     `json:"archived,omitempty"`
	Owned            bool     `json:"owned,omitempty"`
	Extractor        string   `json:"extractor,omitempty"`
	Journal          string   `json:"journal,omitempty"`
	ConsolidateEvery int      `json:"consolidateEvery,omitempty"`
	Gateways         []string `json:"gateways,omitempty"`
	Participants     []string `json:"participants,omitempty"`
	Parent           string   `json:"parent,omitempty"`
	CostCap          float64  `json:"cost_cap,omitempty"`
	TokenCap         uint64   `json:"token_cap,omitempty"`
	CohortCostCap    float64  `json:"cohort_cost_cap,omitempty"`
	CohortTokenCap   uint64   `json:"cohort_token_cap,omitempty"`
	PausedReason     string   `json:"paused_reason,omitempty"`
}

type goState struct {
	Home            goHomeRef   `json:"home"`
	Repo            string      `json:"repo,omitempty"`
	Workspace       string      `json:"workspace,omitempty"`
	Source          string      `json:"source,omitempty"`
	Sessions        []goSession `json:"sessions"`
	StatusMessageID string      `json:"statusMessageID,omitempty"`
	InstanceID      string      `json:"instanceID,omitempty"`
}

// goEntry is the Go package's TranscriptEntry (Go int: 64 bits here).
type goEntry struct {
	Ts          string  `json:"ts"`
	Role        string  `json:"role"`
	Text        string  `json:"text"`
	Cost        float64 `json:"cost,omitempty"`
	Kind        string  `json:"kind,omitempty"`
	TokensIn    int     `json:"tokens_in,omitempty"`
	TokensOut   int     `json:"tokens_out,omitempty"`
	CacheRead   int     `json:"cache_read,omitempty"`
	CacheCreate int     `json:"cache_create,omitempty"`
	DurMs       int     `json:"dur_ms,omitempty"`
}

// goSave is saveLocked: MarshalIndent, WriteFile(<path>.tmp, 0600), Rename.
func goSave(path string, st *goState) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	buf, err := json.MarshalIndent(st, "", "  ")
	if err != nil {
		return err
	}
	if err := os.WriteFile(path+".tmp", buf, 0o600); err != nil {
		return err
	}
	return os.Rename(path+".tmp", path)
}

// goLoad is LoadState without the backfills (the fuzz writes ids and incarnations itself).
func goLoad(path string) (*goState, error) {
	buf, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var st goState
	if err := json.Unmarshal(buf, &st); err != nil {
		return nil, err
	}
	return &st, nil
}

func goTranscriptPath(dir, name string) string {
	return filepath.Join(dir, "transcripts", name+".jsonl")
}

func goParticipantsPath(dir, name string) string {
	return filepath.Join(dir, "participants", name+".log")
}

// goAppendTranscript is AppendTranscript (without the compaction, which these sizes never reach).
func goAppendTranscript(path string, e goEntry) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	defer f.Close()
	line, err := json.Marshal(e)
	if err != nil {
		return err
	}
	_, err = f.Write(append(line, '\n'))
	return err
}

// goReadTranscript is ReadTranscript(path, 0): every line that unmarshals, blank lines skipped.
func goReadTranscript(path string) []goEntry {
	f, err := os.Open(path)
	if err != nil {
		return nil
	}
	defer f.Close()
	var out []goEntry
	r := bufio.NewReader(f)
	for {
		line, err := r.ReadBytes('\n')
		if t := bytes.TrimSpace(line); len(t) > 0 {
			var e goEntry
			if json.Unmarshal(t, &e) == nil {
				out = append(out, e)
			}
		}
		if err != nil {
			if err != io.EOF {
				return out
			}
			return out
		}
	}
}

// goAppendParticipant is AppendParticipant.
func goAppendParticipant(path, id string) (bool, error) {
	if path == "" || id == "" {
		return false, nil
	}
	for _, have := range goReadParticipants(path) {
		if have == id {
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
	if _, err := f.WriteString(id + "\n"); err != nil {
		return false, err
	}
	return true, nil
}

// goReadParticipants is ReadParticipants: trimmed, blanks and repeats skipped, first-seen order,
// and the scan ends at a line longer than bufio.Scanner's 64 KiB.
func goReadParticipants(path string) []string {
	f, err := os.Open(path)
	if err != nil {
		return nil
	}
	defer f.Close()
	seen := map[string]bool{}
	var out []string
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

// throughJSON is what a value becomes once Go has encoded and decoded it: invalid UTF-8 turns
// into U+FFFD, -0 into 0 where omitempty drops it. What any reader of Go's JSON sees.
func throughJSON[T any](t interface{ Fatal(...interface{}) }, v T) T {
	buf, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	var out T
	if err := json.Unmarshal(buf, &out); err != nil {
		t.Fatal(err)
	}
	return out
}
