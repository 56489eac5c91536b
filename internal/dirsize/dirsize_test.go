package dirsize_test

import (
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/grove-dev/grove/internal/dirsize"
)

// Empty files, directories and symlinks are not free.
func TestCountsEveryInode(t *testing.T) {
	dir := t.TempDir()
	for i := 0; i < 1000; i++ {
		os.WriteFile(filepath.Join(dir, "e"+string(rune('a'+i%26))+filepath.Base(t.TempDir())), nil, 0o644)
	}
	u := dirsize.Of(dir)
	if u.Inodes < 1000 || u.Bytes < 1000*dirsize.InodeCharge {
		t.Fatalf("1000 empty files measured as %+v", u)
	}
}

// A directory swapped for a symlink to a big host tree while the walk
// runs never makes the walk count (or visit) that tree.
func TestNeverFollowsASwappedDirectory(t *testing.T) {
	ws := t.TempDir()
	host := t.TempDir()
	big := make([]byte, 1<<20)
	for i := 0; i < 32; i++ {
		os.WriteFile(filepath.Join(host, filepath.Base(t.TempDir())), big, 0o644)
	}
	real := filepath.Join(ws, "zz")
	os.Mkdir(real, 0o755)
	link := filepath.Join(ws, "zy")
	os.Symlink(host, link)
	var stop atomic.Bool
	done := make(chan struct{})
	go func() {
		defer close(done)
		for !stop.Load() {
			// zz is a directory, then the link to the host tree, then a
			// directory again.
			os.Rename(real, real+".d")
			os.Symlink(host, real)
			os.Remove(real)
			os.Rename(real+".d", real)
		}
	}()
	deadline := time.Now().Add(2 * time.Second)
	for time.Now().Before(deadline) {
		if u := dirsize.Of(ws); u.Bytes > 16<<20 {
			stop.Store(true)
			<-done
			t.Fatalf("the walk counted the host tree through a swapped directory: %+v", u)
		}
	}
	stop.Store(true)
	<-done
}
