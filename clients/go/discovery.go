package stateclient

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"syscall"
	"time"
)

// DialOptions says which server Dial reaches. The zero value finds the server of the default
// state file, as `herrscher-state call` does.
type DialOptions struct {
	// Socket is the server's socket; when set, nothing is looked up.
	Socket string
	// State is the state file whose server is wanted; default $HERRSCHER_STATE_DIR/state.json,
	// else ~/.config/herrscher/state.json (as Herrscher decides it). When set, Dial reaches that
	// state's server or fails with ErrNoServer, whichever step found the socket.
	State string
	// Instance names the default socket herrscher-state-<Instance>.sock, for a server whose
	// state has an instance id and that recorded no socket.
	Instance string
	// Getenv reads the environment; default os.Getenv (tests give their own).
	Getenv func(string) string
	// MaxMessageBytes bounds a reply line (default DefaultMaxMessageBytes, the server's default
	// limit): a longer one ends the connection before more of it is read.
	MaxMessageBytes int
	// Wait: when no server answers (no socket yet, connection refused, with State: not that
	// state's server), try again, 50 ms doubling to 1 s apart, until one does or ctx ends; for a
	// program started beside the server. A socket CheckSocket refuses, and a path that holds no
	// socket (a regular file, a folder), are never waited on.
	Wait bool
	// Reconnect (nil: off, as the TypeScript client's default; &ReconnectOptions{}: the default
	// backoff) rides over a server restart: calls in flight when the connection is lost fail
	// with ErrClosed, later calls wait for the new connection (within their ctx), and every open
	// Watcher is subscribed again with since, so its channel goes on with each change once. Err
	// stays nil until it gives up (MaxAttempts) or Close. Each new connection is found by the
	// rule again and, with State, asked initialize first.
	Reconnect *ReconnectOptions

	// waiting, when set, is told each time Wait found no server, before it waits: a test's
	// sign that the Dial is now waiting for one.
	waiting func(error)
}

// Source tells which step of the rule chose a socket.
type Source string

// The steps of the discovery rule, first match wins.
const (
	SourceExplicit Source = "explicit"
	SourceEnv      Source = "env"
	SourceRecord   Source = "record"
	SourceDefault  Source = "default"
)

// FindSocket applies the discovery rule shared by the CLI, the TypeScript client and this one:
// an explicit socket > $HERRSCHER_STATE_SOCKET > the socket recorded by the live server of the
// state file (<dir>/.herrscher-state/<base>.serving.json) > the per-user default folder
// ($XDG_RUNTIME_DIR/herrscher-state/, else $TMPDIR/herrscher-state-<uid>/) holding
// herrscher-state[-<instance>].sock.
func FindSocket(o DialOptions) (string, Source, error) {
	getenv := o.Getenv
	if getenv == nil {
		getenv = os.Getenv
	}
	if o.Socket != "" {
		p, err := filepath.Abs(o.Socket)
		return p, SourceExplicit, err
	}
	if s := getenv("HERRSCHER_STATE_SOCKET"); s != "" {
		p, err := filepath.Abs(s)
		return p, SourceEnv, err
	}
	state := o.State
	if state == "" {
		var err error
		if state, err = DefaultStatePath(getenv); err != nil {
			return "", "", err
		}
	}
	rec, err := ReadServerRecord(state)
	if err != nil {
		return "", "", err
	}
	if rec != nil {
		return rec.Socket, SourceRecord, nil
	}
	name := "herrscher-state.sock"
	if o.Instance != "" {
		name = "herrscher-state-" + o.Instance + ".sock"
	}
	return filepath.Join(DefaultSocketFolder(getenv), name), SourceDefault, nil
}

// DefaultStatePath is where Herrscher keeps its state when none is named.
func DefaultStatePath(getenv func(string) string) (string, error) {
	if d := getenv("HERRSCHER_STATE_DIR"); d != "" {
		return filepath.Abs(filepath.Join(d, "state.json"))
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return "", fmt.Errorf("no state file named and no home folder: %w", err)
	}
	return filepath.Join(home, ".config", "herrscher", "state.json"), nil
}

// DefaultSocketFolder is the per-user folder default sockets live in.
func DefaultSocketFolder(getenv func(string) string) string {
	if d := getenv("XDG_RUNTIME_DIR"); d != "" {
		abs, _ := filepath.Abs(d)
		return filepath.Join(abs, "herrscher-state")
	}
	tmp := getenv("TMPDIR")
	if tmp == "" {
		tmp = os.TempDir()
	}
	abs, _ := filepath.Abs(tmp)
	return filepath.Join(abs, fmt.Sprintf("herrscher-state-%d", os.Getuid()))
}

// SharedSocketPath is where the per-user shared server (`serve --shared`) listens:
// SharedSocketName in DefaultSocketFolder.
func SharedSocketPath(getenv func(string) string) string {
	if getenv == nil {
		getenv = os.Getenv
	}
	return filepath.Join(DefaultSocketFolder(getenv), SharedSocketName)
}

