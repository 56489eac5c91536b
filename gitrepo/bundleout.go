package gitrepo

import (
	"context"
	"io"
)

// CreateBundle writes a git bundle of refs (and their history, objects
// borrowed through alternates included, without the history of the
// commits in exclude, which the receiver holds) from the repository at
// gitDir to w. Remote providers use it to carry a workspace's starting
// point into a runtime, from a Grove-owned repository.
func (g *Git) CreateBundle(ctx context.Context, gitDir string, w io.Writer, refs, exclude []string) error {
	for _, r := range refs {
		if err := ValidateRef(r); err != nil {
			return err
		}
	}
	args := append([]string{"bundle", "create", "--quiet", "-"}, refs...)
	for _, sha := range exclude {
		if isHexSHA(sha) {
			args = append(args, "^"+sha)
		}
	}
	_, err := g.run(ctx, call{args: args, env: bareEnv(gitDir), stdout: w})
	return err
}

// DeleteRef deletes ref in the repository at gitDir; a missing ref is not
// an error.
func (g *Git) DeleteRef(ctx context.Context, gitDir, ref string) error {
	if err := ValidateRef(ref); err != nil {
		return err
	}
	_, err := g.run(ctx, call{args: []string{"update-ref", "-d", "--end-of-options", ref}, env: bareEnv(gitDir)})
	return err
}
