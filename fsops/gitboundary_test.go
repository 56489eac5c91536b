package fsops

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/grove-dev/grove"
)

// gitSecret is in every file of the attacked .git: no operation may return
// it.
const gitSecret = "GIT-METADATA-SECRET"

// gitWorkspace builds a workspace whose repository ships symlinks into its
// own .git (a directory, or a gitfile when gitfile is set) and a nested
// repository, every way we know to spell them. It returns the FS, the
// workspace directory and a snapshot function of everything in .git and
// in the nested .git.
func gitWorkspace(t testing.TB, gitfile bool) (*FS, string, func() string) {
	t.Helper()
	base := t.TempDir()
	ws := filepath.Join(base, "ws")
	mk := func(p, content string) {
		t.Helper()
		full := filepath.Join(ws, p)
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	link := func(target, name string) {
		t.Helper()
		full := filepath.Join(ws, name)
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(target, full); err != nil {
			t.Fatal(err)
		}
	}
	if gitfile {
		mk(".git", "gitdir: ../elsewhere # "+gitSecret+"\n")
	} else {
		mk(".git/config", "[core]\n\tbare = false # "+gitSecret+"\n")
		mk(".git/HEAD", "ref: refs/heads/main # "+gitSecret+"\n")
		mk(".git/hooks/README", gitSecret)
	}
	mk("sub/nested/.git/config", "[core] # "+gitSecret+"\n")
	mk("sub/nested/file", "nested file")
	mk("README", "readme")
	mk("deep/a/b/file", "deep file")
	// Depth 0.
	link(".git", "g")
	link("./.git", "gdot")
	link("sub/../.git", "d")
	link("sub/nested/../../.git", "d2")
	link("c2", "c1")
	link("g", "c2")
	link(filepath.Join(ws, ".git"), "abs")
	link(".git/config", "cfg")
	link(".GIT", "upper")
	link("sub/nested/.git", "n")
	link(".", "self")
	link("..", "up")
	// Depth 1 and 3, relative.
	link("../.git", "sub/g1")
	link("../.git/config", "sub/cfg1")
	link("../../../.git", "deep/a/b/g3")
	link("../../../.git/config", "deep/a/b/cfg3")
	link("../../../g", "deep/a/b/via")
	link("nested/.git", "sub/n1")
	if gitfile {
		if err := os.Link(filepath.Join(ws, ".git"), filepath.Join(ws, "hl")); err != nil {
			t.Fatal(err)
		}
	}
	fsys, err := Open(ws, Options{TempDir: filepath.Join(base, "tmp"), NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { fsys.Close() })
	snap := func() string {
		var b strings.Builder
		for _, root := range []string{".git", "sub/nested/.git"} {
			filepath.WalkDir(filepath.Join(ws, root), func(p string, d fs.DirEntry, err error) error {
				if err != nil {
					fmt.Fprintf(&b, "%s: %v\n", p, err)
					return nil
				}
				fi, _ := d.Info()
				content, _ := os.ReadFile(p)
				fmt.Fprintf(&b, "%s %v %q\n", p, fi.Mode(), content)
				return nil
			})
		}
		return b.String()
	}
	return fsys, ws, snap
}

// gitAttacks are paths whose resolution passes through a .git. linkTo
// marks a path whose last component is itself a symlink into .git:
// deleting it removes the link, which is allowed.
var gitAttacks = []struct {
	path   string
	linkTo bool
}{
	{".git", false},
	{".git/config", false},
	{"./.git/config", false},
	{"a/../.git/config", false},
	{".GIT/config", false},
	{".Git/hooks/pre-commit", false},
	{"sub/nested/.git/config", false},
	{"sub/nested/.GIT/config", false},
	{"g", true},
	{"g/config", false},
	{"g/hooks/pre-commit", false},
	{"g/newdir/new", false},
	{"gdot/config", false},
	{"d/config", false},
	{"d2/config", false},
	{"c1/config", false},
	{"c1", true},
	{"abs/config", false},
	{"cfg", true},
	{"upper/config", false},
	{"n/config", false},
	{"self/g/config", false},
	{"self/self/.git/config", false},
	{"up/ws/.git/config", false},
	{"sub/g1", true},
	{"sub/g1/config", false},
	{"sub/cfg1", true},
	{"sub/n1/config", false},
	{"deep/a/b/g3", true},
	{"deep/a/b/g3/config", false},
	{"deep/a/b/cfg3", true},
	{"deep/a/b/via/config", false},
}

// TestGitIsUnreachable attacks .git through every spelling with every
// operation, with .git as a directory and as a gitfile, and proves from the
// host that nothing in .git changed and nothing of it was returned.
func TestGitIsUnreachable(t *testing.T) {
	type op struct {
		name string
		run  func(f *FS, p string) (string, error) // returns what the caller would see
	}
	ops := []op{
		{"read", func(f *FS, p string) (string, error) { b, err := f.ReadFile(p, 1<<20); return string(b), err }},
		{"write", func(f *FS, p string) (string, error) { return "", f.WriteFile(p, []byte("pwned"), 0o644) }},
		{"delete", func(f *FS, p string) (string, error) { return "", f.DeleteFile(p) }},
		{"stat", func(f *FS, p string) (string, error) { e, err := f.Stat(p); return fmt.Sprint(e), err }},
		{"list1", func(f *FS, p string) (string, error) { e, _, err := f.ListDir(p, 1, 0); return fmt.Sprint(e), err }},
		{"list3", func(f *FS, p string) (string, error) { e, _, err := f.ListDir(p, 3, 0); return fmt.Sprint(e), err }},
	}
	for _, gitfile := range []bool{false, true} {
		// Every refused operation leaves the workspace as it was, so one
		// workspace serves them all; deleting a link gets its own.
		shared, sharedWS, sharedSnap := gitWorkspace(t, gitfile)
		for _, a := range gitAttacks {
			for _, o := range ops {
				t.Run(fmt.Sprintf("gitfile=%v/%s/%s", gitfile, a.path, o.name), func(t *testing.T) {
					fsys, ws, snap := shared, sharedWS, sharedSnap
					if o.name == "delete" && a.linkTo {
						fsys, ws, snap = gitWorkspace(t, gitfile)
					}
					before := snap()
					got, err := o.run(fsys, a.path)
					switch {
					case o.name == "delete" && a.linkTo:
						// The link itself goes; what it pointed at stays.
						if err != nil {
							t.Errorf("deleting the link: %v", err)
						}
						if _, err := os.Lstat(filepath.Join(ws, a.path)); !errors.Is(err, fs.ErrNotExist) {
							t.Errorf("link still there: %v", err)
						}
					case !errors.Is(err, grove.ErrPathOutside):
						// A gitfile is not a directory: "g/config" may also
						// be refused as not found, never reached.
						if !(gitfile && errors.Is(err, grove.ErrNotFound)) {
							t.Errorf("%s(%q) = %q, %v; want ErrPathOutside", o.name, a.path, clip(got), err)
						}
					}
					if strings.Contains(got, gitSecret) || strings.Contains(got, "hooks") || strings.Contains(got, "HEAD") {
						t.Errorf("%s(%q) returned .git content: %q", o.name, a.path, clip(got))
					}
					if after := snap(); after != before {
						t.Errorf("%s(%q) changed .git:\nbefore:\n%s\nafter:\n%s", o.name, a.path, before, after)
					}
					if err != nil && strings.Contains(err.Error(), ws) {
						t.Errorf("error reveals the host directory: %v", err)
					}
				})
			}
		}
	}
}

func clip(s string) string {
	if len(s) > 300 {
		return s[:300] + "…"
	}
	return s
}

// TestGitfileHardLink: a hard link to the gitfile passes every name rule;
// its identity gives it away.
func TestGitfileHardLink(t *testing.T) {
	fsys, _, snap := gitWorkspace(t, true)
	before := snap()
	if b, err := fsys.ReadFile("hl", 1<<20); !errors.Is(err, grove.ErrPathOutside) {
		t.Errorf("read = %q, %v", b, err)
	}
	if err := fsys.WriteFile("hl", []byte("gitdir: /tmp/evil"), 0o644); !errors.Is(err, grove.ErrPathOutside) {
		t.Errorf("write = %v", err)
	}
	if _, err := fsys.Stat("hl"); !errors.Is(err, grove.ErrPathOutside) {
		t.Errorf("stat = %v", err)
	}
	entries, _, err := fsys.ListDir(".", 1, 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if e.Name == "hl" {
			t.Errorf("listing shows the gitfile's hard link")
		}
	}
	if snap() != before {
		t.Error(".git changed")
	}
}

// TestGitByIdentity: .git renamed after the FS opened (as a stand-in for
// any spelling the name rule cannot know — case folding or Unicode
// normalisation on another filesystem) is still refused, by identity.
func TestGitByIdentity(t *testing.T) {
	fsys, ws, _ := gitWorkspace(t, false)
	if err := os.Rename(filepath.Join(ws, ".git"), filepath.Join(ws, "meta")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("meta", filepath.Join(ws, "m")); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{"meta", "meta/config", "m/config", "meta/hooks/README"} {
		if b, err := fsys.ReadFile(p, 1<<20); !errors.Is(err, grove.ErrPathOutside) {
			t.Errorf("read %s = %q, %v", p, b, err)
		}
		if err := fsys.WriteFile(p, []byte("x"), 0o644); !errors.Is(err, grove.ErrPathOutside) {
			t.Errorf("write %s = %v", p, err)
		}
		if _, _, err := fsys.ListDir(p, 1, 0); !errors.Is(err, grove.ErrPathOutside) {
			t.Errorf("list %s = %v", p, err)
		}
	}
	entries, _, err := fsys.ListDir(".", MaxDepth, 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if strings.HasPrefix(e.Path, "meta") {
			t.Errorf("listing shows %s", e.Path)
		}
	}
	b, err := os.ReadFile(filepath.Join(ws, "meta", "config"))
	if err != nil || !bytes.Contains(b, []byte(gitSecret)) {
		t.Errorf("config changed: %q, %v", b, err)
	}
}

// TestListNeverEntersGit lists the whole attacked workspace: symlinks are
// entries, never followed, and no .git shows at any depth.
func TestListNeverEntersGit(t *testing.T) {
	for _, gitfile := range []bool{false, true} {
		fsys, _, _ := gitWorkspace(t, gitfile)
		entries, _, err := fsys.ListDir(".", MaxDepth, 0)
		if err != nil {
			t.Fatal(err)
		}
		var paths []string
		for _, e := range entries {
			paths = append(paths, e.Path)
			for _, c := range strings.Split(e.Path, "/") {
				if strings.EqualFold(c, ".git") {
					t.Errorf("listing shows %s", e.Path)
				}
			}
			if e.Name == "config" || e.Name == "HEAD" || e.Name == "hooks" {
				t.Errorf("listing shows .git content: %s", e.Path)
			}
		}
		for _, want := range []string{"g", "deep/a/b/g3", "sub/nested/file", "deep/a/b/file"} {
			i := slices.IndexFunc(entries, func(e grove.DirEntry) bool { return e.Path == want })
			if i < 0 {
				t.Errorf("gitfile=%v: %s missing from %q", gitfile, want, paths)
			} else if want == "g" && entries[i].IsDir {
				t.Errorf("symlink g listed as a directory")
			}
		}
	}
}

// TestWriteOutsideGitStillWorks: the rules cost honest paths nothing —
// symlinks within the tree, names that merely look like .git.
func TestWriteOutsideGitStillWorks(t *testing.T) {
	fsys, ws, _ := gitWorkspace(t, false)
	for _, p := range []string{".gitignore", "sub/.github/x", "self/README", "sub/nested/file", "x.git", "git/config", "deep/a/b/new"} {
		if err := fsys.WriteFile(p, []byte("ok "+p), 0o644); err != nil {
			t.Errorf("write %s: %v", p, err)
			continue
		}
		if b, err := fsys.ReadFile(p, 1<<20); err != nil || string(b) != "ok "+p {
			t.Errorf("read %s = %q, %v", p, b, err)
		}
	}
	if b, _ := os.ReadFile(filepath.Join(ws, "README")); string(b) != "ok self/README" {
		t.Errorf("write through self link landed elsewhere: README = %q", b)
	}
}

// TestSwapRace: while one goroutine keeps swapping a directory for a
// symlink into .git (as a command in the workspace could), reads, writes,
// deletes and listings through it never reach .git.
func TestSwapRace(t *testing.T) {
	fsys, ws, snap := gitWorkspace(t, false)
	before := snap()
	d, tmp := filepath.Join(ws, "d"), filepath.Join(ws, "d.tmp")
	os.Remove(d)
	if err := os.MkdirAll(filepath.Join(ws, "real"), 0o755); err != nil {
		t.Fatal(err)
	}
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			os.Remove(tmp)
			target := "real"
			if i%2 == 1 {
				target = ".git"
			}
			os.Symlink(target, tmp)
			os.Rename(tmp, d) // atomic swap of what d is
		}
	}()
	for i := range 3000 {
		switch i % 4 {
		case 0:
			if b, err := fsys.ReadFile("d/config", 1<<20); err == nil && bytes.Contains(b, []byte(gitSecret)) {
				t.Fatalf("read .git/config through a swapped link")
			}
		case 1:
			fsys.WriteFile("d/config", []byte("pwned"), 0o644)
		case 2:
			fsys.DeleteFile("d/HEAD")
		case 3:
			if e, _, err := fsys.ListDir("d", 2, 0); err == nil && strings.Contains(fmt.Sprint(e), "HEAD") {
				t.Fatalf("listed .git through a swapped link: %v", e)
			}
		}
	}
	close(stop)
	<-done
	if snap() != before {
		t.Fatal(".git changed")
	}
	// The writes that went through landed in real/.
	if b, err := os.ReadFile(filepath.Join(ws, "real", "config")); err != nil || string(b) != "pwned" {
		t.Logf("real/config: %q, %v (no write won the race)", b, err)
	}
}
