package engine_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/docker/docker/client"

	"github.com/grove-dev/grove"
	"github.com/grove-dev/grove/driver/docker"
	agentsandbox "github.com/grove-dev/grove/images/agent-sandbox"
	"github.com/grove-dev/grove/internal/testenv"
)

// dockerDriver returns a docker driver over a reachable engine with the agent
// image built, or skips (fails in CI) through testenv.
func dockerDriver(t *testing.T) *docker.Driver {
	t.Helper()
	cli, err := client.NewClientWithOpts(client.FromEnv, client.WithAPIVersionNegotiation())
	why := ""
	if err == nil {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		_, err = cli.Ping(ctx)
		cancel()
	}
	if err != nil {
		why = err.Error()
	}
	testenv.Require(t, "docker", err == nil, why)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
	defer cancel()
	if _, err := docker.EnsureImage(ctx, cli, agentsandbox.Full, os.Stderr); err != nil {
		t.Fatalf("agent image: %v", err)
	}
	d, err := docker.New(context.Background(), docker.Options{Client: cli})
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// The whole path an agent takes on the docker runtime: acquire, a command
// in the container writes and runs git, the host commits, the container
// sees the commit, and destroy removes the container.
func TestDockerRuntimeThroughTheEngine(t *testing.T) {
	drv := dockerDriver(t)
	f := newFixture(t, fixtureOpt{drv: drv})
	src := sourceRepo(t)
	project := fmt.Sprintf("engine-docker-%d", os.Getpid())
	ws, _, err := f.eng.Acquire(bg, grove.AcquireRequest{Repo: src, User: "alice", Project: project, Mode: grove.ModeEdit, Conversation: "c1"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.eng.Destroy(context.Background(), ws.ID) })

	res, err := f.eng.Exec(bg, ws.ID, grove.ExecRequest{Shell: "echo from-container > made.txt && git status --porcelain && id -u"})
	if err != nil {
		t.Fatal(err)
	}
	if res.ExitCode != 0 || !strings.Contains(string(res.Stdout), "?? made.txt") || strings.HasPrefix(string(res.Stdout), "0\n") {
		t.Fatalf("exec in the container: %+v stdout=%q stderr=%q", res, res.Stdout, res.Stderr)
	}
	if got, err := os.ReadFile(filepath.Join(ws.LocalPath, "made.txt")); err != nil || string(got) != "from-container\n" {
		t.Fatalf("host view of the container's file: %v %q", err, got)
	}
	c, err := f.eng.Commit(bg, ws.ID, grove.CommitRequest{Message: "made in a container"})
	if err != nil {
		t.Fatal(err)
	}
	res, err = f.eng.Exec(bg, ws.ID, grove.ExecRequest{Argv: []string{"git", "log", "-1", "--format=%H %s"}, Class: grove.ClassRead})
	if err != nil || strings.TrimSpace(string(res.Stdout)) != c.SHA+" made in a container" {
		t.Fatalf("the container does not see the host's commit: %v %q %q", err, res.Stdout, res.Stderr)
	}
	// No network by default.
	res, err = f.eng.Exec(bg, ws.ID, grove.ExecRequest{Shell: "tail -n +3 /proc/net/dev | grep -vc '^ *lo:'", Class: grove.ClassRead})
	if err != nil || strings.TrimSpace(string(res.Stdout)) != "0" {
		t.Fatalf("interfaces besides loopback: %v %q", err, res.Stdout)
	}

	// Release stops the container; the next command resumes it.
	if err := f.eng.Release(bg, ws.ID); err != nil {
		t.Fatal(err)
	}
	res, err = f.eng.Exec(bg, ws.ID, grove.ExecRequest{Argv: []string{"cat", "made.txt"}, Class: grove.ClassRead})
	if err != nil || string(res.Stdout) != "from-container\n" {
		t.Fatalf("after release: %v %+v", err, res)
	}
	if err := f.eng.Destroy(bg, ws.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := drv.Get(bg, ws.ID); err == nil {
		t.Fatal("the runtime outlived its workspace")
	}
}
