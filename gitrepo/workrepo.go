package gitrepo

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/grove-dev/grove"
)

// A work repository is the Grove-owned bare repository that holds one
// user's unpushed work on one repo cache: the branches Grove saved from
// that user's workspaces (refs/grove/branches/<branch>), their eviction
// snapshots (refs/grove/saved/<id>) and what was last pushed from them
// (refs/grove/pushed/<branch>). It borrows the cache's objects through
// alternates and adds only the user's own.
//
// It exists for two invariants at once (DESIGN.md §3):
//
//   - Host git never opens a workspace's repository. Work leaves a
//     workspace only as a bundle produced inside the workspace's runtime,
//     which ReceiveBundle fetches here with every object checked; push and
//     eviction work from here.
//   - Users are separated. The shared cache holds only what came from the
//     remote; a user's workspaces borrow objects from the cache and their
//     own work repository, and no other user's sandbox ever mounts it.
const (
	// SavedBranchPrefix is where a workspace's branch is kept between
	// workspaces.
	SavedBranchPrefix = "refs/grove/branches/"
	// PushedPrefix records the commit last pushed from a branch: the lease
	// of the next force-with-lease.
	PushedPrefix = "refs/grove/pushed/"
)

// WorkReposDir is the directory holding a cache's work repositories.
func WorkReposDir(cacheDir string) string { return filepath.Join(cacheDir, "work") }

// WorkRepoPath is the work repository of user on the cache whose bare
// repository is barePath. The name is a hash of the exact user name, so
// users whose names sanitise alike never share one.
func WorkRepoPath(barePath, user string) string {
	sum := sha256.Sum256([]byte(user))
	name := sanitizeName(user)
	if len(name) > 40 {
		name = name[:40]
	}
	return filepath.Join(WorkReposDir(filepath.Dir(barePath)), name+"-"+hex.EncodeToString(sum[:])[:16]+".git")
}

// EnsureWorkRepo creates the work repository at workPath, borrowing the
// objects of the cache at barePath, if it does not exist yet. The caller
// serialises it with other writes to the cache's work repositories.
func (g *Git) EnsureWorkRepo(ctx context.Context, barePath, workPath string) error {
	if isGitDir(workPath) {
		return nil
	}
	parent := filepath.Dir(workPath)
	if err := os.MkdirAll(parent, 0o755); err != nil {
		return grove.Errorf(grove.ErrUnavailable, "create work repository: %v", err)
	}
	tmp, err := os.MkdirTemp(parent, ".work-tmp-")
	if err != nil {
		return grove.Errorf(grove.ErrUnavailable, "create work repository: %v", err)
	}
	defer os.RemoveAll(tmp) // no-op after the rename
	if _, err := g.run(ctx, call{args: []string{"init", "--quiet", "--bare", "--template=", "--", tmp}, dir: parent}); err != nil {
		return err
	}
	abs, err := filepath.Abs(CacheObjects(barePath))
	if err != nil {
		return grove.Errorf(grove.ErrInvalid, "cache path: %v", err)
	}
	info := filepath.Join(tmp, "objects", "info")
	if err := os.MkdirAll(info, 0o755); err != nil {
		return grove.Errorf(grove.ErrUnavailable, "create work repository: %v", err)
	}
	if err := os.WriteFile(filepath.Join(info, "alternates"), []byte(abs+"\n"), 0o644); err != nil {
		return grove.Errorf(grove.ErrUnavailable, "create work repository: %v", err)
	}
	if err := os.Rename(tmp, workPath); err != nil && !isGitDir(workPath) {
		return grove.Errorf(grove.ErrUnavailable, "install work repository: %v", err)
	}
	return nil
}

// WorkRepoObjects is the object directory of a work repository, which the
// user's workspaces borrow (after the cache's) and a sandbox of that user
// sees read-only at the same path.
func WorkRepoObjects(workPath string) string { return filepath.Join(workPath, "objects") }

