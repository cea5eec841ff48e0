package state

import (
	"net"
	"reflect"
	"strings"
	"testing"

	stateclient "github.com/herrscher/herrscher-state/clients/go"
)

// The replica's bookkeeping alone: a connection whose client talks to nothing (a pipe), with a
// document installed as state/get would give it at revision 5. The end-to-end tests see these
// steps only when the feed's events arrive in the usual order; here each case is set up.

func replicaAt5(t *testing.T, rows ...string) (*connection, *stateclient.Client) {
	t.Helper()
	a, b := net.Pipe()
	c := stateclient.NewClient(a)
	t.Cleanup(func() { c.Close(); b.Close() })
	cn := &connection{statePath: "/s/state.json", client: c, epoch: 1}
	doc := document{}
	for _, r := range rows {
		doc.Sessions = append(doc.Sessions, Session{Name: r, ID: "s_" + r})
	}
	cn.installLocked(getResult{State: doc, Revision: 5, Run: "run1"})
	return cn, c
}

func names(d document) []string {
	out := []string{}
	for _, r := range d.Sessions {
		out = append(out, r.Name)
	}
	return out
}

func rowEvent(rev int, kind, name string, row *Session) *stateclient.SessionDidChangeParams {
	ev := &stateclient.SessionDidChangeParams{Revision: rev, Kind: kind, Name: name}
	if row != nil {
		w := stateclient.Session(*row)
		ev.Session = &w
	}
	return ev
}

// current reads the replica as a State's read does (currentNow), failing when it must be read
// from the server again.
func currentOf(t *testing.T, cn *connection) replica {
	t.Helper()
	r, _, ok := cn.currentNow(0)
	if !ok {
		t.Fatal("the replica is to be read again")
	}
	return r
}

func mustBeStale(t *testing.T, cn *connection, why string) {
	t.Helper()
	if _, _, ok := cn.currentNow(0); ok {
		t.Fatalf("%s: the replica is taken as current", why)
	}
}

// Row events change the replica as the server's row methods change the document; an event of
// a revision the document read already holds changes nothing, and several events of one
// commit all apply.
func TestTheFeedsRowEventsChangeTheReplica(t *testing.T) {
	t.Parallel()
	cn, c := replicaAt5(t, "a")
	q := cn.queue(c)
	q(rowEvent(5, "added", "old", &Session{Name: "old"})) // already in the document read at 5
	q(rowEvent(6, "added", "b", &Session{Name: "b"}))
	q(rowEvent(6, "changed", "a", &Session{Name: "a", ResumeToken: "tok"})) // the same commit
	q(rowEvent(6, "added", "c", &Session{Name: "c"}))
	r := currentOf(t, cn)
	if got := names(r.doc); !reflect.DeepEqual(got, []string{"a", "b", "c"}) || r.rev != 6 || r.doc.Sessions[0].ResumeToken != "tok" {
		t.Fatalf("after revision 6: %v at %d, a %+v", got, r.rev, r.doc.Sessions[0])
	}
	q(rowEvent(7, "removed", "b", nil))
	q(rowEvent(6, "added", "late", &Session{Name: "late"})) // older than what is applied
	if r := currentOf(t, cn); !reflect.DeepEqual(names(r.doc), []string{"a", "c"}) || r.rev != 7 {
		t.Fatalf("after revision 7: %v at %d", names(r.doc), r.rev)
	}
	q(rowEvent(8, "removed", "nobody", nil))
	if r := currentOf(t, cn); !reflect.DeepEqual(names(r.doc), []string{"a", "c"}) || r.rev != 8 {
		t.Fatalf("after removing no row: %v at %d", names(r.doc), r.rev)
	}
	// An older connection's event is not this one's.
	other, _ := replicaAt5(t)
	cn.queue(other.client)(rowEvent(9, "added", "x", &Session{Name: "x"}))
	if r := currentOf(t, cn); len(r.doc.Sessions) != 2 || r.rev != 8 {
		t.Fatalf("an older connection's event applied: %v at %d", names(r.doc), r.rev)
	}
}

