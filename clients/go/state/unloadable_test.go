package state

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A state file the server cannot open (as Go's LoadState cannot: an empty file, a top-level
// array) and no server running yet: the server started for it exits saying why, and LoadState
// returns that reason, instead of starting it again and again until the connect bound and then
// naming only the bound. The file is left as it was.
func TestLoadStateOfAnUnloadableFileSaysWhy(t *testing.T) {
	t.Parallel()
	dir := stateDir(t)
	for _, c := range []struct{ content, why string }{
		{"", "invalid JSON"},
		{"[]", "must be an object"},
	} {
		path := filepath.Join(dir, "state.json")
		if err := os.WriteFile(path, []byte(c.content), 0o600); err != nil {
			t.Fatal(err)
		}
		st, err := LoadState(path)
		if err == nil || st != nil {
			t.Fatalf("%q: LoadState = %v, %v; want an error", c.content, st, err)
		}
		if !strings.Contains(err.Error(), c.why) {
			t.Fatalf("%q: the error does not say why: %v", c.content, err)
		}
		if b, _ := os.ReadFile(path); string(b) != c.content {
			t.Fatalf("%q: the file was changed to %q", c.content, b)
		}
	}
}
