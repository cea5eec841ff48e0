package stateclient

// A differential fuzz against Go: values any Go caller can hold (every float64, every int and
// uint64, any string Go's encoder writes, unknown row fields of any shape, keys Go's decoder
// folds onto a field) are written both through the server and with encoding/json as Go's
// `state` package writes them (gopackage_fuzz_test.go), then read both ways — the server's
// replies and Go's decode of the files — in the server that wrote them and in a new one after a
// restart, and compared field by field. Any error reply, error log line, difference in what is
// read or byte of a file Go would have written differently fails.
//
// `go test` runs the seeds below and testdata/fuzz/Fuzz*/ (the failures found, kept);
// `npm run fuzz:go` fuzzes each target for longer.

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"math"
	"math/big"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"
	"unicode/utf8"
)

var incarnationRe = regexp.MustCompile(`^inc_[A-Z2-7]{26}$`)

// fuzzServer is one `serve --stdio` on a state file, with its log kept for the failure message.
type fuzzServer struct {
	c      *Client
	stderr *lockedBuffer
}

func startFuzzServer(t *testing.T, state string) *fuzzServer {
	t.Helper()
	s := &fuzzServer{stderr: &lockedBuffer{}}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := Spawn(ctx, state, SpawnOptions{Command: serverCommand(t), Env: testEnv(t), Stderr: s.stderr, Args: append([]string{"--no-socket"}, serveArgs...)})
	if err != nil {
		t.Fatal(err)
	}
	s.c = c
	t.Cleanup(func() {
		if c.Err() == nil {
			c.Close()
		}
	})
	return s
}

// stop ends the server in order; it must exit 0 having logged no error.
func (s *fuzzServer) stop(t *testing.T) {
	t.Helper()
	if err := s.c.Close(); err != nil {
		t.Fatalf("the server did not stop cleanly: %v\n%s", err, s.stderr.String())
	}
	for _, line := range strings.Split(s.stderr.String(), "\n") {
		if strings.Contains(line, `"level":50`) || strings.Contains(line, `"level":60`) {
			t.Fatalf("the server logged an error: %s", line)
		}
	}
}

func (s *fuzzServer) fail(t *testing.T, format string, args ...interface{}) {
	t.Helper()
	t.Fatalf("%s\nserver log:\n%s", fmt.Sprintf(format, args...), s.stderr.String())
}

// sharedFuzzServer is one `serve --shared` on a socket of the test's own, with its log kept;
// on(t, state) is a connection to it bound to one state file.
type sharedFuzzServer struct {
	socket string
	cmd    *exec.Cmd
	stderr *lockedBuffer
	exited chan struct{}
}

func startSharedFuzzServer(t *testing.T) *sharedFuzzServer {
	t.Helper()
	cli, err := serverCLI()
	if err != nil {
		t.Fatal(err)
	}
	// Not t.TempDir(): a socket path must stay short.
	runtime, err := os.MkdirTemp("", "hs")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(runtime) })
	s := &sharedFuzzServer{socket: filepath.Join(runtime, "s.sock"), stderr: &lockedBuffer{}, exited: make(chan struct{})}
	s.cmd = exec.Command("node", append([]string{cli, "serve", "--shared", "--socket", s.socket}, serveArgs...)...)
	s.cmd.Stderr = s.stderr
	s.cmd.Env = envWithRuntime(runtime)
	if err := s.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		_ = s.cmd.Wait()
		close(s.exited)
	}()
	t.Cleanup(func() {
		_ = s.cmd.Process.Kill()
		<-s.exited
	})
	return s
}

// on dials the server (waiting until it listens) and binds the connection to state; the
// connection is closed when t ends.
func (s *sharedFuzzServer) on(t *testing.T, state string) *fuzzServer {
	t.Helper()
	ctx := fuzzCtx(t)
	c, err := Dial(ctx, DialOptions{Socket: s.socket, Wait: true})
	if err != nil {
		t.Fatalf("dial the shared server: %v\n%s", err, s.stderr.String())
	}
	t.Cleanup(func() { c.Close() })
	if _, err := c.Initialize(ctx, InitializeOptions{State: state}); err != nil {
		t.Fatalf("initialize %s: %v\n%s", state, err, s.stderr.String())
	}
	return &fuzzServer{c: c, stderr: s.stderr}
}

// stop ends the server in order (SIGTERM; its connections are closed by then): it must exit 0
// having logged no error.
func (s *sharedFuzzServer) stop(t *testing.T) {
	t.Helper()
	_ = s.cmd.Process.Signal(syscall.SIGTERM)
	<-s.exited
	if code := s.cmd.ProcessState.ExitCode(); code != 0 {
		t.Fatalf("the shared server exited %d:\n%s", code, s.stderr.String())
	}
	for _, line := range strings.Split(s.stderr.String(), "\n") {
		if strings.Contains(line, `"level":50`) || strings.Contains(line, `"level":60`) {
			t.Fatalf("the shared server logged an error: %s", line)
		}
	}
}

func fuzzCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// usageReply is transcript/usage with every number as sent, so sums beyond int64 are compared
// exactly rather than failing to decode.
type usageReply struct {
	Entries     json.Number `json:"entries"`
	Cost        json.Number `json:"cost"`
	TokensIn    json.Number `json:"tokens_in"`
	TokensOut   json.Number `json:"tokens_out"`
	CacheRead   json.Number `json:"cache_read"`
	CacheCreate json.Number `json:"cache_create"`
	DurMs       json.Number `json:"dur_ms"`
	FirstTs     string      `json:"firstTs"`
	LastTs      string      `json:"lastTs"`
}

func entriesOf(es []TranscriptEntry) []goEntry {
	out := make([]goEntry, 0, len(es))
	for _, e := range es {
		out = append(out, goEntry(e))
	}
	return out
}

// userIDRule is what participants/append accepts (docs/go-compatibility.md): the id trimmed as
// Go's TrimSpace does, non-empty, no CR or LF, at most 256 characters.
func userIDRule(id string) (string, bool) {
	trimmed := strings.TrimSpace(id)
	return trimmed, trimmed != "" && !strings.ContainsAny(trimmed, "\r\n") && utf8.RuneCountInString(trimmed) <= 256
}

// seenThroughJSON is what a JSON reader gets from Go's ReadParticipants: each id with invalid
// UTF-8 as U+FFFD, repeats that become equal dropped.
func seenThroughJSON(t *testing.T, ids []string) []string {
	out := []string{}
	seen := map[string]bool{}
	for _, id := range ids {
		id = throughJSON(t, id)
		if !seen[id] {
			seen[id] = true
			out = append(out, id)
		}
	}
	return out
}

// transcriptInput is one input of FuzzTranscript: an entry and a participant id.
type transcriptInput struct {
	Ts, Role, Text                                     string
	Cost                                               float64
	Kind                                               string
	TokensIn, TokensOut, CacheRead, CacheCreate, DurMs int
	User                                               string
}

// Seeds: each holds many of the values Go writes differently.
var transcriptSeeds = []transcriptInput{
	{"2026-07-26T00:00:05Z", "assistant", "done", 0.004, "", 30, 55, 0, 0, 4200, "u1"},
	{"2026-07-26T00:00:00Z", "user", "x<>&\u2028\u2029\x00\x01\b\f\n\r\t\"\\\x7f bad \xff\xfe \xe2\x82 \xed\xa0\x80 \U0001F600",
		math.MaxFloat64, "\xc0", math.MaxInt64, math.MinInt64, -1, 1<<53 + 1, math.MaxInt64, " \xff\xfe\xe2\x82 \u0085"},
	{"", "", "", math.SmallestNonzeroFloat64, "", 9007199254740993, -(1<<53 + 1), 0, 0, 0, "a\nb\r\nc"},
	{"1", "2", strings.Repeat("é", 300), math.Copysign(0, -1), "k", 1, 2, 3, 4, 5, strings.Repeat("x", 257)},
	{"2026", "r", "t", 1e-7, "", 0, 0, 0, 0, 0, "\ufeffu\u2028"},
	{"2026", "r", "t", 1e20, "", 0, 0, 0, 0, 0, "u"},
}

// fuzzing reports whether this run is `go test -fuzz`. A plain `go test` checks the seeds
// together, all in one state file through one server and one restart (TestTranscriptSeeds…,
// TestSessionSeeds…: a server start is most of an input's cost); under -fuzz, and for the
// inputs kept in testdata/fuzz, every input has a state file and two servers of its own.
func fuzzing() bool {
	f := flag.Lookup("test.fuzz")
	return f != nil && f.Value.String() != ""
}

// isSeed reports whether in is one of seeds, compared as %#v writes them (so -0 is not 0).
func isSeed[T any](in T, seeds []T) bool {
	key := fmt.Sprintf("%#v", in)
	for _, s := range seeds {
		if fmt.Sprintf("%#v", s) == key {
			return true
		}
	}
	return false
}

func FuzzTranscript(f *testing.F) {
	for _, s := range transcriptSeeds {
		f.Add(s.Ts, s.Role, s.Text, s.Cost, s.Kind, s.TokensIn, s.TokensOut, s.CacheRead, s.CacheCreate, s.DurMs, s.User)
	}
	f.Fuzz(func(t *testing.T, ts, role, text string, cost float64, kind string, tokensIn, tokensOut, cacheRead, cacheCreate, durMs int, user string) {
		in := transcriptInput{ts, role, text, cost, kind, tokensIn, tokensOut, cacheRead, cacheCreate, durMs, user}
		if !fuzzing() && isSeed(in, transcriptSeeds) {
			t.Skip("a seed: TestTranscriptSeedsThroughOneServerAndARestart checks it")
		}
		t.Parallel() // each run has its own dir and servers; inputs run side by side
		if math.IsNaN(cost) || math.IsInf(cost, 0) {
			t.Skip("Go's json.Marshal refuses NaN and ±Inf, so no Go caller can write them")
		}
		checkTranscripts(t, []transcriptInput{in})
	})
}

