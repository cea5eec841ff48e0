package state

import (
	"path/filepath"
	"testing"
)

// ApplyDefaults' seeds show only while nothing is persisted: a home, workspace and source that
// another State saves meanwhile show through each seed at this State's next read, and a seed
// left alone stays.
func TestPersistedValuesShowThroughEachSeed(t *testing.T) {
	t.Parallel()
	path := filepath.Join(stateDir(t), "state.json")
	seeded := mustLoad(t, path)
	seeded.ApplyDefaults(&HomeRef{ID: "cfg-home", Type: "category"}, "/cfg-ws", "/cfg-src")
	if seeded.SourceDir() != "/cfg-src" || seeded.WorkspaceRoot() != "/cfg-ws" || seeded.Home.ID != "cfg-home" {
		t.Fatalf("not seeded: %+v", seeded)
	}

	other := mustLoad(t, path)
	if err := other.SetSource("/live-src"); err != nil {
		t.Fatal(err)
	}
	if got := seeded.SourceDir(); got != "/live-src" {
		t.Fatalf("persisted source > config: SourceDir() = %q", got)
	}
	if seeded.WorkspaceRoot() != "/cfg-ws" || seeded.Home.ID != "cfg-home" {
		t.Fatalf("the seeds of the fields still unset were lost: %+v", seeded)
	}
	if err := other.SetHome(HomeRef{ID: "live-home", Type: "channel"}); err != nil {
		t.Fatal(err)
	}
	if err := other.SetWorkspace("/live-ws"); err != nil {
		t.Fatal(err)
	}
	if got := seeded.WorkspaceRoot(); got != "/live-ws" {
		t.Fatalf("persisted workspace > config: %q", got)
	}
	if seeded.Home != (HomeRef{ID: "live-home", Type: "channel"}) || seeded.Source != "/live-src" {
		t.Fatalf("persisted home and source > config: %+v %q", seeded.Home, seeded.Source)
	}
}
