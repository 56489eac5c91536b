package subprocess_test

import (
	"testing"

	"github.com/grove-dev/grove/driver"
	"github.com/grove-dev/grove/driver/drivertest"
	"github.com/grove-dev/grove/driver/subprocess"
)

func TestConformance(t *testing.T) {
	drivertest.Run(t, drivertest.Harness{
		New: func(t *testing.T) driver.Driver {
			return subprocess.New(subprocess.Options{AllowMutating: true, HomeRoot: t.TempDir()})
		},
		Spec: func(t *testing.T, dir string) driver.Spec {
			return driver.Spec{User: "u", Project: "p"}
		},
		Restricted: func(t *testing.T) driver.Driver {
			return subprocess.New(subprocess.Options{HomeRoot: t.TempDir()})
		},
	})
}
