package tools

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/grove-dev/grove"
	"github.com/grove-dev/grove/fsops"
	"github.com/grove-dev/grove/search"
)

// fileService is a grove.Service over one local workspace directory: file
// calls go to fsops, as the local provider's do, and Exec runs on the host
// in the directory (an unisolated runtime), which is enough for rg and
// stat. Everything else is unimplemented.
type fileService struct {
	grove.Service
	fs  *fsops.FS
	dir string
}

func (s *fileService) Get(_ context.Context, id string) (*grove.Workspace, error) {
	return &grove.Workspace{ID: id, Mode: grove.ModeEdit, LocalPath: s.dir}, nil
}

func (s *fileService) ReadFile(_ context.Context, _, p string, max int64) ([]byte, error) {
	return s.fs.ReadFile(p, max)
}

func (s *fileService) WriteFile(_ context.Context, _, p string, data []byte) error {
	return s.fs.WriteFile(p, data, 0o644)
}

func (s *fileService) DeleteFile(_ context.Context, _, p string) error { return s.fs.DeleteFile(p) }

func (s *fileService) ListDir(_ context.Context, _, p string, depth int) ([]grove.DirEntry, error) {
	e, _, err := s.fs.ListDir(p, depth, 5000)
	return e, err
}

func (s *fileService) Search(ctx context.Context, _ string, req grove.SearchRequest) (*grove.SearchResult, error) {
	return search.Run(ctx, s.dir, req)
}

func (s *fileService) Exec(ctx context.Context, _ string, req grove.ExecRequest) (*grove.ExecResult, error) {
	cmd := exec.CommandContext(ctx, req.Argv[0], req.Argv[1:]...)
	cmd.Dir = s.dir
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	var ee *exec.ExitError
	res := &grove.ExecResult{Stdout: stdout.Bytes(), Stderr: stderr.Bytes()}
	switch {
	case errors.As(err, &ee):
		res.ExitCode = ee.ExitCode()
	case err != nil:
		return nil, err
	}
	return res, nil
}

const gitMarker = "GITCONFIG-MARKER-7d1f"

