package state

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	stateclient "github.com/herrscher/herrscher-state/clients/go"
)

// sharedIdleExitMs is the --exit-when-idle of a shared server the package starts: it stops
// this long after its last connection closed. Half a minute: a process that calls now and
// then (an operator's commands, a test binary after the next package compiled, a bridge
// polling) keeps one warm server instead of paying a node start (~0.2-1 s) per burst, and an
// idle one costs only its memory (under 100 MB with 200 states) until then.
const sharedIdleExitMs = "30000"

// inUseExit is the exit code of a `serve --shared` that found the shared socket held by a live
// server (EXIT.inUse, src/commands/command.ts): another start won the race, so it is dialled.
// TestALostStartRaceIsRecognised keeps the two in step.
const inUseExit = 4

// maxStartExits bounds the starts in one findOrStart that exit for another reason than a lost
// race: such a server cannot start at all, its own words (in shared.log) say why, and starting
// it again until the deadline would only burn CPU.
const maxStartExits = 3

// lockedRetries and lockedPause: a state whose lock another process holds without serving it on
// a socket is asked for again this often before that is the answer: a foreign holder keeps the
// lock, and the call fails at once with one error naming it. A herrscher-state server as the
// holder (one stopping, or starting, holds the lock without a record for a moment) is waited
// for longer, serverLockedRetries times (3 s), and then named likewise (a host's server with
// --no-socket never lets another process in). No server is ever started for it. (lockedPause
// is a variable: tests of the bounds shorten it.)
const (
	lockedRetries       = 2
	serverLockedRetries = 60
)

var lockedPause = 50 * time.Millisecond

// holderIsServer: pid is a live `herrscher-state serve` (its command line has the argument
// "serve"), as /proc tells; false where /proc cannot tell.
func holderIsServer(pid int) bool {
	if pid <= 0 {
		return false
	}
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	if err != nil {
		return false
	}
	for _, arg := range strings.Split(string(b), "\x00") {
		if arg == "serve" {
			return true
		}
	}
	return false
}

// sharedLogName is the shared server's stderr, beside its socket: one file per user.
const sharedLogName = "shared.log"

// serverCommand is how the package runs herrscher-state: $HERRSCHER_STATE_BIN (an
// executable, or the checkout's dist/src/cli.js, run with node), else herrscher-state from
// PATH.
func serverCommand() []string {
	bin := os.Getenv("HERRSCHER_STATE_BIN")
	if bin == "" {
		return []string{"herrscher-state"}
	}
	if strings.HasSuffix(bin, ".js") {
		return []string{"node", bin}
	}
	return []string{bin}
}

// defaultDurability is the durability of the server the package starts when
// $HERRSCHER_STATE_DURABILITY names none: write, as Go's package writes (its Save writes a
// temporary file and renames it, with no fsync). A call then costs a round trip and the write,
// not an fsync; sync is there for whoever wants more than Go gave.
const defaultDurability = "write"

// serverArgs are the serve options every server the package starts gets.
func serverArgs() []string {
	durability := os.Getenv("HERRSCHER_STATE_DURABILITY")
	if durability == "" {
		durability = defaultDurability
	}
	return []string{"--log-level", "warn", "--durability", durability}
}

// lockedError: another process holds the state's single-writer lock and serves it on no
// socket this package can reach.
type lockedError struct {
	statePath string
	pid       int
	server    bool // the holder is a herrscher-state server (serving without a socket)
	err       error
}

func (e *lockedError) Error() string {
	holder := "another process"
	if e.pid > 0 {
		holder = fmt.Sprintf("process %d", e.pid)
	}
	if e.server {
		holder = "a herrscher-state server (" + holder + ")"
	}
	return fmt.Sprintf("state: %s is locked by %s, which serves it on no socket (%s is its single-writer lock); stop that process, or serve the state from it: %v",
		e.statePath, holder, serverLockOf(e.statePath), e.err)
}

func (e *lockedError) Unwrap() error { return e.err }

