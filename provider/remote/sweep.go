package remote

import (
	"context"
	"strconv"
	"strings"
	"time"

	"github.com/grove-dev/grove"
	"github.com/grove-dev/grove/provider"
)

var _ provider.Scanner = (*Provider)(nil)

// Scan implements provider.Scanner for what lives on the server: caches
// whose repository is gone, stale locks in caches and work repositories,
// and crash leftovers under the server's root (the local provider's
// rules). Working trees inside runtimes are not probed here — that would
// start every stopped sandbox at start-up and fail it whenever one
// backend is unreachable; a missing tree is found when its workspace is
// next acquired, and a sandbox's own leftovers are swept the first time
// this process uses it (sweepSandbox).
func (p *Provider) Scan(ctx context.Context, caches []*grove.RepoCache, workspaces []*grove.Workspace) (provider.ScanReport, error) {
	return p.local.Scan(ctx, caches, workspaces)
}

// SweepTemp implements provider.Scanner for the server's root.
func (p *Provider) SweepTemp(ctx context.Context) ([]string, error) {
	return p.local.SweepTemp(ctx)
}

// SandboxTempMinAge is how old a leftover in a sandbox must be before a
// sweep removes it. Longer than the server-side rule: every server of a
// cluster uses the same sandbox, and building a working tree may take up
// to its ten-minute bound on each step.
const SandboxTempMinAge = time.Hour

// sweepScript removes what a crash of any server left in a sandbox:
// half-built working trees (<name>.tmp-<id>), trees renamed aside for
// deletion (<name>.removing-<id>), bundles in transit
// (.grove-incoming/<id>.bundle) and outgoing bundles in /tmp. The
// patterns are exact: a working tree's own name ends in its 16-digit
// hash, never in "-ws_" and an id, so no workspace matches; bare
// repositories and working trees are never walked; paths reach rm as
// arguments, never through a pipe a newline in a name could split. It
// prints each path it removed.
const sweepScript = `root=$1 mins=$2
[ -d "$root" ] || exit 0
find "$root" -regextype posix-extended -mindepth 1 -maxdepth 12 \
  \( -name .bare -o -name .git \) -prune -o \
  -path '*/worktrees/*' \( -regex '.*/worktrees/[^/]+-[0-9a-f]{16}\.(tmp|removing)-ws_[0-9a-f]{16}' -mmin +"$mins" -exec rm -rf -- {} \; -print -o -true \) -prune -o \
  -path '*/.grove-incoming/*' \( -regex '.*/\.grove-incoming/ws_[0-9a-f]{16}\.bundle' -mmin +"$mins" -exec rm -rf -- {} \; -print -o -true \) -prune -o \
  -true 2>/dev/null
find /tmp -mindepth 1 -maxdepth 1 -type f -name 'grove-bundle-*' -mmin +"$mins" -exec rm -f -- {} \; -print 2>/dev/null
exit 0`

// sweepSandbox runs sweepScript in control runtime id once per process
// and reports what it removed to the provider's log. It is best effort:
// a sandbox it cannot sweep now is left for the next process.
func (p *Provider) sweepSandbox(ctx context.Context, id string) {
	if _, done := p.swept.LoadOrStore(id, true); done {
		return
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Minute)
	defer cancel()
	argv := []string{"sh", "-c", sweepScript, "sh", p.root, strconv.Itoa(int(SandboxTempMinAge / time.Minute))}
	res, err := p.drv.Exec(ctx, id, grove.ExecRequest{Argv: argv, Class: grove.ClassWrite, Timeout: 2 * time.Minute})
	if err != nil || res.ExitCode != 0 {
		p.swept.Delete(id)
		return
	}
	if out := strings.Split(strings.TrimSpace(string(res.Stdout)), "\n"); out[0] != "" {
		p.log.Warn("remote: removed crash leftovers in a sandbox", "runtime", id, "removed", out)
	}
}
