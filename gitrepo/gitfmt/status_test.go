package gitfmt

import (
	"errors"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/grove-dev/grove"
)

// Names that break line-based or quoted parsing: spaces, newlines, tabs,
// quotes, backslashes, invalid UTF-8 and a leading dash.
var oddNames = []string{"with space.txt", "new\nline.txt", "tab\there", `quo"te`, `back\slash`, "bad\xff\xfeutf8", "-dash", "dir/ünïcode.txt"}

func TestParseStatusV2RealGit(t *testing.T) {
	tests := []struct {
		name  string
		setup func(t *testing.T, r *repo)
		check func(t *testing.T, r *repo, st *grove.Status)
	}{
		{
			name:  "clean",
			setup: func(t *testing.T, r *repo) { r.write("a", "a\n"); r.commitAll("init") },
			check: func(t *testing.T, r *repo, st *grove.Status) {
				want := &grove.Status{Branch: "main", Head: r.head(), Clean: true,
					Staged: []grove.FileStatus{}, Unstaged: []grove.FileStatus{}, Untracked: []string{}, Conflicted: []grove.FileStatus{}}
				if !reflect.DeepEqual(st, want) {
					t.Errorf("got %+v, want %+v", st, want)
				}
			},
		},
		{
			name:  "initial commit pending",
			setup: func(t *testing.T, r *repo) { r.write("a", "a\n"); r.git("add", "a") },
			check: func(t *testing.T, r *repo, st *grove.Status) {
				if st.Head != "" || st.Branch != "main" || st.Clean {
					t.Errorf("head %q branch %q clean %v", st.Head, st.Branch, st.Clean)
				}
				wantFiles(t, "staged", st.Staged, []grove.FileStatus{{Path: "a", Index: "A", WorkTree: "."}})
			},
		},
		{
			name: "staged and unstaged on one file, deleted, untracked",
			setup: func(t *testing.T, r *repo) {
				r.write("a", "a\n")
				r.write("gone", "g\n")
				r.commitAll("init")
				r.write("a", "a2\n")
				r.git("add", "a")
				r.write("a", "a3\n")
				r.git("rm", "-q", "--cached", "gone")
				r.write("new", "n\n")
			},
			check: func(t *testing.T, r *repo, st *grove.Status) {
				wantFiles(t, "staged", st.Staged, []grove.FileStatus{{Path: "a", Index: "M", WorkTree: "M"}, {Path: "gone", Index: "D", WorkTree: "."}})
				wantFiles(t, "unstaged", st.Unstaged, []grove.FileStatus{{Path: "a", Index: "M", WorkTree: "M"}})
				wantStrings(t, "untracked", st.Untracked, []string{"gone", "new"})
				if st.Clean {
					t.Error("clean with changes")
				}
			},
		},
		{
			name: "renames with odd names",
			setup: func(t *testing.T, r *repo) {
				for i, n := range oddNames {
					r.write("orig"+string(rune('a'+i)), strings.Repeat(n+"\n", 20))
				}
				r.write("dir/keep", "") // git mv needs the target directory
				r.commitAll("init")
				for i, n := range oddNames {
					r.git("mv", "--", "orig"+string(rune('a'+i)), n)
				}
			},
			check: func(t *testing.T, r *repo, st *grove.Status) {
				var want []grove.FileStatus
				for i, n := range oddNames {
					want = append(want, grove.FileStatus{Path: n, OrigPath: "orig" + string(rune('a'+i)), Index: "R", WorkTree: "."})
				}
				wantFiles(t, "staged", st.Staged, want)
				wantFiles(t, "unstaged", st.Unstaged, nil)
			},
		},
		{
			name: "untracked odd names",
			setup: func(t *testing.T, r *repo) {
				r.write(".gitignore", "*.log\n")
				r.commitAll("init")
				for _, n := range oddNames {
					r.write(n, "x")
				}
				r.write("ignored.log", "x")
			},
			check: func(t *testing.T, r *repo, st *grove.Status) {
				wantStrings(t, "untracked", st.Untracked, oddNames)
			},
		},
		{
			name: "conflicted merge",
			setup: func(t *testing.T, r *repo) {
				r.write("f", "base\n")
				r.commitAll("base")
				r.git("checkout", "-q", "-b", "other")
				r.write("f", "other\n")
				r.commitAll("other")
				r.git("checkout", "-q", "main")
				r.write("f", "main\n")
				r.commitAll("main")
				if _, err := r.gitErr("merge", "-q", "other"); err == nil {
					t.Fatal("merge succeeded; wanted a conflict")
				}
			},
			check: func(t *testing.T, r *repo, st *grove.Status) {
				wantFiles(t, "conflicted", st.Conflicted, []grove.FileStatus{{Path: "f", Index: "U", WorkTree: "U"}})
				if st.Clean {
					t.Error("clean during conflict")
				}
			},
		},
		{
			name: "detached",
			setup: func(t *testing.T, r *repo) {
				r.write("a", "a\n")
				r.commitAll("init")
				r.git("checkout", "-q", "--detach")
			},
			check: func(t *testing.T, r *repo, st *grove.Status) {
				if st.Branch != "" || st.Head != r.head() || !st.Clean {
					t.Errorf("branch %q head %q clean %v", st.Branch, st.Head, st.Clean)
				}
			},
		},
		{
			name: "upstream ahead and behind",
			setup: func(t *testing.T, r *repo) {
				up := tracking(t, r)
				up.write("a", "2\n")
				up.commitAll("two")
				r.git("fetch", "-q", "origin")
				r.write("b", "1\n")
				r.commitAll("local one")
				r.write("b", "2\n")
				r.commitAll("local two")
			},
			check: func(t *testing.T, r *repo, st *grove.Status) {
				if st.Upstream != "origin/main" || st.Ahead != 2 || st.Behind != 1 || st.UpstreamGone {
					t.Errorf("upstream %q ahead %d behind %d gone %v", st.Upstream, st.Ahead, st.Behind, st.UpstreamGone)
				}
			},
		},
		{
			name:  "upstream in step",
			setup: func(t *testing.T, r *repo) { tracking(t, r) },
			check: func(t *testing.T, r *repo, st *grove.Status) {
				if st.Upstream != "origin/main" || st.Ahead != 0 || st.Behind != 0 || st.UpstreamGone {
					t.Errorf("upstream %q ahead %d behind %d gone %v", st.Upstream, st.Ahead, st.Behind, st.UpstreamGone)
				}
			},
		},
		{
			// A new agent branch: its upstream is set before anything was
			// pushed, so git has no counts to give.
			name: "upstream never pushed",
			setup: func(t *testing.T, r *repo) {
				r.write("a", "1\n")
				r.commitAll("one")
				r.git("remote", "add", "origin", t.TempDir())
				r.git("config", "branch.main.remote", "origin")
				r.git("config", "branch.main.merge", "refs/heads/main")
			},
			check: func(t *testing.T, r *repo, st *grove.Status) {
				if st.Upstream != "origin/main" || !st.UpstreamGone || st.Ahead != 0 || st.Behind != 0 {
					t.Errorf("upstream %q gone %v ahead %d behind %d", st.Upstream, st.UpstreamGone, st.Ahead, st.Behind)
				}
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := newRepo(t)
			tt.setup(t, r)
			out := r.status()
			st, err := ParseStatusV2(out)
			if err != nil {
				t.Fatalf("parse %q: %v", out, err)
			}
			tt.check(t, r, st)
			roundTrip(t, st)
		})
	}
}

