package state

import "sync"

// HomeRef points at the category or forum that holds session channels.
type HomeRef struct {
	ID   string `json:"id"`
	Type string `json:"type"` // "category" | "forum"
}

// Session is one bridged channel/post supervised by the daemon.
type Session struct {
	ID string `json:"id,omitempty"` // stable logical id, decoupled from Name and ChannelID
	// Incarnation is an opaque identity for this specific persisted session
	// object. Closing and recreating the same Name generates a different value.
	Incarnation string `json:"incarnation,omitempty"`
	Name        string `json:"name"`
	ChannelID   string `json:"channelID"`
	Type        string `json:"type"` // "text" | "forum"
	Cmd         string `json:"cmd"`
	Backend     string `json:"backend,omitempty"` // bridge backend ("" or "stream" = stream-json default; "oneshot" = per-message cmd)
	Vendor      string `json:"vendor,omitempty"`  // agent backend vendor ("claude", "codex", "cursor")
	// ModelID is the catalog identifier of the chosen model; empty for sessions created
	// before the catalog existed.
	ModelID  string `json:"modelId,omitempty"`
	Worktree string `json:"worktree,omitempty"` // abs path; empty for a shared session
	Dir      string `json:"dir,omitempty"`      // bridge working dir; empty = inherit launcher cwd (pwd fallback)
	Project  string `json:"project,omitempty"`  // workspace sub-dir the session started from
	Agent    string `json:"agent,omitempty"`    // durable agent this session was provisioned from ("" = none)

	// ResumeToken is the backend's opaque resume id. Empty = start fresh.
	ResumeToken string `json:"resumeToken,omitempty"`

	// Archived marks a session closed-but-kept. Absent/false = live.
	Archived bool `json:"archived,omitempty"`

	// Owned marks a channel this session created, and may therefore tidy away when it closes.
	Owned bool `json:"owned,omitempty"`

	// Learning config: Extractor names a curation extractor, Journal is the call-journal
	// path, ConsolidateEvery runs Consolidate every N turns (0 = manual only).
	Extractor        string `json:"extractor,omitempty"`
	Journal          string `json:"journal,omitempty"`
	ConsolidateEvery int    `json:"consolidateEvery,omitempty"`

	// Gateways binds the session to a set of gateway kinds. Empty means "legacy" (see IsLegacy).
	Gateways []string `json:"gateways,omitempty"`

	Participants []string `json:"participants,omitempty"` // observed authors (cache; journal is source of truth)

	// Parent names the lead session that delegated this one. Empty = no parent.
	Parent string `json:"parent,omitempty"`

	// Budget caps (0 = uncapped).
	CostCap        float64 `json:"cost_cap,omitempty"`
	TokenCap       uint64  `json:"token_cap,omitempty"`
	CohortCostCap  float64 `json:"cohort_cost_cap,omitempty"`
	CohortTokenCap uint64  `json:"cohort_token_cap,omitempty"`
	// PausedReason is non-empty when the session was halted by a budget cap:
	// "cost" | "tokens" | "cohort_cost" | "cohort_tokens". Cleared on resume.
	PausedReason string `json:"paused_reason,omitempty"`
}

// BoundGateways returns the explicit gateway kinds this session is bound to, or nil when it
// is legacy (no stored set).
func (s Session) BoundGateways() []string {
	if len(s.Gateways) == 0 {
		return nil
	}
	return append([]string(nil), s.Gateways...)
}

// IsLegacy reports whether this session predates explicit gateway binding: it carries a
// channel but no stored gateway set.
func (s Session) IsLegacy() bool { return len(s.Gateways) == 0 && s.ChannelID != "" }

// State is the daemon's persisted configuration. All access is mutex-guarded.
//
// The exported fields are a copy of the served document, refreshed only inside this
// package's methods (under the mutex), so callers may read them as plain fields.
type State struct {
	Home            HomeRef   `json:"home"`
	Repo            string    `json:"repo,omitempty"`      // legacy single-repo root; defaults to daemon cwd
	Workspace       string    `json:"workspace,omitempty"` // abs path to the workspace root; preferred over Repo
	Source          string    `json:"source,omitempty"`    // abs path to the herrscher source checkout (for /service update)
	Sessions        []Session `json:"sessions"`
	StatusMessageID string    `json:"statusMessageID,omitempty"` // cached id of the status embed
	InstanceID      string    `json:"instanceID,omitempty"`      // per-daemon namespace for global resources; "" = legacy

	mu   sync.Mutex
	path string
	// srv is the connection to the server of path (nil until the first call needs it).
	srv *connection
	// base is the served document the exported fields were last built from; what differs
	// from it in the fields is this value's own edit, persisted at its next save.
	base document
	// baseVersion is the replica's version base was taken from (0: never); baseRev is the
	// server revision a save names, on the connection baseEpoch.
	baseVersion uint64
	baseRev     int
	baseRun     string // the server run baseRev belongs to
	baseEpoch   int
	// defaults is the ApplyDefaults overlay: shown in the fields, never saved.
	defaults overlay
}

// TranscriptEntry is one recorded turn side.
type TranscriptEntry struct {
	Ts   string  `json:"ts"`
	Role string  `json:"role"` // "user" | "assistant"
	Text string  `json:"text"`
	Cost float64 `json:"cost,omitempty"`
	Kind string  `json:"kind,omitempty"` // reserved (tool calls)
	// Per-turn usage, present on assistant entries.
	TokensIn    int `json:"tokens_in,omitempty"`
	TokensOut   int `json:"tokens_out,omitempty"`
	CacheRead   int `json:"cache_read,omitempty"`
	CacheCreate int `json:"cache_create,omitempty"`
	DurMs       int `json:"dur_ms,omitempty"`
}
