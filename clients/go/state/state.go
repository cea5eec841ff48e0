package state

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	stateclient "github.com/herrscher/herrscher-state/clients/go"
)

// NewState returns an empty state bound to path (not yet written).
//
// Nothing is asked of the server until the first method call; from then on the value joins
// the served document (fields left empty here show what the server holds).
func NewState(path string) *State {
	s := &State{path: path}
	if abs, err := filepath.Abs(path); err == nil && path != "" {
		s.path = abs
	}
	return s
}

// LoadState reads state from path; a missing file yields an empty state.
//
// The server of path (found, or started: see the package doc) reads the file; a legacy file
// gets its ids and incarnations there, persisted as Go's LoadState persists them. A missing
// file is answered here, as Go's LoadState answers it: no server is asked or started and
// nothing is created on disk (the first write does that).
func LoadState(path string) (*State, error) {
	s := NewState(path)
	if s.path == "" {
		return nil, errNoPath
	}
	if missing(s.path) {
		return s, nil
	}
	// A load reads what the server holds now, not this process's copy: the server notices
	// an outside edit of the file as it answers.
	s.srv = connectionFor(s.path)
	s.srv.reload()
	ctx, cancel := callContext()
	defer cancel()
	if err := s.sync(ctx); err != nil {
		return nil, err
	}
	return s, nil
}

var errNoPath = errors.New("state: no state file path")

// missing: nothing is at path (as Go's os.ReadFile finds it: a dangling link is missing too).
// Any other failure to look (a folder without search permission) is not "missing": the server
// is asked, and says why.
func missing(path string) bool {
	if path == "" {
		return false
	}
	_, err := os.Stat(path)
	return errors.Is(err, fs.ErrNotExist)
}

// sync brings the exported fields up to the served document, keeping this value's own
// unsaved edits (a three-way merge against the document they were made on). s.mu is taken
// only around the memory work, never while the server is asked.
func (s *State) sync(ctx context.Context) error {
	s.mu.Lock()
	if s.path == "" {
		s.mu.Unlock()
		return errNoPath
	}
	if s.srv == nil {
		s.srv = connectionFor(s.path)
	}
	cn, known := s.srv, s.baseVersion
	s.mu.Unlock()
	r, same, err := cn.current(ctx, known)
	if err != nil {
		return err
	}
	s.mu.Lock()
	s.adoptLocked(r, same)
	s.mu.Unlock()
	return nil
}

// adoptLocked takes a replica into the fields (s.mu held). A replica older than the one the
// fields were last built from (a concurrent sync got a newer one first) changes nothing;
// baseVersion 0 (just saved) takes any.
func (s *State) adoptLocked(r replica, same bool) {
	if same {
		if r.version == s.baseVersion {
			s.baseRev, s.baseRun, s.baseEpoch = r.rev, r.run, r.epoch
		}
		return
	}
	if s.baseVersion != 0 && r.version < s.baseVersion {
		return
	}
	// r.doc is this call's own copy: it becomes base, and show copies what the fields get.
	cur, conflicts := merge(s.base, s.fieldsView(), r.doc)
	reportConflicts(s.path, conflicts)
	s.base, s.baseVersion, s.baseRev, s.baseRun, s.baseEpoch = r.doc, r.version, r.rev, r.run, r.epoch
	s.show(cur)
}

// readLocked syncs for a reader and returns with s.mu held for its look at the fields. A reader
// has no error to return, so when the server cannot be reached it answers from the fields as
// they are, and says why in the log (report.go). A State made without a path (a literal) has no
// server to ask: its fields are all there is. The common case (a current replica) takes s.mu
// once, with no deadline to make (a timer costs more than the read).
func (s *State) readLocked() {
	s.mu.Lock()
	if s.srv != nil {
		if r, same, ok := s.srv.currentNow(s.baseVersion); ok {
			s.adoptLocked(r, same)
			return
		}
	}
	unserved := s.srv == nil || !s.srv.connected()
	s.mu.Unlock()
	defer s.mu.Lock()
	if unserved && missing(s.path) {
		// Nothing written yet (or the folder is gone): no server has anything to add to the
		// fields, so none is asked or started for a read.
		return
	}
	ctx, cancel := callContext()
	defer cancel()
	if err := s.sync(ctx); err != nil && !errors.Is(err, errNoPath) {
		readFailed("reading", s.path, "answered from this State's last copy", err)
	}
}

