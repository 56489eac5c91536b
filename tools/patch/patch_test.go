package patch

import (
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/grove-dev/grove"
)

func TestParse(t *testing.T) {
	tests := []struct {
		name    string
		in      string
		want    *Patch
		wantErr string
	}{
		{
			name: "all actions",
			in: `*** Begin Patch
*** Add File: a/new.txt
+hello
+
+world
*** Delete File: old.txt
*** Update File: src/main.go
*** Move to: src/app.go
@@ func main() {
 	x := 1
-	y := 2
+	y := 3

@@
-last
+LAST
*** End of File
*** End Patch
`,
			want: &Patch{Files: []FileOp{
				{Action: Add, Path: "a/new.txt", Content: "hello\n\nworld\n"},
				{Action: Delete, Path: "old.txt"},
				{Action: Update, Path: "src/main.go", MoveTo: "src/app.go", Hunks: []Hunk{
					{Anchors: []string{"func main() {"}, Lines: []Line{{' ', "\tx := 1"}, {'-', "\ty := 2"}, {'+', "\ty := 3"}, {' ', ""}}},
					{Lines: []Line{{'-', "last"}, {'+', "LAST"}}, EOF: true},
				}},
			}},
		},
		{
			name: "first hunk without @@, CRLF and surrounding blank lines",
			in:   "\n*** Begin Patch\r\n*** Update File: x\r\n-a\r\n+b\r\n*** End Patch\r\n\n",
			want: &Patch{Files: []FileOp{{Action: Update, Path: "x", Hunks: []Hunk{{Lines: []Line{{'-', "a"}, {'+', "b"}}}}}}},
		},
		{
			name: "stacked anchors",
			in:   "*** Begin Patch\n*** Update File: x\n@@ class A\n@@ def f\n-a\n+b\n*** End Patch",
			want: &Patch{Files: []FileOp{{Action: Update, Path: "x", Hunks: []Hunk{{Anchors: []string{"class A", "def f"}, Lines: []Line{{'-', "a"}, {'+', "b"}}}}}}},
		},
		{name: "empty", in: "", wantErr: "must start"},
		{name: "only begin", in: "*** Begin Patch", wantErr: "must start"},
		{name: "no end", in: "*** Begin Patch\n*** Delete File: x\n", wantErr: "must end"},
		{name: "no ops", in: "*** Begin Patch\n*** End Patch", wantErr: "no file operations"},
		{name: "garbage header", in: "*** Begin Patch\nhello\n*** End Patch", wantErr: "expected a file header"},
		{name: "add line without plus", in: "*** Begin Patch\n*** Add File: x\nhello\n*** End Patch", wantErr: "must start with '+'"},
		{name: "empty path", in: "*** Begin Patch\n*** Delete File:  \n*** End Patch", wantErr: "empty path"},
		{name: "update without hunks", in: "*** Begin Patch\n*** Update File: x\n*** End Patch", wantErr: "no hunks"},
		{name: "bad hunk line", in: "*** Begin Patch\n*** Update File: x\n@@\n*a\n*** End Patch", wantErr: "must start with ' ', '-' or '+'"},
		{name: "empty hunk", in: "*** Begin Patch\n*** Update File: x\n@@ foo\n*** End Patch", wantErr: "empty hunk"},
		{name: "hunk after EOF needs @@", in: "*** Begin Patch\n*** Update File: x\n-a\n*** End of File\n-b\n*** End Patch", wantErr: "expected \"@@\""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Parse(tt.in)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) || !errors.Is(err, grove.ErrInvalid) {
					t.Fatalf("err = %v, want ErrInvalid containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Fatalf("got  %#v\nwant %#v", got, tt.want)
			}
			again, err := Parse(Format(got))
			if err != nil || !reflect.DeepEqual(again, got) {
				t.Fatalf("round trip: %v\n%s", err, Format(got))
			}
		})
	}
}

