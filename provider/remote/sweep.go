package remote

import (
	"context"
	"fmt"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/grove-dev/grove"
	"github.com/grove-dev/grove/driver"
	"github.com/grove-dev/grove/provider"
)

var _ provider.Scanner = (*Provider)(nil)

// Scan implements provider.Scanner. On the server's side it applies the
// local provider's rules: caches whose repository is gone, stale locks in
// caches and work repositories, crash leftovers under the root. Inside
// runtimes it looks only into sandboxes that are running now (when the
// driver is a driver.SandboxLister): waking every stopped sandbox at
// start-up would cost time and money, and one unreachable backend must not
// stop Grove from starting, so that part is best effort — a failure is
// logged, not returned. There, a workspace whose working tree is gone is
// reported missing (the engine marks it broken; the next acquire rebuilds
// it) and a working tree no record points to is reported as an orphan,
// never removed. A missing tree in a stopped sandbox is found by the next
// acquire, and a sandbox's crash leftovers are swept the first time this
// process uses it (sweepSandbox).
func (p *Provider) Scan(ctx context.Context, caches []*grove.RepoCache, workspaces []*grove.Workspace) (provider.ScanReport, error) {
	rep, err := p.local.Scan(ctx, caches, workspaces)
	if err != nil {
		return rep, err
	}
	lister, ok := p.drv.(driver.SandboxLister)
	if !ok {
		return rep, nil
	}
	owners, err := lister.RunningSandboxes(ctx)
	if err != nil {
		p.log.Warn("remote: reconcile cannot list running sandboxes; their working trees are checked when next used", "err", err)
		return rep, nil
	}
	// A few sandboxes at a time: one listing each, and start-up waits.
	var (
		wg  sync.WaitGroup
		mu  sync.Mutex
		sem = make(chan struct{}, scanParallel)
	)
	for _, o := range owners {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			missing, orphans, err := p.scanSandbox(ctx, o, workspaces)
			if err != nil {
				p.log.Warn("remote: reconcile cannot look into a sandbox", "user", o.User, "project", o.Project, "err", err)
				return
			}
			mu.Lock()
			defer mu.Unlock()
			rep.MissingWorkspaces = append(rep.MissingWorkspaces, missing...)
			rep.OrphanDirs = append(rep.OrphanDirs, orphans...)
		})
	}
	wg.Wait()
	sort.Strings(rep.MissingWorkspaces)
	sort.Strings(rep.OrphanDirs)
	return rep, nil
}

// scanParallel is how many sandboxes Scan looks into at once.
const scanParallel = 8

// listTreesScript prints every directory directly under a worktrees
// directory in the runtime's root — the working trees, and leftovers —
// without walking into any of them or into a bare repository.
const listTreesScript = `root=$1
[ -d "$root" ] || exit 0
find "$root" -mindepth 1 -maxdepth 12 \( -name .bare -o -name .git -o -name .grove-incoming \) -prune -o \
  -path '*/worktrees/*' -prune -type d -print`

// leftoverSuffix ends the name of a working tree being built
// (<name>.tmp-<id>, createScript) or deleted (<name>.removing-<id>,
// removeScript). A working tree's own name ends in its 16-digit hash,
// never in "-ws_" and an id, so no workspace matches it. sweepScript
// removes old ones; Scan counts them as neither workspace nor orphan.
const leftoverSuffix = `-[0-9a-f]{16}\.(tmp|removing)-ws_[0-9a-f]{16}`

var leftover = regexp.MustCompile(leftoverSuffix + `$`)

// scanSandbox compares the working trees in o's running sandbox with the
// records of o's workspaces.
func (p *Provider) scanSandbox(ctx context.Context, o driver.Owner, workspaces []*grove.Workspace) (missing, orphans []string, err error) {
	res, err := p.sh(ctx, &grove.Workspace{User: o.User, Project: o.Project}, grove.ClassRead, 2*time.Minute, listTreesScript, p.root)
	if err != nil {
		return nil, nil, err
	}
	if res.ExitCode != 0 {
		return nil, nil, failed("list working trees", res)
	}
	present := map[string]bool{}
	for _, line := range strings.Split(string(res.Stdout), "\n") {
		if line != "" && !leftover.MatchString(line) {
			present[line] = true
		}
	}
	expected := map[string]bool{}
	for _, ws := range workspaces {
		if ws.LocalPath != "" || ws.User != o.User || ws.Project != o.Project {
			continue
		}
		dir := p.Dir(ws)
		expected[dir] = true
		if !present[dir] && ws.State != grove.WorkspaceCreating && ws.State != grove.WorkspaceBroken {
			missing = append(missing, ws.ID)
		}
	}
	for dir := range present {
		if !expected[dir] {
			orphans = append(orphans, fmt.Sprintf("%s (in the sandbox of %s/%s)", dir, o.User, o.Project))
		}
	}
	sort.Strings(orphans)
	return missing, orphans, nil
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
// working trees half built or renamed aside for deletion (names ending in
// $3, leftoverSuffix), bundles in transit (.grove-incoming/<id>.bundle)
// and outgoing bundles in /tmp. Bare repositories and working trees are
// never walked; paths reach rm as arguments, never through a pipe a
// newline in a name could split. It prints each path it removed.
const sweepScript = `root=$1 mins=$2 leftover=$3
[ -d "$root" ] || exit 0
find "$root" -regextype posix-extended -mindepth 1 -maxdepth 12 \
  \( -name .bare -o -name .git \) -prune -o \
  -path '*/worktrees/*' \( -regex ".*/worktrees/[^/]+$leftover" -mmin +"$mins" -exec rm -rf -- {} \; -print -o -true \) -prune -o \
  -path '*/.grove-incoming/*' \( -regex '.*/\.grove-incoming/ws_[0-9a-f]{16}\.bundle' -mmin +"$mins" -exec rm -rf -- {} \; -print -o -true \) -prune -o \
  -true 2>/dev/null
find /tmp -mindepth 1 -maxdepth 1 -type f -name 'grove-bundle-*' -mmin +"$mins" -exec rm -f -- {} \; -print 2>/dev/null
exit 0`

// sweepSandbox runs sweepScript in control runtime id once per process
// and reports what it removed to the provider's log. It is best effort
// and tried once: a sweep that fails is logged and left to the next
// process, never retried on every later request to the sandbox.
func (p *Provider) sweepSandbox(ctx context.Context, id string) {
	if _, done := p.swept.LoadOrStore(id, true); done {
		return
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Minute)
	defer cancel()
	argv := []string{"sh", "-c", sweepScript, "sh", p.root, strconv.Itoa(int(SandboxTempMinAge / time.Minute)), leftoverSuffix}
	res, err := p.drv.Exec(ctx, id, grove.ExecRequest{Argv: argv, Class: grove.ClassWrite, Timeout: 2 * time.Minute})
	if err == nil && res.ExitCode != 0 {
		err = failed("sweep", res)
	}
	if err != nil {
		p.log.Warn("remote: sweeping a sandbox's crash leftovers failed", "runtime", id, "err", err)
		return
	}
	if out := strings.Split(strings.TrimSpace(string(res.Stdout)), "\n"); out[0] != "" {
		p.log.Warn("remote: removed crash leftovers in a sandbox", "runtime", id, "removed", out)
	}
}
