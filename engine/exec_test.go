package engine_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/grove-dev/grove"
)

func TestTwoBranchesNeverWaitForEachOther(t *testing.T) {
	f := newFixture(t)
	src := sourceRepo(t)
	a, _, err := f.eng.Acquire(bg, editReq(src, "a"))
	if err != nil {
		t.Fatal(err)
	}
	b, _, err := f.eng.Acquire(bg, editReq(src, "b"))
	if err != nil {
		t.Fatal(err)
	}
	started := make(chan struct{})
	done := make(chan error, 1)
	go func() {
		_, err := f.eng.ExecStream(bg, a.ID, grove.ExecRequest{Shell: "echo go; sleep 3", Class: grove.ClassTest}, func(grove.Chunk) error {
			select {
			case <-started:
			default:
				close(started)
			}
			return nil
		})
		done <- err
	}()
	select {
	case <-started:
	case err := <-done:
		t.Fatalf("command on a ended before it started: %v", err)
	}
	t0 := time.Now()
	// An exclusive command and a file write on workspace b, while a's
	// exclusive command runs.
	if _, err := f.eng.Exec(bg, b.ID, grove.ExecRequest{Argv: []string{"true"}, Class: grove.ClassWrite}); err != nil {
		t.Fatal(err)
	}
	if err := f.eng.WriteFile(bg, b.ID, "b.txt", []byte("b")); err != nil {
		t.Fatal(err)
	}
	if waited := time.Since(t0); waited > 2*time.Second {
		t.Fatalf("workspace b waited %s for workspace a's command", waited)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

func TestReadCommandsShareAndWritesExclude(t *testing.T) {
	f := newFixture(t)
	src := sourceRepo(t)
	ws, _, err := f.eng.Acquire(bg, editReq(src, "c"))
	if err != nil {
		t.Fatal(err)
	}
	// Two read commands of 1 s each overlap.
	t0 := time.Now()
	var wg sync.WaitGroup
	for range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, err := f.eng.Exec(bg, ws.ID, grove.ExecRequest{Argv: []string{"sleep", "1"}, Class: grove.ClassRead}); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	if d := time.Since(t0); d > 1900*time.Millisecond {
		t.Fatalf("read commands were serialised: %s", d)
	}
	// Two write commands that each check for the other's marker never see
	// it: they never overlap.
	script := `if [ -e running ]; then echo overlap; fi; touch running; sleep 0.3; rm running`
	var overlaps sync.Map
	for i := range 3 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			res, err := f.eng.Exec(bg, ws.ID, grove.ExecRequest{Shell: script, Class: grove.ClassWrite})
			if err != nil {
				t.Error(err)
				return
			}
			if len(res.Stdout) > 0 {
				overlaps.Store(i, string(res.Stdout))
			}
		}()
	}
	wg.Wait()
	overlaps.Range(func(k, v any) bool {
		t.Errorf("write command %v overlapped another: %v", k, v)
		return true
	})
}