type saveParams struct {
	State    document               `json:"state"`
	Revision int                    `json:"revision"`
	Run      string                 `json:"epoch,omitempty"`
	Writer   *stateclient.WriterKey `json:"writer,omitempty"`
}

type saveResult struct {
	Revision int  `json:"revision"`
	Changed  bool `json:"changed"`
}

// maxSaveAttempts bounds the retries of a save that keeps meeting other writers' commits.
const maxSaveAttempts = 50

// mutate applies op to the current document as Go's mutators do to memory, and saves the
// result when op says so, with compare-and-set on the revision it was built on: a save that
// lost a race is rebuilt on the newer document and tried again, so two processes' changes
// both land (Go's package would lose one). The whole of it runs within one deadline.
func (s *State) mutate(op func(d *document) (save bool, err error)) error {
	ctx, cancel := callContext()
	defer cancel()
	return s.mutateWithin(ctx, op)
}

func (s *State) mutateWithin(ctx context.Context, op func(d *document) (save bool, err error)) error {
	for attempt := 0; attempt < maxSaveAttempts; attempt++ {
		if err := s.sync(ctx); err != nil {
			return err
		}
		s.mu.Lock()
		next := s.fields()
		cn, rev, run, epoch := s.srv, s.baseRev, s.baseRun, s.baseEpoch
		save, err := op(&next)
		s.mu.Unlock()
		if err != nil || !save {
			return err
		}
		var r saveResult
		params := saveParams{State: next, Revision: rev, Run: run, Writer: cn.nextKey()}
		err = cn.callOn(ctx, epoch, func(ctx context.Context, c *stateclient.Client) error {
			return c.Call(ctx, "state/save", params, &r)
		})
		if errors.Is(err, errStale) {
			continue
		}
		if errors.Is(err, stateclient.ErrConflict) {
			cn.conflicted(epoch)
			continue
		}
		s.mu.Lock()
		if err != nil {
			// As Go's save: the change stays in memory (and is saved with the next save).
			s.show(next)
			s.mu.Unlock()
			return err
		}
		cn.saved(epoch, next, r.Revision, needsFill(next))
		// Nothing of this save counts as an edit of this value any more; reading back at once
		// puts what the server filled in (incarnations) in the fields.
		s.base, s.baseVersion = next.clone(), 0
		s.show(next)
		s.mu.Unlock()
		_ = s.sync(ctx)
		return nil
	}
	return fmt.Errorf("state: save %s: other writers kept changing it (%d attempts)", s.path, maxSaveAttempts)
}

// needsFill: a row without an id or incarnation, which the server fills in as it saves.
func needsFill(d document) bool {
	for _, r := range d.Sessions {
		if r.ID == "" || r.Incarnation == "" {
			return true
		}
	}
	return false
}

// Save atomically writes state to its path.
func (s *State) Save() error {
	return s.mutate(func(*document) (bool, error) { return true, nil })
}

// ApplyDefaults seeds declarative config.json values into the in-memory state for any field
// not already set, WITHOUT persisting: the seeded values show in this value's fields only,
// and no save (of this value or any other) writes them.
func (s *State) ApplyDefaults(home *HomeRef, workspace, source string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.Home.ID == "" && home != nil && home.ID != "" {
		h := *home
		s.defaults.home = &h
		s.Home = h
	}
	if s.Workspace == "" && workspace != "" {
		s.defaults.workspace, s.defaults.hasWorkspace = workspace, true
		s.Workspace = workspace
	}
	if s.Source == "" && source != "" {
		s.defaults.source, s.defaults.hasSrc = source, true
		s.Source = source
	}
}