// ServerRecord is what a serving process records beside the state file it serves.
type ServerRecord struct {
	Pid       int    `json:"pid"`
	Socket    string `json:"socket"`
	State     string `json:"state"`
	Version   string `json:"version"`
	StartedAt string `json:"startedAt"`
}

// ServerRecordPath is the record file of the server of statePath.
func ServerRecordPath(statePath string) (string, error) {
	abs, err := filepath.Abs(statePath)
	if err != nil {
		return "", err
	}
	return filepath.Join(filepath.Dir(abs), ".herrscher-state", filepath.Base(abs)+".serving.json"), nil
}

// ReadServerRecord gives the record of the live server of statePath, or nil when none: no file,
// a file that is no record, or a record whose process is gone (a server killed with -9).
func ReadServerRecord(statePath string) (*ServerRecord, error) {
	file, err := ServerRecordPath(statePath)
	if err != nil {
		return nil, err
	}
	f, err := os.OpenFile(file, os.O_RDONLY|syscall.O_NOFOLLOW, 0)
	if err != nil {
		// Absent: no server recorded itself. ELOOP: a symlink is no record of ours. ENOTDIR,
		// EACCES: a state dir we cannot read has no record for us either.
		if errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ELOOP) || errors.Is(err, syscall.ENOTDIR) || errors.Is(err, fs.ErrPermission) {
			return nil, nil
		}
		return nil, err
	}
	defer f.Close()
	var r ServerRecord
	if json.NewDecoder(f).Decode(&r) != nil || r.Pid <= 0 || r.Socket == "" {
		return nil, nil // a torn or foreign file: records are written atomically, so not ours
	}
	if err := syscall.Kill(r.Pid, 0); err != nil && !errors.Is(err, syscall.EPERM) {
		return nil, nil
	}
	return &r, nil
}

// ErrUntrustedSocket is returned (wrapped, with the reason) when a socket or its folder could
// have been put there by another user: nothing is sent to it.
var ErrUntrustedSocket = errors.New("herrscher-state: untrusted socket")

// CheckSocket refuses, before anything is sent, a socket that another user could have put in
// place (ErrUntrustedSocket): it must be a socket of ours in a folder of ours that no one else
// may write to. Something else at the path (a regular file, a folder) is a wrong path, not an
// attack: an error matching ErrNoServer that says what is there. A missing socket passes
// (connecting then fails). Symlinks are resolved first: the checks apply
// to the socket the kernel would connect to.
func CheckSocket(path string) error {
	real, err := filepath.EvalSymlinks(path)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		return fmt.Errorf("cannot check socket %s: %w", path, err)
	}
	uid := uint32(os.Getuid())
	refuse := func(why string) error {
		return fmt.Errorf("%w %s: %s; another user may be impersonating the server, nothing was sent", ErrUntrustedSocket, path, why)
	}
	fi, err := os.Stat(real)
	if err != nil {
		return fmt.Errorf("cannot check socket %s: %w", path, err)
	}
	if fi.Mode()&fs.ModeSocket == 0 {
		// A wrong path, not an attack: say what is there instead of suspecting another user.
		what := "not a socket"
		if fi.Mode().IsRegular() {
			what = "a regular file"
		} else if fi.IsDir() {
			what = "a folder"
		}
		return &noServerError{msg: fmt.Sprintf("herrscher-state: no server at %s: it is %s, not a server's socket (is the socket path right? `serve` makes the socket itself); nothing was sent", path, what), cause: syscall.ENOTSOCK}
	}
	if st, ok := fi.Sys().(*syscall.Stat_t); ok && st.Uid != uid {
		return refuse(fmt.Sprintf("it belongs to uid %d, not to us (uid %d)", st.Uid, uid))
	}
	dir := filepath.Dir(real)
	di, err := os.Stat(dir)
	if err != nil {
		return fmt.Errorf("cannot check socket folder %s: %w", dir, err)
	}
	if st, ok := di.Sys().(*syscall.Stat_t); ok && st.Uid != uid {
		return refuse(fmt.Sprintf("its folder %s belongs to uid %d, not to us (uid %d)", dir, st.Uid, uid))
	}
	if di.Mode().Perm()&0o022 != 0 {
		return refuse(fmt.Sprintf("its folder %s is writable by others (mode %#o)", dir, di.Mode().Perm()))
	}
	return nil
}

