package execpath_test

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/grove-dev/grove"
	"github.com/grove-dev/grove/gitrepo"
	"github.com/grove-dev/grove/provider/execpath"
)

// TestWorkspaceGitOps is status, inspect, diff, commit and log of a
// workspace, all run in its runtime.
func TestWorkspaceGitOps(t *testing.T) {
	for name, mk := range runtimes {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			bare, ws := cacheAndWorkspace(t)
			d := mk(t)
			id := start(t, d, name, bare, ws)
			base := gitOutS(t, ws, "rev-parse", "HEAD")

			write(t, filepath.Join(ws, "b.txt"), "beta\nworld\n")
			write(t, filepath.Join(ws, "new file.txt"), "n\n")
			if err := os.Remove(filepath.Join(ws, "a.go")); err != nil {
				t.Fatal(err)
			}
			st, err := execpath.Status(ctx, d, id)
			if err != nil {
				t.Fatal(err)
			}
			if st.Branch != "agent/x" || st.Head != base || st.Clean || len(st.Unstaged) != 2 || len(st.Untracked) != 1 || st.Untracked[0] != "new file.txt" {
				t.Errorf("Status = %+v", st)
			}
			if info, err := execpath.Inspect(ctx, d, id); err != nil || !info.Dirty || info.Head != base {
				t.Errorf("Inspect = %+v, %v; want dirty at %s", info, err, base)
			}

			diff, err := execpath.Diff(ctx, d, id, grove.DiffRequest{})
			if err != nil {
				t.Fatal(err)
			}
			if len(diff.Files) != 2 || !strings.Contains(diff.Patch, "+world") || !strings.Contains(diff.Patch, "-func Alpha() {}") || diff.Truncated {
				t.Errorf("Diff = %+v", diff)
			}
			if diff, err := execpath.Diff(ctx, d, id, grove.DiffRequest{MaxBytes: 10}); err != nil || !diff.Truncated || len(diff.Patch) != 10 {
				t.Errorf("capped Diff = %+v, %v", diff, err)
			}
			if diff, err := execpath.Diff(ctx, d, id, grove.DiffRequest{Paths: []string{"b.txt"}, StatOnly: true}); err != nil || len(diff.Files) != 1 || diff.Files[0].Additions != 1 || diff.Patch != "" {
				t.Errorf("path Diff = %+v, %v", diff, err)
			}
			git(t, ws, "add", "b.txt")
			if diff, err := execpath.Diff(ctx, d, id, grove.DiffRequest{StagedOnly: true}); err != nil || len(diff.Files) != 1 || diff.Files[0].Path != "b.txt" {
				t.Errorf("staged Diff = %+v, %v", diff, err)
			}
			// Callers validate these (engine.checkGitPaths); git still
			// refuses them rather than reading outside the workspace.
			for _, req := range []grove.DiffRequest{{BaseRef: "-x"}, {Paths: []string{"../x"}}, {Paths: []string{"/etc/passwd"}}} {
				if _, err := execpath.Diff(ctx, d, id, req); err == nil {
					t.Errorf("Diff(%+v) accepted bad input", req)
				}
			}

			// Commit only the named path; the rest stays uncommitted.
			res, err := execpath.Commit(ctx, d, id, grove.CommitRequest{Message: "b", Paths: []string{"b.txt"}, AuthorName: "Alice", AuthorEmail: "alice@example.com"}, gitrepo.Identity{Name: "Configured Bot", Email: "bot@example.com"})
			if err != nil {
				t.Fatal(err)
			}
			if res.FilesChanged != 1 || res.Insertions != 1 || res.Deletions != 0 || !gitrepo.IsCommitID(res.SHA) {
				t.Errorf("Commit = %+v", res)
			}
			if who := gitOutS(t, ws, "log", "-1", "--format=%an <%ae>|%cn <%ce>|%s"); who != "Alice <alice@example.com>|Configured Bot <bot@example.com>|b" {
				t.Errorf("author|committer|subject = %q", who)
			}
			if st, err := execpath.Status(ctx, d, id); err != nil || len(st.Unstaged) != 1 || len(st.Untracked) != 1 {
				t.Errorf("Status after a path commit = %+v, %v; want a.go and the new file left", st, err)
			}
			// Everything else, signed by the default identity.
			res2, err := execpath.Commit(ctx, d, id, grove.CommitRequest{Message: "rest"}, gitrepo.Identity{})
			if err != nil {
				t.Fatal(err)
			}
			if res2.FilesChanged != 2 || res2.Insertions != 1 || res2.Deletions != 3 {
				t.Errorf("Commit(all) = %+v", res2)
			}
			if who := gitOutS(t, ws, "log", "-1", "--format=%an|%cn <%ce>"); who != gitrepo.DefaultIdentity.Name+"|"+gitrepo.DefaultIdentity.Name+" <"+gitrepo.DefaultIdentity.Email+">" {
				t.Errorf("default identity: %q", who)
			}
			if _, err := execpath.Commit(ctx, d, id, grove.CommitRequest{Message: "again"}, gitrepo.Identity{}); !errors.Is(err, grove.ErrNothingToCommit) {
				t.Errorf("empty Commit = %v, want ErrNothingToCommit", err)
			}
			write(t, filepath.Join(ws, "pending.txt"), "p\n")
			for _, tc := range []struct {
				name string
				req  grove.CommitRequest
				who  gitrepo.Identity
			}{
				{"empty message", grove.CommitRequest{Message: ""}, gitrepo.Identity{}},
				{"blank message", grove.CommitRequest{Message: " \n\t"}, gitrepo.Identity{}},
				{"NUL in message", grove.CommitRequest{Message: "a\x00b"}, gitrepo.Identity{}},
				{"invalid UTF-8", grove.CommitRequest{Message: "\xff"}, gitrepo.Identity{}},
				{"forged author line", grove.CommitRequest{Message: "x", AuthorName: "a\ncommitter b"}, gitrepo.Identity{}},
				{"author email with <>", grove.CommitRequest{Message: "x", AuthorEmail: "a>b"}, gitrepo.Identity{}},
				{"bad committer", grove.CommitRequest{Message: "x"}, gitrepo.Identity{Name: "n\r", Email: "e@x"}},
			} {
				if _, err := execpath.Commit(ctx, d, id, tc.req, tc.who); !errors.Is(err, grove.ErrInvalid) {
					t.Errorf("Commit(%s) = %v, want ErrInvalid", tc.name, err)
				}
			}
			if head := gitOutS(t, ws, "rev-parse", "HEAD"); head != res2.SHA {
				t.Errorf("a refused commit moved HEAD to %s", head)
			}
			if _, err := execpath.Commit(ctx, d, id, grove.CommitRequest{Message: "x", Paths: []string{"../../etc/passwd"}}, gitrepo.Identity{}); err == nil {
				t.Error("commit of a path outside the workspace succeeded")
			}
			if err := os.Remove(filepath.Join(ws, "pending.txt")); err != nil {
				t.Fatal(err)
			}

			log, err := execpath.Log(ctx, d, id, 10, "")
			if err != nil {
				t.Fatal(err)
			}
			if len(log) != 3 || log[0].SHA != res2.SHA || log[1].SHA != res.SHA || log[1].Author != "Alice" || log[0].Subject != "rest" || log[2].SHA != base {
				t.Errorf("Log = %+v", log)
			}
			if log, err := execpath.Log(ctx, d, id, 10, "b.txt"); err != nil || len(log) != 2 {
				t.Errorf("Log(b.txt) = %+v, %v", log, err)
			}
			if log, err := execpath.Log(ctx, d, id, 1, ""); err != nil || len(log) != 1 {
				t.Errorf("Log(limit 1) = %+v, %v", log, err)
			}
			if st, err := execpath.Status(ctx, d, id); err != nil || !st.Clean {
				t.Errorf("Status after commits = %+v, %v", st, err)
			}
		})
	}
}

