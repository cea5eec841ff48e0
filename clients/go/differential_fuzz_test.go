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
	"fmt"
	"math"
	"math/big"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"testing"
	"time"
	"unicode/utf8"
)

const (
	incG = "inc_AAAAAAAAAAAAAAAAAAAAAAAAAA"
	incS = "inc_BBBBBBBBBBBBBBBBBBBBBBBBBB"
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
	c, err := Spawn(ctx, state, SpawnOptions{Command: serverCommand(t), Env: testEnv(t), Stderr: s.stderr, Args: []string{"--no-socket"}})
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

func FuzzTranscript(f *testing.F) {
	// Seeds: each spawns two servers, so few, each holding many of the values Go writes differently.
	f.Add("2026-07-26T00:00:05Z", "assistant", "done", 0.004, "", 30, 55, 0, 0, 4200, "u1")
	f.Add("2026-07-26T00:00:00Z", "user", "x<>&\u2028\u2029\x00\x01\b\f\n\r\t\"\\\x7f bad \xff\xfe \xe2\x82 \xed\xa0\x80 \U0001F600",
		math.MaxFloat64, "\xc0", math.MaxInt64, math.MinInt64, -1, 1<<53+1, math.MaxInt64, " \xff\xfe\xe2\x82 \u0085")
	f.Add("", "", "", math.SmallestNonzeroFloat64, "", 9007199254740993, -(1<<53 + 1), 0, 0, 0, "a\nb\r\nc")
	f.Add("1", "2", strings.Repeat("é", 300), math.Copysign(0, -1), "k", 1, 2, 3, 4, 5, strings.Repeat("x", 257))
	f.Add("2026", "r", "t", 1e-7, "", 0, 0, 0, 0, 0, "\ufeffu\u2028")
	f.Add("2026", "r", "t", 1e20, "", 0, 0, 0, 0, 0, "u")
	f.Fuzz(func(t *testing.T, ts, role, text string, cost float64, kind string, tokensIn, tokensOut, cacheRead, cacheCreate, durMs int, user string) {
		t.Parallel() // each run has its own dir and servers; seeds run side by side
		if math.IsNaN(cost) || math.IsInf(cost, 0) {
			t.Skip("Go's json.Marshal refuses NaN and ±Inf, so no Go caller can write them")
		}
		e := goEntry{Ts: ts, Role: role, Text: text, Cost: cost, Kind: kind, TokensIn: tokensIn, TokensOut: tokensOut, CacheRead: cacheRead, CacheCreate: cacheCreate, DurMs: durMs}
		want := throughJSON(t, e)
		dir := t.TempDir()
		state := filepath.Join(dir, "state.json")

		// Go's package writes session g: its row, two appends of the entry, the participant.
		st := &goState{Sessions: []goSession{{ID: "s_g", Incarnation: incG, Name: "g"}, {ID: "s_s", Incarnation: incS, Name: "s"}}}
		if err := goSave(state, st); err != nil {
			t.Fatal(err)
		}
		stateBytes, _ := os.ReadFile(state)
		for i := 0; i < 2; i++ {
			if err := goAppendTranscript(goTranscriptPath(dir, "g"), e); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := goAppendParticipant(goParticipantsPath(dir, "g"), user); err != nil {
			t.Fatal(err)
		}
		wantG := seenThroughJSON(t, goReadParticipants(goParticipantsPath(dir, "g")))
		trimmed, valid := userIDRule(throughJSON(t, user))
		wantS := []string{}
		if valid {
			wantS = []string{trimmed}
		}

		// The server writes session s: the same two appends and participant.
		srv := startFuzzServer(t, state)
		ctx := fuzzCtx(t)
		for i := 0; i < 2; i++ {
			seq, err := srv.c.AppendTranscript(ctx, "s", TranscriptEntry(e))
			if err != nil || seq != i {
				srv.fail(t, "transcript/append %#v: seq %d, %v", e, seq, err)
			}
		}
		added, err := srv.c.AppendParticipant(ctx, "s", user)
		if valid && (err != nil || !added) {
			srv.fail(t, "participants/append %q: added %v, %v", user, added, err)
		}
		if !valid && !errors.Is(err, ErrInvalidParams) {
			srv.fail(t, "participants/append %q: want -32602 (the id is empty, has CR/LF or is too long once trimmed), got added %v, %v", user, added, err)
		}

		check := func(srv *fuzzServer, when string) {
			t.Helper()
			for _, name := range []string{"g", "s"} {
				got, err := srv.c.ReadTranscript(ctx, name, 0)
				if err != nil || !reflect.DeepEqual(entriesOf(got), []goEntry{want, want}) {
					srv.fail(t, "%s: transcript/read %s = %#v, %v; want twice %#v", when, name, got, err, want)
				}
				last, err := srv.c.LastTranscriptTimestamp(ctx, name)
				if err != nil || last != want.Ts {
					srv.fail(t, "%s: transcript/last %s = %q, %v; want %q", when, name, last, err, want.Ts)
				}
				var u usageReply
				if err := srv.c.Call(ctx, "transcript/usage", map[string]string{"name": name}, &u); err != nil {
					srv.fail(t, "%s: transcript/usage %s: %v", when, name, err)
				}
				checkUsage(t, srv, when+": usage of "+name, u, want)
			}
			for name, wantIDs := range map[string][]string{"g": wantG, "s": wantS} {
				ids, err := srv.c.ReadParticipants(ctx, name)
				if err != nil || !(len(ids) == 0 && len(wantIDs) == 0 || reflect.DeepEqual(ids, wantIDs)) {
					srv.fail(t, "%s: participants/read %s = %q, %v; want %q", when, name, ids, err, wantIDs)
				}
			}
			var infos struct {
				Sessions []struct {
					Session goSession  `json:"session"`
					LastTs  string     `json:"lastTs"`
					Usage   usageReply `json:"usage"`
				} `json:"sessions"`
			}
			if err := srv.c.Call(ctx, "session/infos", struct{}{}, &infos); err != nil || len(infos.Sessions) != 2 {
				srv.fail(t, "%s: session/infos = %+v, %v", when, infos, err)
			}
			for _, info := range infos.Sessions {
				if info.LastTs != want.Ts {
					srv.fail(t, "%s: session/infos %s: lastTs %q; want %q", when, info.Session.Name, info.LastTs, want.Ts)
				}
				checkUsage(t, srv, when+": session/infos usage of "+info.Session.Name, info.Usage, want)
			}
		}
		check(srv, "first run")
		srv.stop(t)

		// Go reads what the server wrote: the bytes Go writes for the entry the server was sent
		// (the same as Go wrote for g, but for invalid UTF-8: Go writes the escape \ufffd for each
		// bad byte, the server the U+FFFD it decoded — one value, the bytes of a valid string),
		// and state.json untouched.
		gotLines, _ := os.ReadFile(goTranscriptPath(dir, "s"))
		line, _ := json.Marshal(want)
		if goLines := append(append(line, '\n'), append(line, '\n')...); !bytes.Equal(gotLines, goLines) {
			t.Fatalf("transcripts/s.jsonl differs from what Go writes for the same entries:\nserver %q\ngo     %q", gotLines, goLines)
		}
		if got := goReadTranscript(goTranscriptPath(dir, "s")); !reflect.DeepEqual(got, []goEntry{want, want}) {
			t.Fatalf("Go reads transcripts/s.jsonl as %#v; want twice %#v", got, want)
		}
		if got := goReadParticipants(goParticipantsPath(dir, "s")); !(len(got) == 0 && len(wantS) == 0 || reflect.DeepEqual(got, wantS)) {
			t.Fatalf("Go reads participants/s.log as %q; want %q", got, wantS)
		}
		if valid {
			if got, _ := os.ReadFile(goParticipantsPath(dir, "s")); string(got) != trimmed+"\n" {
				t.Fatalf("participants/s.log is %q; want %q", got, trimmed+"\n")
			}
		}
		if got, err := os.ReadFile(state); err != nil || !bytes.Equal(got, stateBytes) {
			t.Fatalf("state.json changed without a state call: %q, %v", got, err)
		}

		srv = startFuzzServer(t, state)
		check(srv, "after a restart")
		srv.stop(t)
	})
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

func FuzzSession(f *testing.F) {
	f.Add("c1|text|claude|b|claude|m|w|/d|p|a|tok|x|j|par|cost|g1,g2", false, false, 0, 0.0, uint64(0), 0.0, uint64(0), "\u0130d", uint8(3), "987|category|/ws|/src|msg")
	f.Add("c1|text|claude", true, true, math.MaxInt64, math.MaxFloat64, uint64(math.MaxUint64), math.SmallestNonzeroFloat64, uint64(1<<53+1), "nickname", uint8(4), "<>&|\u2028|w|s|m")
	f.Add("<>&|\u2028\u2029|\x00\x1f\b\f|\xff\xfe|\xe2\x82|é|\u0085", false, true, math.MinInt64, math.Copysign(0, -1), uint64(9007199254740993), 1e21, uint64(math.MaxUint64-1), "n\xffested", uint8(5), "\xff|\U0001F600|<|>|&")
	f.Add("c|t|x", false, false, -1, 1e-7, uint64(1), 5e-324, uint64(2), "reſumeToken", uint8(3), "")
	f.Add("c|t|x", false, false, 1, 1e20, uint64(1), 123456789012345680000.0, uint64(2), "f", uint8(2), "")
	f.Add("c|t|x", false, false, 1, 20.0, uint64(1), 30.0, uint64(2), "to\u212Aen_cap", uint8(1), "")
	f.Add("c|t|x", false, false, 1, 20.0, uint64(1), 30.0, uint64(2), "__proto__", uint8(5), "")
	f.Add("c|t|x", false, false, 1, 20.0, uint64(1), 30.0, uint64(2), "constructor", uint8(4), "")
	f.Fuzz(func(t *testing.T, strs string, archived, owned bool, consolidateEvery int, costCap float64, tokenCap uint64, cohortCostCap float64, cohortTokenCap uint64, unknownKey string, shape uint8, top string) {
		t.Parallel()
		if math.IsNaN(costCap) || math.IsInf(costCap, 0) || math.IsNaN(cohortCostCap) || math.IsInf(cohortCostCap, 0) {
			t.Skip("Go's json.Marshal refuses NaN and ±Inf, so no Go caller can save them")
		}
		p := strings.Split(strs, "|")
		row := goSession{
			ChannelID: part(p, 0), Type: part(p, 1), Cmd: part(p, 2), Backend: part(p, 3), Vendor: part(p, 4),
			ModelID: part(p, 5), Worktree: part(p, 6), Dir: part(p, 7), Project: part(p, 8), Agent: part(p, 9),
			ResumeToken: part(p, 10), Archived: archived, Owned: owned, Extractor: part(p, 11), Journal: part(p, 12),
			ConsolidateEvery: consolidateEvery, Parent: part(p, 13), CostCap: costCap, TokenCap: tokenCap,
			CohortCostCap: cohortCostCap, CohortTokenCap: cohortTokenCap, PausedReason: part(p, 14),
		}
		if g := part(p, 15); g != "" {
			row.Gateways = strings.Split(g, ",")
			row.Participants = strings.Split(g, ",")[:1]
		}
		tp := strings.Split(top, "|")
		home := goHomeRef{ID: part(tp, 0), Type: part(tp, 1)}
		workspace, source, statusMessageID := part(tp, 2), part(tp, 3), part(tp, 4)

		dir := t.TempDir()
		state := filepath.Join(dir, "state.json")
		g := row
		g.ID, g.Incarnation, g.Name = "s_g", incG, "g"
		if err := goSave(state, &goState{Sessions: []goSession{g}}); err != nil {
			t.Fatal(err)
		}
		wantG := throughJSON(t, g)

		// session/add of the same row as s, with an unknown field when shape says so.
		s := row
		s.Name = "s"
		body, err := json.Marshal(s)
		if err != nil {
			t.Fatal(err)
		}
		var unknown []byte
		key := throughJSON(t, unknownKey)
		if shape%6 != 0 || unknownKey != "" {
			if sessionKeys[key] {
				key = "x-" + key
			}
			if unknown, err = json.Marshal(unknownValue(shape, tokenCap, costCap, strs)); err != nil {
				t.Fatal(err)
			}
			k, _ := json.Marshal(key)
			body = append(append(append(append(body[:len(body)-1], ','), k...), ':'), append(unknown, '}')...)
		}
		refuse := unknown != nil && goFolds(key)
		mayRefuse := map[string]bool{"__proto__": true, "constructor": true, "prototype": true}[key]
		wantS := throughJSON(t, s)
		wantS.ID = "s_s"

		srv := startFuzzServer(t, state)
		ctx := fuzzCtx(t)
		var added struct {
			Session json.RawMessage `json:"session"`
		}
		err = srv.c.Call(ctx, "session/add", map[string]json.RawMessage{"session": body}, &added)
		addedS := err == nil
		switch {
		case refuse || (mayRefuse && err != nil):
			if !errors.Is(err, ErrInvalidParams) {
				srv.fail(t, "session/add %s: Go's decoder reads the key %q as a field, so it must be refused (-32602); got %v", body, key, err)
			}
			addedS, unknown = false, nil
		case err != nil:
			srv.fail(t, "session/add %s: %v", body, err)
		default:
			var got goSession
			if err := json.Unmarshal(added.Session, &got); err != nil || !incarnationRe.MatchString(got.Incarnation) {
				srv.fail(t, "session/add answered %s: %v", added.Session, err)
			}
			wantS.Incarnation = got.Incarnation
		}
		rows := []goSession{wantG}
		if addedS {
			rows = append(rows, wantS)
		}
		if _, err := srv.c.SetHome(ctx, HomeRef(home)); err != nil {
			srv.fail(t, "state/setHome %#v: %v", home, err)
		}
		if _, err := srv.c.SetWorkspace(ctx, workspace); err != nil {
			srv.fail(t, "state/setWorkspace %q: %v", workspace, err)
		}
		if _, err := srv.c.SetSource(ctx, source); err != nil {
			srv.fail(t, "state/setSource %q: %v", source, err)
		}
		if _, err := srv.c.SetStatusMessageID(ctx, statusMessageID); err != nil {
			srv.fail(t, "state/setStatusMessageID %q: %v", statusMessageID, err)
		}
		want := goState{
			Home: throughJSON(t, home), Workspace: throughJSON(t, workspace), Source: throughJSON(t, source),
			StatusMessageID: throughJSON(t, statusMessageID), Sessions: rows,
		}

		check := func(srv *fuzzServer, when string) {
			t.Helper()
			var raw struct {
				State json.RawMessage `json:"state"`
			}
			if err := srv.c.Call(ctx, "state/get", struct{}{}, &raw); err != nil {
				srv.fail(t, "%s: state/get: %v", when, err)
			}
			var got goState
			if err := json.Unmarshal(raw.State, &got); err != nil || !reflect.DeepEqual(got, want) {
				srv.fail(t, "%s: state/get = %s (%v);\nGo reads it as %#v\nwant %#v", when, raw.State, err, got, want)
			}
			for _, r := range rows {
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
				if r.Name == "s" && unknown != nil {
					var fields map[string]json.RawMessage
					_ = json.Unmarshal(found.Session, &fields)
					if v, ok := fields[key]; !ok || !sameJSON(v, unknown) {
						srv.fail(t, "%s: the unknown field %q of s came back as %s; sent %s", when, key, v, unknown)
					}
				}
			}
		}
		check(srv, "first run")
		srv.stop(t)

		// Go loads the file the server wrote.
		loaded, err := goLoad(state)
		if err != nil {
			t.Fatalf("Go cannot load the state.json the server wrote: %v", err)
		}
		if !reflect.DeepEqual(*loaded, want) {
			t.Fatalf("Go reads state.json as %#v\nwant %#v", *loaded, want)
		}
		if unknown == nil {
			file, _ := os.ReadFile(state)
			goBytes, _ := json.MarshalIndent(loaded, "", "  ")
			if !bytes.Equal(file, goBytes) {
				t.Fatalf("state.json differs from Go's MarshalIndent of the same state:\nserver %q\ngo     %q", file, goBytes)
			}
		}

		srv = startFuzzServer(t, state)
		check(srv, "after a restart")
		srv.stop(t)
	})
}
