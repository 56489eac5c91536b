package tools

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/grove-dev/grove"
)

func TestReplaceExact(t *testing.T) {
	const file = "package a\n\nfunc f() {\n\treturn 1\n}\n\nfunc g() {\n\treturn 1\n}\n"
	tests := []struct {
		name     string
		content  string
		old, new string
		all      bool
		want     string
		wantLine int
		wantCode string
		errHas   string
		hintHas  string
		wantRepl int
	}{
		{name: "unique", content: file, old: "func f() {\n\treturn 1", new: "func f() {\n\treturn 2", wantLine: 3, wantRepl: 1,
			want: "package a\n\nfunc f() {\n\treturn 2\n}\n\nfunc g() {\n\treturn 1\n}\n"},
		{name: "several", content: file, old: "\treturn 1", new: "\treturn 2", wantCode: "E_INVALID_ARGUMENT", errHas: "matches 2 times, at lines 4, 8"},
		{name: "replace all", content: file, old: "return 1", new: "return 3", all: true, wantLine: 4, wantRepl: 2,
			want: strings.ReplaceAll(file, "return 1", "return 3")},
		{name: "same", content: file, old: "x", new: "x", wantCode: "E_INVALID_ARGUMENT", errHas: "identical"},
		{name: "empty old", content: file, old: "", new: "x", wantCode: "E_INVALID_ARGUMENT", errHas: "empty"},
		{name: "whitespace only difference", content: file, old: "func g() {\n  return 1", new: "x", wantCode: "E_NOT_FOUND", hintHas: "matches at line 7 if whitespace is ignored"},
		{name: "closest candidate", content: file, old: "func gg() {", new: "x", wantCode: "E_NOT_FOUND", hintHas: "closest line is 7"},
		{name: "crlf file, lf old", content: "a\r\nb\r\nc\r\n", old: "a\nb", new: "A\nB", wantLine: 1, wantRepl: 1, want: "A\r\nB\r\nc\r\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, err := replaceExact(tt.content, tt.old, tt.new, tt.all)
			if tt.wantCode != "" {
				var te *Error
				if !errors.As(err, &te) || te.Code != tt.wantCode || !strings.Contains(te.Msg, tt.errHas) || !strings.Contains(te.Hint, tt.hintHas) {
					t.Fatalf("err = %v, want %s with %q and hint %q", err, tt.wantCode, tt.errHas, tt.hintHas)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if r.content != tt.want || r.firstLine != tt.wantLine || r.replacements != tt.wantRepl {
				t.Fatalf("got %q line %d repl %d", r.content, r.firstLine, r.replacements)
			}
		})
	}
}

func TestSnippetNumbered(t *testing.T) {
	content := strings.Repeat("x\n", 20)
	got := snippet(content, 10, 10, 4)
	lines := splitLines(got)
	if len(lines) != 9 || lines[0] != "     6\tx" || lines[8] != "    14\tx" {
		t.Fatalf("snippet = %q", got)
	}
	if got := snippet("a\nb\n", 1, 1, 4); got != "     1\ta\n     2\tb\n" {
		t.Fatalf("edge snippet = %q", got)
	}
}

func TestHeadTail(t *testing.T) {
	tests := []struct {
		name    string
		max     int
		writes  []string
		want    string
		omitted int64
	}{
		{"fits", 10, []string{"abc", "de"}, "abcde", 0},
		{"keeps head and tail", 6, []string{"abcdefghij"}, "abc\n[… 4 bytes omitted …]\nhij", 4},
		{"many small writes", 4, []string{"1", "2", "3", "4", "5", "6", "7", "8"}, "12\n[… 4 bytes omitted …]\n78", 4},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHeadTail(tt.max)
			for _, w := range tt.writes {
				_, _ = h.Write([]byte(w))
			}
			if h.String() != tt.want || h.omitted() != tt.omitted {
				t.Fatalf("got %q omitted %d", h.String(), h.omitted())
			}
		})
	}
}

func TestClosest(t *testing.T) {
	got := closest("main.og", []string{"main.go", "README.md", "mainly.txt", "go.mod"}, 3)
	if len(got) == 0 || got[0] != "main.go" {
		t.Fatalf("closest = %v", got)
	}
	if got := closest("zzzzzz", []string{"main.go"}, 3); len(got) != 0 {
		t.Fatalf("unrelated names suggested: %v", got)
	}
}

func TestGoTestParser(t *testing.T) {
	stream := `{"Action":"start","Package":"p"}
{"Action":"run","Package":"p","Test":"TestOK"}
{"Action":"output","Package":"p","Test":"TestOK","Output":"=== RUN   TestOK\n"}
{"Action":"pass","Package":"p","Test":"TestOK"}
{"Action":"run","Package":"p","Test":"TestBad"}
{"Action":"output","Package":"p","Test":"TestBad","Output":"    x_test.go:9: want 2, got 3\n"}
{"Action":"fail","Package":"p","Test":"TestBad"}
{"Action":"skip","Package":"p","Test":"TestSkip"}
{"Action":"fail","Package":"p"}
# q
q/x.go:3:1: syntax error
{"Action":"fail","Package":"q"}`
	g := newGoTestParser()
	for _, l := range strings.Split(stream, "\n") {
		g.line([]byte(l))
	}
	fails := g.failures()
	if g.passed != 1 || g.failed != 1 || g.skipped != 1 || len(fails) != 2 {
		t.Fatalf("counts %d/%d/%d failures %+v", g.passed, g.failed, g.skipped, fails)
	}
	if fails[0].Name != "p.TestBad" || !strings.Contains(fails[0].Excerpt, "want 2, got 3") {
		t.Fatalf("failure = %+v", fails[0])
	}
	if !strings.HasPrefix(fails[1].Name, "q ") || !strings.Contains(g.plain.String(), "syntax error") {
		t.Fatalf("package failure = %+v, plain %q", fails[1], g.plain.String())
	}
}

