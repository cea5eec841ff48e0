package state

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	stateclient "github.com/herrscher/herrscher-state/clients/go"
)

// idleExitMs is what a server started for a process without the state's lock is given as
// --exit-when-idle: it stops (and releases the lock) this long after its last client left.
// With idleClose, the lock is free within a second of the last call, as a daemon started
// after an operator command expects; longer would only save a spawn (~0.2 s) per gap.
const idleExitMs = "500"

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

// serverArgs are the serve options every server the package starts gets.
func serverArgs() []string {
	args := []string{"--log-level", "warn"}
	if d := os.Getenv("HERRSCHER_STATE_DURABILITY"); d != "" {
		args = append(args, "--durability", d)
	}
	return args
}

// socketFor is the socket a server the package starts listens on: one per state file, in
// the per-user socket folder (0700), named by a hash of the state path so that any path
// length fits a unix socket address.
func socketFor(statePath string) (string, error) {
	dir := stateclient.DefaultSocketFolder(os.Getenv)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", err
	}
	sum := sha256.Sum256([]byte(statePath))
	return filepath.Join(dir, "state-"+hex.EncodeToString(sum[:8])+".sock"), nil
}

// lockPathOf is Herrscher's StateLockPath: <dir>/.<base>.lock.
func lockPathOf(statePath string) string {
	return filepath.Join(filepath.Dir(statePath), "."+filepath.Base(statePath)+".lock")
}

// maxStartExits bounds the servers started in one findOrStart that exit before accepting
// for another reason than a lost race for the lock.
const maxStartExits = 3

// lockHeldExit is the exit code of a `serve` that found the state's lock held by another
// process (EXIT.locked, src/commands/command.ts): a lost race for the lock, told from every
// other failure by the code, not by the words. TestALostLockRaceIsRecognised keeps the two in
// step.
const lockHeldExit = 3

// lostLockRace: err says that a server this package started exited because another process
// holds the state's lock.
func lostLockRace(err error) bool {
	var ee *exec.ExitError
	return errors.As(err, &ee) && ee.ExitCode() == lockHeldExit
}

// findOrStart connects to the live server of statePath, or starts one: under this
// process's own lock when it holds it (owned), else a shared socket server that exits once
// idle.
func findOrStart(ctx context.Context, statePath string) (*stateclient.Client, bool, error) {
	var lastErr error
	for exits := 0; ctx.Err() == nil; {
		if rec, err := stateclient.ReadServerRecord(statePath); err == nil && rec != nil {
			c, err := dialChecked(ctx, rec.Socket, statePath)
			if err == nil {
				return c, false, nil
			}
			lastErr = err
		}
		if f := heldLockFile(lockPathOf(statePath)); f != nil {
			c, err := spawnUnderLock(ctx, statePath, f)
			f.Close() // the child has its own descriptor of the same open file (and lock)
			return c, err == nil, err
		}
		c, retry, err := startShared(ctx, statePath)
		if err == nil {
			return c, false, nil
		}
		if ctx.Err() != nil {
			break // what the last start said is the reason, not the bound
		}
		lastErr = err
		if !retry {
			return nil, false, err
		}
		// A start that lost the lock to another process's server (its exit code says so) finds that server at the
		// next look (one starting, or stopping for idleness, may hold the lock without a record
		// for a while on a loaded machine: looked for until ctx ends, as before); one that exits
		// again and again for another reason cannot start at all (a state file it cannot open):
		// its own words say why, and starting it until the bound only burns CPU.
		if !lostLockRace(err) {
			if exits++; exits >= maxStartExits {
				return nil, false, fmt.Errorf("state: no server for %s: %w", statePath, lastErr)
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	if lastErr == nil {
		lastErr = ctx.Err()
	}
	return nil, false, fmt.Errorf("state: no server for %s: %w", statePath, lastErr)
}

func dialChecked(ctx context.Context, socket, statePath string) (*stateclient.Client, error) {
	c, err := stateclient.Dial(ctx, stateclient.DialOptions{Socket: socket})
	if err != nil {
		return nil, err
	}
	info, err := c.Initialize(ctx)
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

// spawnUnderLock starts `serve --stdio --lock-fd 3` with the caller's lock file: the server
// serves under the caller's flock and stops when this process ends (stdin EOF). It also
// listens on its socket and records it, so other processes share it.
func spawnUnderLock(ctx context.Context, statePath string, lock *os.File) (*stateclient.Client, error) {
	sock, err := socketFor(statePath)
	if err != nil {
		return nil, err
	}
	return stateclient.Spawn(ctx, statePath, stateclient.SpawnOptions{
		Command:  serverCommand(),
		LockFile: lock,
		Args:     append([]string{"--socket", sock}, serverArgs()...),
	})
}

// startShared starts a socket server for a process that does not hold the lock, waits until
// it accepts, and connects. retry: the start lost a race (another process's server took the
// lock first), so look for that one again.
func startShared(ctx context.Context, statePath string) (*stateclient.Client, bool, error) {
	sock, err := socketFor(statePath)
	if err != nil {
		return nil, false, err
	}
	command := serverCommand()
	// Its log goes to a file beside its socket: inheriting this process's stderr would keep
	// a pipe of whoever runs this process (a shell's capture, go test) open after it exits.
	logFile := strings.TrimSuffix(sock, ".sock") + ".log"
	args := append(append([]string{}, command[1:]...), "serve", "--state", statePath, "--socket", sock, "--exit-when-idle", idleExitMs, "--log-file", logFile)
	cmd := exec.Command(command[0], append(args, serverArgs()...)...)
	var early bytes.Buffer // what it says before its log is open (a refused start)
	cmd.Stderr = &limitedWriter{w: &early, n: 4096}
	// Its own process group: a ^C meant for this process does not stop a server other
	// processes may be using; it stops by itself once nobody is.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		return nil, false, fmt.Errorf("state: start %s: %w (set HERRSCHER_STATE_BIN to the herrscher-state executable, or put it on PATH)", command[0], err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	for {
		select {
		case err := <-exited:
			// It stopped before accepting: most often another process's server holds the
			// lock now. Look again; a server that cannot start at all fails the same way
			// until ctx ends.
			return nil, true, fmt.Errorf("the server it started exited (%w): %s", err, strings.TrimSpace(early.String()))
		case <-ctx.Done():
			_ = cmd.Process.Kill()
			return nil, false, ctx.Err()
		case <-time.After(2 * time.Millisecond):
		}
		var d net.Dialer
		nc, err := d.DialContext(ctx, "unix", sock)
		if err != nil {
			continue
		}
		if err := stateclient.CheckSocket(sock); err != nil {
			nc.Close()
			return nil, false, err
		}
		c := stateclient.NewClient(nc)
		info, err := c.Initialize(ctx)
		if err != nil || !sameFile(info.StatePath, statePath) {
			_ = c.Close()
			if err == nil {
				err = errors.New("state: " + sock + " is served by another state: " + info.StatePath)
			}
			return nil, false, err
		}
		return c, false, nil
	}
}

// limitedWriter keeps the first n bytes and drops the rest.
type limitedWriter struct {
	w io.Writer
	n int
}

func (l *limitedWriter) Write(p []byte) (int, error) {
	if l.n > 0 {
		k := len(p)
		if k > l.n {
			k = l.n
		}
		_, _ = l.w.Write(p[:k])
		l.n -= k
	}
	return len(p), nil
}
