package fsops

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/grove-dev/grove"
)

// workspace builds a workspace next to an "outside" directory holding a
// secret, with symlinks that point inside, outside, and through chains.
func workspace(t *testing.T) (*FS, string, string) {
	t.Helper()
	base := t.TempDir()
	ws, outside := filepath.Join(base, "ws"), filepath.Join(base, "outside")
	mk := func(p, content string) {
		t.Helper()
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	link := func(target, name string) {
		t.Helper()
		if err := os.Symlink(target, filepath.Join(ws, name)); err != nil {
			t.Fatal(err)
		}
	}
	mk(filepath.Join(outside, "secret"), "secret")
	mk(filepath.Join(ws, "a.txt"), "hello")
	mk(filepath.Join(ws, "sub", "f"), "in sub")
	mk(filepath.Join(ws, "%2e%2e", "x"), "literal")
	mk(filepath.Join(ws, ".git", "config"), "[core]")
	link("/etc", "etc")
	link("../outside/secret", "up")
	link("chain2", "chain1")
	link("sub/../../outside/secret", "chain2")
	link(filepath.Join(outside, "secret"), "abs")
	link("sub/f", "inlink")
	link("../a.txt", "sub/uplink") // climbs, but stays inside
	link(filepath.Join(ws, "a.txt"), "absin")
	link("outdir", "outdirlink")
	link(outside, "outdir")
	fsys, err := Open(ws, Options{TempDir: filepath.Join(base, "tmp")})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { fsys.Close() })
	return fsys, ws, outside
}

func TestTraversal(t *testing.T) {
	fsys, _, outside := workspace(t)
	tests := []struct {
		path string
		read error // nil: readable
	}{
		{"a.txt", nil},
		{"inlink", nil},
		{"sub/uplink", nil},
		{"%2e%2e/x", nil},
		{"../outside/secret", grove.ErrPathOutside},
		{"a/../../outside/secret", grove.ErrPathOutside},
		{"/etc/passwd", grove.ErrPathOutside},
		{"etc/passwd", grove.ErrPathOutside},
		{"up", grove.ErrPathOutside},
		{"chain1", grove.ErrPathOutside},
		{"abs", grove.ErrPathOutside},
		{"absin", grove.ErrPathOutside},
		{"outdirlink/secret", grove.ErrPathOutside},
		{".git/config", grove.ErrPathOutside},
		{"missing", grove.ErrNotFound},
		{"a.txt/x", grove.ErrNotFound},
		{"sub", grove.ErrIsDirectory},
	}
	for _, tt := range tests {
		t.Run(tt.path, func(t *testing.T) {
			_, err := fsys.ReadFile(tt.path, 1<<20)
			if tt.read == nil && err != nil || tt.read != nil && !errors.Is(err, tt.read) {
				t.Errorf("ReadFile = %v, want %v", err, tt.read)
			}
			if err != nil && strings.Contains(err.Error(), fsys.Dir()) {
				t.Errorf("error %q reveals the host directory", err)
			}
			if tt.read == grove.ErrPathOutside {
				if err := fsys.WriteFile(tt.path, []byte("pwned"), 0o644); !errors.Is(err, grove.ErrPathOutside) {
					t.Errorf("WriteFile = %v, want ErrPathOutside", err)
				}
				if _, err := fsys.Stat(tt.path); !errors.Is(err, grove.ErrPathOutside) {
					t.Errorf("Stat = %v, want ErrPathOutside", err)
				}
				if _, _, err := fsys.ListDir(tt.path, 1, 0); !errors.Is(err, grove.ErrPathOutside) {
					t.Errorf("ListDir = %v, want ErrPathOutside", err)
				}
			}
		})
	}
	if b, err := os.ReadFile(filepath.Join(outside, "secret")); err != nil || string(b) != "secret" {
		t.Errorf("outside file changed: %q, %v", b, err)
	}
	if entries, _ := os.ReadDir(outside); len(entries) != 1 {
		t.Errorf("outside directory gained files: %v", entries)
	}
}

func TestWriteFile(t *testing.T) {
	fsys, ws, _ := workspace(t)
	tests := []struct {
		name, path, content string
		kind                error
		check               func(t *testing.T)
	}{
		{name: "new with parents", path: "new/deep/file.txt", content: "x"},
		{name: "replace", path: "a.txt", content: "replaced"},
		{name: "non-UTF-8 name", path: "caf\xe9.txt", content: "latin1"},
		{name: "over a directory", path: "sub", kind: grove.ErrIsDirectory},
		{name: "root", path: "", kind: grove.ErrIsDirectory},
		{name: "through inside symlink writes the target", path: "inlink", content: "via link", check: func(t *testing.T) {
			if fi, err := os.Lstat(filepath.Join(ws, "inlink")); err != nil || fi.Mode()&os.ModeSymlink == 0 {
				t.Errorf("inlink is no longer a symlink: %v", err)
			}
			if b, _ := os.ReadFile(filepath.Join(ws, "sub", "f")); string(b) != "via link" {
				t.Errorf("target holds %q", b)
			}
		}},
		// os.Root refuses absolute symlinks even when they point inside;
		// writes follow the same rule as reads.
		{name: "through absolute inside symlink", path: "absin", kind: grove.ErrPathOutside},
		{name: "control char", path: "a\nb", kind: grove.ErrInvalid},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := fsys.WriteFile(tt.path, []byte(tt.content), 0o644)
			if tt.kind != nil {
				if !errors.Is(err, tt.kind) {
					t.Fatalf("WriteFile = %v, want %v", err, tt.kind)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			got, err := fsys.ReadFile(tt.path, 1<<20)
			if err != nil || string(got) != tt.content {
				t.Errorf("read back %q, %v; want %q", got, err, tt.content)
			}
			if tt.check != nil {
				tt.check(t)
			}
		})
	}
	assertNoTemp(t, ws)
}