// What the feed cannot describe makes the replica be read again: a top-level change, a row
// event without its row, a change of a row the replica lacks, lost events, an overflow.
func TestTheFeedMarksTheReplicaStaleWhenItCannotDescribeTheChange(t *testing.T) {
	t.Parallel()
	for what, ev := range map[string]stateclient.Event{
		"a top-level change":          &stateclient.StateDidChangeParams{Revision: 6, Fields: []string{"workspace"}},
		"a row event without its row": rowEvent(6, "changed", "a", nil),
		"a change of a row it lacks":  rowEvent(6, "changed", "zz", &Session{Name: "zz"}),
		"an overflow of the server's": &stateclient.WatchOverflowParams{},
	} {
		cn, c := replicaAt5(t, "a")
		cn.queue(c)(ev)
		mustBeStale(t, cn, what)
	}
	// More events than the queue holds for a process that does not read: dropped, read again.
	cn, c := replicaAt5(t, "a")
	q := cn.queue(c)
	for i := 0; i < feedLimit+1; i++ {
		q(rowEvent(6+i, "changed", "a", &Session{Name: "a"}))
	}
	mustBeStale(t, cn, "a queue past its bound")
	// Up to the bound, every event is applied.
	cn, c = replicaAt5(t, "a")
	q = cn.queue(c)
	for i := 0; i < feedLimit; i++ {
		q(rowEvent(6+i, "changed", "a", &Session{Name: "a"}))
	}
	if r := currentOf(t, cn); r.rev != 5+feedLimit {
		t.Fatalf("a full queue applied up to %d", r.rev)
	}
}

// Events wait while the replica is to be read again, and those newer than the read apply once
// it is in.
func TestEventsWaitForTheReadUnderWay(t *testing.T) {
	t.Parallel()
	cn, c := replicaAt5(t, "a")
	cn.reload()
	cn.queue(c)(rowEvent(7, "added", "b", &Session{Name: "b"}))
	if len(cn.feed) != 1 {
		t.Fatal("an event was not kept for the read under way")
	}
	cn.mu.Lock()
	cn.installLocked(getResult{State: document{Sessions: []Session{{Name: "a"}}}, Revision: 6})
	cn.mu.Unlock()
	if r := currentOf(t, cn); !reflect.DeepEqual(names(r.doc), []string{"a", "b"}) || r.rev != 7 {
		t.Fatalf("after the read: %v at %d", names(r.doc), r.rev)
	}
}

// saved, changed and added make this process's own write show in the replica when the feed did
// not describe it, on the connection it was made on only.
func TestOwnWritesShowInTheReplicaOfTheirConnection(t *testing.T) {
	t.Parallel()
	cn, _ := replicaAt5(t, "a")
	v := currentOf(t, cn).version
	d := document{Workspace: "/w", Sessions: []Session{{Name: "a", ID: "s_a", Incarnation: "inc"}}}
	cn.saved(2, d, 9, false) // another connection's
	cn.saved(1, d, 5, false) // not newer than the replica
	if r := currentOf(t, cn); r.doc.Workspace != "" || r.version != v {
		t.Fatalf("a save of another connection or revision installed: %+v", r)
	}
	cn.saved(1, d, 6, false)
	r := currentOf(t, cn)
	if r.doc.Workspace != "/w" || r.rev != 6 || r.version != v+1 {
		t.Fatalf("the save at 6: %+v", r)
	}
	d.Workspace = "/changed after"
	if currentOf(t, cn).doc.Workspace != "/w" {
		t.Fatal("the replica shares the saved document")
	}
	cn.saved(1, document{Sessions: []Session{{Name: "a"}}}, 7, true)
	mustBeStale(t, cn, "a save the server filled in")

	cn, _ = replicaAt5(t, "a")
	v = currentOf(t, cn).version
	set := func(r *Session) bool { r.ResumeToken = "tok"; return true }
	cn.changed(2, "a", set)
	cn.changed(1, "zz", set)
	if r := currentOf(t, cn); r.doc.Sessions[0].ResumeToken != "" || r.version != v {
		t.Fatalf("a change of another connection or of no row: %+v", r)
	}
	cn.changed(1, "a", set)
	if r := currentOf(t, cn); r.doc.Sessions[0].ResumeToken != "tok" || r.version != v+1 {
		t.Fatalf("the change: %+v", r)
	}
	cn.changed(1, "a", set) // nothing to change: the feed's event came first
	if r := currentOf(t, cn); r.version != v+1 {
		t.Fatalf("a change that changed nothing counted as one: %+v", r)
	}

	cn, _ = replicaAt5(t, "a")
	cn.added(1, "a") // the feed's event put the row in
	cn.added(2, "b") // another connection's
	currentOf(t, cn)
	cn.added(1, "b")
	mustBeStale(t, cn, "a row added whose event is missing")

	cn, _ = replicaAt5(t, "a")
	cn.conflicted(2)
	currentOf(t, cn)
	cn.conflicted(1)
	mustBeStale(t, cn, "a save refused for a conflict")

	// With the connection gone, none of them touches the replica.
	cn, _ = replicaAt5(t, "a")
	cn.client = nil
	cn.saved(1, d, 6, true)
	cn.changed(1, "a", set)
	cn.added(1, "b")
	if cn.remoteRev != 5 || cn.remote.Sessions[0].ResumeToken != "" || cn.stale {
		t.Fatalf("a write of a connection that is gone changed the replica: rev %d %+v stale %v", cn.remoteRev, cn.remote.Sessions, cn.stale)
	}
}

