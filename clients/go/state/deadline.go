package state

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"time"
)

// callTimeoutEnv names the environment variable that bounds each call of the package, in
// milliseconds: finding or starting the server, the request and its answer together. Past it
// the call returns an error (errors.Is context.DeadlineExceeded) and the State stays usable; a
// reader answers as it does for a server it cannot reach.
const callTimeoutEnv = "HERRSCHER_STATE_CALL_TIMEOUT_MS"

// defaultCallTimeout is a few seconds above the server's own reply bound (its commands wait
// 30 s for a reply, $HERRSCHER_STATE_REPLY_TIMEOUT_MS): a loaded server's slow answer still
// arrives, a stuck one (stopped, on a disk that does not answer) never hangs the caller.
const defaultCallTimeout = 35 * time.Second

// callTimeout is the bound of one call: $HERRSCHER_STATE_CALL_TIMEOUT_MS when it is a
// positive integer, else the default. Read at each call, so a process may change it.
func callTimeout() time.Duration {
	if ms, err := strconv.ParseInt(os.Getenv(callTimeoutEnv), 10, 64); err == nil && ms > 0 {
		return time.Duration(ms) * time.Millisecond
	}
	return defaultCallTimeout
}

// callContext is the context of one call of the package: it ends at the call's deadline.
func callContext() (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), callTimeout())
}

// deadlineError says that a call ran out of its bound, and which bound.
type deadlineError struct {
	statePath string
	bound     time.Duration
	err       error
}

func (e *deadlineError) Error() string {
	return fmt.Sprintf("state: the server of %s did not answer within %v (%s sets this bound): %v", e.statePath, e.bound, callTimeoutEnv, e.err)
}

func (e *deadlineError) Unwrap() error { return e.err }

// bounded names the bound in an error that the end of ctx caused (once).
func bounded(ctx context.Context, statePath string, err error) error {
	if err == nil || ctx.Err() == nil || !errors.Is(err, ctx.Err()) {
		return err
	}
	var already *deadlineError
	if errors.As(err, &already) {
		return err
	}
	return &deadlineError{statePath: statePath, bound: callTimeout(), err: err}
}