// FindSession returns the session with name (and whether it exists).
func (s *State) FindSession(name string) (Session, bool) {
	s.readLocked()
	defer s.mu.Unlock()
	for _, sess := range s.Sessions {
		if sess.Name == name {
			return sess, true
		}
	}
	return Session{}, false
}

// SnapshotSessions returns a copy of the current sessions.
func (s *State) SnapshotSessions() []Session {
	s.readLocked()
	defer s.mu.Unlock()
	return append([]Session(nil), s.Sessions...)
}

// WorkspaceRoot returns the configured workspace, else the legacy Repo, else "".
func (s *State) WorkspaceRoot() string {
	s.readLocked()
	defer s.mu.Unlock()
	if s.Workspace != "" {
		return s.Workspace
	}
	return s.Repo
}

// SourceDir returns the configured herrscher source checkout, else "".
func (s *State) SourceDir() string {
	s.readLocked()
	defer s.mu.Unlock()
	return s.Source
}

// QualifiedName maps a logical session name to the name used on global resources (channel
// title): "<InstanceID>__<name>". In legacy mode (empty InstanceID) it returns the bare
// logical name.
func (s *State) QualifiedName(name string) string {
	s.readLocked()
	defer s.mu.Unlock()
	if s.InstanceID == "" {
		return name
	}
	return s.InstanceID + "__" + name
}

// AddSession adds a session, erroring if the name is taken, and persists.
//
// With no unsaved edit in this value, the server's own row method adds it (one row sent, not the
// whole document: the server's write is about half as long); with edits, or a row the row method
// refuses (a legacy name or value Go takes), the whole document is saved, as Go does.
func (s *State) AddSession(sess Session) error {
	add := func(d *document) (bool, error) {
		seen := map[string]bool{}
		for _, e := range d.Sessions {
			if e.Name == sess.Name {
				return false, errSessionExists(sess.Name)
			}
			if e.ID != "" {
				seen[e.ID] = true
			}
		}
		row := copySession(sess)
		if row.ID == "" {
			row.ID = newSessionID(row.Name, seen)
		}
		row.Incarnation = "" // a fresh one is assigned as it is saved
		d.Sessions = append(d.Sessions, row)
		return true, nil
	}
	ctx, cancel := callContext()
	defer cancel()
	for attempt := 0; attempt < maxSaveAttempts; attempt++ {
		if err := s.sync(ctx); err != nil {
			return err
		}
		s.mu.Lock()
		cur := s.fieldsView()
		if !sameDocument(&cur, &s.base) {
			s.mu.Unlock()
			return s.mutateWithin(ctx, add)
		}
		if rowIndex(cur.Sessions, sess.Name) >= 0 {
			s.mu.Unlock()
			return errSessionExists(sess.Name)
		}
		cn, epoch := s.srv, s.baseEpoch
		s.mu.Unlock()
		row := copySession(sess)
		row.Incarnation = "" // the server assigns a fresh one, as Go's AddSession does
		key := cn.nextKey()
		err := cn.callOn(ctx, epoch, func(ctx context.Context, c *stateclient.Client) error {
			_, err := c.AddSession(ctx, stateclient.Session(row), stateclient.AddSessionOptions{Writer: key})
			return err
		})
		switch {
		case errors.Is(err, errStale):
			continue
		case errors.Is(err, stateclient.ErrSessionExists):
			cn.reload() // another writer's row this value has not seen yet
			return errSessionExists(sess.Name)
		case errors.Is(err, stateclient.ErrInvalidParams):
			return s.mutateWithin(ctx, add) // a row only the whole document's save takes
		case err != nil:
			// As Go's save: the row stays in memory (and is saved with the next save).
			s.mu.Lock()
			next := s.fields()
			if _, addErr := add(&next); addErr == nil {
				s.show(next)
			}
			s.mu.Unlock()
			return err
		}
		cn.added(epoch, sess.Name)
		return s.sync(ctx)
	}
	return fmt.Errorf("state: %s: the connection to its server kept changing (%d attempts)", s.path, maxSaveAttempts)
}

// errSessionExists is Go's error for a name AddSession finds taken.
func errSessionExists(name string) error { return fmt.Errorf("session %q already exists", name) }

