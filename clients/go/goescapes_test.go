package stateclient

// Go's encoder changed one thing in the bytes it writes for a string between the Go this
// module promises to build on (1.19) and the current one: before Go 1.22 it writes backspace
// and form feed as \u0008 and \u000c, from 1.22 on as \b and \f. The server writes the newer
// form (its files are compared with goldens recorded from a newer Go); both decode to the same
// string. The byte comparisons with what Go writes hold on every Go from 1.19 through this
// rewrite of Go's side, and only Go's: a server writing the long form still fails them.

import (
	"bytes"
	"encoding/json"
	"testing"
)

// asServerEscapes rewrites the JSON text the running Go's encoder wrote into the escapes the
// server writes: \u0008 and \u000c become \b and \f; every other byte, every other escape (an
// escaped backslash before "u0008" included) is kept. On Go 1.22 and later it changes nothing.
func asServerEscapes(b []byte) []byte {
	out := make([]byte, 0, len(b))
	for i := 0; i < len(b); i++ {
		if b[i] != '\\' || i+1 == len(b) {
			out = append(out, b[i])
			continue
		}
		switch rest := b[i+1:]; {
		case bytes.HasPrefix(rest, []byte("u0008")):
			out = append(out, '\\', 'b')
			i += 5
		case bytes.HasPrefix(rest, []byte("u000c")):
			out = append(out, '\\', 'f')
			i += 5
		default:
			out = append(out, b[i], b[i+1])
			i++
		}
	}
	return out
}

func TestAsServerEscapes(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{`"\u0008\u000c"`, `"\b\f"`},
		{`"\b\f"`, `"\b\f"`},
		{`"a\u0008b\u000cc\u0001\u003c\u2028"`, `"a\bb\fc\u0001\u003c\u2028"`},
		{`"\\u0008\\\u000c"`, `"\\u0008\\\f"`},
		{`"\u00080\u000C"`, `"\b0\u000C"`},
	} {
		if got := string(asServerEscapes([]byte(c.in))); got != c.want {
			t.Errorf("asServerEscapes(%s) = %s; want %s", c.in, got, c.want)
		}
	}
	// Whatever the running Go writes for the two, the result is the server's form, and it
	// decodes to the same string as Go's own bytes.
	in := "\b\f\\u0008"
	goBytes, err := json.Marshal(in)
	if err != nil {
		t.Fatal(err)
	}
	got := asServerEscapes(goBytes)
	if string(got) != `"\b\f\\u0008"` {
		t.Fatalf("asServerEscapes(%s) = %s; want %s", goBytes, got, `"\b\f\\u0008"`)
	}
	var back string
	if err := json.Unmarshal(got, &back); err != nil || back != in {
		t.Fatalf("%s decodes to %q, %v; want %q", got, back, err, in)
	}
}
