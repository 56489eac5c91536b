package engine_test

import (
	"errors"
	"fmt"
	"reflect"
	"sync"
	"testing"

	"github.com/grove-dev/grove"
	"github.com/grove-dev/grove/driver/subprocess"
)

func editReq(repo, conv string) grove.AcquireRequest {
	return grove.AcquireRequest{Repo: repo, User: "alice", Project: "p1", Mode: grove.ModeEdit, Conversation: conv}
}

func TestAcquireIsIdempotentAndReacquireRunsNoGit(t *testing.T) {
	f := newFixture(t)
	src := sourceRepo(t)
	ws, created, err := f.eng.Acquire(bg, editReq(src, "c1"))
	if err != nil {
		t.Fatal(err)
	}
	if !created || ws.Branch != "agent/edits-c1" || ws.State != grove.WorkspaceReady || ws.HeadSHA == "" {
		t.Fatalf("first acquire: created=%v %+v", created, ws)
	}
	before := f.gitCallCount(t)
	again, created, err := f.eng.Acquire(bg, editReq(src, "c1"))
	if err != nil {
		t.Fatal(err)
	}
	if created || again.ID != ws.ID || again.LocalPath != ws.LocalPath {
		t.Fatalf("re-acquire gave another workspace: created=%v %s %s", created, again.ID, again.LocalPath)
	}
	if n := f.gitCallCount(t) - before; n != 0 {
		t.Fatalf("re-acquire ran git %d times", n)
	}
}

func TestModesBranchesAndCapabilities(t *testing.T) {
	f := newFixture(t)
	src := sourceRepo(t)
	task, _, err := f.eng.Acquire(bg, grove.AcquireRequest{Repo: src, User: "alice", Project: "p1", Mode: grove.ModeTask, Task: "t9"})
	if err != nil {
		t.Fatal(err)
	}
	if task.Branch != "agent/task-t9" || !task.Capabilities().Writable {
		t.Fatalf("task workspace: %+v", task)
	}
	ana, _, err := f.eng.Acquire(bg, grove.AcquireRequest{Repo: src, User: "alice", Project: "p1", Mode: grove.ModeAnalysis, Ref: "v1"})
	if err != nil {
		t.Fatal(err)
	}
	st, err := f.eng.Status(bg, ana.ID)
	if err != nil {
		t.Fatal(err)
	}
	if st.Branch != "" || ana.Branch != "" {
		t.Fatalf("analysis workspace is not detached: branch %q", st.Branch)
	}
	// Every write path refuses a read-only workspace.
	checks := map[string]error{
		"write":  f.eng.WriteFile(bg, ana.ID, "x.txt", []byte("x")),
		"delete": f.eng.DeleteFile(bg, ana.ID, "README.md"),
	}
	_, checks["exec"] = f.eng.Exec(bg, ana.ID, grove.ExecRequest{Argv: []string{"touch", "x"}, Class: grove.ClassWrite})
	_, checks["commit"] = f.eng.Commit(bg, ana.ID, grove.CommitRequest{Message: "m"})
	_, checks["push"] = f.eng.Push(bg, ana.ID, grove.PushRequest{})
	for name, err := range checks {
		if !errors.Is(err, grove.ErrReadOnly) {
			t.Errorf("%s on analysis workspace: want ErrReadOnly, got %v", name, err)
		}
	}
	// Read commands still run.
	res, err := f.eng.Exec(bg, ana.ID, grove.ExecRequest{Argv: []string{"cat", "README.md"}})
	if err != nil || string(res.Stdout) != "hello\nworld\n" {
		t.Fatalf("read command on analysis workspace: %v %+v", err, res)
	}
}

func TestBranchCheckedOutTwiceIsAConflict(t *testing.T) {
	f := newFixture(t)
	src := sourceRepo(t)
	a := editReq(src, "c1")
	a.Branch = "feature/x"
	first, _, err := f.eng.Acquire(bg, a)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.eng.WriteFile(bg, first.ID, "work.txt", []byte("precious")); err != nil {
		t.Fatal(err)
	}
	b := editReq(src, "c2")
	b.Branch = "feature/x"
	before := snapshot(t, f.root)
	if _, _, err := f.eng.Acquire(bg, b); !errors.Is(err, grove.ErrConflict) {
		t.Fatalf("want ErrConflict, got %v", err)
	}
	if after := snapshot(t, f.root); !reflect.DeepEqual(before, after) {
		t.Fatal("a refused acquire changed the disk")
	}
	got, err := f.eng.ReadFile(bg, first.ID, "work.txt", 0)
	if err != nil || string(got) != "precious" {
		t.Fatalf("first workspace touched: %v %q", err, got)
	}
}

