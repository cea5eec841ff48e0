package stateclient

import (
	"encoding/json"
	"testing"
)

// The reader takes an event's subscription from the decoded event: every event type the client
// decodes must give it there (a type without it would fall back to a second parse of params).
func TestEveryEventGivesItsSubscription(t *testing.T) {
	t.Parallel()
	for _, method := range []string{"session/didChange", "state/didChange", "state/resync", "transcript/didAppend", "participants/didAdd", "watch/overflow"} {
		ev, err := decodeEvent(method, json.RawMessage(`{"subscription":"w9"}`))
		if err != nil || ev == nil {
			t.Fatalf("%s: decodeEvent gave %v, %v", method, ev, err)
		}
		if got := subscriptionOf(ev); got != "w9" {
			t.Errorf("%s: subscriptionOf = %q, want w9", method, got)
		}
	}
	if got := subscriptionOf(nil); got != "" {
		t.Errorf("subscriptionOf(nil) = %q", got)
	}
}
