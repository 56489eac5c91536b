package docker

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sync"

	"github.com/docker/docker/api/types/image"
	"github.com/docker/docker/client"

	"github.com/grove-dev/grove"
	agentsandbox "github.com/grove-dev/grove/images/agent-sandbox"
)

// building serialises image builds in this process: two tests (or two
// requests) asking at once build once.
var building sync.Mutex

// EnsureImage makes sure the agent image of a variant exists in the engine
// and returns its tag. An image already tagged with the hash of the build
// inputs is reused; otherwise build.sh makes the root filesystem (from
// Debian packages, no registry; its tarball is cached across runs) and the
// tarball is imported through the Engine API. Progress lines go to
// progress, which may be nil.
func EnsureImage(ctx context.Context, cli *client.Client, v agentsandbox.Variant, progress io.Writer) (string, error) {
	if progress == nil {
		progress = io.Discard
	}
	tag := v.Tag()
	building.Lock()
	defer building.Unlock()
	if _, err := cli.ImageInspect(ctx, tag); err == nil {
		return tag, tagLatest(ctx, cli, v)
	} else if !isNotFound(err) {
		return "", fmt.Errorf("inspect image %s: %v: %w", tag, err, grove.ErrUnavailable)
	}
	fmt.Fprintf(progress, "building %s from Debian packages (minutes on a cold cache)\n", tag)
	dir, err := os.MkdirTemp("", "grove-image-")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(dir)
	script := filepath.Join(dir, "build.sh")
	if err := os.WriteFile(script, agentsandbox.BuildScript, 0o700); err != nil {
		return "", err
	}
	rootfs := filepath.Join(dir, "rootfs.tar")
	cmd := exec.CommandContext(ctx, "/bin/bash", script, "--variant", string(v), "--rootfs-only", rootfs)
	cmd.Stdout, cmd.Stderr = progress, progress
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("build %s root filesystem: %v: %w", tag, err, grove.ErrUnavailable)
	}
	f, err := os.Open(rootfs)
	if err != nil {
		return "", err
	}
	defer f.Close()
	fmt.Fprintf(progress, "importing %s\n", tag)
	out, err := cli.ImageImport(ctx, image.ImportSource{Source: f, SourceName: "-"}, tag,
		image.ImportOptions{Changes: v.ImportChanges(), Message: "grove agent-sandbox " + string(v)})
	if err != nil {
		return "", fmt.Errorf("import %s: %v: %w", tag, err, grove.ErrUnavailable)
	}
	drain(out)
	if _, err := cli.ImageInspect(ctx, tag); err != nil {
		return "", fmt.Errorf("imported image %s is missing: %v: %w", tag, err, grove.ErrUnavailable)
	}
	fmt.Fprintf(progress, "built %s\n", tag)
	return tag, tagLatest(ctx, cli, v)
}

func tagLatest(ctx context.Context, cli *client.Client, v agentsandbox.Variant) error {
	if err := cli.ImageTag(ctx, v.Tag(), v.Repository()+":latest"); err != nil {
		return fmt.Errorf("tag %s latest: %v: %w", v.Repository(), err, grove.ErrUnavailable)
	}
	return nil
}
