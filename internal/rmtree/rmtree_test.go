package rmtree_test

import (
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/grove-dev/grove/internal/rmtree"
)

func openFDs(t *testing.T) int {
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Skip("no /proc/self/fd")
	}
	return len(ents)
}

// A tree deeper than PATH_MAX, made the way agent code would (mkdir and cd
// in a loop), goes away with a handful of descriptors.
func TestRemovesATreeDeeperThanPathMax(t *testing.T) {
	root := filepath.Join(t.TempDir(), "deep")
	if err := os.Mkdir(root, 0o755); err != nil {
		t.Fatal(err)
	}
	const depth = 5000 // 5000 * len("dd/") = 15 KB of path, past PATH_MAX
	fd, err := unix.Open(root, unix.O_RDONLY|unix.O_DIRECTORY, 0)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < depth; i++ {
		if err := unix.Mkdirat(fd, "dd", 0o755); err != nil {
			t.Fatal(err)
		}
		if i%100 == 0 {
			f, _ := unix.Openat(fd, "f", unix.O_CREAT|unix.O_WRONLY, 0o644)
			unix.Close(f)
			unix.Symlinkat("/etc", fd, "link")
		}
		next, err := unix.Openat(fd, "dd", unix.O_RDONLY|unix.O_DIRECTORY, 0)
		if err != nil {
			t.Fatal(err)
		}
		unix.Close(fd)
		fd = next
	}
	unix.Close(fd)

	base := openFDs(t)
	var peak atomic.Int64
	stop := make(chan struct{})
	go func() {
		for {
			select {
			case <-stop:
				return
			default:
			}
			if n := int64(openFDs(t)); n > peak.Load() {
				peak.Store(n)
			}
			time.Sleep(time.Millisecond)
		}
	}()
	err = rmtree.RemoveAll(root)
	close(stop)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Lstat(root); !os.IsNotExist(err) {
		t.Fatalf("tree still there: %v", err)
	}
	if p := peak.Load(); p > int64(base)+10 {
		t.Fatalf("removal held %d descriptors (baseline %d): one per level?", p, base)
	}
	if _, err := os.Stat("/etc/passwd"); err != nil {
		t.Fatalf("a symlink was followed: %v", err)
	}
}

func TestRemoveAllEdges(t *testing.T) {
	dir := t.TempDir()
	if err := rmtree.RemoveAll(filepath.Join(dir, "missing")); err != nil {
		t.Fatalf("missing dir: %v", err)
	}
	target := filepath.Join(dir, "target")
	os.MkdirAll(filepath.Join(target, "keep"), 0o755)
	link := filepath.Join(dir, "link")
	os.Symlink(target, link)
	if err := rmtree.RemoveAll(link); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(target, "keep")); err != nil {
		t.Fatalf("removing a symlink removed its target: %v", err)
	}
	wide := filepath.Join(dir, "wide")
	for i := 0; i < 3000; i++ {
		os.MkdirAll(filepath.Join(wide, "d"+strings.Repeat("x", i%7)+string(rune('a'+i%26)), "sub"), 0o755)
		os.WriteFile(filepath.Join(wide, "f"+string(rune('a'+i%26))+strings.Repeat("y", i%50)), nil, 0o644)
	}
	if err := rmtree.RemoveAll(wide); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Lstat(wide); !os.IsNotExist(err) {
		t.Fatalf("wide tree still there: %v", err)
	}
}
