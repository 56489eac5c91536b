package engine_test

import (
	"context"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/docker/docker/client"

	"github.com/grove-dev/grove"
	"github.com/grove-dev/grove/driver/daytona"
	"github.com/grove-dev/grove/driver/daytona/daytonatest"
	"github.com/grove-dev/grove/driver/docker"
	"github.com/grove-dev/grove/engine"
	agentsandbox "github.com/grove-dev/grove/images/agent-sandbox"
	"github.com/grove-dev/grove/internal/testenv"
	"github.com/grove-dev/grove/platform/github/githubtest"
	"github.com/grove-dev/grove/provider/local"
	"github.com/grove-dev/grove/provider/remote"
)

var daytonaImage struct {
	sync.Once
	cli *client.Client
	img string
	err string
}

// daytonaFake starts the fake Daytona (containers of the agent image) and
// a driver on it, or skips (fails under GROVE_TEST_REQUIRE=docker).
func daytonaFake(t *testing.T) (*daytonatest.Server, *daytona.Driver) {
	t.Helper()
	daytonaImage.Do(func() {
		cli, err := client.NewClientWithOpts(client.FromEnv, client.WithAPIVersionNegotiation())
		if err == nil {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			_, err = cli.Ping(ctx)
			cancel()
		}
		if err != nil {
			daytonaImage.err = "docker engine not reachable: " + err.Error()
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
		defer cancel()
		img, err := docker.EnsureImage(ctx, cli, agentsandbox.Full, os.Stderr)
		if err != nil {
			daytonaImage.err = "agent image: " + err.Error()
			return
		}
		daytonaImage.cli, daytonaImage.img = cli, img
	})
	testenv.Require(t, "docker", daytonaImage.cli != nil, daytonaImage.err)
	fake := daytonatest.New(t, daytonaImage.cli, daytonatest.Options{Image: daytonaImage.img, APIKey: "k"})
	drv, err := daytona.New(daytona.Config{APIURL: fake.URL, APIKey: "k", WorkspaceRoot: "/home/agent/grove", AllowMutating: true,
		RetryBackoff: 10 * time.Millisecond, PollInterval: 50 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	return fake, drv
}

// remoteProvider swaps the fixture's local provider for a remote one over
// drv (the local one keeps the caches and work repositories).
func remoteProvider(t *testing.T, drv *daytona.Driver) func(*engine.Config) {
	return func(c *engine.Config) {
		rp, err := remote.New(remote.Options{Local: c.Provider.(*local.Provider), Driver: drv, Root: "/home/agent/grove"})
		if err != nil {
			t.Fatal(err)
		}
		c.Provider = rp
	}
}

// TestRemoteWorkspacesOnDaytona is the README walkthrough on the Daytona
// runtime (the fake, with Docker containers for sandboxes) and remote
// workspaces: no host path anywhere, git through bundles over the files
// API, pushes from Grove's side with a token that never enters a sandbox.
func TestRemoteWorkspacesOnDaytona(t *testing.T) {
	fake, drv := daytonaFake(t)
	gh := githubtest.NewEnterprise(t, 42)
	const aliceTok, bobTok = "ghp_alice_remote_0123456789", "ghp_bob_remote_0123456789"
	gh.SetToken(aliceTok, true)
	gh.SetToken(bobTok, true)
	served := gh.ServeRepo(t, "octo", "private", sourceRepo(t))
	f := newFixture(t, fixtureOpt{drv: drv, allowUnisolated: true, tune: func(c *engine.Config) {
		c.BaseURL = gh.URL
		remoteProvider(t, drv)(c)
	}})
	eng := f.eng
	edit := func(user, tok, conv string) grove.AcquireRequest {
		return grove.AcquireRequest{Repo: "octo/private", User: user, Project: "p", Mode: grove.ModeEdit, Conversation: conv, Token: tok}
	}

	// Acquire, twice: the second is the same workspace.
	ws, created, err := eng.Acquire(bg, edit("alice", aliceTok, "c1"))
	if err != nil || !created {
		t.Fatalf("acquire: %v created=%v", err, created)
	}
	if ws.LocalPath != "" {
		t.Fatalf("a remote workspace has a host path: %q", ws.LocalPath)
	}
	again, created, err := eng.Acquire(bg, edit("alice", aliceTok, "c1"))
	if err != nil || created || again.ID != ws.ID {
		t.Fatalf("re-acquire: %v created=%v id=%s want %s", err, created, again.ID, ws.ID)
	}

	// Files through the files API; commands in the sandbox see them.
	if err := eng.WriteFile(bg, ws.ID, "notes/todo.txt", []byte("remote work\n")); err != nil {
		t.Fatal(err)
	}
	if got, err := eng.ReadFile(bg, ws.ID, "README.md", 0); err != nil || string(got) != "hello\nworld\n" {
		t.Fatalf("read README.md: %v %q", err, got)
	}
	ents, err := eng.ListDir(bg, ws.ID, ".", 2)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range ents {
		names = append(names, e.Path)
	}
	if got := strings.Join(names, ","); !strings.Contains(got, "notes/todo.txt") || !strings.Contains(got, "src/main.go") || strings.Contains(got, ".git") {
		t.Fatalf("listing: %s", got)
	}
	res, err := eng.Exec(bg, ws.ID, grove.ExecRequest{Shell: "cat notes/todo.txt && pwd && echo made > made.txt"})
	if err != nil || res.ExitCode != 0 || !strings.HasPrefix(string(res.Stdout), "remote work\n/home/agent/grove/") {
		t.Fatalf("exec: %v %+v %q %q", err, res, res.Stdout, res.Stderr)
	}
	// Confinement of the file tools: escapes and symlinks are refused.
	if _, err := eng.Exec(bg, ws.ID, grove.ExecRequest{Shell: "ln -s /etc out && ln -s README.md alias && ln -s .git/config gitcfg && ln -s /etc/passwd pw"}); err != nil {
		t.Fatal(err)
	}
	if got, err := eng.ReadFile(bg, ws.ID, "alias", 0); err != nil || string(got) != "hello\nworld\n" {
		t.Fatalf("a symlink inside the workspace: %v %q", err, got)
	}
	for _, p := range []string{"../x", "/etc/passwd", "out/passwd", "out/x", "pw", "gitcfg", ".git/config"} {
		if _, err := eng.ReadFile(bg, ws.ID, p, 0); err == nil {
			t.Errorf("read %q: allowed", p)
		}
		if err := eng.WriteFile(bg, ws.ID, p, []byte("x")); err == nil {
			t.Errorf("write %q: allowed", p)
		}
	}
	if err := eng.DeleteFile(bg, ws.ID, "out"); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{"alias", "gitcfg", "pw"} {
		if err := eng.DeleteFile(bg, ws.ID, p); err != nil {
			t.Fatal(err)
		}
	}
	if err := eng.DeleteFile(bg, ws.ID, "made.txt"); err != nil {
		t.Fatal(err)
	}

	// Search, status and diff run in the sandbox.
	sr, err := eng.Search(bg, ws.ID, grove.SearchRequest{Pattern: "remote work"})
	if err != nil || len(sr.Matches) != 1 || sr.Matches[0].Path != "notes/todo.txt" {
		t.Fatalf("search: %v %+v", err, sr)
	}
	if err := eng.WriteFile(bg, ws.ID, "README.md", []byte("hello\nremote\n")); err != nil {
		t.Fatal(err)
	}
	st, err := eng.Status(bg, ws.ID)
	if err != nil || len(st.Unstaged) != 1 || st.Unstaged[0].Path != "README.md" || len(st.Untracked) != 1 {
		t.Fatalf("status: %v %+v", err, st)
	}
	d, err := eng.Diff(bg, ws.ID, grove.DiffRequest{})
	if err != nil || !strings.Contains(d.Patch, "+remote") {
		t.Fatalf("diff: %v %+v", err, d)
	}

	// Commit, then push from Grove's work repository to the token-checking
	// smart-HTTP remote.
	cr, err := eng.Commit(bg, ws.ID, grove.CommitRequest{Message: "remote commit"})
	if err != nil {
		t.Fatal(err)
	}
	rt, err := drv.Get(bg, ws.ID)
	if err != nil {
		t.Fatal(err)
	}
	sandbox := rt.BackendID
	searched := make(chan string, 1)
	go func() {
		// The sandbox is searched while the push runs, as well as after.
		searched <- tokenTraces(t, fake, sandbox, aliceTok)
	}()
	time.Sleep(300 * time.Millisecond) // the process scan is under way
	pr, err := eng.Push(bg, ws.ID, grove.PushRequest{Token: aliceTok})
	if err != nil {
		t.Fatal(err)
	}
	if got := run(t, "", "git", "--git-dir", served, "rev-parse", "refs/heads/"+ws.Branch); got != cr.SHA || pr.RemoteSHA != cr.SHA {
		t.Fatalf("remote branch at %s (push said %s), want %s", got, pr.RemoteSHA, cr.SHA)
	}
	if traces := <-searched; traces != "" {
		t.Fatalf("the token is in the sandbox during the push:\n%s", traces)
	}
	// After the push, with a control: a root-only file holding the token
	// must be the one thing found (the search reaches all of the sandbox).
	if _, _, code, err := fake.ExecAsRoot(bg, sandbox, "sh", "-c", `umask 077; printf 'x%sx\n' "$1" > /root/grove-control`, "sh", aliceTok); err != nil || code != 0 {
		t.Fatalf("plant the control: %v %d", err, code)
	}
	if traces := tokenTraces(t, fake, sandbox, aliceTok); traces != "/root/grove-control" {
		t.Fatalf("the sandbox after the push: want only the control file, found:\n%s", traces)
	}
	if _, _, _, err := fake.ExecAsRoot(bg, sandbox, "rm", "-f", "/root/grove-control"); err != nil {
		t.Fatal(err)
	}

	// A second branch of the same (user, project) shares the sandbox;
	// another user gets a sandbox of their own.
	uploads := fake.Requests("POST", "/files/upload")
	ws2, _, err := eng.Acquire(bg, edit("alice", aliceTok, "c2"))
	if err != nil {
		t.Fatal(err)
	}
	if n := fake.Requests("POST", "/files/upload") - uploads; n != 0 {
		t.Fatalf("a second working tree at a commit the sandbox holds uploaded %d bundles", n)
	}
	if _, err := eng.Exec(bg, ws2.ID, grove.ExecRequest{Argv: []string{"true"}}); err != nil {
		t.Fatal(err)
	}
	bob, _, err := eng.Acquire(bg, edit("bob", bobTok, "c1"))
	if err != nil {
		t.Fatal(err)
	}
	res, err = eng.Exec(bg, bob.ID, grove.ExecRequest{Shell: "ls /home/agent/grove/*/*/*/worktrees/", Class: grove.ClassRead})
	if err != nil || strings.Contains(string(res.Stdout), "alice") || !strings.Contains(string(res.Stdout), "bob_") {
		t.Fatalf("bob's sandbox: %v %q %q", err, res.Stdout, res.Stderr)
	}
	backend := func(id string) string {
		rt, err := drv.Get(bg, id)
		if err != nil {
			t.Fatal(err)
		}
		return rt.BackendID
	}
	if backend(ws.ID) != backend(ws2.ID) || backend(ws.ID) == backend(bob.ID) {
		t.Fatalf("sandboxes: alice c1 %s, alice c2 %s, bob %s", backend(ws.ID), backend(ws2.ID), backend(bob.ID))
	}
	if n := len(fake.Sandboxes()); n != 2 {
		t.Fatalf("%d sandboxes, want 2 (one per user and project)", n)
	}

	// Release stops the sandbox; re-acquiring finds the uncommitted work.
	if err := eng.WriteFile(bg, ws.ID, "wip.txt", []byte("not committed\n")); err != nil {
		t.Fatal(err)
	}
	if err := eng.Release(bg, ws.ID); err != nil {
		t.Fatal(err)
	}
	if again, _, err = eng.Acquire(bg, edit("alice", aliceTok, "c1")); err != nil || again.ID != ws.ID {
		t.Fatalf("re-acquire after release: %v", err)
	}
	if got, err := eng.ReadFile(bg, ws.ID, "wip.txt", 0); err != nil || string(got) != "not committed\n" {
		t.Fatalf("work after release: %v %q", err, got)
	}

	// Destroy keeps the sandbox and the cache; the branch comes back at
	// its commit on the next acquire.
	if err := eng.Destroy(bg, ws.ID); err != nil {
		t.Fatal(err)
	}
	if n := len(fake.Sandboxes()); n != 2 {
		t.Fatalf("%d sandboxes after destroy, want 2", n)
	}
	if repos, err := eng.ListRepos(bg); err != nil || len(repos) != 1 {
		t.Fatalf("caches after destroy: %v %d", err, len(repos))
	}
	res, err = eng.Exec(bg, ws2.ID, grove.ExecRequest{Shell: "ls ..", Class: grove.ClassRead})
	if err != nil || strings.Contains(string(res.Stdout), "alice_c1") {
		t.Fatalf("the destroyed working tree is still in the sandbox: %v %q", err, res.Stdout)
	}
	back, created, err := eng.Acquire(bg, edit("alice", aliceTok, "c1"))
	if err != nil || !created {
		t.Fatalf("acquire after destroy: %v created=%v", err, created)
	}
	if back.HeadSHA != cr.SHA {
		t.Fatalf("the branch came back at %s, want %s", back.HeadSHA, cr.SHA)
	}
	if got, err := eng.ReadFile(bg, back.ID, "notes/todo.txt", 0); err != nil || string(got) != "remote work\n" {
		t.Fatalf("committed work after destroy: %v %q", err, got)
	}

	// Eviction under pressure snapshots uncommitted work out of the
	// sandbox (a bundle through the files API) and the next acquire puts
	// it back.
	if err := eng.WriteFile(bg, bob.ID, "bob-wip.txt", []byte("bob's unsaved work\n")); err != nil {
		t.Fatal(err)
	}
	rep, err := eng.Evict(bg, engine.EvictionPolicy{MinFreeBytes: 100, FreeBytes: func() (uint64, error) { return 0, nil }})
	if err != nil || rep.Saved[bob.ID] == "" {
		t.Fatalf("evict: %v %+v", err, rep)
	}
	bob2, created, err := eng.Acquire(bg, edit("bob", bobTok, "c1"))
	if err != nil || !created {
		t.Fatalf("acquire after eviction: %v created=%v", err, created)
	}
	if got, err := eng.ReadFile(bg, bob2.ID, "bob-wip.txt", 0); err != nil || string(got) != "bob's unsaved work\n" {
		t.Fatalf("work after eviction: %v %q", err, got)
	}
	if st, err := eng.Status(bg, bob2.ID); err != nil || len(st.Untracked) != 1 {
		t.Fatalf("restored work is not uncommitted: %v %+v", err, st)
	}
}

// tokenTraces searches, as root, the environment and command line of
// every process in the sandbox (repeatedly for 3 s) and its whole
// filesystem (but /proc, /sys and /dev) for tok, and returns what it found. The pattern is
// written so that it does not contain the token itself (a bracket
// expression): neither the search's own command line nor the fake's
// session logs can match it.
func tokenTraces(t *testing.T, fake *daytonatest.Server, sandboxID, tok string) string {
	pat := tok[:len(tok)-1] + "[" + tok[len(tok)-1:] + "]"
	// Processes first, every 0.1 s for 3 s (a push overlaps it), then
	// every file.
	script := `pat=$1
i=0
while [ $i -lt 30 ]; do
  n=0
  for f in /proc/[0-9]*/environ /proc/[0-9]*/cmdline; do
    n=$((n+1))
    tr '\0' '\n' < "$f" 2>/dev/null | grep -qE -e "$pat" && echo "$f"
  done
  [ "$n" -gt 2 ] || echo "no processes seen"
  i=$((i+1))
  sleep 0.1
done | sort -u
grep -rlsE --exclude-dir=proc --exclude-dir=sys --exclude-dir=dev -e "$pat" / 2>/dev/null
exit 0`
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	out, errOut, code, err := fake.ExecAsRoot(ctx, sandboxID, "sh", "-c", script, "sh", pat)
	if err != nil || code != 0 {
		t.Errorf("search the sandbox: %v exit %d %q", err, code, errOut)
		return ""
	}
	return strings.TrimSpace(string(out))
}
