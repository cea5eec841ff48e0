package stateclient

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"
)

// exerciseAll calls every method of the contract once through its Go method and checks the
// answer; it returns the Go methods it called, so a test can tell that none was left out.
func exerciseAll(t *testing.T, c *Client, statePath string) map[string]bool {
	t.Helper()
	ctx := ctxT(t)
	called := map[string]bool{}
	call := func(name string) { called[name] = true }

	call("Initialize")
	init := must(c.Initialize(ctx, InitializeOptions{ClientInfo: &InitializeClientInfo{Name: "go-test"}}))(t)
	if init.ServerInfo.Name != "herrscher-state" || init.StatePath != statePath {
		t.Fatalf("initialize: %+v", init)
	}
	call("Discover")
	doc := must(c.Discover(ctx))(t)
	if string(doc["openrpc"]) != `"1.3.2"` {
		t.Fatalf("discover: openrpc = %s", doc["openrpc"])
	}

	call("Status")
	status := must(c.Status(ctx))(t)
	if status.Pid <= 0 || status.StatePath != statePath || !status.Healthy {
		t.Fatalf("status: %+v", status)
	}

	call("SetHome")
	if !must(c.SetHome(ctx, HomeRef{ID: "987", Type: "category"}))(t) {
		t.Fatal("setHome changed nothing")
	}
	call("Backup")
	dest := filepath.Join(t.TempDir(), "backup")
	bk := must(c.Backup(ctx, dest))(t)
	if bk.Dest != dest || bk.Files != 1 || bk.Revision != 1 {
		t.Fatalf("backup: %+v", bk)
	}
	if _, err := os.Stat(filepath.Join(dest, "backup-manifest.json")); err != nil {
		t.Fatalf("backup: %v", err)
	}
	call("SetWorkspace")
	must(c.SetWorkspace(ctx, "/w"))(t)
	call("SetSource")
	must(c.SetSource(ctx, "/src"))(t)
	call("SetStatusMessageID")
	must(c.SetStatusMessageID(ctx, "m-1"))(t)
	call("SetInstanceID")
	must(c.SetInstanceID(ctx, "alice"))(t)
	call("WorkspaceRoot")
	if got := must(c.WorkspaceRoot(ctx))(t); got != "/w" {
		t.Fatalf("workspaceRoot %q", got)
	}
	call("SourceDir")
	if got := must(c.SourceDir(ctx))(t); got != "/src" {
		t.Fatalf("sourceDir %q", got)
	}
	call("QualifiedName")
	if got := must(c.QualifiedName(ctx, "main"))(t); got != "alice__main" {
		t.Fatalf("qualifiedName %q", got)
	}
	call("ApplyDefaults")
	doc2 := must(c.ApplyDefaults(ctx, ApplyDefaultsOptions{Workspace: "/ignored"}))(t)
	if doc2.Workspace != "/w" {
		t.Fatalf("applyDefaults overrode the file's workspace: %+v", doc2)
	}

	call("AddSession")
	s := must(c.AddSession(ctx, Session{Name: "main", ChannelID: "c1", Type: "text", Cmd: "claude", TokenCap: 1 << 40}))(t)
	if s.ID != "s_main" || !strings.HasPrefix(s.Incarnation, "inc_") || s.TokenCap != 1<<40 {
		t.Fatalf("addSession: %+v", s)
	}
	call("FindSession")
	found := must(c.FindSession(ctx, "main"))(t)
	if found == nil || !reflect.DeepEqual(*found, s) {
		t.Fatalf("findSession: %+v, want %+v", found, s)
	}
	if none := must(c.FindSession(ctx, "nope"))(t); none != nil {
		t.Fatalf("findSession of a missing name: %+v", none)
	}
	call("SnapshotSessions")
	if list := must(c.SnapshotSessions(ctx))(t); len(list) != 1 || list[0].Name != "main" {
		t.Fatalf("snapshotSessions: %+v", list)
	}
	call("State")
	st := must(c.State(ctx))(t)
	if st.State.Home.ID != "987" || len(st.State.Sessions) != 1 || st.State.InstanceID != "alice" || st.Revision <= 0 {
		t.Fatalf("state: %+v", st)
	}
	call("StateSave")
	persisted := must(c.State(ctx, StateOptions{Persisted: true}))(t)
	if persisted.State.Workspace != "/w" || persisted.Revision != st.Revision {
		t.Fatalf("state persisted: %+v", persisted)
	}
	var stale ConflictData
	var e *Error
	if _, err := c.StateSave(ctx, persisted.State, persisted.Revision-1); !errors.As(err, &e) || !errors.Is(err, ErrConflict) || e.DecodeData(&stale) != nil || stale.Revision != persisted.Revision {
		t.Fatalf("a stale save: %v (data %+v)", err, stale)
	}
	persisted.State.Source = "/src2"
	if r := must(c.StateSave(ctx, persisted.State, persisted.Revision))(t); !r.Changed || r.Revision != persisted.Revision+1 {
		t.Fatalf("stateSave: %+v", r)
	}
	if got := must(c.SourceDir(ctx))(t); got != "/src2" {
		t.Fatalf("sourceDir after a save %q", got)
	}
	call("SetResumeToken")
	if r := must(c.SetResumeToken(ctx, "main", "sid-1", SetResumeTokenOptions{Incarnation: s.Incarnation}))(t); !r.Found || !r.Changed {
		t.Fatalf("setResumeToken: %+v", r)
	}
	call("SetPausedReason")
	must(c.SetPausedReason(ctx, "main", "cost"))(t)
	call("SetBudget")
	must(c.SetBudget(ctx, "main", 20, 1000, 30, 2000, ""))(t)
	call("SetBackendTarget")
	must(c.SetBackendTarget(ctx, "main", "codex", "codex --model m", "m"))(t)
	call("SetArchived")
	if r := must(c.SetArchived(ctx, "ghost", true))(t); r.Found {
		t.Fatalf("setArchived of a missing session: %+v", r)
	}
	after := must(c.FindSession(ctx, "main"))(t)
	if after.ResumeToken != "" || after.Vendor != "codex" || after.CostCap != 20 || after.CohortTokenCap != 2000 || after.PausedReason != "" {
		t.Fatalf("after the setters: %+v", after)
	}

	call("AppendTranscript")
	e0 := TranscriptEntry{Ts: "2026-07-26T00:00:00Z", Role: "user", Text: "fix it"}
	e1 := TranscriptEntry{Ts: "2026-07-26T00:00:05Z", Role: "assistant", Text: "done", Cost: 0.5, TokensIn: 30, TokensOut: 55, DurMs: 4200}
	if seq := must(c.AppendTranscript(ctx, "main", e0))(t); seq != 0 {
		t.Fatalf("first seq %d", seq)
	}
	if seq := must(c.AppendTranscript(ctx, "main", e1, AppendTranscriptOptions{Incarnation: s.Incarnation}))(t); seq != 1 {
		t.Fatalf("second seq %d", seq)
	}
	if _, err := c.AppendTranscript(ctx, "loose", e0, AppendTranscriptOptions{RequireSession: Bool(true)}); !errors.Is(err, ErrUnknownSession) {
		t.Fatalf("append without a row, requireSession true: %v", err)
	}
	if seq := must(c.AppendTranscript(ctx, "loose", e0, AppendTranscriptOptions{RequireSession: Bool(false)}))(t); seq != 0 {
		t.Fatalf("append without a row under Go's rule: seq %d", seq)
	}
	if !must(c.AppendParticipant(ctx, "loose", "u9", AppendParticipantOptions{RequireSession: Bool(false)}))(t) {
		t.Fatal("appendParticipant without a row under Go's rule added nothing")
	}
	call("ReadTranscript")
	if got := must(c.ReadTranscript(ctx, "main", 0))(t); !reflect.DeepEqual(got, []TranscriptEntry{e0, e1}) {
		t.Fatalf("readTranscript: %+v", got)
	}
	call("ReadPage")
	page := must(c.ReadPage(ctx, "main", ReadPageOptions{Limit: Int(1), Before: Int(1)}))(t)
	if page.FirstSeq != 0 || !reflect.DeepEqual(page.Entries, []TranscriptEntry{e0}) {
		t.Fatalf("readPage: %+v", page)
	}
	call("LastTranscriptTimestamp")
	if ts := must(c.LastTranscriptTimestamp(ctx, "main"))(t); ts != e1.Ts {
		t.Fatalf("last %q", ts)
	}
	call("Usage")
	if u := must(c.Usage(ctx, "main"))(t); u.Entries != 2 || u.TokensOut != 55 || u.Cost != 0.5 || u.FirstTs != e0.Ts {
		t.Fatalf("usage: %+v", u)
	}
	call("Infos")
	if infos := must(c.Infos(ctx))(t); len(infos) != 1 || infos[0].LastTs != e1.Ts || infos[0].Usage.Entries != 2 {
		t.Fatalf("infos: %+v", infos)
	}
	call("AppendParticipant")
	if !must(c.AppendParticipant(ctx, "main", " u1 "))(t) || must(c.AppendParticipant(ctx, "main", "u1"))(t) {
		t.Fatal("appendParticipant: the trimmed id must be added once")
	}
	call("ReadParticipants")
	if ids := must(c.ReadParticipants(ctx, "main"))(t); !reflect.DeepEqual(ids, []string{"u1"}) {
		t.Fatalf("readParticipants: %v", ids)
	}
	call("Watch")
	w := must(c.Watch(ctx, WatchOptions{Sessions: true}))(t)
	call("RemoveParticipants")
	if !must(c.RemoveParticipants(ctx, "main"))(t) {
		t.Fatal("removeParticipants removed nothing")
	}
	call("RemoveTranscript")
	if !must(c.RemoveTranscript(ctx, "main"))(t) {
		t.Fatal("removeTranscript removed nothing")
	}
	call("RemoveSession")
	if !must(c.RemoveSession(ctx, "main", RemoveSessionOptions{Purge: true}))(t) {
		t.Fatal("removeSession removed nothing")
	}
	ev := <-w.Events()
	if sc, ok := ev.(*SessionDidChangeParams); !ok || sc.Kind != "removed" || sc.Name != "main" {
		t.Fatalf("watch event: %#v", ev)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if _, open := <-w.Events(); open {
		t.Fatal("events still open after Close")
	}
	return called
}

// The methods of *Client that are not wire methods, or that exerciseAll covers another way.
var notWireMethods = map[string]bool{"Call": true, "Close": true, "Done": true, "Err": true, "Process": true, "Shutdown": true, "Exit": true}

func checkAllCalled(t *testing.T, called map[string]bool) {
	t.Helper()
	var missing []string
	typ := reflect.TypeOf(&Client{})
	for i := 0; i < typ.NumMethod(); i++ {
		name := typ.Method(i).Name
		if !notWireMethods[name] && !called[name] {
			missing = append(missing, name)
		}
	}
	sort.Strings(missing)
	if len(missing) > 0 {
		t.Fatalf("methods no test calls: %v", missing)
	}
}

func TestEveryMethodOverSpawnedStdioThenShutdownAndExit(t *testing.T) {
	t.Parallel()
	c, dir := spawnTest(t, SpawnOptions{})
	checkAllCalled(t, exerciseAll(t, c, dir+"/state.json"))
	ctx := ctxT(t)
	if err := c.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	_, err := c.AddSession(ctx, Session{Name: "late"})
	if !errors.Is(err, ErrShuttingDown) {
		t.Fatalf("a write after shutdown: %v, want ErrShuttingDown", err)
	}
	if err := c.Exit(ctx); err != nil {
		t.Fatal(err)
	}
	<-c.Done()
	if err := c.Close(); err != nil {
		t.Fatalf("close after exit: %v", err)
	}
}

// A Go caller's own copy of state.Session (core/internal/state) converts to ours and back, and
// both marshal to the same bytes: the generated struct has the same fields, types and tags.
type goStateSession struct {
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

type goStateEntry struct {
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

func TestTheGoStatePackagesStructsConvertToOursAndMarshalAlike(t *testing.T) {
	theirs := goStateSession{ID: "s_a", Name: "a", ChannelID: "c", Gateways: []string{"chat"}, TokenCap: 7, CostCap: 1.5, Archived: true}
	ours := Session(theirs)
	a, _ := json.Marshal(theirs)
	b, _ := json.Marshal(ours)
	if string(a) != string(b) {
		t.Fatalf("Session marshals differently:\n%s\n%s", a, b)
	}
	e := goStateEntry{Ts: "t", Role: "assistant", Text: "x", TokensIn: 3, DurMs: 9}
	a, _ = json.Marshal(e)
	b, _ = json.Marshal(TranscriptEntry(e))
	if string(a) != string(b) {
		t.Fatalf("TranscriptEntry marshals differently:\n%s\n%s", a, b)
	}
}
