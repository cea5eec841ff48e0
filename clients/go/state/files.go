package state

import (
	"context"
	"encoding/json"
	"math"
	"strings"

	stateclient "github.com/herrscher/herrscher-state/clients/go"
)

// goRule asks the server for Go's rule: the file is written for any valid name, whether or
// not a session row has it (a turn that ends after its session closed still records).
type appendTranscriptParams struct {
	Name           string                 `json:"name"`
	Entry          TranscriptEntry        `json:"entry"`
	RequireSession bool                   `json:"requireSession"`
	Writer         *stateclient.WriterKey `json:"writer,omitempty"`
}

type appendParticipantParams struct {
	Name           string `json:"name"`
	UserID         string `json:"userId"`
	RequireSession bool   `json:"requireSession"`
}

type nameParams struct {
	Name string `json:"name"`
}

type readParams struct {
	Name  string `json:"name"`
	Limit int    `json:"limit,omitempty"`
}

// callWithin runs one call of a file function on cn within the call's deadline.
func callWithin(cn *connection, kind callKind, f func(ctx context.Context, c *stateclient.Client) error) error {
	ctx, cancel := callContext()
	defer cancel()
	return cn.call(ctx, kind, f)
}

// AppendTranscript appends one JSON-line entry; a missing parent is created. When the file
// crosses 4 MiB it is compacted to its newest entries, so the transcript stays bounded.
func AppendTranscript(path string, e TranscriptEntry) error {
	if path == "" {
		return nil
	}
	srv, name, ok := served(path, "transcripts", ".jsonl")
	if !ok {
		return appendTranscriptFile(path, e)
	}
	if math.IsNaN(e.Cost) || math.IsInf(e.Cost, 0) {
		_, err := json.Marshal(e)
		return err // Go's own error (its only float), and nothing is sent
	}
	// Keyed: sent again on the next connection when one ends without an answer, and written once.
	params := appendTranscriptParams{Name: name, Entry: e, Writer: srv.nextKey()}
	return callWithin(srv, keyedWriteCall, func(ctx context.Context, c *stateclient.Client) error {
		return c.Call(ctx, "transcript/append", params, nil)
	})
}

// ReadTranscript returns entries in file order; when limit > 0, only the last limit. A
// missing file yields nil (best-effort observability, never an error).
func ReadTranscript(path string, limit int) []TranscriptEntry {
	if path == "" {
		return nil
	}
	srv, name, ok := served(path, "transcripts", ".jsonl")
	if !ok {
		return readTranscriptFile(path, limit)
	}
	if missing(path) {
		return nil // as Go reads a missing file; no server is asked for nothing
	}
	var page struct {
		Entries []TranscriptEntry `json:"entries"`
	}
	if limit < 0 {
		limit = 0
	}
	err := callWithin(srv, readCall, func(ctx context.Context, c *stateclient.Client) error {
		return c.Call(ctx, "transcript/read", readParams{Name: name, Limit: limit}, &page)
	})
	if err != nil {
		readFailed("ReadTranscript", path, "read the file itself, as Go's package does", err)
		return readTranscriptFile(path, limit)
	}
	if len(page.Entries) == 0 {
		return nil
	}
	return page.Entries
}

// ReadTranscriptLast returns the timestamp of the last recorded entry; "" when the file is
// missing or empty.
func ReadTranscriptLast(path string) string {
	if path == "" {
		return ""
	}
	srv, name, ok := served(path, "transcripts", ".jsonl")
	if !ok {
		return readTranscriptLastFile(path)
	}
	if missing(path) {
		return "" // as Go reads a missing file; no server is asked for nothing
	}
	var r struct {
		Ts string `json:"ts"`
	}
	if err := callWithin(srv, readCall, func(ctx context.Context, c *stateclient.Client) error {
		return c.Call(ctx, "transcript/last", nameParams{Name: name}, &r)
	}); err != nil {
		readFailed("ReadTranscriptLast", path, "read the file itself, as Go's package does", err)
		return readTranscriptLastFile(path)
	}
	return r.Ts
}

// RemoveTranscript deletes the transcript at path. A missing file is not an error.
func RemoveTranscript(path string) error {
	if path == "" {
		return nil
	}
	srv, name, ok := served(path, "transcripts", ".jsonl")
	if !ok {
		return removeFile(path)
	}
	return callWithin(srv, writeCall, func(ctx context.Context, c *stateclient.Client) error {
		return c.Call(ctx, "transcript/remove", nameParams{Name: name}, nil)
	})
}

// AppendParticipant records userID in the append-only journal at path (one id per line). It
// is idempotent: if userID is already present, the file is left untouched and added is
// false. A missing parent directory is created.
func AppendParticipant(path, userID string) (added bool, err error) {
	if path == "" || userID == "" {
		return false, nil
	}
	srv, name, ok := served(path, "participants", ".log")
	if !ok {
		return appendParticipantFile(path, userID)
	}
	if strings.TrimSpace(userID) == "" {
		// Go writes a blank line that every read skips, and says added: the same to a reader.
		return true, nil
	}
	var r struct {
		Added bool `json:"added"`
	}
	err = callWithin(srv, writeCall, func(ctx context.Context, c *stateclient.Client) error {
		return c.Call(ctx, "participants/append", appendParticipantParams{Name: name, UserID: userID}, &r)
	})
	return r.Added && err == nil, err
}

// ReadParticipants returns the de-duplicated user ids in the journal at path, in first-seen
// order. A missing file yields an empty slice.
func ReadParticipants(path string) []string {
	if path == "" {
		return nil
	}
	srv, name, ok := served(path, "participants", ".log")
	if !ok {
		return readParticipantsFile(path)
	}
	if missing(path) {
		return nil // as Go reads a missing file; no server is asked for nothing
	}
	var r struct {
		UserIDs []string `json:"userIds"`
	}
	if err := callWithin(srv, readCall, func(ctx context.Context, c *stateclient.Client) error {
		return c.Call(ctx, "participants/read", nameParams{Name: name}, &r)
	}); err != nil {
		readFailed("ReadParticipants", path, "read the file itself, as Go's package does", err)
		return readParticipantsFile(path)
	}
	if len(r.UserIDs) == 0 {
		return nil
	}
	return r.UserIDs
}

// RemoveParticipantJournal deletes the journal at path. A missing file is not an error.
func RemoveParticipantJournal(path string) error {
	if path == "" {
		return nil
	}
	srv, name, ok := served(path, "participants", ".log")
	if !ok {
		return removeFile(path)
	}
	return callWithin(srv, writeCall, func(ctx context.Context, c *stateclient.Client) error {
		return c.Call(ctx, "participants/remove", nameParams{Name: name}, nil)
	})
}