func TestExistingBranchIsReattachedNotReset(t *testing.T) {
	f := newFixture(t)
	src := sourceRepo(t)
	ws, _, err := f.eng.Acquire(bg, editReq(src, "c1"))
	if err != nil {
		t.Fatal(err)
	}
	if err := f.eng.WriteFile(bg, ws.ID, "notes/todo.md", []byte("- ship\n")); err != nil {
		t.Fatal(err)
	}
	c, err := f.eng.Commit(bg, ws.ID, grove.CommitRequest{Message: "agent work"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.eng.ReadFile(bg, ws.ID, "notes/todo.md", 0); err != nil { // remembered for reads
		t.Fatal(err)
	}
	if err := f.eng.Destroy(bg, ws.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := f.eng.Get(bg, ws.ID); !errors.Is(err, grove.ErrNotFound) {
		t.Fatalf("destroyed workspace still there: %v", err)
	}
	if _, err := f.eng.ReadFile(bg, ws.ID, "notes/todo.md", 0); !errors.Is(err, grove.ErrNotFound) {
		t.Fatalf("read of a destroyed workspace: want ErrNotFound, got %v", err)
	}
	again, created, err := f.eng.Acquire(bg, editReq(src, "c1"))
	if err != nil {
		t.Fatal(err)
	}
	if !created || again.HeadSHA != c.SHA {
		t.Fatalf("branch not re-attached: created=%v head=%s want %s", created, again.HeadSHA, c.SHA)
	}
	log, err := f.eng.Log(bg, again.ID, 5, "")
	if err != nil || len(log) == 0 || log[0].Subject != "agent work" {
		t.Fatalf("log after re-attach: %v %+v", err, log)
	}
}

func TestUnisolatedRuntimeRefusesWritableWorkspaces(t *testing.T) {
	f := newFixture(t, fixtureOpt{drv: subprocess.New(subprocess.Options{})})
	src := sourceRepo(t)
	if _, _, err := f.eng.Acquire(bg, editReq(src, "c1")); !errors.Is(err, grove.ErrRejected) {
		t.Fatalf("writable workspace on subprocess runtime: want ErrRejected, got %v", err)
	}
	if _, _, err := f.eng.Acquire(bg, grove.AcquireRequest{Repo: src, User: "alice", Project: "p1", Mode: grove.ModeAnalysis}); err != nil {
		t.Fatalf("analysis workspace on subprocess runtime: %v", err)
	}
}

func TestThirtyTwoConcurrentAcquiresOnOneRepo(t *testing.T) {
	f := newFixture(t)
	src := sourceRepo(t)
	if _, err := f.eng.EnsureRepo(bg, grove.EnsureRepoRequest{Repo: src}); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	ids := make([]string, 32)
	errs := make([]error, 32)
	for i := range 32 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ws, _, err := f.eng.Acquire(bg, editReq(src, fmt.Sprintf("conv-%d", i)))
			errs[i] = err
			if err == nil {
				ids[i] = ws.ID
			}
		}()
	}
	wg.Wait()
	seen := map[string]bool{}
	for i, err := range errs {
		if err != nil {
			t.Fatalf("acquire %d: %v", i, err)
		}
		if seen[ids[i]] {
			t.Fatalf("duplicate workspace id %s", ids[i])
		}
		seen[ids[i]] = true
	}
	wss, err := f.eng.List(bg, grove.WorkspaceFilter{User: "alice", Repo: src})
	if err != nil || len(wss) != 32 {
		t.Fatalf("list: %v, %d workspaces", err, len(wss))
	}
}

func TestSameKeyConcurrentlyYieldsOneWorkspace(t *testing.T) {
	f := newFixture(t)
	src := sourceRepo(t)
	var wg sync.WaitGroup
	ids := make(chan string, 8)
	created := make(chan bool, 8)
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ws, c, err := f.eng.Acquire(bg, editReq(src, "same"))
			if err != nil {
				t.Error(err)
				return
			}
			ids <- ws.ID
			created <- c
		}()
	}
	wg.Wait()
	close(ids)
	close(created)
	first := ""
	for id := range ids {
		if first == "" {
			first = id
		} else if id != first {
			t.Fatalf("two workspaces for one key: %s %s", first, id)
		}
	}
	n := 0
	for c := range created {
		if c {
			n++
		}
	}
	if n != 1 {
		t.Fatalf("%d acquires claim to have created the workspace", n)
	}
}

