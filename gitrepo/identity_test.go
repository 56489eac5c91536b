package gitrepo

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/grove-dev/grove"
)

func TestParseRepoRemote(t *testing.T) {
	gh := grove.RepoID{Host: "github.com", Owner: "octo", Name: "hello"}
	tests := []struct {
		in      string
		opt     ParseOptions
		want    grove.RepoID
		wantURL string
	}{
		{"octo/hello", ParseOptions{}, gh, "https://github.com/octo/hello.git"},
		{"Octo/Hello", ParseOptions{}, gh, "https://github.com/octo/hello.git"},
		{"https://github.com/octo/hello", ParseOptions{}, gh, "https://github.com/octo/hello.git"},
		{"https://GitHub.com:443/octo/hello.git/", ParseOptions{}, gh, "https://github.com/octo/hello.git"},
		{"git@github.com:octo/hello.git", ParseOptions{}, gh, "git@github.com:octo/hello.git"},
		{"git@github.com:octo/hello", ParseOptions{}, gh, "git@github.com:octo/hello.git"},
		{"ssh://git@github.com/octo/hello.git", ParseOptions{}, gh, "ssh://git@github.com/octo/hello.git"},
		{"octo/hello", ParseOptions{BaseURL: "https://ghe.example.com/"},
			grove.RepoID{Host: "ghe.example.com", Owner: "octo", Name: "hello"}, "https://ghe.example.com/octo/hello.git"},
		{"https://gitlab.example.com:8443/group/sub/proj.git", ParseOptions{},
			grove.RepoID{Host: "gitlab.example.com:8443", Owner: "group/sub", Name: "proj"}, "https://gitlab.example.com:8443/group/sub/proj.git"},
		{"http://127.0.0.1:8080/o/r.git", ParseOptions{},
			grove.RepoID{Host: "127.0.0.1:8080", Owner: "o", Name: "r"}, "http://127.0.0.1:8080/o/r.git"},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := ParseRepo(tt.in, tt.opt)
			if err != nil {
				t.Fatalf("ParseRepo(%q): %v", tt.in, err)
			}
			if got.ID != tt.want || got.URL != tt.wantURL || got.Local {
				t.Errorf("ParseRepo(%q) = %+v, want ID %+v URL %q", tt.in, got, tt.want, tt.wantURL)
			}
		})
	}
}

