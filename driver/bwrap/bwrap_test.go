package bwrap_test

import (
	"context"
	"testing"

	"github.com/grove-dev/grove/driver"
	"github.com/grove-dev/grove/driver/bwrap"
	"github.com/grove-dev/grove/driver/drivertest"
	"github.com/grove-dev/grove/internal/testenv"
)

// newDriver skips (or, in CI, fails) without bwrap.
func newDriver(t testing.TB) *bwrap.Driver {
	t.Helper()
	testenv.RequireBinary(t, "bwrap", "bwrap")
	d, err := bwrap.New(bwrap.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	err = d.Check(context.Background())
	why := ""
	if err != nil {
		why = err.Error()
	}
	testenv.Require(t, "bwrap", err == nil, why)
	return d
}

func TestConformance(t *testing.T) {
	newDriver(t)
	drivertest.Run(t, drivertest.Harness{
		New: func(t *testing.T) driver.Driver { return newDriver(t) },
		Spec: func(t *testing.T, dir string) driver.Spec {
			return driver.Spec{User: "u", Project: "p"}
		},
	})
}
