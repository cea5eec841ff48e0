package stateclient

import "context"

// ReadTranscript returns the newest limit entries of a transcript in file order (all when
// limit <= 0), as the Go state package's ReadTranscript does; a missing transcript is empty.
// ReadPage pages further back by seq.
func (c *Client) ReadTranscript(ctx context.Context, name string, limit int) ([]TranscriptEntry, error) {
	var o ReadPageOptions
	if limit > 0 {
		o.Limit = &limit
	}
	p, err := c.ReadPage(ctx, name, o)
	return p.Entries, err
}

// Int returns a pointer to v, for optional integer params (ReadPageOptions.Before).
func Int(v int) *int { return &v }

// Bool returns a pointer to v, for optional flags whose default is true
// (AppendTranscriptOptions.RequireSession: Bool(false) asks for Go's rule).
func Bool(v bool) *bool { return &v }