func TestExecBasicsThroughTheEngine(t *testing.T) {
	f := newFixture(t)
	src := sourceRepo(t)
	ws, _, err := f.eng.Acquire(bg, editReq(src, "c"))
	if err != nil {
		t.Fatal(err)
	}
	res, err := f.eng.Exec(bg, ws.ID, grove.ExecRequest{Shell: "echo out; echo err >&2; exit 3"})
	if err != nil {
		t.Fatal(err)
	}
	if res.ExitCode != 3 || string(res.Stdout) != "out\n" || string(res.Stderr) != "err\n" {
		t.Fatalf("exec result: %+v", res)
	}
	res, err = f.eng.Exec(bg, ws.ID, grove.ExecRequest{Shell: "echo partial; sleep 10", Timeout: 300 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	if !res.TimedOut || res.ExitCode != 124 || string(res.Stdout) != "partial\n" {
		t.Fatalf("timeout result: %+v", res)
	}
	if _, err := f.eng.Exec(bg, ws.ID, grove.ExecRequest{}); !errors.Is(err, grove.ErrInvalid) {
		t.Fatalf("empty command: want ErrInvalid, got %v", err)
	}
	if _, err := f.eng.Exec(bg, ws.ID, grove.ExecRequest{Argv: []string{"true"}, Class: "root"}); !errors.Is(err, grove.ErrInvalid) {
		t.Fatalf("bad class: want ErrInvalid, got %v", err)
	}
	// Release hibernates; the next exec resumes and the files are intact.
	if err := f.eng.WriteFile(bg, ws.ID, "keep.txt", []byte("kept")); err != nil {
		t.Fatal(err)
	}
	if err := f.eng.Release(bg, ws.ID); err != nil {
		t.Fatal(err)
	}
	got, _ := f.eng.Get(bg, ws.ID)
	if got.State != grove.WorkspaceReleased || !got.Dirty {
		t.Fatalf("after release: state=%s dirty=%v", got.State, got.Dirty)
	}
	res, err = f.eng.Exec(bg, ws.ID, grove.ExecRequest{Argv: []string{"cat", "keep.txt"}, Class: grove.ClassRead})
	if err != nil || string(res.Stdout) != "kept" {
		t.Fatalf("exec after release: %v %+v", err, res)
	}
}

func TestGitOperationsAndCommitIdentity(t *testing.T) {
	f := newFixture(t)
	src := sourceRepo(t)
	ws, _, err := f.eng.Acquire(bg, editReq(src, "c"))
	if err != nil {
		t.Fatal(err)
	}
	// A hook planted in the workspace never runs on the host.
	marker := filepath.Join(t.TempDir(), "hook-ran")
	hook := filepath.Join(ws.LocalPath, ".git", "hooks", "pre-commit")
	os.MkdirAll(filepath.Dir(hook), 0o755)
	write(t, hook, "#!/bin/sh\ntouch "+marker+"\n")
	os.Chmod(hook, 0o755)

	if err := f.eng.WriteFile(bg, ws.ID, "README.md", []byte("changed\n")); err != nil {
		t.Fatal(err)
	}
	if err := f.eng.WriteFile(bg, ws.ID, "new.txt", []byte("new\n")); err != nil {
		t.Fatal(err)
	}
	st, err := f.eng.Status(bg, ws.ID)
	if err != nil {
		t.Fatal(err)
	}
	if st.Branch != "agent/edits-c" || len(st.Unstaged) != 1 || len(st.Untracked) != 1 || st.Clean {
		t.Fatalf("status: %+v", st)
	}
	d, err := f.eng.Diff(bg, ws.ID, grove.DiffRequest{})
	if err != nil || len(d.Files) == 0 || d.Patch == "" {
		t.Fatalf("diff: %v %+v", err, d)
	}
	c, err := f.eng.Commit(bg, ws.ID, grove.CommitRequest{Message: "agent: change readme", AuthorName: "Ada", AuthorEmail: "ada@example.invalid"})
	if err != nil {
		t.Fatal(err)
	}
	if c.SHA == "" || c.FilesChanged != 2 {
		t.Fatalf("commit: %+v", c)
	}
	if _, err := os.Stat(marker); err == nil {
		t.Fatal("the repository's pre-commit hook ran on the host")
	}
	log, err := f.eng.Log(bg, ws.ID, 1, "")
	if err != nil || len(log) != 1 || log[0].Author != "Ada" || log[0].SHA != c.SHA {
		t.Fatalf("log: %v %+v", err, log)
	}
	if _, err := f.eng.Commit(bg, ws.ID, grove.CommitRequest{Message: "again"}); !errors.Is(err, grove.ErrNothingToCommit) {
		t.Fatalf("empty commit: want ErrNothingToCommit, got %v", err)
	}
	st, _ = f.eng.Status(bg, ws.ID)
	if !st.Clean {
		t.Fatalf("status after commit: %+v", st)
	}
	got, _ := f.eng.Get(bg, ws.ID)
	if got.Dirty || got.HeadSHA != c.SHA {
		t.Fatalf("record after commit: dirty=%v head=%s", got.Dirty, got.HeadSHA)
	}
}

func TestPushOnlyTheWorkspaceBranch(t *testing.T) {
	f := newFixture(t)
	src := sourceRepo(t)
	// Pushing into a non-bare repo's checked-out branch is refused by git;
	// the upstream has main checked out and we push agent/edits-c.
	ws, _, err := f.eng.Acquire(bg, editReq(src, "c"))
	if err != nil {
		t.Fatal(err)
	}
	if err := f.eng.WriteFile(bg, ws.ID, "pushed.txt", []byte("p\n")); err != nil {
		t.Fatal(err)
	}
	c, err := f.eng.Commit(bg, ws.ID, grove.CommitRequest{Message: "to push"})
	if err != nil {
		t.Fatal(err)
	}
	// Before the first push the branch's upstream is not on the remote:
	// status says so instead of "ahead 0, behind 0".
	if st, err := f.eng.Status(bg, ws.ID); err != nil || st.Upstream != "origin/agent/edits-c" || !st.UpstreamGone {
		t.Fatalf("status before the first push: %v %+v", err, st)
	}
	res, err := f.eng.Push(bg, ws.ID, grove.PushRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if res.Branch != "agent/edits-c" || !res.CreatedBranch {
		t.Fatalf("push: %+v", res)
	}
	if st, err := f.eng.Status(bg, ws.ID); err != nil || st.UpstreamGone || st.Ahead != 0 || st.Behind != 0 {
		t.Fatalf("status after the push: %v %+v", err, st)
	}
	if got := run(t, src, "git", "rev-parse", "refs/heads/agent/edits-c"); got != c.SHA {
		t.Fatalf("upstream branch at %s, want %s", got, c.SHA)
	}
	if got := run(t, src, "git", "log", "-1", "--format=%s", "main"); got != "second" {
		t.Fatalf("upstream main moved: %s", got)
	}
}

// Issue 11 items 6 and 8: dirty follows a mutating command that exits 0,
// streamed or not, and not one that fails; a command on a released
// workspace makes it ready again.
func TestExecStateFollowsCommands(t *testing.T) {
	f := newFixture(t)
	src := sourceRepo(t)
	get := func(id string) *grove.Workspace {
		t.Helper()
		ws, err := f.eng.Get(bg, id)
		if err != nil {
			t.Fatal(err)
		}
		return ws
	}
	ws, _, err := f.eng.Acquire(bg, editReq(src, "state"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.eng.Exec(bg, ws.ID, grove.ExecRequest{Shell: "echo x > failed.txt; exit 3"}); err != nil {
		t.Fatal(err)
	}
	if get(ws.ID).Dirty {
		t.Fatal("a command that exited 3 marked the workspace dirty")
	}
	if _, err := f.eng.ExecStream(bg, ws.ID, grove.ExecRequest{Shell: "echo y > streamed.txt"}, func(grove.Chunk) error { return nil }); err != nil {
		t.Fatal(err)
	}
	if !get(ws.ID).Dirty {
		t.Fatal("a streamed command that wrote and exited 0 left dirty unset")
	}
	if err := f.eng.Release(bg, ws.ID); err != nil {
		t.Fatal(err)
	}
	if st := get(ws.ID).State; st != grove.WorkspaceReleased {
		t.Fatalf("after release: %s", st)
	}
	if _, err := f.eng.Exec(bg, ws.ID, grove.ExecRequest{Argv: []string{"true"}, Class: grove.ClassRead}); err != nil {
		t.Fatal(err)
	}
	if st := get(ws.ID).State; st != grove.WorkspaceReady {
		t.Fatalf("a command ran on a released workspace, which still says %s", st)
	}
}

// Issue 11 item 7: a workspace whose directory was deleted behind Grove's
// back answers with a typed error and shows as broken; acquiring it again
// rebuilds it.
func TestDeletedWorkspaceIsBrokenNotReady(t *testing.T) {
	f := newFixture(t)
	src := sourceRepo(t)
	ws, _, err := f.eng.Acquire(bg, editReq(src, "gone"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.RemoveAll(ws.LocalPath); err != nil {
		t.Fatal(err)
	}
	if _, err := f.eng.Status(bg, ws.ID); !errors.Is(err, grove.ErrNotFound) || !strings.Contains(err.Error(), "acquire it again") {
		t.Fatalf("status of a deleted workspace: %v", err)
	}
	if _, err := f.eng.Exec(bg, ws.ID, grove.ExecRequest{Argv: []string{"true"}}); !errors.Is(err, grove.ErrNotFound) {
		t.Fatalf("exec in a deleted workspace: %v", err)
	}
	got, err := f.eng.Get(bg, ws.ID)
	if err != nil || got.State != grove.WorkspaceBroken {
		t.Fatalf("record of a deleted workspace: %v %+v", err, got)
	}
	again, _, err := f.eng.Acquire(bg, editReq(src, "gone"))
	if err != nil || again.ID != ws.ID {
		t.Fatalf("re-acquire: %v %+v", err, again)
	}
	if _, err := f.eng.Status(bg, ws.ID); err != nil {
		t.Fatalf("status after the rebuild: %v", err)
	}
}

// A workspace rebuilt in place (its files were lost, the key acquired
// again) is set up for its runtime anew: on a root bwrap server its tree
// must be handed to the sandbox's uid again, or commands could not write.
func TestRebuiltWorkspaceIsWritableInItsSandbox(t *testing.T) {
	drv := trustRuntimes(t)["bwrap"](t)
	f := newFixture(t, fixtureOpt{drv: drv})
	src := sourceRepo(t)
	ws, _, err := f.eng.Acquire(bg, editReq(src, "rebuilt"))
	if err != nil {
		t.Fatal(err)
	}
	write := grove.ExecRequest{Shell: "echo x > made-in-sandbox.txt"}
	if res, err := f.eng.Exec(bg, ws.ID, write); err != nil || res.ExitCode != 0 {
		t.Fatalf("first write: %v %+v", err, res)
	}
	if err := os.RemoveAll(ws.LocalPath); err != nil {
		t.Fatal(err)
	}
	if _, err := f.eng.Reconcile(bg); err != nil {
		t.Fatal(err)
	}
	if _, _, err := f.eng.Acquire(bg, editReq(src, "rebuilt")); err != nil {
		t.Fatal(err)
	}
	if res, err := f.eng.Exec(bg, ws.ID, write); err != nil || res.ExitCode != 0 {
		t.Fatalf("write after the rebuild: %v %+v\n%s", err, res, res.Stderr)
	}
}
