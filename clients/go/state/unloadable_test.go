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

// The same file broken by hand while a server serves it (an operator's edit gone wrong): a
// LoadState gets why, as Go's LoadState does, not the last good document the server keeps
// answering from memory; fixed, it loads again.
func TestLoadStateOfAFileBrokenWhileServedSaysWhy(t *testing.T) {
	t.Parallel()
	path := filepath.Join(stateDir(t), "state.json")
	st := mustLoad(t, path)
	if err := st.AddSession(Session{Name: "a"}); err != nil {
		t.Fatal(err)
	}
	good, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(`{"sessions": [`), 0o600); err != nil {
		t.Fatal(err)
	}
	if got, err := LoadState(path); err == nil || !strings.Contains(err.Error(), "cannot be loaded") {
		t.Fatalf("LoadState of a broken file = %+v, %v; want why it cannot be loaded", got, err)
	}
	if b, _ := os.ReadFile(path); string(b) != `{"sessions": [` {
		t.Fatalf("the broken file was changed to %q", b)
	}
	if err := os.WriteFile(path, good, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, ok := mustLoad(t, path).FindSession("a"); !ok {
		t.Fatal("the fixed file does not load")
	}
}