func TestInspect(t *testing.T) {
	tests := []struct {
		name      string
		change    func(t *testing.T, ws string)
		wantDirty bool
	}{
		{"fresh", func(*testing.T, string) {}, false},
		{"ignored file only", func(t *testing.T, ws string) { write(t, filepath.Join(ws, "x.log"), "noise\n") }, false},
		{"untracked file", func(t *testing.T, ws string) { write(t, filepath.Join(ws, "n.txt"), "n\n") }, true},
		{"modified file", func(t *testing.T, ws string) { write(t, filepath.Join(ws, "b.txt"), "changed\n") }, true},
		{"staged file", func(t *testing.T, ws string) {
			write(t, filepath.Join(ws, "s.txt"), "s\n")
			git(t, ws, "add", "s.txt")
		}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			bare, ws := cacheAndWorkspace(t)
			d := runtimes["subprocess"](t)
			id := start(t, d, "subprocess", bare, ws)
			tt.change(t, ws)
			info, err := execpath.Inspect(context.Background(), d, id)
			if err != nil {
				t.Fatal(err)
			}
			if info.Dirty != tt.wantDirty || info.Head != gitOutS(t, ws, "rev-parse", "HEAD") {
				t.Errorf("Inspect = %+v, want dirty=%v", info, tt.wantDirty)
			}
		})
	}
}

