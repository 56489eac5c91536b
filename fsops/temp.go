package fsops

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// SweepTemp removes the temporary files WriteFile left in dir (an
// Options.TempDir) that are older than olderThan — leftovers of a crash
// between writing and renaming — and returns the names it removed. Only
// regular files named like WriteFile's temporary files are touched. A
// missing dir is not an error. Call it at start-up (reconcile) and now and
// then; olderThan should be well above the time one write takes (minutes),
// since a write in flight has its file there too.
func SweepTemp(dir string, olderThan time.Duration) ([]string, error) {
	entries, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	cutoff := time.Now().Add(-olderThan)
	var removed []string
	var errs []error
	for _, e := range entries {
		if !strings.HasPrefix(e.Name(), tempPrefix) || !e.Type().IsRegular() {
			continue
		}
		info, err := e.Info()
		if err != nil || !info.ModTime().Before(cutoff) {
			continue
		}
		if err := os.Remove(filepath.Join(dir, e.Name())); err != nil {
			if !errors.Is(err, fs.ErrNotExist) {
				errs = append(errs, err)
			}
			continue
		}
		removed = append(removed, e.Name())
	}
	return removed, errors.Join(errs...)
}
