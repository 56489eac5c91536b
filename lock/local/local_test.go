package local_test

import (
	"testing"

	"github.com/grove-dev/grove/lock"
	"github.com/grove-dev/grove/lock/local"
	"github.com/grove-dev/grove/lock/locktest"
)

func TestConformance(t *testing.T) {
	locktest.Run(t, locktest.Suite{
		Open: func(t *testing.T) lock.Locker {
			l := local.New()
			t.Cleanup(func() {
				if n := l.Len(); n != 0 {
					t.Errorf("%d keys still held or awaited after the test", n)
				}
			})
			return l
		},
	})
}