// TestGroveGitRunsNoHooks: the agent may plant hooks and point
// core.hooksPath at them; Grove's own commits and snapshots in the runtime
// still run none. The control shows the hooks are live for plain git in
// the same runtime.
func TestGroveGitRunsNoHooks(t *testing.T) {
	for name, mk := range runtimes {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			bare, ws := cacheAndWorkspace(t)
			marker := filepath.Join(ws, "hook-ran")
			hooks := filepath.Join(ws, ".git", "agent-hooks")
			for _, n := range []string{"pre-commit", "commit-msg", "prepare-commit-msg", "post-commit", "reference-transaction"} {
				p := filepath.Join(hooks, n)
				write(t, p, "#!/bin/sh\necho \"$0\" >> "+marker+"\n")
				if err := os.Chmod(p, 0o755); err != nil {
					t.Fatal(err)
				}
			}
			git(t, ws, "config", "core.hooksPath", hooks)
			write(t, filepath.Join(ws, ".gitignore"), "*.log\nhook-ran\n")
			d := mk(t)
			id := start(t, d, name, bare, ws)

			write(t, filepath.Join(ws, "x.txt"), "x\n")
			if _, err := execpath.Commit(ctx, d, id, grove.CommitRequest{Message: "x"}, gitrepo.Identity{}); err != nil {
				t.Fatal(err)
			}
			write(t, filepath.Join(ws, "y.txt"), "y\n")
			if _, err := execpath.Snapshot(ctx, d, id, "snap", gitrepo.Identity{}); err != nil {
				t.Fatal(err)
			}
			// (Under bwrap SetUpstream cannot write the protected
			// .git/config; TestSetUpstream covers that. Its update-ref
			// still runs first.)
			if err := execpath.SetUpstream(ctx, d, id, "agent/x", gitOutS(t, ws, "rev-parse", "HEAD")); err != nil && name == "subprocess" {
				t.Fatal(err)
			}
			if b, err := os.ReadFile(marker); err == nil {
				t.Fatalf("a hook ran for Grove's git:\n%s", b)
			}

			res, err := d.Exec(ctx, id, grove.ExecRequest{
				Argv:  []string{"sh", "-c", "git add -A && git -c user.name=a -c user.email=a@x.invalid commit -qm plain"},
				Class: grove.ClassWrite,
			})
			if err != nil || res.ExitCode != 0 {
				t.Fatalf("control commit: %v %+v", err, res)
			}
			if _, err := os.Stat(marker); err != nil {
				t.Fatalf("control: plain git commit in the runtime did not run the planted hook: %v", err)
			}
		})
	}
}