func TestParseRunnerOutput(t *testing.T) {
	pytest := `..F.s
=================================== FAILURES ===================================
__________________________________ test_bad ____________________________________

    def test_bad():
>       assert 1 == 2
E       assert 1 == 2

tests/test_a.py:5: AssertionError
=========================== short test summary info ============================
PASSED tests/test_a.py::test_ok
FAILED tests/test_a.py::test_bad - assert 1 == 2
SKIPPED [1] tests/test_a.py:9: nope
1 failed, 3 passed, 1 skipped in 0.05s
`
	cargo := "running 3 tests\ntest a ... ok\ntest b::c ... FAILED\ntest d ... ignored\n\n---- b::c stdout ----\npanicked at 'boom'\n\ntest result: FAILED. 1 passed; 1 failed; 1 ignored; 0 measured\n"
	jest := "  ● math › adds\n\n    expect(received).toBe(expected)\n\nTests:       1 failed, 1 skipped, 4 passed, 6 total\n"
	tests := []struct {
		name                    string
		parse                   func(string) (int, int, int, []FailedTest)
		out                     string
		passed, failed, skipped int
		failName, excerptHas    string
	}{
		{"pytest", parsePytest, pytest, 3, 1, 1, "tests/test_a.py::test_bad", "assert 1 == 2"},
		{"cargo", parseCargo, cargo, 1, 1, 1, "b::c", "boom"},
		{"jest", parseJest, jest, 4, 1, 1, "math › adds", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, f, s, fails := tt.parse(tt.out)
			if p != tt.passed || f != tt.failed || s != tt.skipped || len(fails) != 1 || fails[0].Name != tt.failName || !strings.Contains(fails[0].Excerpt, tt.excerptHas) {
				t.Fatalf("got %d/%d/%d %+v", p, f, s, fails)
			}
		})
	}
}

func TestCatalog(t *testing.T) {
	ts := New(Options{})
	defer ts.Close()
	all := ts.Catalog(true)
	ro := ts.Catalog(false)
	if len(all) != 27 {
		t.Fatalf("catalog has %d tools: %v", len(all), Names(all))
	}
	for _, tl := range ro {
		if tl.Write || !tl.Annotations.ReadOnly && !tl.Unbound {
			t.Errorf("read-only catalog lists %s", tl.Name)
		}
	}
	for _, tl := range all {
		if tl.InputSchema.Type != "object" || tl.OutputSchema == nil || tl.Description == "" {
			t.Errorf("%s: incomplete definition", tl.Name)
		}
		if tl.Annotations.ReadOnly && (tl.Write || tl.Annotations.Destructive) {
			t.Errorf("%s: read-only tool marked as writing", tl.Name)
		}
		if !tl.Annotations.ReadOnly && !tl.Write && !tl.Unbound {
			t.Errorf("%s: changes things but is listed for read-only workspaces", tl.Name)
		}
	}
}

// TestCallValidation needs no Service: bad input is refused before any
// call reaches it.
func TestCallValidation(t *testing.T) {
	ts := New(Options{})
	defer ts.Close()
	tests := []struct {
		name, tool, input, code string
	}{
		{"unknown tool", "rm_rf", `{}`, "E_NOT_FOUND"},
		{"unknown field", "read_file", `{"path":"a","bogus":1}`, "E_INVALID_ARGUMENT"},
		{"wrong type", "read_file", `{"path":5}`, "E_INVALID_ARGUMENT"},
		{"missing required", "read_file", `{}`, "E_INVALID_ARGUMENT"},
		{"not an object", "read_file", `[1]`, "E_INVALID_ARGUMENT"},
		{"malformed", "read_file", `{"path":`, "E_INVALID_ARGUMENT"},
		{"no workspace", "read_file", `{"path":"a"}`, "E_INVALID_ARGUMENT"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ts.Call(context.Background(), nil, "", tt.tool, json.RawMessage(tt.input), nil)
			if Code(err) != tt.code {
				t.Fatalf("err = %v, want %s", err, tt.code)
			}
			if !strings.HasPrefix(err.Error(), tt.code+": ") {
				t.Fatalf("error text %q does not start with its code", err)
			}
		})
	}
}

func TestErrorText(t *testing.T) {
	err := asError(grove.Errorf(grove.ErrIsDirectory, "src is a directory"))
	if got := err.Error(); got != "E_IS_DIRECTORY: src is a directory. Hint: use list_dir to see its entries" {
		t.Fatalf("got %q", got)
	}
	if !errors.Is(err, grove.ErrIsDirectory) || !errors.Is(ErrPlatformNotConfigured, grove.ErrNotSupported) {
		t.Fatal("tool errors must keep their kind")
	}
	if Code(context.DeadlineExceeded) != "E_TIMEOUT" {
		t.Fatal("deadline is not E_TIMEOUT")
	}
}
