package stateclient

import (
	"path/filepath"
	"testing"
)

// The shared server's socket is SharedSocketName in the default socket folder, whichever way that
// folder is found; the name itself is the TypeScript side's (shared_socket_gen.go).
func TestSharedSocketPath(t *testing.T) {
	env := map[string]string{"XDG_RUNTIME_DIR": "/run/user/1000"}
	got := SharedSocketPath(func(k string) string { return env[k] })
	if want := "/run/user/1000/herrscher-state/herrscher-state-shared.sock"; got != want {
		t.Fatalf("SharedSocketPath = %q, want %q", got, want)
	}
	tmp := t.TempDir()
	env = map[string]string{"TMPDIR": tmp}
	got = SharedSocketPath(func(k string) string { return env[k] })
	if dir := DefaultSocketFolder(func(k string) string { return env[k] }); got != filepath.Join(dir, SharedSocketName) || filepath.Dir(dir) != tmp {
		t.Fatalf("SharedSocketPath = %q, want %s in %s", got, SharedSocketName, dir)
	}
}