func TestTranscriptSeedsThroughOneServerAndARestart(t *testing.T) {
	t.Parallel()
	checkTranscripts(t, transcriptSeeds)
}

// incarnationOf is a valid incarnation of its own for row i of kind 'G' or 'S'.
func incarnationOf(kind byte, i int) string {
	const b32 = "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567"
	return "inc_" + string(kind) + strings.Repeat("A", 22) + string([]byte{b32[i>>10&31], b32[i>>5&31], b32[i&31]})
}

// transcriptCase is input i in a state file shared with others: Go's package writes session
// g<i> (its row, two appends of the entry, the participant), the server session s<i> (the
// same), and both are read both ways.
type transcriptCase struct {
	in           transcriptInput
	g, s         string
	entry, want  goEntry
	wantG, wantS []string
	trimmed      string
	valid        bool
}

func checkTranscripts(t *testing.T, ins []transcriptInput) {
	dir := t.TempDir()
	state := filepath.Join(dir, "state.json")
	st := &goState{}
	cases := make([]*transcriptCase, len(ins))
	for i, in := range ins {
		c := &transcriptCase{in: in, g: fmt.Sprintf("g%d", i), s: fmt.Sprintf("s%d", i)}
		cases[i] = c
		e := goEntry{Ts: in.Ts, Role: in.Role, Text: in.Text, Cost: in.Cost, Kind: in.Kind, TokensIn: in.TokensIn, TokensOut: in.TokensOut, CacheRead: in.CacheRead, CacheCreate: in.CacheCreate, DurMs: in.DurMs}
		c.entry, c.want = e, throughJSON(t, e)
		st.Sessions = append(st.Sessions, goSession{ID: "s_" + c.g, Incarnation: incarnationOf('G', i), Name: c.g}, goSession{ID: "s_" + c.s, Incarnation: incarnationOf('S', i), Name: c.s})
		for k := 0; k < 2; k++ {
			if err := goAppendTranscript(goTranscriptPath(dir, c.g), e); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := goAppendParticipant(goParticipantsPath(dir, c.g), in.User); err != nil {
			t.Fatal(err)
		}
		c.wantG = seenThroughJSON(t, goReadParticipants(goParticipantsPath(dir, c.g)))
		c.trimmed, c.valid = userIDRule(throughJSON(t, in.User))
		c.wantS = []string{}
		if c.valid {
			c.wantS = []string{c.trimmed}
		}
	}
	if err := goSave(state, st); err != nil {
		t.Fatal(err)
	}
	stateBytes, _ := os.ReadFile(state)

	// The server writes each s<i>: the same two appends and participant.
	srv := startFuzzServer(t, state)
	ctx := fuzzCtx(t)
	for _, c := range cases {
		for k := 0; k < 2; k++ {
			seq, err := srv.c.AppendTranscript(ctx, c.s, TranscriptEntry(c.entry))
			if err != nil || seq != k {
				srv.fail(t, "transcript/append %s %#v: seq %d, %v", c.s, c.entry, seq, err)
			}
		}
		added, err := srv.c.AppendParticipant(ctx, c.s, c.in.User)
		if c.valid && (err != nil || !added) {
			srv.fail(t, "participants/append %q: added %v, %v", c.in.User, added, err)
		}
		if !c.valid && !errors.Is(err, ErrInvalidParams) {
			srv.fail(t, "participants/append %q: want -32602 (the id is empty, has CR/LF or is too long once trimmed), got added %v, %v", c.in.User, added, err)
		}
	}

	check := func(srv *fuzzServer, when string) {
		t.Helper()
		var infos struct {
			Sessions []struct {
				Session goSession  `json:"session"`
				LastTs  string     `json:"lastTs"`
				Usage   usageReply `json:"usage"`
			} `json:"sessions"`
		}
		if err := srv.c.Call(ctx, "session/infos", struct{}{}, &infos); err != nil || len(infos.Sessions) != 2*len(cases) {
			srv.fail(t, "%s: session/infos = %+v, %v; want %d sessions", when, infos, err, 2*len(cases))
		}
		for _, c := range cases {
			when := fmt.Sprintf("%s, %#v", when, c.in)
			for _, name := range []string{c.g, c.s} {
				got, err := srv.c.ReadTranscript(ctx, name, 0)
				if err != nil || !reflect.DeepEqual(entriesOf(got), []goEntry{c.want, c.want}) {
					srv.fail(t, "%s: transcript/read %s = %#v, %v; want twice %#v", when, name, got, err, c.want)
				}
				last, err := srv.c.LastTranscriptTimestamp(ctx, name)
				if err != nil || last != c.want.Ts {
					srv.fail(t, "%s: transcript/last %s = %q, %v; want %q", when, name, last, err, c.want.Ts)
				}
				var u usageReply
				if err := srv.c.Call(ctx, "transcript/usage", map[string]string{"name": name}, &u); err != nil {
					srv.fail(t, "%s: transcript/usage %s: %v", when, name, err)
				}
				checkUsage(t, srv, when+": usage of "+name, u, c.want)
			}
			for name, wantIDs := range map[string][]string{c.g: c.wantG, c.s: c.wantS} {
				ids, err := srv.c.ReadParticipants(ctx, name)
				if err != nil || !(len(ids) == 0 && len(wantIDs) == 0 || reflect.DeepEqual(ids, wantIDs)) {
					srv.fail(t, "%s: participants/read %s = %q, %v; want %q", when, name, ids, err, wantIDs)
				}
			}
			seen := 0
			for _, info := range infos.Sessions {
				if info.Session.Name != c.g && info.Session.Name != c.s {
					continue
				}
				seen++
				if info.LastTs != c.want.Ts {
					srv.fail(t, "%s: session/infos %s: lastTs %q; want %q", when, info.Session.Name, info.LastTs, c.want.Ts)
				}
				checkUsage(t, srv, when+": session/infos usage of "+info.Session.Name, info.Usage, c.want)
			}
			if seen != 2 {
				srv.fail(t, "%s: session/infos holds %d of %s and %s", when, seen, c.g, c.s)
			}
		}
	}
	check(srv, "first run")
	srv.stop(t)

	// Go reads what the server wrote: the bytes Go writes for the entry the server was sent
	// (the same as Go wrote for g, but for invalid UTF-8: Go writes the escape \ufffd for each
	// bad byte, the server the U+FFFD it decoded — one value, the bytes of a valid string; and
	// \b and \f in Go 1.22's form whatever Go runs the test: asServerEscapes), and state.json
	// untouched.
	for _, c := range cases {
		gotLines, _ := os.ReadFile(goTranscriptPath(dir, c.s))
		line, _ := json.Marshal(c.want)
		line = asServerEscapes(line)
		if goLines := append(append(line, '\n'), append(line, '\n')...); !bytes.Equal(gotLines, goLines) {
			t.Fatalf("%#v: transcripts/%s.jsonl differs from what Go writes for the same entries:\nserver %q\ngo     %q", c.in, c.s, gotLines, goLines)
		}
		if got := goReadTranscript(goTranscriptPath(dir, c.s)); !reflect.DeepEqual(got, []goEntry{c.want, c.want}) {
			t.Fatalf("Go reads transcripts/%s.jsonl as %#v; want twice %#v", c.s, got, c.want)
		}
		if got := goReadParticipants(goParticipantsPath(dir, c.s)); !(len(got) == 0 && len(c.wantS) == 0 || reflect.DeepEqual(got, c.wantS)) {
			t.Fatalf("Go reads participants/%s.log as %q; want %q", c.s, got, c.wantS)
		}
		if c.valid {
			if got, _ := os.ReadFile(goParticipantsPath(dir, c.s)); string(got) != c.trimmed+"\n" {
				t.Fatalf("participants/%s.log is %q; want %q", c.s, got, c.trimmed+"\n")
			}
		}
	}
	if got, err := os.ReadFile(state); err != nil || !bytes.Equal(got, stateBytes) {
		t.Fatalf("state.json changed without a state call: %q, %v", got, err)
	}

	srv = startFuzzServer(t, state)
	check(srv, "after a restart")
	srv.stop(t)
}

// checkUsage compares transcript/usage of a transcript holding the entry twice with Go's sums:
// integers exact (as big integers: two int64s may not fit one), cost as float64 addition in
// append order.
func checkUsage(t *testing.T, srv *fuzzServer, what string, u usageReply, e goEntry) {
	t.Helper()
	twice := func(v int) *big.Int { return new(big.Int).Mul(big.NewInt(int64(v)), big.NewInt(2)) }
	for _, c := range []struct {
		name string
		got  json.Number
		want *big.Int
	}{
		{"entries", u.Entries, big.NewInt(2)},
		{"tokens_in", u.TokensIn, twice(e.TokensIn)},
		{"tokens_out", u.TokensOut, twice(e.TokensOut)},
		{"cache_read", u.CacheRead, twice(e.CacheRead)},
		{"cache_create", u.CacheCreate, twice(e.CacheCreate)},
		{"dur_ms", u.DurMs, twice(e.DurMs)},
	} {
		got, ok := new(big.Int).SetString(string(c.got), 10)
		if !ok || got.Cmp(c.want) != 0 {
			srv.fail(t, "%s: %s = %s; want %s", what, c.name, c.got, c.want)
		}
	}
	if sum := 0 + e.Cost + e.Cost; !math.IsInf(sum, 0) {
		got, err := u.Cost.Float64()
		if err != nil || got != sum {
			srv.fail(t, "%s: cost = %s; want %v (Go's float64 sum)", what, u.Cost, sum)
		}
	}
	if u.FirstTs != e.Ts || u.LastTs != e.Ts {
		srv.fail(t, "%s: firstTs %q lastTs %q; want %q", what, u.FirstTs, u.LastTs, e.Ts)
	}
}

// sessionKeys are the JSON keys of Go's Session.
var sessionKeys = func() map[string]bool {
	keys := map[string]bool{}
	ty := reflect.TypeOf(goSession{})
	for i := 0; i < ty.NumField(); i++ {
		keys[strings.Split(ty.Field(i).Tag.Get("json"), ",")[0]] = true
	}
	return keys
}()

// goFolds reports whether Go's decoder reads key as one of Session's fields (its case folding
// is Unicode's, ſ for s and K for k included): asked of encoding/json itself, with a value of
// each kind, since a field of another kind makes the decode fail.
func goFolds(key string) bool {
	k, _ := json.Marshal(key)
	for _, v := range []string{`"x"`, `true`, `1`, `["x"]`} {
		var s goSession
		if err := json.Unmarshal([]byte(fmt.Sprintf(`{%s:%s}`, k, v)), &s); err != nil || !reflect.DeepEqual(s, goSession{}) {
			return true
		}
	}
	return false
}

// unknownValue builds an unknown field's value of one of several shapes from Go values.
func unknownValue(shape uint8, u uint64, f float64, s string) interface{} {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		f = math.MaxFloat64
	}
	i := -int64(u >> 1)
	switch shape % 6 {
	case 1:
		return u
	case 2:
		return f
	case 3:
		return s
	case 4:
		return []interface{}{u, i, f, s, nil, true, false, []interface{}{}, map[string]interface{}{}}
	case 5:
		return map[string]interface{}{"u": u, "i": i, "nested": map[string]interface{}{s: []interface{}{f, s}}}
	}
	return nil
}