// newSessionID is Go's: s_<name>, else s_<name>_1, _2… the first not taken.
func newSessionID(name string, seen map[string]bool) string {
	base := "s_" + name
	if !seen[base] {
		return base
	}
	for i := 1; ; i++ {
		id := fmt.Sprintf("%s_%d", base, i)
		if !seen[id] {
			return id
		}
	}
}

// RemoveSession drops the session named name and persists.
func (s *State) RemoveSession(name string) error {
	return s.mutate(func(d *document) (bool, error) {
		if d.Sessions != nil {
			out := d.Sessions[:0]
			for _, e := range d.Sessions {
				if e.Name != name {
					out = append(out, e)
				}
			}
			d.Sessions = out
		}
		return true, nil
	})
}

// row is the first session named name in d, or nil.
func row(d *document, name string) *Session {
	if i := rowIndex(d.Sessions, name); i >= 0 {
		return &d.Sessions[i]
	}
	return nil
}

// rowIndex is the index of the first session named name, or -1.
func rowIndex(rows []Session, name string) int {
	for i := range rows {
		if rows[i].Name == name {
			return i
		}
	}
	return -1
}

// setRow is a session setter: set changes the row and says whether Go would save. With no
// unsaved edit in this value, the server's own row method makes the change (one row, not the
// whole document: the per-turn calls stay cheap, and another writer's change to other rows
// can never conflict with it); with edits, the whole document is saved, as Go does. A
// connection that changed under it is tried again, a bounded number of times within the
// call's deadline.
func (s *State) setRow(name string, set func(r *Session) bool, call func(ctx context.Context, c *stateclient.Client, key *stateclient.WriterKey) error) error {
	ctx, cancel := callContext()
	defer cancel()
	for attempt := 0; attempt < maxSaveAttempts; attempt++ {
		if err := s.sync(ctx); err != nil {
			// The server could not be asked: as Go's save, the change stays in this State (saved
			// with its next save) and the caller hears why.
			s.keepRow(name, set)
			return err
		}
		s.mu.Lock()
		cur := s.fieldsView()
		if !sameDocument(&cur, &s.base) {
			s.mu.Unlock()
			return s.mutateWithin(ctx, func(d *document) (bool, error) {
				r := row(d, name)
				return r != nil && set(r), nil
			})
		}
		i := rowIndex(cur.Sessions, name)
		if i < 0 {
			s.mu.Unlock()
			return nil
		}
		changed := copySession(cur.Sessions[i])
		if !set(&changed) {
			s.mu.Unlock()
			return nil
		}
		cn, epoch := s.srv, s.baseEpoch
		s.mu.Unlock()
		key := cn.nextKey()
		err := cn.callOn(ctx, epoch, func(ctx context.Context, c *stateclient.Client) error { return call(ctx, c, key) })
		if errors.Is(err, errStale) {
			continue
		}
		if err != nil {
			// As Go's save: the change stays in memory (and is saved with the next save).
			s.keepRow(name, set)
			return err
		}
		cn.changed(epoch, name, set)
		return s.sync(ctx)
	}
	return fmt.Errorf("state: %s: the connection to its server kept changing (%d attempts)", s.path, maxSaveAttempts)
}

// keepRow makes a setter's change in this State's fields only, as Go's failed save leaves it
// in memory.
func (s *State) keepRow(name string, set func(r *Session) bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if i := rowIndex(s.Sessions, name); i >= 0 {
		rows := copySessions(s.Sessions)
		if set(&rows[i]) {
			s.Sessions = rows
		}
	}
}

// SetResumeToken records the backend resume token for the named session, persisting only
// when it changes. A missing session or an unchanged token is a no-op.
func (s *State) SetResumeToken(name, token string) error {
	return s.setRow(name, func(r *Session) bool {
		if r.ResumeToken == token {
			return false
		}
		r.ResumeToken = token
		return true
	}, func(ctx context.Context, c *stateclient.Client, key *stateclient.WriterKey) error {
		_, err := c.SetResumeToken(ctx, name, token, stateclient.SetResumeTokenOptions{Writer: key})
		return err
	})
}

