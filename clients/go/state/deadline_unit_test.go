package state

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"
)

// The call bound read from the environment: a positive integer of milliseconds, anything else
// the default.
func TestCallTimeoutIsAPositiveMillisecondCountOrTheDefault(t *testing.T) {
	for _, c := range []struct {
		env  string
		want time.Duration
	}{
		{"", defaultCallTimeout},
		{"250", 250 * time.Millisecond},
		{"1", time.Millisecond},
		{"0", defaultCallTimeout},
		{"-5", defaultCallTimeout},
		{"12x", defaultCallTimeout},
		{"1.5", defaultCallTimeout},
	} {
		t.Setenv(callTimeoutEnv, c.env)
		if got := callTimeout(); got != c.want {
			t.Errorf("%s=%q: callTimeout() = %v, want %v", callTimeoutEnv, c.env, got, c.want)
		}
	}
	if defaultCallTimeout != 35*time.Second {
		t.Errorf("defaultCallTimeout = %v, want 35s (docs/go-compatibility.md)", defaultCallTimeout)
	}
}

// callContext ends at the bound the environment sets.
func TestCallContextEndsAtTheBound(t *testing.T) {
	t.Setenv(callTimeoutEnv, "60000")
	ctx, cancel := callContext()
	defer cancel()
	deadline, ok := ctx.Deadline()
	if !ok {
		t.Fatal("callContext has no deadline")
	}
	if left := time.Until(deadline); left <= 50*time.Second || left > 60*time.Second {
		t.Errorf("deadline in %v, want within 60s and well past 50s", left)
	}
}

// bounded names the bound only in an error the context's end caused, and only once.
func TestBoundedNamesTheBoundOnceAndOnlyForTheContextsEnd(t *testing.T) {
	t.Setenv(callTimeoutEnv, "40")
	live := context.Background()
	ended, cancel := context.WithTimeout(context.Background(), 0)
	defer cancel()
	<-ended.Done()
	other := errors.New("refused")

	if got := bounded(ended, "/s/state.json", nil); got != nil {
		t.Errorf("bounded(nil) = %v, want nil", got)
	}
	if got := bounded(live, "/s/state.json", other); got != other {
		t.Errorf("a live context: %v, want the error itself", got)
	}
	wrappedDeadline := fmt.Errorf("dial: %w", context.DeadlineExceeded)
	if got := bounded(live, "/s/state.json", wrappedDeadline); got != wrappedDeadline {
		t.Errorf("a live context with a deadline error of another context: %v, want it as it was", got)
	}
	if got := bounded(ended, "/s/state.json", other); got != other {
		t.Errorf("an ended context, an error it did not cause: %v, want the error itself", got)
	}

	got := bounded(ended, "/s/state.json", wrappedDeadline)
	var de *deadlineError
	if !errors.As(got, &de) {
		t.Fatalf("an error the end caused: %T %v, want a *deadlineError", got, got)
	}
	if !errors.Is(got, context.DeadlineExceeded) {
		t.Error("the bound's error does not unwrap to context.DeadlineExceeded")
	}
	msg := got.Error()
	for _, part := range []string{"/s/state.json", "40ms", callTimeoutEnv, "dial: context deadline exceeded"} {
		if !strings.Contains(msg, part) {
			t.Errorf("%q does not name %q", msg, part)
		}
	}
	if again := bounded(ended, "/s/state.json", fmt.Errorf("call: %w", got)); !strings.Contains(again.Error(), "call: ") || strings.Count(again.Error(), callTimeoutEnv) != 1 {
		t.Errorf("bounded twice: %q, want the bound named once", again)
	}
}