// TestSetUpstream records the upstream of a branch pushed from Grove's
// copy, so the agent's own git shows ahead/behind.
func TestSetUpstream(t *testing.T) {
	for name, mk := range runtimes {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			bare, ws := cacheAndWorkspace(t)
			d := mk(t)
			id := start(t, d, name, bare, ws)
			base := gitOutS(t, ws, "rev-parse", "HEAD")
			write(t, filepath.Join(ws, "ahead.txt"), "a\n")
			git(t, ws, "add", "-A")
			git(t, ws, "commit", "-qm", "ahead")

			// The upstream config comes from workspace creation (the
			// sandbox cannot write .git/config); SetUpstream records where
			// the push left the remote.
			if err := execpath.SetUpstream(ctx, d, id, "agent/x", base); err != nil {
				t.Fatal(err)
			}
			if up := gitOutS(t, ws, "rev-parse", "--abbrev-ref", "agent/x@{upstream}"); up != "origin/agent/x" {
				t.Errorf("upstream = %q", up)
			}
			if got := gitOutS(t, ws, "rev-parse", "refs/remotes/origin/agent/x"); got != base {
				t.Errorf("origin/agent/x = %s, want %s", got, base)
			}
			st, err := execpath.Status(ctx, d, id)
			if err != nil || st.Upstream != "origin/agent/x" || st.Ahead != 1 || st.Behind != 0 {
				t.Errorf("status after SetUpstream = %+v, %v; want 1 ahead of origin/agent/x", st, err)
			}
			for _, tc := range []struct{ branch, sha string }{
				{"-x", base}, {"a..b", base}, {"refs/heads/x", base}, {"agent/x", "HEAD"}, {"agent/x", base[:12]},
			} {
				if err := execpath.SetUpstream(ctx, d, id, tc.branch, tc.sha); !errors.Is(err, grove.ErrInvalid) {
					t.Errorf("SetUpstream(%q, %q) = %v, want ErrInvalid", tc.branch, tc.sha, err)
				}
			}
		})
	}
}