// serverLockOf is the state's single-writer lock as the store names it (src/store/paths.ts:
// `.herrscher-state/` for state.json, `.herrscher-state/<base>.d/` for any other base), for the
// error that tells a user what is held. TestServerLockOfIsTheLockTheServerHolds keeps the two in
// step.
func serverLockOf(statePath string) string {
	side := ".herrscher-state"
	if base := filepath.Base(statePath); base != "state.json" {
		side = filepath.Join(side, base+".d")
	}
	return filepath.Join(filepath.Dir(statePath), side, "server.lock")
}

// findOrStart connects to the server of statePath: the live server that recorded itself for
// that state (a dedicated one: a host's `serve --stdio`, an operator's `serve --state`), else
// the per-user shared server, which it starts when none listens. Every step is bounded by ctx.
func findOrStart(ctx context.Context, statePath string) (*stateclient.Client, error) {
	shared := stateclient.SharedSocketPath(os.Getenv)
	var lastErr error
	exits, locked := 0, 0
	for ctx.Err() == nil {
		if rec, err := stateclient.ReadServerRecord(statePath); err == nil && rec != nil {
			c, err := dialState(ctx, rec.Socket, statePath)
			if err == nil {
				return c, nil
			}
			// A record whose server is gone or stopping: once it has released the state, the
			// shared server serves it.
			lastErr = err
		}
		c, err := dialState(ctx, shared, statePath)
		if err == nil {
			return c, nil
		}
		var answered *stateclient.Error
		switch {
		case errors.Is(err, stateclient.ErrStateLocked):
			var holder stateclient.StateLockedData
			if errors.As(err, &answered) {
				_ = answered.DecodeData(&holder)
			}
			if holder.Socket != "" {
				if c, err := dialState(ctx, holder.Socket, statePath); err == nil {
					return c, nil
				}
			}
			if locked++; holder.Socket == "" && locked > lockedRetries {
				if server := holderIsServer(holder.Pid); !server || locked > serverLockedRetries {
					return nil, &lockedError{statePath: statePath, pid: holder.Pid, server: server, err: err}
				}
			}
			lastErr = err
			pause(ctx, lockedPause)
		case errors.As(err, new(*socketError)):
			// A socket that cannot be trusted or checked: never start a server over it, never wait.
			return nil, fmt.Errorf("state: no server for %s: %w", statePath, err)
		case errors.Is(err, errNothingListens):
			lost, err := startShared(ctx, shared)
			if err == nil {
				continue // it accepts now: dial it
			}
			lastErr = err
			if lost {
				// Another start won, or the last server is still going away: look again.
				pause(ctx, 10*time.Millisecond)
				continue
			}
			if ctx.Err() == nil {
				if exits++; exits >= maxStartExits {
					return nil, fmt.Errorf("state: no server for %s: %w", statePath, err)
				}
			}
		case errors.As(err, &answered) && !errors.Is(err, stateclient.ErrShuttingDown):
			// The server answered for this state: it cannot be opened (damaged, unreadable, not
			// private), and says why. Starting or asking again would not change that.
			return nil, fmt.Errorf("state: %s: %w", statePath, err)
		default:
			// The server ended the connection or is stopping: the next look finds its successor.
			lastErr = err
			pause(ctx, 10*time.Millisecond)
		}
	}
	if lastErr == nil {
		lastErr = ctx.Err()
	}
	return nil, fmt.Errorf("state: no server for %s: %w", statePath, lastErr)
}

// errNothingListens: no server listens on the socket (no file, or a stale one).
var errNothingListens = errors.New("nothing listens")

// socketError: CheckSocket refused the socket (another user's, in a folder others may write to,
// or not a socket at all), or could not check it.
type socketError struct{ err error }

func (e *socketError) Error() string { return e.err.Error() }
func (e *socketError) Unwrap() error { return e.err }

// dialState connects to socket and binds the connection to statePath (initialize with the
// state): a shared server opens it, a dedicated one answers only for its own state.
func dialState(ctx context.Context, socket, statePath string) (*stateclient.Client, error) {
	if err := stateclient.CheckSocket(socket); err != nil {
		return nil, &socketError{err}
	}
	var d net.Dialer
	nc, err := d.DialContext(ctx, "unix", socket)
	if err != nil {
		switch {
		case errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ECONNREFUSED):
			return nil, fmt.Errorf("%w at %s: %v", errNothingListens, socket, err)
		case errors.Is(err, syscall.EAGAIN) || ctx.Err() != nil:
			return nil, err // a full backlog, or the deadline: transient
		default:
			return nil, &socketError{err} // a path too long, no permission: no server can fix it
		}
	}
	c := stateclient.NewClient(nc)
	info, err := c.Initialize(ctx, stateclient.InitializeOptions{State: statePath})
	if err != nil {
		_ = c.Close()
		return nil, err
	}
	if !sameFile(info.StatePath, statePath) {
		_ = c.Close()
		return nil, fmt.Errorf("state: the server at %s serves %s, not %s", socket, info.StatePath, statePath)
	}
	return c, nil
}