// sameJSON compares two JSON texts as values: numbers as exact rationals, objects by key.
func sameJSON(a, b []byte) bool {
	var x, y interface{}
	da, db := json.NewDecoder(bytes.NewReader(a)), json.NewDecoder(bytes.NewReader(b))
	da.UseNumber()
	db.UseNumber()
	if da.Decode(&x) != nil || db.Decode(&y) != nil {
		return false
	}
	return sameValue(x, y)
}

func sameValue(x, y interface{}) bool {
	switch a := x.(type) {
	case json.Number:
		b, ok := y.(json.Number)
		ra, oka := new(big.Rat).SetString(string(a))
		rb, okb := new(big.Rat).SetString(string(b))
		return ok && oka && okb && ra.Cmp(rb) == 0
	case []interface{}:
		b, ok := y.([]interface{})
		if !ok || len(a) != len(b) {
			return false
		}
		for i := range a {
			if !sameValue(a[i], b[i]) {
				return false
			}
		}
		return true
	case map[string]interface{}:
		b, ok := y.(map[string]interface{})
		if !ok || len(a) != len(b) {
			return false
		}
		for k, v := range a {
			if w, ok := b[k]; !ok || !sameValue(v, w) {
				return false
			}
		}
		return true
	}
	return reflect.DeepEqual(x, y)
}