// ReceiveBundle takes the objects of the git bundle at bundlePath — made
// inside a workspace's runtime, so untrusted data — into the work
// repository at workPath, and points dst at want. Every object is checked
// (index-pack --strict: git's fsck of each object, and every object they
// name must be present) before any of them joins the repository, and the
// bundle's prerequisites must already be in the work repository or the
// cache. Only this host's git reads the bundle; nothing of the workspace
// is opened. want must be what the bundle's src ref names, or the call
// fails and dst is unchanged.
//
// (git fetch from a bundle would be shorter, but before git 2.48 it skips
// transfer.fsckObjects for bundles: a malformed object went in
// unchecked.)
func (g *Git) ReceiveBundle(ctx context.Context, workPath, bundlePath, src, dst, want string) error {
	if !isHexSHA(want) {
		return grove.Errorf(grove.ErrInvalid, "receive bundle: %q is not a commit id", want)
	}
	for _, r := range []string{src, dst} {
		if err := ValidateRef(r); err != nil {
			return err
		}
	}
	f, err := os.Open(bundlePath)
	if err != nil {
		return grove.Errorf(grove.ErrInvalid, "workspace work could not be received: %v", err)
	}
	defer f.Close()
	r := bufio.NewReaderSize(f, 64<<10)
	refs, prereqs, err := readBundleHeader(r)
	if err != nil {
		return err
	}
	got, ok := refs[src]
	if !ok {
		return grove.Errorf(grove.ErrInvalid, "workspace bundle has no %s", sanitizeForMessage(src))
	}
	if got != want {
		return grove.Errorf(grove.ErrInvalid, "workspace bundle names %s, expected %s", got, want)
	}
	if len(prereqs) > maxPrerequisites {
		return grove.Errorf(grove.ErrInvalid, "workspace bundle names %d prerequisite commits, more than %d", len(prereqs), maxPrerequisites)
	}
	for _, p := range prereqs {
		if !g.HasCommit(ctx, workPath, p) {
			return grove.Errorf(grove.ErrInvalid, "workspace bundle needs commit %s, which Grove does not hold", p)
		}
	}

	// The pack is indexed into a quarantine object directory that borrows
	// the work repository's objects (and through them the cache's), and
	// joins the repository only once every object passed.
	objects, err := filepath.Abs(WorkRepoObjects(workPath))
	if err != nil {
		return grove.Errorf(grove.ErrInvalid, "work repository path: %v", err)
	}
	quarantine, err := os.MkdirTemp(workPath, ".incoming-")
	if err != nil {
		return grove.Errorf(grove.ErrUnavailable, "receive bundle: %v", err)
	}
	defer os.RemoveAll(quarantine)
	if err := os.Mkdir(filepath.Join(quarantine, "pack"), 0o755); err != nil {
		return grove.Errorf(grove.ErrUnavailable, "receive bundle: %v", err)
	}
	env := append(bareEnv(workPath), "GIT_OBJECT_DIRECTORY="+quarantine, "GIT_ALTERNATE_OBJECT_DIRECTORIES="+objects)
	if _, err := g.run(ctx, call{args: []string{"index-pack", "--stdin", "--fix-thin", "--strict"}, env: env, stdin: r}); err != nil {
		var gerr *Error
		if errors.As(err, &gerr) && gerr.Kind == nil {
			return grove.Errorf(grove.ErrInvalid, "workspace work could not be received: %s", firstLine(gerr.Stderr))
		}
		return err
	}
	// want must be a commit (not, say, a tag naming one) that is now there.
	out, err := g.run(ctx, call{args: []string{"cat-file", "-t", "--end-of-options", want}, env: env})
	if err != nil || strings.TrimSpace(string(out)) != "commit" {
		return grove.Errorf(grove.ErrInvalid, "workspace bundle does not carry commit %s", want)
	}
	if err := migratePacks(filepath.Join(quarantine, "pack"), filepath.Join(objects, "pack")); err != nil {
		return err
	}
	return g.SetRef(ctx, workPath, dst, want)
}

// readBundleHeader reads a v2 or v3 git bundle header up to the pack: the
// refs it names and its prerequisites.
func readBundleHeader(r *bufio.Reader) (refs map[string]string, prereqs []string, err error) {
	bad := func(why string) error {
		return grove.Errorf(grove.ErrInvalid, "workspace work could not be received: not a git bundle (%s)", why)
	}
	line := func() (string, error) {
		s, err := r.ReadSlice('\n')
		if err != nil {
			return "", bad("truncated header")
		}
		return string(s[:len(s)-1]), nil
	}
	sig, err := line()
	if err != nil {
		return nil, nil, err
	}
	if sig != "# v2 git bundle" && sig != "# v3 git bundle" {
		return nil, nil, bad("no signature")
	}
	refs = map[string]string{}
	for n := 0; ; n++ {
		if n > 10000 {
			return nil, nil, bad("header too long")
		}
		l, err := line()
		if err != nil {
			return nil, nil, err
		}
		switch {
		case l == "":
			if len(refs) == 0 {
				return nil, nil, bad("no refs")
			}
			return refs, prereqs, nil
		case strings.HasPrefix(l, "@"):
			if sig != "# v3 git bundle" || (l != "@object-format=sha1" && l != "@object-format=sha256") {
				return nil, nil, bad("unsupported capability")
			}
		case strings.HasPrefix(l, "-"):
			sha, _, _ := strings.Cut(l[1:], " ")
			if !isHexSHA(sha) {
				return nil, nil, bad("malformed prerequisite")
			}
			prereqs = append(prereqs, sha)
		default:
			sha, ref, ok := strings.Cut(l, " ")
			if !ok || !isHexSHA(sha) || ValidateRef(ref) != nil {
				return nil, nil, bad("malformed ref")
			}
			if _, dup := refs[ref]; dup {
				return nil, nil, bad("a ref listed twice")
			}
			refs[ref] = sha
		}
	}
}

