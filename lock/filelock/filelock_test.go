package filelock_test

import (
	"testing"

	"github.com/grove-dev/grove/lock"
	"github.com/grove-dev/grove/lock/filelock"
	"github.com/grove-dev/grove/lock/locktest"
)

func TestConformance(t *testing.T) {
	dir := t.TempDir()
	locktest.Run(t, locktest.Suite{
		// Every Locker over the same directory stands for another process:
		// flock locks on separately opened files exclude each other even
		// inside one process.
		Open: func(t *testing.T) lock.Locker {
			l, err := filelock.New(dir)
			if err != nil {
				t.Fatal(err)
			}
			return l
		},
		Distributed: true,
	})
}