func part(parts []string, i int) string {
	if i < len(parts) {
		return parts[i]
	}
	return ""
}

// sessionInput is one input of FuzzSession: a row's fields (strs: its strings, split at |),
// an unknown field (its key and the shape of its value) and the top-level fields (top).
type sessionInput struct {
	Strs             string
	Archived, Owned  bool
	ConsolidateEvery int
	CostCap          float64
	TokenCap         uint64
	CohortCostCap    float64
	CohortTokenCap   uint64
	UnknownKey       string
	Shape            uint8
	Top              string
}

var sessionSeeds = []sessionInput{
	{"c1|text|claude|b|claude|m|w|/d|p|a|tok|x|j|par|cost|g1,g2", false, false, 0, 0.0, uint64(0), 0.0, uint64(0), "\u0130d", uint8(3), "987|category|/ws|/src|msg"},
	{"c1|text|claude", true, true, math.MaxInt64, math.MaxFloat64, uint64(math.MaxUint64), math.SmallestNonzeroFloat64, uint64(1<<53 + 1), "nickname", uint8(4), "<>&|\u2028|w|s|m"},
	{"<>&|\u2028\u2029|\x00\x1f\b\f|\xff\xfe|\xe2\x82|é|\u0085", false, true, math.MinInt64, math.Copysign(0, -1), uint64(9007199254740993), 1e21, uint64(math.MaxUint64 - 1), "n\xffested", uint8(5), "\xff|\U0001F600|<|>|&"},
	{"c|t|x", false, false, -1, 1e-7, uint64(1), 5e-324, uint64(2), "reſumeToken", uint8(3), ""},
	{"c|t|x", false, false, 1, 1e20, uint64(1), 123456789012345680000.0, uint64(2), "f", uint8(2), ""},
	{"c|t|x", false, false, 1, 20.0, uint64(1), 30.0, uint64(2), "to\u212Aen_cap", uint8(1), ""},
	{"c|t|x", false, false, 1, 20.0, uint64(1), 30.0, uint64(2), "__proto__", uint8(5), ""},
	{"c|t|x", false, false, 1, 20.0, uint64(1), 30.0, uint64(2), "constructor", uint8(4), ""},
	// No unknown field, so state.json is compared with Go's MarshalIndent byte for byte: \b and
	// \f in a row and in the top-level fields (written \u0008 and \u000c by Go before 1.22).
	{"c\b|t\f|x", false, false, 1, 20.0, uint64(1), 30.0, uint64(2), "", uint8(0), "\b|\f|w\b|s\f|m\b\f"},
}

