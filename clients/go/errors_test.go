package stateclient

import (
	"bufio"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"testing"
)

// Every code of the contract, answered by a peer, matches its sentinel with errors.Is and no
// other, and carries the data sent.
func TestEveryErrorCodeMapsToItsSentinel(t *testing.T) {
	client, server := net.Pipe()
	c := NewClient(client)
	defer c.Close()
	go func() {
		r := bufio.NewReader(server)
		for _, code := range errorCodes {
			id, err := readRequestID(r)
			if err != nil {
				return
			}
			fmt.Fprintf(server, `{"jsonrpc":"2.0","id":%d,"error":{"code":%d,"message":"m","data":{"code":%q}}}`+"\n", id, code.Code, code.Name)
		}
	}()
	ctx := ctxT(t)
	for _, code := range errorCodes {
		err := c.Call(ctx, "x/y", struct{}{}, nil)
		if !errors.Is(err, code) {
			t.Fatalf("code %d (%s): %v does not match its sentinel", code.Code, code.Name, err)
		}
		for _, other := range errorCodes {
			if other != code && errors.Is(err, other) {
				t.Fatalf("code %d also matches %s", code.Code, other.Name)
			}
		}
		var e *Error
		var data StorageFailureData
		if !errors.As(err, &e) || e.Method != "x/y" || e.DecodeData(&data) != nil || data.Code != code.Name {
			t.Fatalf("code %d: data not carried: %#v", code.Code, err)
		}
	}
}

// The errors a real server answers, through the Go methods (run on the server of
// TestASocketServerEveryMethodThenBrokenThenPausedThenKilled: it breaks the storage, then mends
// it for the next step).
func theServersErrorsAreTyped(t *testing.T, s *socketServer) {
	c := dialTest(t, s)
	ctx := ctxT(t)
	added := must(c.AddSession(ctx, Session{Name: "e"}))(t)

	if _, err := c.AddSession(ctx, Session{Name: "e"}); !errors.Is(err, ErrSessionExists) {
		t.Fatalf("a second add: %v", err)
	}
	if _, err := c.AppendTranscript(ctx, "ghost", TranscriptEntry{Ts: "t", Role: "user", Text: "x"}); !errors.Is(err, ErrUnknownSession) {
		t.Fatalf("append without a session: %v", err)
	}
	_, err := c.SetResumeToken(ctx, "e", "tok", SetResumeTokenOptions{Incarnation: "inc_AAAAAAAAAAAAAAAAAAAAAAAAAA"})
	var e *Error
	var conflict ConflictData
	if !errors.Is(err, ErrConflict) || !errors.As(err, &e) || e.DecodeData(&conflict) != nil || conflict.Incarnation == nil || *conflict.Incarnation != added.Incarnation {
		t.Fatalf("a stale incarnation: %v (data %+v)", err, conflict)
	}
	var issues InvalidParamsData
	err = c.Call(ctx, "session/find", map[string]interface{}{"name": 5}, nil)
	if !errors.Is(err, ErrInvalidParams) || !errors.As(err, &e) || e.DecodeData(&issues) != nil || len(issues.Issues) == 0 {
		t.Fatalf("bad params: %v", err)
	}
	if err := c.Call(ctx, "no/such", struct{}{}, nil); !errors.Is(err, ErrMethodNotFound) {
		t.Fatalf("an unknown method: %v", err)
	}
	// A transcript's file that is a folder: the append fails in the file system.
	broken := filepath.Join(s.dir, "transcripts", "e.jsonl")
	if err := os.MkdirAll(broken, 0o700); err != nil {
		t.Fatal(err)
	}
	var sf StorageFailureData
	_, err = c.AppendTranscript(ctx, "e", TranscriptEntry{Ts: "t", Role: "user", Text: "x"})
	if !errors.Is(err, ErrStorageFailure) || !errors.As(err, &e) || e.DecodeData(&sf) != nil || sf.Code == "" {
		t.Fatalf("a failing file system: %v", err)
	}
	if err := os.Remove(broken); err != nil {
		t.Fatal(err)
	}
}
