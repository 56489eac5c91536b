package docker_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"

	"github.com/grove-dev/grove"
	"github.com/grove-dev/grove/driver"
	"github.com/grove-dev/grove/driver/docker"
)

// Run: go test ./driver/docker -run '^$' -bench . -benchtime 200x
// Compare ns/op of the grove and cli sub-benchmarks for the ratio.

func benchWorkspace(b *testing.B, d *docker.Driver, project string) driver.Spec {
	b.Helper()
	dir := filepath.Join(b.TempDir(), "ws")
	if err := os.Mkdir(dir, 0o755); err != nil {
		b.Fatal(err)
	}
	ownForAgent(b, dir)
	spec := driver.Spec{WorkspaceID: fmt.Sprintf("bench-%d", seq()), User: "bench", Project: project, WorkDir: dir, Writable: true}
	if _, err := d.Create(context.Background(), spec); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = d.Destroy(context.Background(), spec.WorkspaceID) })
	return spec
}

// BenchmarkExecTrue: `true` through the driver (Engine API) and through the
// docker CLI against the same container, in the same run.
func BenchmarkExecTrue(b *testing.B) {
	d := newDriver(b, docker.Options{})
	spec := benchWorkspace(b, d, "exec-true")
	rt, _ := d.Get(context.Background(), spec.WorkspaceID)
	b.Run("grove", func(b *testing.B) {
		for b.Loop() {
			res, err := d.Exec(context.Background(), spec.WorkspaceID, grove.ExecRequest{Argv: []string{"true"}})
			if err != nil || res.ExitCode != 0 {
				b.Fatal(err, res)
			}
		}
	})
	cli, err := exec.LookPath("docker")
	if err != nil {
		b.Skip("docker CLI not installed: no raw baseline")
	}
	b.Run("cli", func(b *testing.B) {
		for b.Loop() {
			if out, err := exec.Command(cli, "exec", "-w", spec.WorkDir, rt.BackendID, "true").CombinedOutput(); err != nil {
				b.Fatal(err, string(out))
			}
		}
	})
}

// BenchmarkColdExec: create the container, start it, run the first command,
// remove it again.
func BenchmarkColdExec(b *testing.B) {
	d := newDriver(b, docker.Options{})
	dir := filepath.Join(b.TempDir(), "ws")
	os.Mkdir(dir, 0o755)
	ownForAgent(b, dir)
	for i := 0; b.Loop(); i++ {
		spec := driver.Spec{WorkspaceID: fmt.Sprintf("cold-%d", i), User: "bench", Project: "cold", WorkDir: dir, Writable: true}
		if _, err := d.Create(context.Background(), spec); err != nil {
			b.Fatal(err)
		}
		if res, err := d.Exec(context.Background(), spec.WorkspaceID, grove.ExecRequest{Argv: []string{"true"}}); err != nil || res.ExitCode != 0 {
			b.Fatal(err, res)
		}
		b.StopTimer()
		_ = d.Destroy(context.Background(), spec.WorkspaceID)
		b.StartTimer()
	}
}

// BenchmarkFile4KiB: a 4 KiB file through the runtime (the archive API)
// next to the host path the local engine uses.
func BenchmarkFile4KiB(b *testing.B) {
	d := newDriver(b, docker.Options{})
	spec := benchWorkspace(b, d, "file")
	data := make([]byte, 4096)
	ctx := context.Background()
	b.Run("archive-write", func(b *testing.B) {
		for b.Loop() {
			if err := d.CopyTo(ctx, spec.WorkspaceID, "f", data, 0o644); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("archive-read", func(b *testing.B) {
		for b.Loop() {
			if _, err := d.CopyFrom(ctx, spec.WorkspaceID, "f", 1<<20); err != nil {
				b.Fatal(err)
			}
		}
	})
	p := filepath.Join(spec.WorkDir, "f")
	b.Run("host-write", func(b *testing.B) {
		for b.Loop() {
			if err := os.WriteFile(p, data, 0o644); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("host-read", func(b *testing.B) {
		for b.Loop() {
			if _, err := os.ReadFile(p); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkConcurrentWorkspaces: 8 workspaces of one container each run
// `true`, all at once; one op is one round of 8.
func BenchmarkConcurrentWorkspaces(b *testing.B) {
	d := newDriver(b, docker.Options{})
	var specs []driver.Spec
	for range 8 {
		specs = append(specs, benchWorkspace(b, d, "eight"))
	}
	for b.Loop() {
		var wg sync.WaitGroup
		for _, s := range specs {
			wg.Add(1)
			go func() {
				defer wg.Done()
				if res, err := d.Exec(context.Background(), s.WorkspaceID, grove.ExecRequest{Argv: []string{"true"}}); err != nil || res.ExitCode != 0 {
					b.Error(err, res)
				}
			}()
		}
		wg.Wait()
	}
}