// migratePacks moves the packs index-pack wrote in quarantine into the
// repository's pack directory, each index last, so git never sees an
// index without its pack.
func migratePacks(from, to string) error {
	entries, err := os.ReadDir(from)
	if err != nil {
		return grove.Errorf(grove.ErrUnavailable, "receive bundle: %v", err)
	}
	sort.SliceStable(entries, func(i, j int) bool {
		return !strings.HasSuffix(entries[i].Name(), ".idx") && strings.HasSuffix(entries[j].Name(), ".idx")
	})
	for _, e := range entries {
		if !strings.HasPrefix(e.Name(), "pack-") {
			continue
		}
		if err := os.Rename(filepath.Join(from, e.Name()), filepath.Join(to, e.Name())); err != nil {
			return grove.Errorf(grove.ErrUnavailable, "receive bundle: %v", err)
		}
	}
	return nil
}

// maxPrerequisites bounds the boundary commits a bundle may name (each
// costs a host git process to check); an agent's work has a handful.
const maxPrerequisites = 1000

// HasCommit reports whether the repository at gitDir (with its alternates)
// holds commit sha.
func (g *Git) HasCommit(ctx context.Context, gitDir, sha string) bool {
	if !isHexSHA(sha) {
		return false
	}
	_, err := g.run(ctx, call{args: []string{"cat-file", "-e", "--end-of-options", sha + "^{commit}"}, env: bareEnv(gitDir)})
	return err == nil
}

// SetRef points ref at commit sha in the Grove-owned repository at gitDir.
func (g *Git) SetRef(ctx context.Context, gitDir, ref, sha string) error {
	if err := ValidateRef(ref); err != nil {
		return err
	}
	if !isHexSHA(sha) {
		return grove.Errorf(grove.ErrInvalid, "%q is not a commit id", sha)
	}
	_, err := g.run(ctx, call{args: []string{"update-ref", "-m", "grove", "--end-of-options", ref, sha}, env: bareEnv(gitDir)})
	return err
}

// LookupRef returns the commit ref names in the repository at gitDir, or
// "" when it does not exist (or gitDir is no repository).
func (g *Git) LookupRef(ctx context.Context, gitDir, ref string) (string, error) {
	if !isGitDir(gitDir) {
		return "", nil
	}
	sha, err := g.ResolveCommit(ctx, gitDir, ref)
	if errors.Is(err, grove.ErrNotFound) {
		return "", nil
	}
	return sha, err
}

// PushWork sends the commit saved for branch in the work repository at
// workPath to refs/heads/<branch> at remoteURL (credential-free; the token
// travels as an HTTP header). With ForceWithLease the lease is what Grove
// last pushed from this branch, else the cache's copy of the remote branch
// (lease), else "must not exist". A rejected push is grove.ErrConflict. On
// success refs/grove/pushed/<branch> records the pushed commit.
func (g *Git) PushWork(ctx context.Context, workPath, remoteURL, branch, lease string, opt PushOptions) (*grove.PushResult, error) {
	if err := ValidateBranch(branch); err != nil {
		return nil, err
	}
	if err := checkPushURL(remoteURL); err != nil {
		return nil, err
	}
	if err := CheckProtected(branch, opt.Protected); err != nil {
		return nil, err
	}
	local, err := g.ResolveCommit(ctx, workPath, SavedBranchPrefix+branch)
	if err != nil {
		return nil, err
	}
	ref := "refs/heads/" + branch
	args := []string{"push", "--porcelain", "--no-verify"}
	if opt.Progress != nil {
		args = append(args, "--progress")
	}
	if opt.ForceWithLease {
		if pushed, err := g.LookupRef(ctx, workPath, PushedPrefix+branch); err != nil {
			return nil, err
		} else if pushed != "" {
			lease = pushed
		}
		args = append(args, "--force-with-lease="+ref+":"+lease)
	}
	if isLocalURL(remoteURL) {
		args = append(args, "--receive-pack="+hardenedReceivePack)
	}
	args = append(args, "--", remoteURL, local+":"+ref)
	out, runErr := g.run(ctx, call{args: args, env: bareEnv(workPath), token: opt.Token, progress: opt.Progress, config: opt.Config})
	flag, summary, found := parsePushPorcelain(out, ref)
	if found && flag == '!' {
		return nil, grove.Errorf(grove.ErrConflict, "push of %s rejected: %s", branch, summary)
	}
	if runErr != nil {
		return nil, runErr
	}
	if !found {
		return nil, grove.Errorf(grove.ErrUnavailable, "push of %s: git reported no status for the branch", branch)
	}
	if err := g.SetRef(ctx, workPath, PushedPrefix+branch, local); err != nil {
		return nil, err
	}
	return &grove.PushResult{Branch: branch, RemoteSHA: local, CreatedBranch: flag == '*', UpToDate: flag == '='}, nil
}

func firstLine(s string) string {
	s, _, _ = strings.Cut(strings.TrimSpace(s), "\n")
	if len(s) > 300 {
		s = s[:300]
	}
	return s
}