func TestParseRepoLocal(t *testing.T) {
	src, _ := sourceRepo(t)
	bare := filepath.Join(t.TempDir(), "src.git")
	testGit(t, "", "clone", "-q", "--bare", src, bare)
	other := filepath.Join(t.TempDir(), "src") // same base name, different repo
	testGit(t, "", "init", "-q", other)

	a, err := ParseRepo(src, ParseOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if !a.Local || a.ID.Host != LocalHost || a.ID.Name != "src" || a.URL != src {
		t.Errorf("local = %+v", a)
	}
	b, err := ParseRepo("file://"+src, ParseOptions{})
	if err != nil || b.ID != a.ID {
		t.Errorf("file:// form = %+v, %v; want ID %+v", b, err, a.ID)
	}
	c, err := ParseRepo(other, ParseOptions{})
	if err != nil || c.ID == a.ID || c.ID.Name != a.ID.Name {
		t.Errorf("two local repos named alike: %+v vs %+v (%v)", a.ID, c.ID, err)
	}
	d, err := ParseRepo(bare, ParseOptions{})
	if err != nil || d.ID.Name != "src" {
		t.Errorf("bare local = %+v, %v", d, err)
	}

	// Relative to the working directory.
	wd, _ := os.Getwd()
	t.Cleanup(func() { os.Chdir(wd) })
	if err := os.Chdir(filepath.Dir(src)); err != nil {
		t.Fatal(err)
	}
	for _, rel := range []string{"src", "./src"} {
		e, err := ParseRepo(rel, ParseOptions{})
		if err != nil || e.ID != a.ID {
			t.Errorf("relative %q = %+v, %v; want %+v", rel, e, err, a.ID)
		}
	}
	notRepo := t.TempDir()
	if _, err := ParseRepo(notRepo, ParseOptions{}); !errors.Is(err, grove.ErrInvalid) {
		t.Errorf("non-repo dir: err = %v, want ErrInvalid", err)
	}
	if _, err := ParseRepo(filepath.Join(notRepo, "missing"), ParseOptions{}); !errors.Is(err, grove.ErrNotFound) {
		t.Errorf("missing dir: err = %v, want ErrNotFound", err)
	}
}

func TestParseRepoRejects(t *testing.T) {
	const secret = "ghp_s3cr3tT0ken"
	bad := []string{
		"", "../../etc", "octo/..", "./../x", "octo/.", "/tmp/../etc",
		"--upload-pack=touch /tmp/x", "-oProxyCommand=x", "octo/-x", "-octo/x",
		"octo/hel lo", "octo/hello\n", "octo/\x00x", "octo//hello", "octo/", "/octo",
		"https://" + secret + "@github.com/octo/hello", "https://x:" + secret + "@github.com/octo/hello",
		"ssh://git:" + secret + "@github.com/octo/hello",
		"ext::sh -c touch% /tmp/pwned", "ext::x", "fd::3", "ftp://github.com/o/r", "javascript://x/y/z",
		"https://github.com/octo", "https://github.com/octo/hello?x=1", "https://github.com/octo/hello#frag",
		"https:///octo/hello", "git@-oProxyCommand=x:o/r", "-@host:o/r", "https://github.com/o/r%00",
		"octo/hello\t", "octo/héllo",
	}
	for _, in := range bad {
		t.Run(in, func(t *testing.T) {
			r, err := ParseRepo(in, ParseOptions{})
			if err == nil {
				t.Fatalf("ParseRepo(%q) = %+v, want error", in, r)
			}
			if !errors.Is(err, grove.ErrInvalid) && !errors.Is(err, grove.ErrNotFound) {
				t.Errorf("ParseRepo(%q): %v, want ErrInvalid", in, err)
			}
			if strings.Contains(err.Error(), secret) {
				t.Errorf("error echoes the credential: %v", err)
			}
		})
	}
}

func TestCacheDir(t *testing.T) {
	tests := []struct {
		id   grove.RepoID
		want string
	}{
		{grove.RepoID{Host: "github.com", Owner: "octo", Name: "hello"}, "/r/octo/hello"},
		{grove.RepoID{Host: "gitlab.com:8443", Owner: "g/sub", Name: "p"}, "/r/gitlab.com:8443/g/sub/p"},
		{grove.RepoID{Host: "local", Owner: "abc123", Name: "src"}, "/r/local/abc123/src"},
	}
	for _, tt := range tests {
		if got := CacheDir("/r", tt.id); got != tt.want {
			t.Errorf("CacheDir(%v) = %q, want %q", tt.id, got, tt.want)
		}
	}
	if got := BarePath("/r/octo/hello"); got != "/r/octo/hello/.bare" {
		t.Errorf("BarePath = %q", got)
	}
}

func TestWorkspaceDirName(t *testing.T) {
	seen := map[string]bool{}
	for _, in := range [][3]string{
		{"alice", "conv1", "agent/edits-conv1"},
		{"alice", "conv1", "agent_edits-conv1"}, // sanitises alike, must not collide
		{"bob", "conv1", "agent/edits-conv1"},
		{"../..", "..", "/etc/passwd"},
		{"al ice\n", "c", ""},
		{strings.Repeat("x", 300), "c", "b"},
		{strings.Repeat("x", 40) + "alice", "c", "b"}, // users alike in their first 40 bytes
		{strings.Repeat("x", 40) + "bob", "c", "b"},
	} {
		name := WorkspaceDirName(in[0], in[1], in[2])
		if seen[name] {
			t.Errorf("WorkspaceDirName(%q) collides: %s", in, name)
		}
		seen[name] = true
		if name != WorkspaceDirName(in[0], in[1], in[2]) {
			t.Errorf("WorkspaceDirName not deterministic")
		}
		if strings.ContainsAny(name, "/\\ \n\x00") || strings.HasPrefix(name, ".") || strings.HasPrefix(name, "-") || len(name) > 200 {
			t.Errorf("WorkspaceDirName(%q) = %q is not filesystem-safe", in, name)
		}
	}
}

func FuzzParseRepo(f *testing.F) {
	for _, s := range []string{"octo/hello", "https://github.com/o/r.git", "git@h:o/r", "ssh://git@h:22/o/r",
		"file:///tmp/x", "../../etc", "--upload-pack=x", "ext::sh", "https://u:p@h/o/r", "/tmp", "a/b/c"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		r, err := ParseRepo(s, ParseOptions{})
		if err != nil {
			if !errors.Is(err, grove.ErrInvalid) && !errors.Is(err, grove.ErrNotFound) {
				t.Fatalf("ParseRepo(%q): error of unknown kind: %v", s, err)
			}
			return
		}
		if r.Local {
			return // a real directory on this machine; validated by existence
		}
		for _, part := range append(strings.Split(r.ID.Owner, "/"), r.ID.Name, r.ID.Host) {
			if part == "" || part == "." || part == ".." || strings.HasPrefix(part, "-") {
				t.Fatalf("ParseRepo(%q) accepted unsafe segment %q: %+v", s, part, r)
			}
		}
		if strings.HasPrefix(r.URL, "-") || strings.ContainsAny(r.URL, " \t\n\x00") || strings.Contains(r.URL, "::") {
			t.Fatalf("ParseRepo(%q) produced unsafe URL %q", s, r.URL)
		}
		again, err := ParseRepo(r.URL, ParseOptions{})
		if err != nil || again.ID != r.ID {
			t.Fatalf("ParseRepo(%q).URL %q does not round-trip: %+v, %v", s, r.URL, again, err)
		}
	})
}
