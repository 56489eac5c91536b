package main

import (
	"context"
	"os"
	"strconv"
	"sync"

	"github.com/grove-dev/grove"
	"github.com/grove-dev/grove/driver"
	"github.com/grove-dev/grove/driver/daytona"
)

// defaultDaytonaRoot is DAYTONA_WORKSPACE_ROOT's default: under the home
// of the user Daytona's default snapshot runs commands as.
const defaultDaytonaRoot = "/home/daytona/grove"

// daytonaConfig reads the DAYTONA_* variables (docs/DAYTONA.md). The API
// key is Grove's own: it is sent to the control plane and the toolbox
// proxy, never into a sandbox. Mutating commands are allowed: the engine
// still decides per workspace mode.
func daytonaConfig() (daytona.Config, error) {
	c := daytona.Config{
		APIURL:        os.Getenv("DAYTONA_API_URL"),
		APIKey:        os.Getenv("DAYTONA_API_KEY"),
		Target:        os.Getenv("DAYTONA_TARGET"),
		Snapshot:      os.Getenv("DAYTONA_SNAPSHOT"),
		WorkspaceRoot: envOr("DAYTONA_WORKSPACE_ROOT", defaultDaytonaRoot),
		AllowMutating: true,
	}
	for name, dst := range map[string]*int{"DAYTONA_AUTO_STOP_MINUTES": &c.AutoStopMinutes, "DAYTONA_AUTO_ARCHIVE_MINUTES": &c.AutoArchiveMinutes} {
		if v := os.Getenv(name); v != "" {
			n, err := strconv.Atoi(v)
			if err != nil || n < 0 {
				return c, grove.Errorf(grove.ErrInvalid, "%s: want a number of minutes, got %q", name, v)
			}
			*dst = n
		}
	}
	if err := daytonaNetwork(&c); err != nil {
		return c, err
	}
	if c.APIURL == "" || c.APIKey == "" {
		return c, grove.Errorf(grove.ErrInvalid, "--runtime daytona needs DAYTONA_API_URL and DAYTONA_API_KEY (or grove serve --daytona-fake in a build with -tags daytonafake, for development)")
	}
	return c, nil
}

// daytonaNetwork reads DAYTONA_NETWORK (block-all, allow-list, default;
// unset: allow-list when DAYTONA_NETWORK_ALLOW_LIST is set, else
// block-all) and DAYTONA_NETWORK_ALLOW_LIST (comma-separated IPv4 CIDR
// blocks, at most 5), and checks that they agree.
func daytonaNetwork(c *daytona.Config) error {
	mode, err := daytona.ParseNetworkMode(os.Getenv("DAYTONA_NETWORK"))
	if err != nil {
		return grove.Errorf(grove.ErrInvalid, "DAYTONA_NETWORK: %v", err)
	}
	list, err := daytona.ParseAllowList(os.Getenv("DAYTONA_NETWORK_ALLOW_LIST"))
	if err != nil {
		return grove.Errorf(grove.ErrInvalid, "DAYTONA_NETWORK_ALLOW_LIST: %v", err)
	}
	switch {
	case mode == driver.NetworkLimited && len(list) == 0:
		return grove.Errorf(grove.ErrInvalid, "DAYTONA_NETWORK=allow-list needs DAYTONA_NETWORK_ALLOW_LIST (comma-separated IPv4 CIDR blocks)")
	case mode != "" && mode != driver.NetworkLimited && len(list) > 0:
		return grove.Errorf(grove.ErrInvalid, "DAYTONA_NETWORK_ALLOW_LIST is set but DAYTONA_NETWORK=%s; unset DAYTONA_NETWORK or set it to allow-list", os.Getenv("DAYTONA_NETWORK"))
	}
	c.Network, c.NetworkAllowList = mode, list
	return nil
}

// openDaytona returns the daytona driver: on the fake when the dev mode
// asks for it (GROVE_DAYTONA_FAKE=1, see daytona_fake.go), else on
// DAYTONA_API_URL.
func openDaytona(ctx context.Context) (*daytona.Driver, error) {
	if envBool("GROVE_DAYTONA_FAKE") {
		return openDaytonaFake(ctx)
	}
	c, err := daytonaConfig()
	if err != nil {
		return nil, err
	}
	return daytona.New(c)
}

// closers run when the engine closes (the dev fake's containers).
var closers struct {
	sync.Mutex
	fs []func()
}

func runClosers() {
	closers.Lock()
	fs := closers.fs
	closers.fs = nil
	closers.Unlock()
	for i := len(fs) - 1; i >= 0; i-- {
		fs[i]()
	}
}
