//go:build !daytonafake

package main

import (
	"context"

	"github.com/grove-dev/grove"
	"github.com/grove-dev/grove/driver/daytona"
)

// openDaytonaFake is only in development builds (-tags daytonafake): the
// fake Daytona is test code and stays out of release binaries.
func openDaytonaFake(context.Context) (*daytona.Driver, error) {
	return nil, grove.Errorf(grove.ErrNotSupported, "the fake Daytona (--daytona-fake, GROVE_DAYTONA_FAKE) is only in development builds: go build -tags daytonafake ./cmd/grove")
}