func TestWriteFileKeepsMode(t *testing.T) {
	fsys, ws, _ := workspace(t)
	p := filepath.Join(ws, "run.sh")
	if err := os.WriteFile(p, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := fsys.WriteFile("run.sh", []byte("#!/bin/sh\necho hi\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(p); err != nil || fi.Mode().Perm() != 0o755 {
		t.Errorf("mode after rewrite = %v, %v; want 0755", fi.Mode(), err)
	}
}

func TestConcurrentWritersNeverTear(t *testing.T) {
	for _, opts := range []Options{{}, {NoSync: true}} {
		t.Run(fmt.Sprintf("nosync=%v", opts.NoSync), func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "ws")
			if err := os.Mkdir(dir, 0o755); err != nil {
				t.Fatal(err)
			}
			opts.TempDir = filepath.Join(filepath.Dir(dir), "tmp")
			fsys, err := Open(dir, opts)
			if err != nil {
				t.Fatal(err)
			}
			defer fsys.Close()
			// Each writer's content is one repeated byte with its own
			// length, so a torn or mixed file is detectable.
			valid := func(b []byte) bool {
				return len(b) > 0 && bytes.Count(b, b[:1]) == len(b) && len(b) == int(b[0]-'a'+1)*4096
			}
			if err := fsys.WriteFile("f", bytes.Repeat([]byte("a"), 4096), 0o644); err != nil {
				t.Fatal(err)
			}
			var wg sync.WaitGroup
			stop := make(chan struct{})
			for w := range 6 {
				wg.Go(func() {
					content := bytes.Repeat([]byte{byte('a' + w)}, (w+1)*4096)
					for range 20 {
						if err := fsys.WriteFile("f", content, 0o644); err != nil {
							t.Error(err)
							return
						}
					}
				})
			}
			readerDone := make(chan struct{})
			go func() {
				defer close(readerDone)
				for {
					select {
					case <-stop:
						return
					default:
					}
					b, err := fsys.ReadFile("f", 1<<20)
					if err != nil || !valid(b) {
						t.Errorf("torn read: %d bytes, %v", len(b), err)
						return
					}
				}
			}()
			wg.Wait()
			close(stop)
			<-readerDone
			assertNoTemp(t, dir)
		})
	}
}

func TestReadFileLimits(t *testing.T) {
	fsys, ws, _ := workspace(t)
	// A sparse 8 GiB file: reading it whole would take seconds and memory
	// the test would notice; refusing it must not read it.
	big, err := os.Create(filepath.Join(ws, "big"))
	if err != nil {
		t.Fatal(err)
	}
	if err := big.Truncate(8 << 30); err != nil {
		t.Fatal(err)
	}
	big.Close()
	if _, err := fsys.ReadFile("big", 1<<20); !errors.Is(err, grove.ErrTooLarge) {
		t.Errorf("big file: %v, want ErrTooLarge", err)
	}
	if b, err := fsys.ReadFile("a.txt", 5); err != nil || string(b) != "hello" {
		t.Errorf("file of exactly max bytes: %q, %v", b, err)
	}
	if _, err := fsys.ReadFile("a.txt", 4); !errors.Is(err, grove.ErrTooLarge) {
		t.Errorf("file one byte over: %v, want ErrTooLarge", err)
	}
	// A FIFO would block a plain open forever.
	if err := syscall.Mkfifo(filepath.Join(ws, "fifo"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := fsys.ReadFile("fifo", 1<<20); !errors.Is(err, grove.ErrInvalid) {
		t.Errorf("fifo: %v, want ErrInvalid", err)
	}
	if err := fsys.WriteFile("fifo", []byte("x"), 0o644); !errors.Is(err, grove.ErrInvalid) {
		t.Errorf("write over fifo: %v, want ErrInvalid", err)
	}
}

func TestDeleteFile(t *testing.T) {
	fsys, ws, outside := workspace(t)
	tests := []struct {
		path string
		kind error
	}{
		{"a.txt", nil},
		{"up", nil}, // removes the link, not its target
		{"sub", grove.ErrIsDirectory},
		{"missing", grove.ErrNotFound},
		{"../outside/secret", grove.ErrPathOutside},
		{".git/config", grove.ErrPathOutside},
	}
	for _, tt := range tests {
		err := fsys.DeleteFile(tt.path)
		if tt.kind == nil && err != nil || tt.kind != nil && !errors.Is(err, tt.kind) {
			t.Errorf("DeleteFile(%q) = %v, want %v", tt.path, err, tt.kind)
		}
	}
	if _, err := os.Lstat(filepath.Join(ws, "a.txt")); !os.IsNotExist(err) {
		t.Errorf("a.txt still there: %v", err)
	}
	if _, err := os.Stat(filepath.Join(outside, "secret")); err != nil {
		t.Errorf("symlink target deleted: %v", err)
	}
}

func assertNoTemp(t *testing.T, dir string) {
	t.Helper()
	filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err == nil && strings.HasPrefix(d.Name(), ".grove-tmp-") {
			t.Errorf("temporary file left behind: %s", p)
		}
		return nil
	})
}
