//go:build daytonafake

package main

import (
	"context"
	"fmt"
	"os"
	"sync"
	"testing"

	"github.com/docker/docker/client"

	"github.com/grove-dev/grove"
	"github.com/grove-dev/grove/driver/daytona"
	"github.com/grove-dev/grove/driver/daytona/daytonatest"
	"github.com/grove-dev/grove/driver/docker"
	agentsandbox "github.com/grove-dev/grove/images/agent-sandbox"
)

// DEVELOPMENT ONLY. With -tags daytonafake, GROVE_DAYTONA_FAKE=1 (or
// grove serve --daytona-fake) runs the Daytona runtime against the
// in-repository fake (driver/daytona/daytonatest): a control plane and
// toolbox in this process, sandboxes as Docker containers of the agent
// image. The fake's state lives in this process: use it with grove serve
// (and GROVE_SERVER clients); its containers are removed when the engine
// closes. It locates the OpenAPI documents with `go list`, so it runs
// from a checkout with the Go toolchain.

// devTB is the little of testing.TB the fake uses, for a program.
type devTB struct {
	testing.TB // nil: any other method panics
	mu         sync.Mutex
	cleanups   []func()
}

func (d *devTB) Helper() {}
func (d *devTB) Errorf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "daytona fake: "+format+"\n", args...)
}
func (d *devTB) Fatal(args ...any) { panic(devFatal(fmt.Sprint(args...))) }
func (d *devTB) Fatalf(format string, args ...any) {
	panic(devFatal(fmt.Sprintf(format, args...)))
}
func (d *devTB) Cleanup(f func()) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.cleanups = append(d.cleanups, f)
}
func (d *devTB) close() {
	d.mu.Lock()
	fs := d.cleanups
	d.cleanups = nil
	d.mu.Unlock()
	for i := len(fs) - 1; i >= 0; i-- {
		fs[i]()
	}
}

type devFatal string

const fakeKey = "daytona-fake-key"

func openDaytonaFake(ctx context.Context) (drv *daytona.Driver, err error) {
	fmt.Fprintln(os.Stderr, "WARNING: the Daytona runtime runs against the in-process FAKE (development only)")
	cli, err := client.NewClientWithOpts(client.FromEnv, client.WithAPIVersionNegotiation())
	if err != nil {
		return nil, grove.Errorf(grove.ErrUnavailable, "docker client: %v", err)
	}
	img, err := docker.EnsureImage(ctx, cli, agentsandbox.Full, os.Stderr)
	if err != nil {
		return nil, err
	}
	tb := &devTB{}
	defer func() {
		if r := recover(); r != nil {
			msg, ok := r.(devFatal)
			if !ok {
				panic(r)
			}
			tb.close()
			drv, err = nil, grove.Errorf(grove.ErrUnavailable, "daytona fake: %s", string(msg))
		}
	}()
	fake := daytonatest.New(tb, cli, daytonatest.Options{Image: img, APIKey: fakeKey})
	addCloser(tb.close)
	// The agent image's user is "agent".
	root := envOr("DAYTONA_WORKSPACE_ROOT", "/home/agent/grove")
	c := daytona.Config{APIURL: fake.URL, APIKey: fakeKey, WorkspaceRoot: root, AllowMutating: true}
	if err := daytonaNetwork(&c); err != nil {
		return nil, err
	}
	return daytona.New(c)
}

func addCloser(f func()) {
	closers.Lock()
	defer closers.Unlock()
	closers.fs = append(closers.fs, f)
}
