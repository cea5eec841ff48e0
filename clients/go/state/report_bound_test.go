package state

import (
	"bytes"
	"errors"
	"fmt"
	"log"
	"strings"
	"testing"
	"time"
)

// A reader's failure is logged once a minute per message; the messages remembered for that are
// at most 256: the 257th distinct one forgets the others, so each is logged again at once.
// Not parallel: it captures the standard logger.
func TestReadFailuresRememberAtMost256Messages(t *testing.T) {
	var out bytes.Buffer
	was := log.Writer()
	log.SetOutput(&out)
	flags := log.Flags()
	log.SetFlags(0)
	defer func() {
		log.SetOutput(was)
		log.SetFlags(flags)
	}()
	readFailures.Lock()
	readFailures.last = map[string]time.Time{}
	readFailures.Unlock()

	fail := func(i int) { readFailed("Bound", fmt.Sprintf("/bound/%d", i), "answered", errors.New("unreachable")) }
	logged := func(i int) int { return strings.Count(out.String(), fmt.Sprintf("/bound/%d:", i)) }
	for i := 0; i < 256; i++ {
		fail(i)
	}
	fail(0)
	if n := logged(0); n != 1 {
		t.Fatalf("a message repeated within the minute was logged %d times, want once", n)
	}
	fail(256) // the 257th distinct message: the 256 before it are forgotten
	fail(0)
	if n := logged(0); n != 2 {
		t.Fatalf("after the 257th message the first was logged %d times in all, want 2 (forgotten, so logged again)", n)
	}
	fail(256)
	if n := logged(256); n != 1 {
		t.Fatalf("the 257th message, repeated, was logged %d times, want once (it is remembered)", n)
	}
}