// SetPausedReason records why a session halted on a budget cap ("" clears it, resuming the
// session). A missing session or an unchanged reason is a no-op.
func (s *State) SetPausedReason(name, reason string) error {
	return s.setRow(name, func(r *Session) bool {
		if r.PausedReason == reason {
			return false
		}
		r.PausedReason = reason
		return true
	}, func(ctx context.Context, c *stateclient.Client, key *stateclient.WriterKey) error {
		_, err := c.SetPausedReason(ctx, name, reason, stateclient.SetPausedReasonOptions{Writer: key})
		return err
	})
}

// SetArchived sets a session's archived flag and persists only on change. An unknown name
// is a no-op.
func (s *State) SetArchived(name string, archived bool) error {
	return s.setRow(name, func(r *Session) bool {
		if r.Archived == archived {
			return false
		}
		r.Archived = archived
		return true
	}, func(ctx context.Context, c *stateclient.Client, key *stateclient.WriterKey) error {
		_, err := c.SetArchived(ctx, name, archived, stateclient.SetArchivedOptions{Writer: key})
		return err
	})
}

// SetBudget persists the budget caps and paused reason for the named session in one write.
// A missing session is a no-op.
func (s *State) SetBudget(name string, costCap float64, tokenCap uint64, cohortCostCap float64, cohortTokenCap uint64, pausedReason string) error {
	return s.setRow(name, func(r *Session) bool {
		r.CostCap, r.TokenCap, r.CohortCostCap, r.CohortTokenCap, r.PausedReason = costCap, tokenCap, cohortCostCap, cohortTokenCap, pausedReason
		return true
	}, func(ctx context.Context, c *stateclient.Client, key *stateclient.WriterKey) error {
		_, err := c.SetBudget(ctx, name, costCap, tokenCap, cohortCostCap, cohortTokenCap, pausedReason, stateclient.SetBudgetOptions{Writer: key})
		return err
	})
}

// SetBackendTarget re-points a live session's backend: it rewrites Vendor, Cmd and ModelID
// and clears the resume token. Returns false when no session matches name. A failed save is
// not returned, as in Go: the change stays in this State (saved with its next save, as Go's
// stays in memory) and the reason goes to the log, as a reader's does, so it is not silent.
// A server that could not be asked at all leaves this State's copy to say whether the
// session exists, not "no such session".
func (s *State) SetBackendTarget(name, vendor, cmd, modelID string) bool {
	found := false
	err := s.setRow(name, func(r *Session) bool {
		found = true
		r.Vendor, r.Cmd, r.ModelID, r.ResumeToken = vendor, cmd, modelID, ""
		return true
	}, func(ctx context.Context, c *stateclient.Client, key *stateclient.WriterKey) error {
		_, err := c.SetBackendTarget(ctx, name, vendor, cmd, modelID, stateclient.SetBackendTargetOptions{Writer: key})
		return err
	})
	if err != nil && found {
		readFailed("SetBackendTarget", s.path, "the change is kept in this State only (saved with its next save)", err)
	}
	return found
}

// SetHome records the home ref and persists.
func (s *State) SetHome(h HomeRef) error {
	return s.mutate(func(d *document) (bool, error) { d.Home = h; return true, nil })
}

// SetWorkspace records the workspace root and persists.
func (s *State) SetWorkspace(path string) error {
	return s.mutate(func(d *document) (bool, error) { d.Workspace = path; return true, nil })
}

// SetSource records the herrscher source-checkout path and persists.
func (s *State) SetSource(path string) error {
	return s.mutate(func(d *document) (bool, error) { d.Source = path; return true, nil })
}

// SetStatusMessageID caches the status embed's message id and persists.
func (s *State) SetStatusMessageID(id string) error {
	return s.mutate(func(d *document) (bool, error) { d.StatusMessageID = id; return true, nil })
}

// SetInstanceID records the per-daemon instance id and persists.
func (s *State) SetInstanceID(id string) error {
	return s.mutate(func(d *document) (bool, error) { d.InstanceID = id; return true, nil })
}