func TestApply(t *testing.T) {
	files := map[string]string{
		"a.go":     "package a\n\nfunc f() {\n\treturn 1\n}\n\nfunc g() {\n\treturn 1\n}\n",
		"crlf.txt": "one\r\ntwo\r\nthree\r\n",
		"ws.txt":   "  indented   \nnext\n",
		"gone.txt": "bye\n",
		"noeol":    "x\ny",
	}
	read := func(p string) ([]byte, error) {
		if s, ok := files[p]; ok {
			return []byte(s), nil
		}
		return nil, grove.Errorf(grove.ErrNotFound, "%s", p)
	}
	tests := []struct {
		name     string
		patch    string
		want     map[string]string // path -> new content ("<nil>" for deleted)
		wantFuzz map[string]Fuzz
		wantErr  error
		errHas   string
	}{
		{
			name:  "anchor disambiguates",
			patch: "*** Begin Patch\n*** Update File: a.go\n@@ func g() {\n-\treturn 1\n+\treturn 2\n*** End Patch",
			want:  map[string]string{"a.go": "package a\n\nfunc f() {\n\treturn 1\n}\n\nfunc g() {\n\treturn 2\n}\n"},
		},
		{
			name:    "ambiguous without anchor",
			patch:   "*** Begin Patch\n*** Update File: a.go\n@@\n-\treturn 1\n+\treturn 2\n*** End Patch",
			wantErr: grove.ErrInvalid, errHas: "matches 2 places (first at line 4)",
		},
		{
			name:    "context not found quotes the hunk",
			patch:   "*** Begin Patch\n*** Update File: a.go\n@@\n-nope\n+yes\n*** End Patch",
			wantErr: grove.ErrInvalid, errHas: "context not found:\n-nope\n+yes",
		},
		{
			name:    "anchor not found",
			patch:   "*** Begin Patch\n*** Update File: a.go\n@@ func h() {\n-x\n+y\n*** End Patch",
			wantErr: grove.ErrInvalid, errHas: "anchor line \"func h() {\" not found",
		},
		{
			name:     "crlf kept, trailing whitespace fuzz",
			patch:    "*** Begin Patch\n*** Update File: crlf.txt\n one\n-two  \n+TWO\n*** End Patch",
			want:     map[string]string{"crlf.txt": "one\r\nTWO\r\nthree\r\n"},
			wantFuzz: map[string]Fuzz{"crlf.txt": FuzzTrailingSpace},
		},
		{
			name:     "leading whitespace fuzz",
			patch:    "*** Begin Patch\n*** Update File: ws.txt\n-indented\n+done\n*** End Patch",
			want:     map[string]string{"ws.txt": "done\nnext\n"},
			wantFuzz: map[string]Fuzz{"ws.txt": FuzzSpace},
		},
		{
			name:  "end of file and no trailing newline kept",
			patch: "*** Begin Patch\n*** Update File: noeol\n-y\n+z\n*** End of File\n*** End Patch",
			want:  map[string]string{"noeol": "x\nz"},
		},
		{
			name:  "add, delete, move",
			patch: "*** Begin Patch\n*** Add File: n.txt\n+new\n*** Delete File: gone.txt\n*** Update File: ws.txt\n*** Move to: moved.txt\n@@\n next\n+after\n*** End Patch",
			want:  map[string]string{"n.txt": "new\n", "gone.txt": "<nil>", "ws.txt": "<nil>", "moved.txt": "  indented   \nnext\nafter\n"},
		},
		{
			name:    "all or nothing: a later failure fails the whole patch",
			patch:   "*** Begin Patch\n*** Add File: ok.txt\n+x\n*** Delete File: missing.txt\n*** End Patch",
			wantErr: grove.ErrNotFound,
		},
		{
			name:    "add over existing",
			patch:   "*** Begin Patch\n*** Add File: a.go\n+x\n*** End Patch",
			wantErr: grove.ErrConflict,
		},
		{
			name:    "move onto existing",
			patch:   "*** Begin Patch\n*** Update File: ws.txt\n*** Move to: a.go\n*** End Patch",
			wantErr: grove.ErrConflict,
		},
		{
			name:  "later op sees earlier op",
			patch: "*** Begin Patch\n*** Add File: t.txt\n+1\n*** Update File: t.txt\n-1\n+2\n*** End Patch",
			want:  map[string]string{"t.txt": "2\n"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := Parse(tt.patch)
			if err != nil {
				t.Fatal(err)
			}
			changes, err := Apply(p, read)
			if tt.wantErr != nil {
				if !errors.Is(err, tt.wantErr) || !strings.Contains(err.Error(), tt.errHas) {
					t.Fatalf("err = %v, want %v containing %q", err, tt.wantErr, tt.errHas)
				}
				if changes != nil {
					t.Fatal("failed apply returned changes")
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			got := map[string]string{}
			for _, c := range changes {
				dst := c.Path
				if c.MoveTo != "" {
					got[c.Path] = "<nil>"
					dst = c.MoveTo
				}
				if c.New == nil {
					got[dst] = "<nil>"
				} else {
					got[dst] = string(c.New)
				}
				if want, ok := tt.wantFuzz[c.Path]; ok && c.Fuzz != want {
					t.Errorf("%s fuzz = %v, want %v", c.Path, c.Fuzz, want)
				}
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Fatalf("got %q\nwant %q", got, tt.want)
			}
		})
	}
}

func FuzzParse(f *testing.F) {
	f.Add("*** Begin Patch\n*** Add File: a\n+x\n*** End Patch")
	f.Add("*** Begin Patch\n*** Update File: a\n*** Move to: b\n@@ x\n y\n-z\n+w\n*** End of File\n*** End Patch")
	f.Add("*** Begin Patch\n*** Delete File: a\n*** Update File: b\n-\n+\n@@\n\n*** End Patch\n")
	f.Add("*** Begin Patch\n*** End Patch")
	f.Fuzz(func(t *testing.T, s string) {
		p, err := Parse(s)
		if err != nil {
			if !errors.Is(err, grove.ErrInvalid) {
				t.Fatalf("error of wrong kind: %v", err)
			}
			return
		}
		again, err := Parse(Format(p))
		if err != nil {
			t.Fatalf("reparse of formatted patch: %v\n%q", err, Format(p))
		}
		if !reflect.DeepEqual(again, p) {
			t.Fatalf("round trip changed the patch:\n%#v\n%#v", p, again)
		}
		// Applying to an empty tree must not panic either.
		_, _ = Apply(p, func(string) ([]byte, error) { return []byte("a\nb\n"), nil })
	})
}