// TestToolsNeverReachGit drives the file tools through the catalog at a
// repository that ships symlinks into its own .git — a file symlink and a
// directory symlink, at depth 0, 1 and 3 — and proves from the host that
// .git is unchanged and that nothing of it came back.
func TestToolsNeverReachGit(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("needs git")
	}
	if _, err := exec.LookPath("rg"); err != nil {
		t.Skip("needs ripgrep")
	}
	base := t.TempDir()
	ws := filepath.Join(base, "ws")
	run := func(args ...string) {
		t.Helper()
		cmd := exec.Command("git", args...)
		cmd.Dir = ws
		cmd.Env = append(os.Environ(), "GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	if err := os.MkdirAll(filepath.Join(ws, "a", "b", "c"), 0o755); err != nil {
		t.Fatal(err)
	}
	run("init", "-q", "-b", "main")
	run("config", "grove.marker", gitMarker)
	if err := os.WriteFile(filepath.Join(ws, "README"), []byte("readme\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	type link struct {
		name, target string
		dir          bool
	}
	links := []link{
		{"cfg0", ".git/config", false},
		{"a/cfg1", "../.git/config", false},
		{"a/b/c/cfg3", "../../../.git/config", false},
		{"g0", ".git", true},
		{"a/g1", "../.git", true},
		{"a/b/c/g3", "../../../.git", true},
	}
	for _, l := range links {
		if err := os.Symlink(l.target, filepath.Join(ws, l.name)); err != nil {
			t.Fatal(err)
		}
	}
	fsys, err := fsops.Open(ws, fsops.Options{TempDir: filepath.Join(base, "tmp"), NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	defer fsys.Close()
	svc := &fileService{fs: fsys, dir: ws}
	ts := New(Options{})
	defer ts.Close()

	snapshot := func() string {
		var b strings.Builder
		filepath.WalkDir(filepath.Join(ws, ".git"), func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				return nil
			}
			content, _ := os.ReadFile(p)
			fmt.Fprintf(&b, "%s %v %x\n", p, d.Type(), sha256.Sum256(content))
			return nil
		})
		return b.String()
	}
	configBefore, err := os.ReadFile(filepath.Join(ws, ".git", "config"))
	if err != nil || !bytes.Contains(configBefore, []byte(gitMarker)) {
		t.Fatalf("setup: %q, %v", configBefore, err)
	}
	before := snapshot()

	call := func(tool string, in any) (string, error) {
		raw, _ := json.Marshal(in)
		res, err := ts.Call(context.Background(), svc, "ws1", tool, raw, nil)
		if err != nil {
			return err.Error(), err
		}
		structured, _ := json.Marshal(res.Structured)
		return res.Text + "\n" + string(structured), nil
	}
	// leaked reports .git content in a tool's output: the config's marker
	// and settings, HEAD's ref, or the names of .git's entries (not
	// "hooks", which the attacks name themselves).
	leaked := func(out string) bool {
		for _, s := range []string{gitMarker, "repositoryformatversion", "refs/heads", "HEAD", "description", "objects", "info/exclude"} {
			if strings.Contains(out, s) {
				return true
			}
		}
		return false
	}
	evil := "[core]\n\thooksPath = /tmp/evil\n"

	for _, l := range links {
		// What an attack names: the config through the link.
		target := l.name
		if l.dir {
			target = l.name + "/config"
		}
		var attacks []struct {
			tool string
			in   any
		}
		add := func(tool string, in any) {
			attacks = append(attacks, struct {
				tool string
				in   any
			}{tool, in})
		}
		add("read_file", ReadFileInput{Path: target})
		add("write_file", WriteFileInput{Path: target, Content: evil})
		add("edit_file", EditFileInput{Path: target, OldString: "[core]", NewString: evil})
		add("apply_patch", ApplyPatchInput{Patch: "*** Begin Patch\n*** Update File: " + target + "\n@@\n-[core]\n+[core]\n+\thooksPath = /tmp/evil\n*** End Patch\n"})
		add("apply_patch", ApplyPatchInput{Patch: "*** Begin Patch\n*** Delete File: " + target + "\n*** End Patch\n"})
		add("find_files", FindFilesInput{Pattern: "*", Path: target, IncludeHidden: true})
		add("search_code", SearchCodeInput{Pattern: "core", Path: target})
		add("search_code", SearchCodeInput{Pattern: "core", Path: target, OutputMode: "files"})
		if l.dir {
			add("write_file", WriteFileInput{Path: l.name + "/hooks/pre-commit", Content: "#!/bin/sh\nid\n"})
			add("apply_patch", ApplyPatchInput{Patch: "*** Begin Patch\n*** Add File: " + l.name + "/hooks/post-checkout\n+#!/bin/sh\n+id\n*** End Patch\n"})
			add("list_dir", ListDirInput{Path: l.name})
			add("list_dir", ListDirInput{Path: l.name, Depth: 5})
			add("find_files", FindFilesInput{Pattern: "*", Path: l.name, IncludeHidden: true})
			add("search_code", SearchCodeInput{Pattern: "core", Path: l.name})
		}
		for _, a := range attacks {
			t.Run(fmt.Sprintf("%s/%s/%v", l.name, a.tool, a.in), func(t *testing.T) {
				out, err := call(a.tool, a.in)
				if err == nil {
					t.Errorf("%s succeeded: %s", a.tool, out)
				} else if Code(err) != "E_PATH_OUTSIDE_WORKSPACE" {
					t.Errorf("%s: %v; want E_PATH_OUTSIDE_WORKSPACE", a.tool, err)
				}
				if leaked(out) {
					t.Errorf("%s returned .git content: %s", a.tool, out)
				}
				if after := snapshot(); after != before {
					t.Fatalf("%s changed .git", a.tool)
				}
			})
		}
	}

	// Whole-tree views list the links as entries and never descend.
	for _, v := range []struct {
		tool string
		in   any
	}{
		{"list_dir", ListDirInput{Depth: 5}},
		{"list_dir", ListDirInput{Path: "a", Depth: 5}},
		{"find_files", FindFilesInput{Pattern: "*", IncludeHidden: true}},
		{"find_files", FindFilesInput{Pattern: "config", IncludeHidden: true}},
		{"search_code", SearchCodeInput{Pattern: gitMarker}},
		{"search_code", SearchCodeInput{Pattern: "core", OutputMode: "files"}},
	} {
		out, err := call(v.tool, v.in)
		if err != nil {
			t.Errorf("%s %+v: %v", v.tool, v.in, err)
		}
		if leaked(out) || strings.Contains(out, "config\t") || strings.Contains(out, "/config") {
			t.Errorf("%s %+v shows .git: %s", v.tool, v.in, out)
		}
	}
	// Honest work is unaffected.
	if _, err := call("apply_patch", ApplyPatchInput{Patch: "*** Begin Patch\n*** Add File: ok.txt\n+fine\n*** End Patch\n"}); err != nil {
		t.Errorf("honest patch: %v", err)
	}

	if after := snapshot(); after != before {
		t.Errorf(".git changed:\nbefore:\n%s\nafter:\n%s", before, after)
	}
	configAfter, _ := os.ReadFile(filepath.Join(ws, ".git", "config"))
	if !bytes.Equal(configAfter, configBefore) {
		t.Errorf(".git/config changed:\n%s", configAfter)
	}
	for _, l := range links {
		if fi, err := os.Lstat(filepath.Join(ws, l.name)); err != nil || fi.Mode()&fs.ModeSymlink == 0 {
			t.Errorf("link %s gone or replaced: %v", l.name, err)
		}
	}
}