// connected says whether the connection's client is open.
func TestConnectedIsAnOpenClient(t *testing.T) {
	t.Parallel()
	cn, c := replicaAt5(t)
	if !cn.connected() {
		t.Fatal("an open client is not connected")
	}
	c.Close()
	if cn.connected() {
		t.Fatal("a closed client is connected")
	}
	cn.client = nil
	if cn.connected() {
		t.Fatal("no client is connected")
	}
}

// A writer id is 16 random bytes in hex: each connection's differs.
func TestWriterIDsAreRandomHex(t *testing.T) {
	t.Parallel()
	a, b := newWriterID(), newWriterID()
	for _, id := range []string{a, b} {
		if len(id) != 32 || strings.Trim(id, "0123456789abcdef") != "" {
			t.Fatalf("writer id %q is not 16 bytes in hex", id)
		}
	}
	if a == b {
		t.Fatal("two writer ids are the same")
	}
}

// A State takes a replica newer than the one its fields were built from, or as new; an older
// one (a concurrent read got a newer one first) changes nothing. The same replica only moves
// the revision a save names.
func TestAStateAdoptsNoOlderReplica(t *testing.T) {
	t.Parallel()
	s := &State{path: "/s/state.json", baseVersion: 5, baseRev: 1}
	s.base = document{Workspace: "/five"}
	s.show(s.base)
	s.adoptLocked(replica{doc: document{Workspace: "/four"}, version: 4, rev: 4}, false)
	if s.Workspace != "/five" || s.baseVersion != 5 || s.baseRev != 1 {
		t.Fatalf("an older replica was taken: %q %d %d", s.Workspace, s.baseVersion, s.baseRev)
	}
	s.adoptLocked(replica{doc: document{Workspace: "/five again"}, version: 5, rev: 5}, false)
	if s.Workspace != "/five again" || s.baseRev != 5 {
		t.Fatalf("a replica as new was not taken: %q %d", s.Workspace, s.baseRev)
	}
	s.adoptLocked(replica{version: 5, rev: 6, run: "r2", epoch: 2}, true)
	if s.Workspace != "/five again" || s.baseRev != 6 || s.baseRun != "r2" || s.baseEpoch != 2 {
		t.Fatalf("the same replica: %q %d %q %d", s.Workspace, s.baseRev, s.baseRun, s.baseEpoch)
	}
	s.adoptLocked(replica{version: 4, rev: 7, run: "r3", epoch: 3}, true)
	if s.baseRev != 6 || s.baseRun != "r2" || s.baseEpoch != 2 {
		t.Fatalf("an older replica moved the revision: %d %q %d", s.baseRev, s.baseRun, s.baseEpoch)
	}
	fresh := &State{path: "/s/state.json"}
	fresh.adoptLocked(replica{doc: document{Workspace: "/any"}, version: 1}, false)
	if fresh.Workspace != "/any" || fresh.baseVersion != 1 {
		t.Fatalf("a State just saved (version 0) did not take the replica: %q", fresh.Workspace)
	}
}