func TestBadInputChangesNothing(t *testing.T) {
	f := newFixture(t)
	src := sourceRepo(t)
	ws, _, err := f.eng.Acquire(bg, editReq(src, "c1"))
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name string
		req  grove.AcquireRequest
		kind error
	}{
		{"repo traversal", editReq("../../etc", "c2"), grove.ErrInvalid},
		{"repo option", editReq("--upload-pack=touch /tmp/pwned", "c2"), grove.ErrInvalid},
		{"repo missing", editReq(src+"-does-not-exist", "c2"), nil},
		{"ref option", withRef(editReq(src, "c2"), "-x"), grove.ErrInvalid},
		{"ref dotdot", withRef(editReq(src, "c2"), "a..b"), grove.ErrInvalid},
		{"ref newline", withRef(editReq(src, "c2"), "main\n"), grove.ErrInvalid},
		{"ref reflog", withRef(editReq(src, "c2"), "@{"), grove.ErrInvalid},
		{"ref missing", withRef(editReq(src, "c2"), "no-such-branch"), grove.ErrNotFound},
		{"branch option", withBranch(editReq(src, "c2"), "-b"), grove.ErrInvalid},
		{"conversation slash", editReq(src, "../x"), grove.ErrInvalid},
		{"no user", grove.AcquireRequest{Repo: src, Project: "p", Mode: grove.ModeEdit, Conversation: "c"}, grove.ErrInvalid},
		{"bad mode", grove.AcquireRequest{Repo: src, User: "u", Project: "p", Mode: "root", Conversation: "c"}, grove.ErrInvalid},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			before := snapshot(t, f.root)
			beforeList, _ := f.eng.List(bg, grove.WorkspaceFilter{})
			_, _, err := f.eng.Acquire(bg, tc.req)
			switch {
			case tc.kind == nil && (errors.Is(err, grove.ErrInvalid) || errors.Is(err, grove.ErrNotFound)):
			case tc.kind == nil || !errors.Is(err, tc.kind):
				t.Fatalf("want %v, got %v", tc.kind, err)
			}
			if after := snapshot(t, f.root); !reflect.DeepEqual(before, after) {
				t.Fatalf("refused acquire changed the disk")
			}
			afterList, _ := f.eng.List(bg, grove.WorkspaceFilter{})
			if len(afterList) != len(beforeList) {
				t.Fatalf("refused acquire changed the store: %d -> %d workspaces", len(beforeList), len(afterList))
			}
		})
	}
	paths := []string{"../x", "/etc/passwd", "a/../../x", ".git/config"}
	for _, p := range paths {
		if _, err := f.eng.ReadFile(bg, ws.ID, p, 0); !errors.Is(err, grove.ErrPathOutside) && !errors.Is(err, grove.ErrInvalid) {
			t.Errorf("read %q: want a path error, got %v", p, err)
		}
		if err := f.eng.WriteFile(bg, ws.ID, p, []byte("x")); !errors.Is(err, grove.ErrPathOutside) && !errors.Is(err, grove.ErrInvalid) {
			t.Errorf("write %q: want a path error, got %v", p, err)
		}
	}
	for _, id := range []string{"", "ws_", "../../etc", "ws_zzzzzzzzzzzzzzzz", "ws_0000000000000000"} {
		if _, err := f.eng.Get(bg, id); !errors.Is(err, grove.ErrNotFound) {
			t.Errorf("get %q: want ErrNotFound, got %v", id, err)
		}
	}
}

func withRef(r grove.AcquireRequest, ref string) grove.AcquireRequest { r.Ref = ref; return r }
func withBranch(r grove.AcquireRequest, b string) grove.AcquireRequest {
	r.Branch = b
	return r
}

func TestRemoveRepoRefusedWhileWorkspacesExist(t *testing.T) {
	f := newFixture(t)
	src := sourceRepo(t)
	ws, _, err := f.eng.Acquire(bg, editReq(src, "c1"))
	if err != nil {
		t.Fatal(err)
	}
	if err := f.eng.RemoveRepo(bg, ws.RepoCacheID, false); !errors.Is(err, grove.ErrConflict) {
		t.Fatalf("want ErrConflict, got %v", err)
	}
	if _, err := f.eng.Get(bg, ws.ID); err != nil {
		t.Fatalf("refused removal touched the workspace: %v", err)
	}
	if err := f.eng.RemoveRepo(bg, ws.RepoCacheID, true); err != nil {
		t.Fatal(err)
	}
	if repos, _ := f.eng.ListRepos(bg); len(repos) != 0 {
		t.Fatalf("cache still listed: %+v", repos)
	}
	if _, err := f.eng.Get(bg, ws.ID); !errors.Is(err, grove.ErrNotFound) {
		t.Fatalf("forced removal left the workspace: %v", err)
	}
}

func TestConcurrentDestroysOfOneWorkspace(t *testing.T) {
	f := newFixture(t)
	src := sourceRepo(t)
	ws, _, err := f.eng.Acquire(bg, editReq(src, "c1"))
	if err != nil {
		t.Fatal(err)
	}
	errs := make(chan error, 4)
	var wg sync.WaitGroup
	for range 4 {
		wg.Add(1)
		go func() { defer wg.Done(); errs <- f.eng.Destroy(bg, ws.ID) }()
	}
	wg.Wait()
	close(errs)
	ok := 0
	for err := range errs {
		switch {
		case err == nil:
			ok++
		case !errors.Is(err, grove.ErrNotFound):
			t.Errorf("a losing destroy: want ErrNotFound, got %v", err)
		}
	}
	if ok != 1 {
		t.Fatalf("%d destroys succeeded, want exactly 1", ok)
	}
}
