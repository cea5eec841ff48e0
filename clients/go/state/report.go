package state

import (
	"log"
	"sync"
	"time"
)

// Readers (FindSession, SnapshotSessions, the fields' sync, ReadTranscript, ReadTranscriptLast,
// ReadParticipants) have no error to return, as in Go's package. When the server cannot answer
// one, the reader answers from the State's last copy, or reads the file itself as Go's does, and the reason
// goes to the standard logger (Herrscher's log), so such an answer is never silent. A reason is
// logged once a minute at most, as a reader may be called in a loop.

const readFailureEvery = time.Minute

var readFailures = struct {
	sync.Mutex
	last map[string]time.Time
}{last: map[string]time.Time{}}

// readFailed logs that reader `what` on `subject` answered without the server because of err.
func readFailed(what, subject, answered string, err error) {
	msg := "state: " + what + " " + subject + ": " + err.Error() + "; " + answered
	now := time.Now()
	readFailures.Lock()
	if t, ok := readFailures.last[msg]; ok && now.Sub(t) < readFailureEvery {
		readFailures.Unlock()
		return
	}
	if len(readFailures.last) >= 256 {
		readFailures.last = map[string]time.Time{}
	}
	readFailures.last[msg] = now
	readFailures.Unlock()
	log.Print(msg)
}
