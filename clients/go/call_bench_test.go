package stateclient

import (
	"bufio"
	"bytes"
	"context"
	"os"
	"testing"
)

// The client's own cost per call, without a server: a peer in this process answers each
// request line over a pair of pipes (the poller and the reader goroutine as over a server's
// stdio). `go test -run '^$' -bench . -benchmem` in clients/go; docs/performance.md has the
// numbers.

type benchEntry struct {
	Ts        string  `json:"ts"`
	Role      string  `json:"role"`
	Text      string  `json:"text"`
	Cost      float64 `json:"cost,omitempty"`
	TokensIn  int     `json:"tokens_in,omitempty"`
	TokensOut int     `json:"tokens_out,omitempty"`
	DurMs     int     `json:"dur_ms,omitempty"`
}

type benchAppend struct {
	Name  string     `json:"name"`
	Entry benchEntry `json:"entry"`
}

// echoPeer answers every request with result, under the request's id.
func echoPeer(b *testing.B, result string) *Client {
	b.Helper()
	reqR, reqW, err := os.Pipe()
	if err != nil {
		b.Fatal(err)
	}
	repR, repW, err := os.Pipe()
	if err != nil {
		b.Fatal(err)
	}
	go func() {
		r := bufio.NewReader(reqR)
		var out []byte
		for {
			line, err := r.ReadSlice('\n')
			if err != nil {
				_ = repW.Close()
				return
			}
			i := bytes.Index(line, []byte(`"id":`)) + 5
			j := i
			for j < len(line) && line[j] >= '0' && line[j] <= '9' {
				j++
			}
			out = append(append(append(append(out[:0], `{"jsonrpc":"2.0","id":`...), line[i:j]...), `,"result":`...), result...)
			out = append(out, "}\n"...)
			if _, err := repW.Write(out); err != nil {
				return
			}
		}
	}()
	c := NewClient(stdioPipes{ReadCloser: repR, WriteCloser: reqW})
	b.Cleanup(func() { _ = c.Close(); _ = reqR.Close() })
	return c
}

func BenchmarkCallAppend(b *testing.B) {
	c := echoPeer(b, `{"seq":1}`)
	ctx := context.Background()
	p := benchAppend{Name: "s1", Entry: benchEntry{Ts: "2026-07-26T00:00:00Z", Role: "assistant", Text: "Done: the build passes and the two flaky tests are fixed; see the diff for details.", Cost: 0.0123, TokensIn: 5200, TokensOut: 810, DurMs: 14200}}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if err := c.Call(ctx, "transcript/append", p, nil); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkCallSetResumeToken(b *testing.B) {
	c := echoPeer(b, `{"found":true,"changed":true}`)
	ctx := context.Background()
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := c.SetResumeToken(ctx, "s1", "3f0c2a9e-0b1d-4c8e-9f7a-000000000001"); err != nil {
			b.Fatal(err)
		}
	}
}

// A session/didChange event with its row, as a package's watch gets one per mutation, read and
// handed to a Handle watcher: what the reader spends on each event.
func BenchmarkNotificationSessionRow(b *testing.B) {
	c := echoPeer(b, `{"subscription":"w1","revision":0,"epoch":"e"}`)
	if _, err := c.Watch(context.Background(), WatchOptions{Sessions: true, Handle: func(Event) {}}); err != nil {
		b.Fatal(err)
	}
	line := []byte(`{"jsonrpc":"2.0","method":"session/didChange","params":{"subscription":"w1","revision":7,"kind":"changed","name":"s1","session":{"id":"s_s1","name":"s1","channel_id":"100000000000000001","type":"text","cmd":"claude --dangerously-skip-permissions","vendor":"claude","dir":"/home/user/src/project-s1","resume_token":"3f0c2a9e-0b1d-4c8e-9f7a-000000000001","incarnation":"inc-1","created_at":"2026-07-26T00:00:00Z"}}}`)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if err := c.dispatch(line); err != nil {
			b.Fatal(err)
		}
	}
}