// TestSnapshotBundleReceive saves everything in a workspace as one commit
// without touching its state, carries it out as a bundle from the runtime
// and receives it into the user's work repository.
func TestSnapshotBundleReceive(t *testing.T) {
	for name, mk := range runtimes {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			bare, ws := cacheAndWorkspace(t)
			d := mk(t)
			id := start(t, d, name, bare, ws)
			head := gitOutS(t, ws, "rev-parse", "HEAD")
			write(t, filepath.Join(ws, "a.go"), "changed\n")      // unstaged
			write(t, filepath.Join(ws, "new.txt"), "untracked\n") // untracked
			write(t, filepath.Join(ws, "noise.log"), "ignored\n") // ignored
			write(t, filepath.Join(ws, "staged.txt"), "staged\n") // staged
			git(t, ws, "add", "staged.txt")
			before := gitOutS(t, ws, "status", "--porcelain=v2", "--branch")
			index, err := os.ReadFile(filepath.Join(ws, ".git", "index"))
			if err != nil {
				t.Fatal(err)
			}

			sha, err := execpath.Snapshot(ctx, d, id, "grove: saved before eviction", gitrepo.Identity{Name: "Evictor", Email: "e@x.invalid"})
			if err != nil {
				t.Fatal(err)
			}
			if after := gitOutS(t, ws, "status", "--porcelain=v2", "--branch"); after != before {
				t.Fatalf("snapshot changed the workspace's state:\n%s\n---\n%s", before, after)
			}
			if after, _ := os.ReadFile(filepath.Join(ws, ".git", "index")); !bytes.Equal(after, index) {
				t.Error("snapshot rewrote the workspace's index")
			}
			if got := gitOutS(t, ws, "rev-parse", "HEAD"); got != head {
				t.Fatalf("snapshot moved HEAD")
			}
			if got, err := execpath.Head(ctx, d, id, execpath.SnapshotRef); err != nil || got != sha {
				t.Fatalf("Head(%s) = %s, %v; want %s", execpath.SnapshotRef, got, err, sha)
			}
			if got, err := execpath.Head(ctx, d, id, "refs/heads/agent/x"); err != nil || got != head {
				t.Errorf("Head(branch) = %s, %v; want %s", got, err, head)
			}
			if _, err := execpath.Head(ctx, d, id, "refs/heads/nope"); !errors.Is(err, grove.ErrNotFound) {
				t.Errorf("Head of a missing ref = %v, want ErrNotFound", err)
			}
			if _, err := execpath.Head(ctx, d, id, "HEAD~1"); !errors.Is(err, grove.ErrInvalid) {
				t.Errorf("Head of revision syntax = %v, want ErrInvalid", err)
			}

			// The bundle leaves out what the receiver has (the base), and
			// names it as a prerequisite instead.
			var full, thin bytes.Buffer
			if err := execpath.Bundle(ctx, d, id, execpath.SnapshotRef, nil, &full); err != nil {
				t.Fatal(err)
			}
			if err := execpath.Bundle(ctx, d, id, execpath.SnapshotRef, []string{head, "not-a-sha"}, &thin); err != nil {
				t.Fatal(err)
			}
			if h := bundleHeader(full.Bytes()); strings.Contains(h, "\n-") || !strings.Contains(h, sha+" "+execpath.SnapshotRef+"\n") {
				t.Errorf("full bundle header:\n%s", h)
			}
			if h := bundleHeader(thin.Bytes()); !strings.Contains(h, "\n-"+head) || !strings.Contains(h, sha+" "+execpath.SnapshotRef+"\n") {
				t.Errorf("bundle without the base:\n%s", h)
			}
			if thin.Len() >= full.Len() {
				t.Errorf("excluding the base did not shrink the bundle: %d >= %d", thin.Len(), full.Len())
			}
			if err := execpath.Bundle(ctx, d, id, "refs/heads/nope", nil, &bytes.Buffer{}); err == nil {
				t.Error("bundle of a missing ref succeeded")
			}
			if err := execpath.Bundle(ctx, d, id, "-x", nil, &bytes.Buffer{}); !errors.Is(err, grove.ErrInvalid) {
				t.Errorf("bundle of -x = %v, want ErrInvalid", err)
			}

			g := &gitrepo.Git{}
			work := gitrepo.WorkRepoPath(bare, "u")
			if err := g.EnsureWorkRepo(ctx, bare, work); err != nil {
				t.Fatal(err)
			}
			path := filepath.Join(t.TempDir(), "snap.bundle")
			if err := os.WriteFile(path, thin.Bytes(), 0o600); err != nil {
				t.Fatal(err)
			}
			dst := gitrepo.SavedPrefix + id
			if err := g.ReceiveBundle(ctx, work, path, execpath.SnapshotRef, dst, sha); err != nil {
				t.Fatal(err)
			}
			if got, err := g.LookupRef(ctx, work, dst); err != nil || got != sha {
				t.Fatalf("work repository %s = %s, %v; want %s", dst, got, err, sha)
			}
			wg := "--git-dir=" + work
			for file, want := range map[string]string{"a.go": "changed", "new.txt": "untracked", "staged.txt": "staged", "b.txt": "beta"} {
				if got := gitOutS(t, "", wg, "show", sha+":"+file); got != want {
					t.Errorf("saved %s = %q, want %q", file, got, want)
				}
			}
			if files := gitOutS(t, "", wg, "ls-tree", "--name-only", sha); strings.Contains(files, "noise.log") {
				t.Error("an ignored file was saved")
			}
			if parent := gitOutS(t, "", wg, "rev-parse", sha+"^"); parent != head {
				t.Errorf("snapshot parent %s, want HEAD %s", parent, head)
			}
			if who := gitOutS(t, "", wg, "log", "-1", "--format=%an <%ae>|%s", sha); who != "Evictor <e@x.invalid>|grove: saved before eviction" {
				t.Errorf("snapshot author|subject = %q", who)
			}
			// The cache, shared by every user, never saw the snapshot.
			if _, err := g.ResolveCommit(ctx, bare, sha); !errors.Is(err, grove.ErrNotFound) {
				t.Errorf("snapshot commit reached the cache: %v", err)
			}
		})
	}
}

// bundleHeader is the text before a bundle's pack.
func bundleHeader(b []byte) string {
	h, _, _ := bytes.Cut(b, []byte("\n\n"))
	return string(h) + "\n"
}
