package main

import (
	"os"

	"github.com/grove-dev/grove"
	"github.com/grove-dev/grove/client"
)

// openRemote makes every workspace command speak to a server: --server or
// GROVE_SERVER names it, GROVE_API_KEY (never a flag: argv is visible in
// /proc) authenticates.
func openRemote(server string) (*app, error) {
	key := os.Getenv("GROVE_API_KEY")
	if key == "" {
		return nil, grove.Errorf(grove.ErrUnauthorized, "--server needs GROVE_API_KEY")
	}
	return &app{svc: client.New(server, key, nil), close: func() {}}, nil
}