func FuzzSession(f *testing.F) {
	for _, s := range sessionSeeds {
		f.Add(s.Strs, s.Archived, s.Owned, s.ConsolidateEvery, s.CostCap, s.TokenCap, s.CohortCostCap, s.CohortTokenCap, s.UnknownKey, s.Shape, s.Top)
	}
	f.Fuzz(func(t *testing.T, strs string, archived, owned bool, consolidateEvery int, costCap float64, tokenCap uint64, cohortCostCap float64, cohortTokenCap uint64, unknownKey string, shape uint8, top string) {
		in := sessionInput{strs, archived, owned, consolidateEvery, costCap, tokenCap, cohortCostCap, cohortTokenCap, unknownKey, shape, top}
		if !fuzzing() && isSeed(in, sessionSeeds) {
			t.Skip("a seed: TestSessionSeedsThroughOneServerAndARestart checks it")
		}
		t.Parallel()
		if math.IsNaN(costCap) || math.IsInf(costCap, 0) || math.IsNaN(cohortCostCap) || math.IsInf(cohortCostCap, 0) {
			t.Skip("Go's json.Marshal refuses NaN and ±Inf, so no Go caller can save them")
		}
		c := newSessionCase(t, 0, in)
		checkSessions(t, []*sessionCase{c}, c)
	})
}

// The seeds' state files (sessionRounds) through one shared server, each file on a connection of
// its own bound to it; Go reads each file once that server has stopped; a second shared server
// reads each again: checkSessions' checks, with two server starts for all the files instead of
// two per file.
func TestSessionSeedsThroughOneServerAndARestart(t *testing.T) {
	t.Parallel()
	cases := make([]*sessionCase, len(sessionSeeds))
	for i, in := range sessionSeeds {
		cases[i] = newSessionCase(t, i, in)
	}
	var files []*sessionFile
	for _, r := range sessionRounds(cases) {
		files = append(files, newSessionFile(t, r.cases, r.top))
	}
	ok := make([]bool, len(files))
	srv := startSharedFuzzServer(t)
	for k, f := range files {
		f := f
		ok[k] = t.Run(fmt.Sprint("first-run-", k), func(t *testing.T) { f.write(t, srv.on(t, f.state)) })
	}
	srv.stop(t)
	for k, f := range files {
		ok[k] = ok[k] && t.Run(fmt.Sprint("go-reads-", k), f.checkGoReads)
	}
	srv = startSharedFuzzServer(t)
	for k, f := range files {
		f := f
		if ok[k] {
			t.Run(fmt.Sprint("after-a-restart-", k), func(t *testing.T) { f.check(t, srv.on(t, f.state), "after a restart") })
		}
	}
	srv.stop(t)
}

// sessionCase is input i in a state file shared with others: Go's package saves row g<i>, the
// server is sent the same row as s<i> (with the unknown field), and both are read both ways.
type sessionCase struct {
	in                sessionInput
	g, wantS          goSession
	body, unknown     []byte
	key               string
	refuse, mayRefuse bool
	home              goHomeRef
	workspace, source string
	statusMessageID   string
	addedS            bool // set once sent: the server kept s<i>
}

