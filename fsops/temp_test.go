package fsops

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// TestCrashLeavesNoTempInWorkspace: a write that dies between its
// temporary file and the rename leaves the file in the temporary
// directory, never in the workspace, where the agent's tree and the next
// commit would see it; SweepTemp clears it once old enough.
func TestCrashLeavesNoTempInWorkspace(t *testing.T) {
	base := t.TempDir()
	ws, tmp := filepath.Join(base, "ws"), filepath.Join(base, "tmp")
	if err := os.MkdirAll(filepath.Join(ws, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	fsys, err := Open(ws, Options{TempDir: tmp})
	if err != nil {
		t.Fatal(err)
	}
	defer fsys.Close()
	if fi, err := os.Stat(tmp); err != nil || fi.Mode().Perm() != 0o700 {
		t.Fatalf("temp dir not created private: %v, %v", fi, err)
	}

	testHookBeforeRename = func() bool { return true } // crash
	err = fsys.WriteFile("sub/a.txt", []byte("lost"), 0o644)
	testHookBeforeRename = nil
	if err == nil {
		t.Fatal("crashed write reported success")
	}
	if err := fsys.WriteFile("sub/b.txt", []byte("kept"), 0o644); err != nil {
		t.Fatal(err)
	}

	var tree []string
	filepath.WalkDir(ws, func(p string, d os.DirEntry, err error) error {
		r, _ := filepath.Rel(ws, p)
		tree = append(tree, r)
		return nil
	})
	if want := []string{".", "sub", "sub/b.txt"}; !slices.Equal(tree, want) {
		t.Errorf("workspace tree = %q, want %q", tree, want)
	}
	entries, _ := os.ReadDir(tmp)
	if len(entries) != 1 || !strings.HasPrefix(entries[0].Name(), tempPrefix) {
		t.Fatalf("temp dir holds %v, want the crashed write's file", entries)
	}
	left := entries[0].Name()
	if b, _ := os.ReadFile(filepath.Join(tmp, left)); string(b) != "lost" {
		t.Errorf("leftover holds %q", b)
	}

	// Someone else's file in the temp dir is never touched.
	other := filepath.Join(tmp, "not-ours")
	if err := os.WriteFile(other, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if removed, err := SweepTemp(tmp, time.Hour); err != nil || len(removed) != 0 {
		t.Fatalf("fresh leftover swept: %v, %v", removed, err)
	}
	old := time.Now().Add(-2 * time.Hour)
	for _, p := range []string{filepath.Join(tmp, left), other} {
		if err := os.Chtimes(p, old, old); err != nil {
			t.Fatal(err)
		}
	}
	removed, err := SweepTemp(tmp, time.Hour)
	if err != nil || !slices.Equal(removed, []string{left}) {
		t.Fatalf("SweepTemp = %v, %v; want [%s]", removed, err, left)
	}
	if _, err := os.Stat(other); err != nil {
		t.Errorf("foreign file removed: %v", err)
	}
	if removed, err := SweepTemp(filepath.Join(base, "missing"), 0); err != nil || removed != nil {
		t.Errorf("missing dir: %v, %v", removed, err)
	}
}

func TestTempDirRules(t *testing.T) {
	base := t.TempDir()
	ws := filepath.Join(base, "ws")
	if err := os.Mkdir(ws, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Run("none: read-only", func(t *testing.T) {
		fsys, err := Open(ws, Options{})
		if err != nil {
			t.Fatal(err)
		}
		defer fsys.Close()
		if err := fsys.WriteFile("x", []byte("x"), 0o644); !errors.Is(err, errNoTempDir) {
			t.Errorf("write without TempDir = %v", err)
		}
		if entries, _ := os.ReadDir(ws); len(entries) != 0 {
			t.Errorf("workspace gained %v", entries)
		}
	})
	t.Run("inside the workspace", func(t *testing.T) {
		for _, dir := range []string{ws, filepath.Join(ws, "tmp")} {
			if fsys, err := Open(ws, Options{TempDir: dir}); err == nil {
				fsys.Close()
				t.Errorf("TempDir %s inside the workspace accepted", dir)
			}
		}
	})
	t.Run("another filesystem", func(t *testing.T) {
		var a, b unix.Stat_t
		if unix.Stat(ws, &a) != nil || unix.Stat("/dev/shm", &b) != nil || a.Dev == b.Dev {
			t.Skip("no second filesystem at /dev/shm")
		}
		dir, err := os.MkdirTemp("/dev/shm", "fsops-test-")
		if err != nil {
			t.Skip(err)
		}
		defer os.RemoveAll(dir)
		fsys, err := Open(ws, Options{TempDir: dir})
		if err == nil {
			fsys.Close()
			t.Fatal("TempDir on another filesystem accepted")
		}
		if !strings.Contains(err.Error(), "same filesystem") {
			t.Errorf("unclear error: %v", err)
		}
	})
}