func TestParseStatusV2Malformed(t *testing.T) {
	for _, in := range []string{
		"x\x00",
		"1\x00",
		"1 M. N... 1 2 3 a b\x00",   // too few fields
		"1 m. N... 1 2 3 a b c\x00", // bad XY
		"2 R. N... 1 2 3 a b R100 new\x00",
		"# branch.ab +1\x00",
		"# branch.ab +x -1\x00",
		"u UU N... 1 2 3 4 a b c\x00",
		"? \x00",
	} {
		if _, err := ParseStatusV2([]byte(in)); !errors.Is(err, grove.ErrInvalid) {
			t.Errorf("ParseStatusV2(%q) = %v, want ErrInvalid", in, err)
		}
	}
}

func wantFiles(t *testing.T, what string, got, want []grove.FileStatus) {
	t.Helper()
	less := func(a, b grove.FileStatus) int { return strings.Compare(a.Path, b.Path) }
	got, want = slices.SortedFunc(slices.Values(got), less), slices.SortedFunc(slices.Values(want), less)
	if len(got) == 0 && len(want) == 0 {
		return
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("%s = %#v, want %#v", what, got, want)
	}
}

func wantStrings(t *testing.T, what string, got, want []string) {
	t.Helper()
	got, want = slices.Sorted(slices.Values(got)), slices.Sorted(slices.Values(want))
	if !slices.Equal(got, want) {
		t.Errorf("%s = %q, want %q", what, got, want)
	}
}

