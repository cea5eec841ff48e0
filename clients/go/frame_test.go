package stateclient

import (
	"encoding/json"
	"math"
	"testing"
)

// A request line is byte for byte what json.Marshal of the envelope wrote before, for every
// kind of params and method name (escapes, HTML characters, non-ASCII), one pooled buffer
// after another.
func TestARequestLineIsWhatMarshallingTheEnvelopeWrites(t *testing.T) {
	type envelope struct {
		JSONRPC string      `json:"jsonrpc"`
		ID      int64       `json:"id"`
		Method  string      `json:"method"`
		Params  interface{} `json:"params"`
	}
	params := []interface{}{
		nil,
		map[string]interface{}{},
		struct {
			Name string  `json:"name"`
			Cost float64 `json:"cost"`
		}{"a <b> & \"c\" \u2028 é \x01", 0.0123},
		[]int{1, 2, 3},
		json.RawMessage(`{"a": [1, 2]}`),
	}
	methods := []string{"transcript/append", "x\"y", "a<b>&c", "é", "tab\there", "\x7f", ""}
	for i, p := range params {
		for j, m := range methods {
			f := getFrame()
			raw, err := f.marshalParams(p)
			if err != nil {
				t.Fatal(err)
			}
			id := int64(i*100 + j - 50)
			got := string(f.requestLine(id, m, raw))
			want, err := json.Marshal(envelope{JSONRPC: "2.0", ID: id, Method: m, Params: p})
			if err != nil {
				t.Fatal(err)
			}
			if got != string(want)+"\n" {
				t.Errorf("params %d, method %q:\n got %s\nwant %s", i, m, got, want)
			}
			putFrame(f)
		}
	}
}

// Params JSON cannot carry are refused by the marshal, before an id or a line exists.
func TestParamsThatCannotBeMarshalledAreRefusedInTheFrame(t *testing.T) {
	f := getFrame()
	defer putFrame(f)
	if _, err := f.marshalParams(map[string]float64{"cost": math.NaN()}); err == nil {
		t.Fatal("NaN marshalled")
	}
	raw, err := f.marshalParams(map[string]int{"a": 1})
	if err != nil || string(raw) != `{"a":1}` {
		t.Fatalf("after a refusal the buffer holds %q (%v)", raw, err)
	}
}