func newSessionCase(t *testing.T, i int, in sessionInput) *sessionCase {
	p := strings.Split(in.Strs, "|")
	row := goSession{
		ChannelID: part(p, 0), Type: part(p, 1), Cmd: part(p, 2), Backend: part(p, 3), Vendor: part(p, 4),
		ModelID: part(p, 5), Worktree: part(p, 6), Dir: part(p, 7), Project: part(p, 8), Agent: part(p, 9),
		ResumeToken: part(p, 10), Archived: in.Archived, Owned: in.Owned, Extractor: part(p, 11), Journal: part(p, 12),
		ConsolidateEvery: in.ConsolidateEvery, Parent: part(p, 13), CostCap: in.CostCap, TokenCap: in.TokenCap,
		CohortCostCap: in.CohortCostCap, CohortTokenCap: in.CohortTokenCap, PausedReason: part(p, 14),
	}
	if g := part(p, 15); g != "" {
		row.Gateways = strings.Split(g, ",")
		row.Participants = strings.Split(g, ",")[:1]
	}
	tp := strings.Split(in.Top, "|")
	c := &sessionCase{in: in, home: goHomeRef{ID: part(tp, 0), Type: part(tp, 1)}, workspace: part(tp, 2), source: part(tp, 3), statusMessageID: part(tp, 4)}
	c.g = row
	c.g.ID, c.g.Incarnation, c.g.Name = fmt.Sprintf("s_g%d", i), incarnationOf('G', i), fmt.Sprintf("g%d", i)

	// session/add of the same row as s<i>, with an unknown field when shape says so.
	s := row
	s.Name = fmt.Sprintf("s%d", i)
	body, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	c.key = throughJSON(t, in.UnknownKey)
	if in.Shape%6 != 0 || in.UnknownKey != "" {
		if sessionKeys[c.key] {
			c.key = "x-" + c.key
		}
		if c.unknown, err = json.Marshal(unknownValue(in.Shape, in.TokenCap, in.CostCap, in.Strs)); err != nil {
			t.Fatal(err)
		}
		k, _ := json.Marshal(c.key)
		body = append(append(append(append(body[:len(body)-1], ','), k...), ':'), append(c.unknown, '}')...)
	}
	c.body = body
	c.refuse = c.unknown != nil && goFolds(c.key)
	c.mayRefuse = map[string]bool{"__proto__": true, "constructor": true, "prototype": true}[c.key]
	c.wantS = throughJSON(t, s)
	c.wantS.ID = "s_" + s.Name
	return c
}

// sessionRound is one state file: the rows of cases and the top-level fields of top.
type sessionRound struct {
	cases []*sessionCase
	top   *sessionCase
}

// sessionRounds puts the cases in as few state files as keep every check of each: a file has
// one set of top-level fields (each distinct set gets a file), and it is compared with Go's
// MarshalIndent byte for byte only when no row in it keeps an unknown field, so the rows that
// keep none, the rows that keep one, and each row the server may refuse or keep (comparable
// only if refused) go to different files.
func sessionRounds(cases []*sessionCase) []sessionRound {
	var whole, kept []*sessionCase
	var groups [][]*sessionCase
	for _, c := range cases {
		switch {
		case c.unknown == nil || c.refuse:
			whole = append(whole, c)
		case c.mayRefuse:
			groups = append(groups, []*sessionCase{c})
		default:
			kept = append(kept, c)
		}
	}
	for _, g := range [][]*sessionCase{whole, kept} {
		if len(g) > 0 {
			groups = append(groups, g)
		}
	}
	var tops []*sessionCase
	seen := map[string]bool{}
	for _, c := range cases {
		key := fmt.Sprintf("%#v", []interface{}{c.home, c.workspace, c.source, c.statusMessageID})
		if !seen[key] {
			seen[key] = true
			tops = append(tops, c)
		}
	}
	// More sets of top-level fields than groups: split groups (each file keeps a row).
	for len(groups) < len(tops) {
		for i, g := range groups {
			if len(g) > 1 {
				groups[i] = g[:len(g)-1]
				groups = append(groups, g[len(g)-1:])
				break
			}
		}
	}
	rounds := make([]sessionRound, len(groups))
	for k := range rounds {
		rounds[k] = sessionRound{cases: groups[k], top: tops[k%len(tops)]}
	}
	return rounds
}

func checkSessions(t *testing.T, cases []*sessionCase, top *sessionCase) {
	f := newSessionFile(t, cases, top)
	srv := startFuzzServer(t, f.state)
	f.write(t, srv)
	srv.stop(t)
	f.checkGoReads(t)
	srv = startFuzzServer(t, f.state)
	f.check(t, srv, "after a restart")
	srv.stop(t)
}

// sessionFile is a state file of the test's own that Go's package saved with the rows of cases,
// and what reading it must give once the server has added the same rows (as s<i>) and set
// top's top-level fields.
type sessionFile struct {
	cases    []*sessionCase
	top      *sessionCase
	state    string
	want     goState
	unknowns map[string]*sessionCase
}

func newSessionFile(t *testing.T, cases []*sessionCase, top *sessionCase) *sessionFile {
	f := &sessionFile{cases: cases, top: top, state: filepath.Join(t.TempDir(), "state.json")}
	var gs []goSession
	for _, c := range cases {
		gs = append(gs, c.g)
	}
	if err := goSave(f.state, &goState{Sessions: gs}); err != nil {
		t.Fatal(err)
	}
	var rows []goSession
	for _, c := range cases {
		rows = append(rows, throughJSON(t, c.g))
	}
	f.want = goState{
		Home: throughJSON(t, top.home), Workspace: throughJSON(t, top.workspace), Source: throughJSON(t, top.source),
		StatusMessageID: throughJSON(t, top.statusMessageID), Sessions: rows,
	}
	return f
}