func sameFile(a, b string) bool {
	if a == b {
		return true
	}
	ra, err1 := filepath.EvalSymlinks(filepath.Dir(a))
	rb, err2 := filepath.EvalSymlinks(filepath.Dir(b))
	return err1 == nil && err2 == nil && ra == rb && filepath.Base(a) == filepath.Base(b)
}

// startShared starts the per-user shared server detached (its own session; stdin and stdout
// /dev/null; stderr appended to shared.log beside the socket) and waits until it accepts or
// exits. lost: it exited because another server holds the socket (another start won, or the
// last one has not gone yet): dial again. It is never killed: once started it serves every
// process of the user, and stops by itself once none has used it for sharedIdleExitMs.
//
// The starts of this package are one at a time per user: each holds an flock on shared.log
// (its own open of it) from before it looks at the socket again until its server accepts or
// exits, so starts that found a dead server's socket at once do not replace each other's
// socket; the later ones find the first one's server listening and start nothing.
func startShared(ctx context.Context, socket string) (lost bool, err error) {
	dir := filepath.Dir(socket)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return false, err
	}
	logPath := filepath.Join(dir, sharedLogName)
	logFile, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return false, err
	}
	starting, err := os.Open(logPath) // the start lock's own open file: the server does not share it
	if err != nil {
		logFile.Close()
		return false, err
	}
	defer starting.Close() // releases the start lock
	for syscall.Flock(int(starting.Fd()), syscall.LOCK_EX|syscall.LOCK_NB) != nil {
		if pause(ctx, 5*time.Millisecond); ctx.Err() != nil {
			logFile.Close()
			return false, ctx.Err()
		}
	}
	var d net.Dialer
	if nc, err := d.DialContext(ctx, "unix", socket); err == nil {
		nc.Close() // the start before this one's server listens
		logFile.Close()
		return false, nil
	}
	var from int64
	if fi, err := logFile.Stat(); err == nil {
		from = fi.Size()
	}
	command := serverCommand()
	args := append(append([]string{}, command[1:]...), "serve", "--shared", "--socket", socket, "--exit-when-idle", sharedIdleExitMs)
	cmd := exec.Command(command[0], append(args, serverArgs()...)...)
	cmd.Stderr = logFile // stdin and stdout stay nil: /dev/null
	// Its own session: no terminal's ^C or hang-up meant for this process stops a server the
	// user's other processes use.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	err = cmd.Start()
	logFile.Close() // the child has its own descriptor
	if err != nil {
		return false, fmt.Errorf("state: start %s: %w (set HERRSCHER_STATE_BIN to the herrscher-state executable, or put it on PATH)", command[0], err)
	}
	// Reaps it when it ends (then this goroutine ends too), so it never lingers as a zombie.
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	tick := time.NewTicker(3 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case err := <-exited:
			var ee *exec.ExitError
			if errors.As(err, &ee) && ee.ExitCode() == inUseExit {
				return true, err
			}
			return false, fmt.Errorf("the shared server it started exited (%v): %s", err, logTail(logPath, from))
		case <-ctx.Done():
			return false, ctx.Err()
		case <-tick.C:
		}
		if nc, err := d.DialContext(ctx, "unix", socket); err == nil {
			nc.Close()
			return false, nil
		}
	}
}

// logTail is what the log at path got from offset from on (its last 2 KiB at most): why a
// start failed, in the server's words.
func logTail(path string, from int64) string {
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	const most = 2048
	if fi, err := f.Stat(); err == nil && fi.Size()-from > most {
		from = fi.Size() - most
	}
	b, _ := io.ReadAll(io.NewSectionReader(f, from, most))
	return strings.TrimSpace(string(b))
}