// formatStatusV2 writes st back in porcelain v2 -z form, so tests and the
// fuzzer can check that parsing loses nothing Status holds.
// tracking gives r an origin with one commit on main and checks out main
// tracking origin/main; it returns the origin.
func tracking(t *testing.T, r *repo) *repo {
	t.Helper()
	up := newRepo(t)
	up.write("a", "1\n")
	up.commitAll("one")
	r.git("remote", "add", "origin", up.dir)
	r.git("fetch", "-q", "origin")
	r.git("checkout", "-q", "-b", "main", "--track", "origin/main")
	return up
}

func formatStatusV2(st *grove.Status) []byte {
	var b strings.Builder
	rec := func(s string) { b.WriteString(s); b.WriteByte(0) }
	head := st.Head
	if head == "" {
		head = "(initial)"
	}
	rec("# branch.oid " + head)
	branch := st.Branch
	if branch == "" {
		branch = "(detached)"
	}
	rec("# branch.head " + branch)
	if st.Upstream != "" {
		rec("# branch.upstream " + st.Upstream)
	}
	if st.Upstream != "" && !st.UpstreamGone || st.Ahead != 0 || st.Behind != 0 {
		rec("# branch.ab +" + itoa(st.Ahead) + " -" + itoa(st.Behind))
	}
	// A file both staged and unstaged is one entry in git's output: write
	// the staged list whole and, from the unstaged list, only what is not
	// also staged.
	entry := func(f grove.FileStatus) {
		if f.OrigPath != "" {
			rec("2 " + f.Index + f.WorkTree + " N... 100644 100644 100644 0 0 R100 " + f.Path)
			rec(f.OrigPath)
		} else {
			rec("1 " + f.Index + f.WorkTree + " N... 100644 100644 100644 0 0 " + f.Path)
		}
	}
	for _, f := range st.Staged {
		entry(f)
	}
	for _, f := range st.Unstaged {
		if f.Index == "." {
			entry(f)
		}
	}
	for _, f := range st.Conflicted {
		rec("u " + f.Index + f.WorkTree + " N... 1 1 1 1 0 0 0 " + f.Path)
	}
	for _, p := range st.Untracked {
		rec("? " + p)
	}
	return []byte(b.String())
}

func itoa(n int) string { return strconv.Itoa(n) }

func roundTrip(t *testing.T, st *grove.Status) {
	t.Helper()
	again, err := ParseStatusV2(formatStatusV2(st))
	if err != nil {
		t.Fatalf("reparse: %v", err)
	}
	if !reflect.DeepEqual(normalise(again), normalise(st)) {
		t.Errorf("round trip changed status:\n got %+v\nwant %+v", again, st)
	}
}

// normalise orders lists: the formatter regroups entries, which may
// reorder them, and order carries no meaning across lists.
func normalise(st *grove.Status) *grove.Status {
	c := *st
	less := func(a, b grove.FileStatus) int {
		return strings.Compare(a.Path+"\x00"+a.Index+a.WorkTree, b.Path+"\x00"+b.Index+b.WorkTree)
	}
	c.Staged = slices.SortedFunc(slices.Values(st.Staged), less)
	c.Unstaged = slices.SortedFunc(slices.Values(st.Unstaged), less)
	return &c
}

func FuzzParseStatusV2(f *testing.F) {
	f.Add([]byte("# branch.oid 0123\x00# branch.head main\x00# branch.ab +1 -2\x001 .M N... 100644 100644 100644 a b x y\x00"))
	f.Add([]byte("2 R. N... 100644 100644 100644 a b R100 new name\x00old\x00? u\x00u UU N... 1 1 1 1 a b c f\x00! ign\x00"))
	f.Add([]byte("# branch.head (detached)\x00"))
	f.Fuzz(func(t *testing.T, in []byte) {
		st, err := ParseStatusV2(in)
		if err != nil {
			if !errors.Is(err, grove.ErrInvalid) {
				t.Fatalf("error %v is not ErrInvalid", err)
			}
			return
		}
		if st.Clean != (len(st.Staged)+len(st.Unstaged)+len(st.Untracked)+len(st.Conflicted) == 0) {
			t.Fatalf("Clean %v inconsistent with %+v", st.Clean, st)
		}
		// Round trip holds for statuses whose fields fit the format: names
		// with NUL, header values with spaces or an empty branch name
		// cannot be written back.
		if representable(st) {
			roundTrip(t, st)
		}
	})
}

func representable(st *grove.Status) bool {
	if strings.ContainsAny(st.Head+st.Branch+st.Upstream, "\x00") || st.Head == "(initial)" || st.Branch == "(detached)" {
		return false
	}
	for _, l := range [][]grove.FileStatus{st.Staged, st.Unstaged, st.Conflicted} {
		for _, f := range l {
			if strings.Contains(f.Path+f.OrigPath, "\x00") {
				return false
			}
		}
	}
	return true
}