// Dial finds the server by the discovery rule (FindSocket), checks the socket (CheckSocket) and
// connects. Nothing answering fails with an error matching ErrNoServer, and so does, with
// DialOptions.State set, a server that does not answer `initialize` with that state file (real
// paths compared). With DialOptions.Wait it tries again until a server answers or ctx ends.
// ctx bounds the connect and that handshake; each later call takes its own.
func Dial(ctx context.Context, o DialOptions) (*Client, error) {
	delay := 50 * time.Millisecond
	for {
		c, err := dialOnce(ctx, o)
		// Something at the path that is no socket is not waited on: a server never replaces it.
		if err == nil || !o.Wait || !errors.Is(err, ErrNoServer) || errors.Is(err, syscall.ENOTSOCK) {
			return c, err
		}
		if o.waiting != nil {
			o.waiting(err)
		}
		t := time.NewTimer(delay)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, fmt.Errorf("%w (waited until %v)", err, ctx.Err())
		case <-t.C:
		}
		if delay *= 2; delay > time.Second {
			delay = time.Second
		}
	}
}

func dialOnce(ctx context.Context, o DialOptions) (*Client, error) {
	conn, where, err := connectSocket(ctx, o)
	if err != nil {
		return nil, err
	}
	c := newClient(conn, o.MaxMessageBytes)
	if o.Reconnect != nil {
		rc := *o.Reconnect
		c.mu.Lock()
		c.reconnect = &rc
		c.dial = func(ctx context.Context) (io.ReadWriteCloser, error) {
			conn, _, err := connectSocket(ctx, o) // the rule again: the server may have moved
			return conn, err
		}
		if o.State != "" {
			c.onConnect = func(ctx context.Context) error { return checkState(ctx, c, o, "the server found", true) }
		}
		c.mu.Unlock()
	}
	if o.State == "" {
		return c, nil
	}
	if err := checkState(ctx, c, o, where, false); err != nil {
		c.Close()
		return nil, err
	}
	return c, nil
}

// connectSocket finds the socket by the rule, checks it and connects; where names it.
func connectSocket(ctx context.Context, o DialOptions) (net.Conn, string, error) {
	path, source, err := FindSocket(o)
	if err != nil {
		return nil, "", err
	}
	if err := CheckSocket(path); err != nil {
		return nil, "", err
	}
	var d net.Dialer
	conn, err := d.DialContext(ctx, "unix", path)
	if err != nil {
		if o.State != "" {
			return nil, "", fmt.Errorf("%w %s: nothing answers at %s (%s): %v; start one with `herrscher-state serve --state %s`", ErrNoServer, o.State, path, describe(source), err, o.State)
		}
		return nil, "", &noServerError{msg: fmt.Sprintf("herrscher-state: no server at %s (%s)", path, describe(source)), cause: err, hint: fmt.Sprintf("; start one with `herrscher-state serve --socket %s`", path)}
	}
	return conn, fmt.Sprintf("the server at %s (%s)", path, describe(source)), nil
}

// checkState: a state with no live server falls through to the default socket, which another
// state's server may hold (or a stale record's pid was reused): ask before anything else is sent.
func checkState(ctx context.Context, c *Client, o DialOptions, where string, internal bool) error {
	var r InitializeResult
	if err := c.callOn(ctx, "initialize", struct{}{}, &r, internal); err != nil {
		return fmt.Errorf("%w %s: %s did not say which state it serves: %v", ErrNoServer, o.State, where, err)
	}
	if realStatePath(r.StatePath) != realStatePath(o.State) {
		return fmt.Errorf("%w %s: %s serves %s; nothing but initialize was sent to it; start one with `herrscher-state serve --state %s`", ErrNoServer, o.State, where, r.StatePath, o.State)
	}
	return nil
}

// ErrNoServer is matched (errors.Is) by Dial's error when nothing answers at the socket found,
// and, with DialOptions.State set, when no server of that state answers there, even if another
// state's server does (naming the state and what answered instead): Dial never hands back a
// client of another state.
var ErrNoServer = errors.New("herrscher-state: no server for")

// noServerError is a connect that nothing answered, without a state named: it matches
// ErrNoServer and unwraps to the dial's error (ECONNREFUSED, ENOENT).
type noServerError struct {
	msg   string
	cause error
	// hint: the command that starts a server there.
	hint string
}

func (e *noServerError) Error() string        { return e.msg + ": " + e.cause.Error() + e.hint }
func (e *noServerError) Is(target error) bool { return target == ErrNoServer }
func (e *noServerError) Unwrap() error        { return e.cause }

// realStatePath is a state file's path as the kernel resolves it, to tell whether two names are
// one file: the file's real path, else (not written yet) its folder's and its name, else the
// absolute path.
func realStatePath(file string) string {
	abs, err := filepath.Abs(file)
	if err != nil {
		return file
	}
	if real, err := filepath.EvalSymlinks(abs); err == nil {
		return real
	}
	if dir, err := filepath.EvalSymlinks(filepath.Dir(abs)); err == nil {
		return filepath.Join(dir, filepath.Base(abs))
	}
	return abs
}

func describe(s Source) string {
	switch s {
	case SourceExplicit:
		return "given"
	case SourceEnv:
		return "from $HERRSCHER_STATE_SOCKET"
	case SourceRecord:
		return "recorded by the server of the state file"
	default:
		return "the default; no server recorded itself for the state file"
	}
}