// write sends each case's row with session/add (its unknown field included) and top's
// top-level fields to srv, then checks what srv reads back.
func (f *sessionFile) write(t *testing.T, srv *fuzzServer) {
	ctx := fuzzCtx(t)
	for _, c := range f.cases {
		var added struct {
			Session json.RawMessage `json:"session"`
		}
		err := srv.c.Call(ctx, "session/add", map[string]json.RawMessage{"session": c.body}, &added)
		c.addedS = err == nil
		switch {
		case c.refuse || (c.mayRefuse && err != nil):
			if !errors.Is(err, ErrInvalidParams) {
				srv.fail(t, "session/add %s: Go's decoder reads the key %q as a field, so it must be refused (-32602); got %v", c.body, c.key, err)
			}
			c.addedS, c.unknown = false, nil
		case err != nil:
			srv.fail(t, "session/add %s: %v", c.body, err)
		default:
			var got goSession
			if err := json.Unmarshal(added.Session, &got); err != nil || !incarnationRe.MatchString(got.Incarnation) {
				srv.fail(t, "session/add answered %s: %v", added.Session, err)
			}
			c.wantS.Incarnation = got.Incarnation
		}
	}
	for _, c := range f.cases {
		if c.addedS {
			f.want.Sessions = append(f.want.Sessions, c.wantS)
		}
	}
	if _, err := srv.c.SetHome(ctx, HomeRef(f.top.home)); err != nil {
		srv.fail(t, "state/setHome %#v: %v", f.top.home, err)
	}
	if _, err := srv.c.SetWorkspace(ctx, f.top.workspace); err != nil {
		srv.fail(t, "state/setWorkspace %q: %v", f.top.workspace, err)
	}
	if _, err := srv.c.SetSource(ctx, f.top.source); err != nil {
		srv.fail(t, "state/setSource %q: %v", f.top.source, err)
	}
	if _, err := srv.c.SetStatusMessageID(ctx, f.top.statusMessageID); err != nil {
		srv.fail(t, "state/setStatusMessageID %q: %v", f.top.statusMessageID, err)
	}
	f.unknowns = map[string]*sessionCase{}
	for _, c := range f.cases {
		if c.addedS && c.unknown != nil {
			f.unknowns[c.wantS.Name] = c
		}
	}
	f.check(t, srv, "first run")
}

// check reads the state and each row back from srv: each as f.want has it, each unknown field
// as sent.
func (f *sessionFile) check(t *testing.T, srv *fuzzServer, when string) {
	t.Helper()
	ctx := fuzzCtx(t)
	var raw struct {
		State json.RawMessage `json:"state"`
	}
	if err := srv.c.Call(ctx, "state/get", struct{}{}, &raw); err != nil {
		srv.fail(t, "%s: state/get: %v", when, err)
	}
	var got goState
	if err := json.Unmarshal(raw.State, &got); err != nil || !reflect.DeepEqual(got, f.want) {
		srv.fail(t, "%s: state/get = %s (%v);\nGo reads it as %#v\nwant %#v", when, raw.State, err, got, f.want)
	}
	for _, r := range f.want.Sessions {
		var found struct {
			Session json.RawMessage `json:"session"`
		}
		if err := srv.c.Call(ctx, "session/find", map[string]string{"name": r.Name}, &found); err != nil {
			srv.fail(t, "%s: session/find %s: %v", when, r.Name, err)
		}
		var got goSession
		if err := json.Unmarshal(found.Session, &got); err != nil || !reflect.DeepEqual(got, r) {
			srv.fail(t, "%s: session/find %s = %s; want %#v", when, r.Name, found.Session, r)
		}
		if c := f.unknowns[r.Name]; c != nil {
			var fields map[string]json.RawMessage
			_ = json.Unmarshal(found.Session, &fields)
			if v, ok := fields[c.key]; !ok || !sameJSON(v, c.unknown) {
				srv.fail(t, "%s: the unknown field %q of %s came back as %s; sent %s", when, c.key, r.Name, v, c.unknown)
			}
		}
	}
}

// checkGoReads: Go loads the file the server wrote as f.want, and with no unknown field kept
// the file is what Go's MarshalIndent writes, byte for byte.
func (f *sessionFile) checkGoReads(t *testing.T) {
	// Go loads the file the server wrote.
	loaded, err := goLoad(f.state)
	if err != nil {
		t.Fatalf("Go cannot load the state.json the server wrote: %v", err)
	}
	if !reflect.DeepEqual(*loaded, f.want) {
		t.Fatalf("Go reads state.json as %#v\nwant %#v", *loaded, f.want)
	}
	if len(f.unknowns) == 0 {
		file, _ := os.ReadFile(f.state)
		goBytes, _ := json.MarshalIndent(loaded, "", "  ")
		if goBytes = asServerEscapes(goBytes); !bytes.Equal(file, goBytes) {
			t.Fatalf("state.json differs from Go's MarshalIndent of the same state:\nserver %q\ngo     %q", file, goBytes)
		}
	}
}
