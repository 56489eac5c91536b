package gitfmt

import (
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/grove-dev/grove"
)

func TestParseDiffFilesRealGit(t *testing.T) {
	r := newRepo(t)
	r.write("mod.txt", "one\ntwo\nthree\n")
	r.write("del.txt", "bye\nbye\n")
	r.write("bin.dat", "\x00\x01\x02binary")
	r.write("renamed-from", strings.Repeat("same line\n", 30))
	r.commitAll("base")

	r.write("mod.txt", "one\n2\nthree\nfour\n")
	r.git("rm", "-q", "del.txt")
	r.write("bin.dat", "\x00\x01\x03binary!")
	newName := "new\nname \xff.txt"
	r.git("mv", "renamed-from", newName)
	r.write(newName, strings.Repeat("same line\n", 30)+"added\n")
	r.write("added.txt", "a\nb\n")
	r.git("add", "-A")

	want := []grove.DiffFile{
		{Path: "added.txt", Status: "A", Additions: 2},
		{Path: "bin.dat", Status: "M", Binary: true},
		{Path: "del.txt", Status: "D", Deletions: 2},
		{Path: "mod.txt", Status: "M", Additions: 2, Deletions: 1},
		{Path: newName, OrigPath: "renamed-from", Status: "R", Additions: 1},
	}

	t.Run("raw+numstat in one call", func(t *testing.T) {
		out := r.git(append(append([]string{"diff", "--cached"}, DiffFilesFlags()...), "--")...)
		got, err := ParseDiffFiles(out)
		if err != nil {
			t.Fatalf("ParseDiffFiles(%q): %v", out, err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("got  %#v\nwant %#v", got, want)
		}
	})
	t.Run("name-status merged with numstat", func(t *testing.T) {
		ns, err := ParseNameStatus(r.git("diff", "--cached", "--name-status", "-z", "-M"))
		if err != nil {
			t.Fatal(err)
		}
		num, err := ParseNumstat(r.git("diff", "--cached", "--numstat", "-z", "-M"))
		if err != nil {
			t.Fatal(err)
		}
		if got := MergeDiffFiles(ns, num); !reflect.DeepEqual(got, want) {
			t.Errorf("got  %#v\nwant %#v", got, want)
		}
	})
	t.Run("shortstat", func(t *testing.T) {
		files, ins, del := ParseShortstat(string(r.git("diff", "--cached", "--shortstat", "-M")))
		if files != 5 || ins != 5 || del != 3 {
			t.Errorf("shortstat = %d files, +%d, -%d; want 5, +5, -3", files, ins, del)
		}
	})
	t.Run("no changes", func(t *testing.T) {
		got, err := ParseDiffFiles(r.git(append([]string{"diff", "HEAD", "HEAD"}, DiffFilesFlags()...)...))
		if err != nil || len(got) != 0 {
			t.Errorf("empty diff = %+v, %v", got, err)
		}
	})
}

func TestParseShortstat(t *testing.T) {
	tests := []struct {
		in                  string
		files, ins, deleted int
	}{
		{" 3 files changed, 10 insertions(+), 2 deletions(-)\n", 3, 10, 2},
		{" 1 file changed, 1 insertion(+)", 1, 1, 0},
		{" 1 file changed, 1 deletion(-)", 1, 0, 1},
		{"", 0, 0, 0},
		{"garbage, more garbage", 0, 0, 0},
		{" 99999999999999999999999 files changed", 0, 0, 0},
	}
	for _, tt := range tests {
		f, i, d := ParseShortstat(tt.in)
		if f != tt.files || i != tt.ins || d != tt.deleted {
			t.Errorf("ParseShortstat(%q) = %d,%d,%d want %d,%d,%d", tt.in, f, i, d, tt.files, tt.ins, tt.deleted)
		}
	}
}

func TestDiffParsersMalformed(t *testing.T) {
	tests := []struct {
		name  string
		parse func([]byte) ([]grove.DiffFile, error)
		in    string
	}{
		{"numstat no tabs", ParseNumstat, "12 path\x00"},
		{"numstat bad count", ParseNumstat, "x\t1\tpath\x00"},
		{"numstat negative", ParseNumstat, "-1\t1\tpath\x00"},
		{"numstat rename short", ParseNumstat, "1\t1\t\x00old\x00"},
		{"name-status no path", ParseNameStatus, "M\x00"},
		{"name-status rename short", ParseNameStatus, "R100\x00old\x00"},
		{"name-status bad letter", ParseNameStatus, "m\x00x\x00"},
		{"raw short head", ParseDiffFiles, ":100644 M\x00x\x00"},
		{"raw rename short", ParseDiffFiles, ":100644 100644 a b R100\x00old\x00"},
	}
	for _, tt := range tests {
		if _, err := tt.parse([]byte(tt.in)); !errors.Is(err, grove.ErrInvalid) {
			t.Errorf("%s: got %v, want ErrInvalid", tt.name, err)
		}
	}
}

func fuzzDiffParser(f *testing.F, parse func([]byte) ([]grove.DiffFile, error), seeds ...string) {
	for _, s := range seeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		files, err := parse(in)
		if err != nil {
			if !errors.Is(err, grove.ErrInvalid) {
				t.Fatalf("error %v is not ErrInvalid", err)
			}
			return
		}
		for _, fl := range files {
			if fl.Path == "" || fl.Additions < 0 || fl.Deletions < 0 {
				t.Fatalf("accepted bad entry %+v", fl)
			}
		}
	})
}

func FuzzParseNumstat(f *testing.F) {
	fuzzDiffParser(f, ParseNumstat, "1\t2\ta\x00-\t-\tb\x000\t0\t\x00old\x00new\x00")
}

func FuzzParseNameStatus(f *testing.F) {
	fuzzDiffParser(f, ParseNameStatus, "M\x00a\x00R100\x00old\x00new\x00C75\x00x\x00y\x00")
}

func FuzzParseDiffFiles(f *testing.F) {
	fuzzDiffParser(f, ParseDiffFiles,
		":100644 100644 aa bb R100\x00a\x00a2\x00:100644 100644 cc dd M\x00b\x000\t0\t\x00a\x00a2\x001\t0\tb\x00")
}

func FuzzParseShortstat(f *testing.F) {
	f.Add(" 3 files changed, 10 insertions(+), 2 deletions(-)")
	f.Fuzz(func(t *testing.T, in string) {
		files, ins, del := ParseShortstat(in)
		if files < 0 || ins < 0 || del < 0 {
			t.Fatalf("negative counts from %q", in)
		}
	})
}
