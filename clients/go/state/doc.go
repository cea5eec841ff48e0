// Package state is Herrscher's Go state package over herrscher-state: the same exported API
// (types, fields, JSON tags, functions, methods), so Herrscher adopts the server by changing
// one import. Every change goes to the server of the state dir, which alone reads and writes
// state.json, transcripts and participant journals; the package never touches a served
// directory's files itself.
//
// # Reads and writes
//
// A *State holds a copy of the served document in its exported fields, which callers read as
// plain fields (st.Home, st.InstanceID). The package refreshes them only inside its own
// methods, under the State's mutex: a change another process made shows in the fields after
// the next method call on this value (FindSession, SnapshotSessions, WorkspaceRoot, SourceDir,
// QualifiedName and every mutator begin by catching up with the change feed; with no change
// announced they answer from memory). After a mutator returns, every read in this process
// sees its change.
//
// Mutators change the document as Go's do and save it whole (state/save), with
// compare-and-set on the revision it was built on; on a State without unsaved edits,
// AddSession and the session setters send their one row to the server's row methods instead. Direct edits of the exported fields are
// saved with the next save of that value, as in Go. A save that meets another writer's
// commit is rebuilt on the newer document and retried. Unsaved edits merge three ways with
// what others committed since this State's revision: top-level fields one by one, session
// rows by name and field by field; where both sides changed the same field, this State's
// value is saved (as Go's Save writes its memory) and the conflict is logged (log.Print). So a
// daemon and an operator command no longer undo each other's changes (Go's package loses one
// of them).
//
// ApplyDefaults seeds only the fields of the State it is called on; no save writes the
// seeded values, and no other State or process sees them.
//
// NewState binds to path without asking the server; at its first method call it joins the
// served document: fields it left empty show what the server holds (Go's NewState would
// overwrite the file with an empty document at its first save).
//
// # Finding the server
//
// A state path, or a transcript or journal path in its dir's layout (dir/transcripts/
// <name>.jsonl, dir/participants/<name>.log), leads to the state dir's server. Relative paths
// are made absolute against the working directory first, as Go's package means them.
//   - a live server that recorded itself for that state file (a dedicated one: a host's
//     `serve --stdio --lock-fd`, an operator's `serve --state`) is used;
//   - otherwise the per-user shared server, which serves any number of state files from one
//     process (each with its own single-writer lock, <dir>/.herrscher-state/server.lock): the
//     connection names its state in initialize. When none listens on the shared socket
//     (herrscher-state-shared.sock in the per-user socket folder), the package starts
//     `herrscher-state serve --shared --exit-when-idle 2000` detached (its own session; stdin
//     and stdout /dev/null; stderr appended to shared.log beside the socket: one file per user,
//     nothing per state) and dials it. Two processes starting it at once: the second start exits
//     with code 4 and its process dials the first. A server that cannot start at all is started
//     three times at most, and the call returns what it said.
//
// A state whose single-writer lock another process holds: when that process serves it on a
// socket (its record, or the shared server's answer, says which), that socket is dialled; when
// it is no server (a foreign holder), the call fails at once with one error naming the lock and
// the holder, and no server is started for it. Herrscher's daemon lock (<dir>/.<base>.lock,
// LockState) is the daemon's alone: the package neither takes nor passes it, so a daemon holding
// it uses the same server as every other process.
//
// LoadState of a missing file answers the empty State without any server, and creates nothing
// (as Go's); so do the reads of a State whose file does not exist yet, and the transcript and
// journal readers of a missing file. The first write creates the file through the server.
//
// A connection closes 200–400 ms after its last call (no goroutine of the package stays behind
// a test that is done with a state); the next call dials again, about a millisecond to a running
// server. The shared server drops a state that no connection has used for a few seconds, and
// stops 2 s after its last connection closed.
//
// The executable is $HERRSCHER_STATE_BIN (a path; one ending in .js is run with node), else
// herrscher-state from PATH. The server the package starts writes with --durability write
// (no fsync, as Go's Save: a temporary file renamed), unless $HERRSCHER_STATE_DURABILITY names
// another (sync: every acknowledged write survives a power loss).
//
// Every call is bounded: finding or starting the server, the request and its answer take at
// most $HERRSCHER_STATE_CALL_TIMEOUT_MS milliseconds (default 35000), after which the call
// returns an error (errors.Is context.DeadlineExceeded) and the State stays usable. No mutex
// is held while the server is started, dialled or waited for, so readers answer from the
// replica while a write is in flight. A call the server refuses because it is stopping
// (-32030: nothing taken) is carried to the next server within the same deadline.
//
// # Where it differs from Go's package
//
//   - A transcript or journal path outside any state dir's layout is no served file: the
//     package reads and writes it itself, exactly as Go's functions do.
//   - Names the server refuses as file names (the transcript and journal functions) return
//     its error; Go writes any name. A user id with a line break is refused likewise; a
//     blank user id is reported added without a write (Go writes a blank line every read
//     skips). User ids are trimmed by the server before they are stored and compared.
//   - A NaN or infinite cost is refused before anything is sent: no empty file is created.
//   - Reads that cannot reach the server answer from the State's last copy (they have no
//     error to return); the transcript and journal readers read the file themselves, as Go's do.
//     Either way the reason goes to the standard logger (log.Print), once a minute at most
//     per reason.
//   - Errors of LoadState and of saves are the server's (or of starting it), not Go's raw
//     file-system errors; conflicts never surface (they are retried).
//   - A hand edit of the state file is read by the next LoadState, as in Go; a State already
//     loaded sees it once the server has noticed it (at its next read or write for any
//     client), through the change feed.
package state
