package tools

import (
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"github.com/grove-dev/grove"
)

type RunTestsInput struct {
	Path      string `json:"path,omitempty" jsonschema:"package, directory or test file to run (default: everything)"`
	Filter    string `json:"filter,omitempty" jsonschema:"test name filter: go -run regex, pytest -k expression, cargo/npm name filter"`
	Framework string `json:"framework,omitempty" jsonschema:"go, pytest, npm, cargo or make; detected from the workspace when empty"`
	TimeoutS  int    `json:"timeout_s,omitempty" jsonschema:"seconds before the run is killed (default 600, max 3600)"`
}

type FailedTest struct {
	Name    string `json:"name"`
	Excerpt string `json:"excerpt"`
}

type RunTestsOutput struct {
	Framework string       `json:"framework"`
	Command   string       `json:"command"`
	Passed    int          `json:"passed"`
	Failed    int          `json:"failed"`
	Skipped   int          `json:"skipped"`
	Failures  []FailedTest `json:"failures"`
	ExitCode  int          `json:"exit_code"`
	TimedOut  bool         `json:"timed_out"`
	Output    string       `json:"output" jsonschema:"head and tail of the combined output"`
}

// detectFramework picks the test runner from marker files at the root.
func (c *call) detectFramework(ctx context.Context) (string, error) {
	entries, err := c.svc.ListDir(ctx, c.ws, ".", 1)
	if err != nil {
		return "", err
	}
	has := map[string]bool{}
	for _, e := range entries {
		has[e.Name] = true
	}
	switch {
	case has["go.mod"]:
		return "go", nil
	case has["Cargo.toml"]:
		return "cargo", nil
	case has["package.json"]:
		if b, err := c.svc.ReadFile(ctx, c.ws, "package.json", 1<<20); err == nil {
			var pj struct {
				Scripts map[string]string `json:"scripts"`
			}
			if json.Unmarshal(b, &pj) == nil && pj.Scripts["test"] != "" {
				return "npm", nil
			}
		}
	}
	switch {
	case has["pytest.ini"] || has["conftest.py"] || has["pyproject.toml"] || has["setup.cfg"] || has["tox.ini"] || has["setup.py"]:
		return "pytest", nil
	case has["Makefile"] || has["makefile"]:
		return "make", nil
	}
	return "", &Error{Code: "E_NOT_FOUND", Msg: "no test framework detected (looked for go.mod, Cargo.toml, package.json with a test script, pytest config, Makefile)",
		Hint: "pass framework explicitly, or run the tests with run_command", Err: grove.ErrNotFound}
}

func shellQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

func testCommand(fw, path, filter string) (string, error) {
	switch fw {
	case "go":
		pkg := "./..."
		if path != "." {
			pkg = "./" + strings.TrimSuffix(path, "/") + "/..."
			if strings.HasSuffix(path, ".go") {
				pkg = "./" + strings.TrimSuffix(path[:max(0, strings.LastIndex(path, "/"))], "/")
			}
		}
		cmd := "go test -json " + shellQuote(pkg)
		if filter != "" {
			cmd += " -run " + shellQuote(filter)
		}
		return cmd, nil
	case "pytest":
		cmd := "python3 -m pytest -rA -q --color=no"
		if path != "." {
			cmd += " " + shellQuote(path)
		}
		if filter != "" {
			cmd += " -k " + shellQuote(filter)
		}
		return cmd, nil
	case "npm":
		cmd := "npm test --silent"
		if filter != "" {
			cmd += " -- -t " + shellQuote(filter)
		}
		return cmd, nil
	case "cargo":
		cmd := "cargo test --color never"
		if filter != "" {
			cmd += " " + shellQuote(filter)
		}
		return cmd, nil
	case "make":
		return "make test", nil
	}
	return "", invalidf("framework %q: want go, pytest, npm, cargo or make", clip(fw, 40))
}

func runTests(ctx context.Context, c *call, in RunTestsInput) (RunTestsOutput, string, error) {
	timeout, _, err := commandTimeout(in.TimeoutS)
	if err != nil {
		return RunTestsOutput{}, "", err
	}
	if in.TimeoutS == 0 {
		timeout = 600e9
	}
	path, err := c.relPath(ctx, in.Path)
	if err != nil {
		return RunTestsOutput{}, "", err
	}
	fw := in.Framework
	if fw == "" {
		if fw, err = c.detectFramework(ctx); err != nil {
			return RunTestsOutput{}, "", err
		}
	}
	cmd, err := testCommand(fw, path, in.Filter)
	if err != nil {
		return RunTestsOutput{}, "", err
	}
	out := RunTestsOutput{Framework: fw, Command: cmd}
	var gt *goTestParser
	var onLine func(grove.Stream, []byte)
	if fw == "go" {
		gt = newGoTestParser()
		onLine = func(s grove.Stream, l []byte) {
			if s == grove.Stdout && gt.line(l) {
				c.progress(float64(gt.passed+gt.failed+gt.skipped), 0, fmt.Sprintf("%d passed, %d failed, %d skipped", gt.passed, gt.failed, gt.skipped))
			}
		}
	}
	c.progress(0, 0, "running "+cmd)
	res, stdout, stderr, err := c.runStreamed(ctx, grove.ExecRequest{
		Argv: []string{"bash", "-c", cmd + " 2>&1"}, Class: grove.ClassTest, Timeout: timeout, MaxOutput: streamCap,
	}, 1<<20, onLine)
	if err != nil {
		return out, "", err
	}
	_ = stderr
	out.ExitCode, out.TimedOut = res.ExitCode, res.TimedOut
	text := stdout.String()
	switch fw {
	case "go":
		out.Passed, out.Failed, out.Skipped, out.Failures = gt.passed, gt.failed, gt.skipped, gt.failures()
		out.Output = clip(gt.plain.String(), 20000)
	case "pytest":
		out.Passed, out.Failed, out.Skipped, out.Failures = parsePytest(text)
	case "cargo":
		out.Passed, out.Failed, out.Skipped, out.Failures = parseCargo(text)
	case "npm":
		out.Passed, out.Failed, out.Skipped, out.Failures = parseJest(text)
	}
	if out.Output == "" {
		ht := newHeadTail(20000)
		_, _ = ht.Write([]byte(text))
		out.Output = ht.String()
	}
	if out.Failed == 0 && res.ExitCode != 0 && !res.TimedOut {
		// Build errors, collection errors, a missing runner: the run failed
		// without a failing test to blame. That is an error, not a result
		// with failed: 0 that reads as a pass.
		return out, "", runFailed(fw, cmd, res.ExitCode, out)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%s: %d passed, %d failed, %d skipped; exit code %d\n$ %s\n", fw, out.Passed, out.Failed, out.Skipped, out.ExitCode, cmd)
	if out.TimedOut {
		fmt.Fprintf(&b, "TIMED OUT after %s; counts are partial.\n", timeout)
	}
	for _, f := range out.Failures {
		fmt.Fprintf(&b, "\nFAIL %s\n%s\n", f.Name, f.Excerpt)
	}
	if fw == "make" || (out.Passed+out.Failed+out.Skipped == 0) {
		b.WriteString("\n--- output ---\n" + tailLines(out.Output, 80) + "\n")
	}
	return out, b.String(), nil
}

// runFailed is the error of a test run that failed before or outside any
// test: E_NOT_INSTALLED when the runner was not found (exit 127), else
// E_TEST_RUN_FAILED, both with the end of the output.
func runFailed(fw, cmd string, exit int, out RunTestsOutput) error {
	excerpt := tailLines(out.Output, 40)
	if exit == 127 {
		return &Error{Code: "E_NOT_INSTALLED", Msg: fmt.Sprintf("%s: the test runner was not found in the sandbox (exit 127)\n$ %s\n%s", fw, cmd, excerpt),
			Hint: "the runner is not on the sandbox PATH; the operator can add its directory with GROVE_SANDBOX_PATH, or run it by full path with run_command", Err: grove.ErrNotInstalled}
	}
	if fw == "make" {
		return &Error{Code: "E_TEST_RUN_FAILED", Msg: fmt.Sprintf("make: the run failed (exit code %d); make reports no per-test results\n$ %s\n%s", exit, cmd, excerpt),
			Hint: "read the output for the failing test or build step, fix it, then run the tests again", Err: grove.ErrRejected}
	}
	return &Error{Code: "E_TEST_RUN_FAILED", Msg: fmt.Sprintf("%s: the run failed outside any test (exit code %d; %d passed, %d skipped): build, collection or setup error\n$ %s\n%s",
		fw, exit, out.Passed, out.Skipped, cmd, excerpt),
		Hint: "fix the error shown (often a compile error), then run the tests again", Err: grove.ErrRejected}
}

func tailLines(s string, n int) string {
	l := strings.Split(strings.TrimRight(s, "\n"), "\n")
	return strings.Join(l[max(0, len(l)-n):], "\n")
}

// goTestParser consumes `go test -json` events as they stream.
type goTestParser struct {
	passed, failed, skipped int
	out                     map[string]*strings.Builder // running tests' output, bounded
	failed_                 []FailedTest
	pkgFail                 map[string]string
	plain                   strings.Builder // non-JSON lines (build errors)
}

func newGoTestParser() *goTestParser {
	return &goTestParser{out: map[string]*strings.Builder{}, pkgFail: map[string]string{}}
}

// line handles one line and reports whether a test finished.
func (g *goTestParser) line(l []byte) bool {
	var ev struct {
		Action, Package, Test, Output string
	}
	if len(l) == 0 || l[0] != '{' || json.Unmarshal(l, &ev) != nil {
		if g.plain.Len() < 1<<20 {
			g.plain.Write(l)
			g.plain.WriteByte('\n')
		}
		return false
	}
	key := ev.Package + " " + ev.Test
	switch ev.Action {
	case "output", "build-output":
		if ev.Test == "" && ev.Action == "build-output" || ev.Test == "" {
			if g.plain.Len() < 1<<20 {
				g.plain.WriteString(ev.Output)
			}
		}
		b := g.out[key]
		if b == nil {
			if len(g.out) > 1000 {
				return false
			}
			b = &strings.Builder{}
			g.out[key] = b
		}
		if b.Len() < 8<<10 {
			b.WriteString(ev.Output)
		}
	case "pass", "fail", "skip":
		if ev.Test == "" {
			if ev.Action == "fail" {
				if b := g.out[key]; b != nil {
					g.pkgFail[ev.Package] = b.String()
				} else {
					g.pkgFail[ev.Package] = ""
				}
			}
			delete(g.out, key)
			return false
		}
		switch ev.Action {
		case "pass":
			g.passed++
		case "skip":
			g.skipped++
		case "fail":
			g.failed++
			ex := ""
			if b := g.out[key]; b != nil {
				ex = b.String()
			}
			if len(g.failed_) < 50 {
				g.failed_ = append(g.failed_, FailedTest{Name: ev.Package + "." + ev.Test, Excerpt: tailLines(ex, 40)})
			}
		}
		delete(g.out, key)
		return true
	}
	return false
}

func (g *goTestParser) failures() []FailedTest {
	out := g.failed_
	for pkg, o := range g.pkgFail {
		blamed := false
		for _, f := range g.failed_ {
			if strings.HasPrefix(f.Name, pkg+".") {
				blamed = true
				break
			}
		}
		if !blamed {
			out = append(out, FailedTest{Name: pkg + " (package failed: build or setup error)", Excerpt: tailLines(o, 40)})
		}
	}
	return out
}

var (
	pytestSummary = regexp.MustCompile(`(?m)^=*\s*((?:\d+ \w+(?:, )?)+) in [\d.]+s`)
	pytestCount   = regexp.MustCompile(`(\d+) (passed|failed|skipped|error|errors|xfailed|xpassed|deselected)`)
	pytestFailed  = regexp.MustCompile(`(?m)^(FAILED|ERROR) (\S+)(?: - (.*))?$`)
)

func parsePytest(out string) (passed, failed, skipped int, fails []FailedTest) {
	ms := pytestSummary.FindAllStringSubmatch(out, -1)
	if len(ms) > 0 {
		for _, m := range pytestCount.FindAllStringSubmatch(ms[len(ms)-1][1], -1) {
			n, _ := strconv.Atoi(m[1])
			switch m[2] {
			case "passed", "xpassed":
				passed += n
			case "failed", "error", "errors":
				failed += n
			case "skipped", "xfailed":
				skipped += n
			}
		}
	}
	for _, m := range pytestFailed.FindAllStringSubmatch(out, 50) {
		fails = append(fails, FailedTest{Name: m[2], Excerpt: pytestSection(out, m[2], m[3])})
	}
	return
}

// pytestSection finds the "____ test_name ____" block of the failure
// report, falling back to the one-line reason.
func pytestSection(out, id, reason string) string {
	name := id[strings.LastIndex(id, "::")+2:]
	i := strings.Index(out, " "+name+" _")
	if i < 0 {
		return reason
	}
	rest := out[i:]
	if nl := strings.IndexByte(rest, '\n'); nl >= 0 {
		rest = rest[nl+1:]
	}
	end := len(rest)
	for _, stop := range []string{"\n___", "\n===", "\n---"} {
		if j := strings.Index(rest, stop); j >= 0 && j < end {
			end = j
		}
	}
	return tailLines(rest[:end], 40)
}

var (
	cargoResult = regexp.MustCompile(`test result: \w+\. (\d+) passed; (\d+) failed; (\d+) ignored`)
	cargoFailed = regexp.MustCompile(`(?m)^test (\S+) \.\.\. FAILED$`)
)

func parseCargo(out string) (passed, failed, skipped int, fails []FailedTest) {
	for _, m := range cargoResult.FindAllStringSubmatch(out, -1) {
		p, _ := strconv.Atoi(m[1])
		f, _ := strconv.Atoi(m[2])
		s, _ := strconv.Atoi(m[3])
		passed, failed, skipped = passed+p, failed+f, skipped+s
	}
	for _, m := range cargoFailed.FindAllStringSubmatch(out, 50) {
		ex := ""
		if i := strings.Index(out, "---- "+m[1]+" stdout ----"); i >= 0 {
			ex = firstLines(out[i:], 30)
		}
		fails = append(fails, FailedTest{Name: m[1], Excerpt: ex})
	}
	return
}

var (
	jestTests   = regexp.MustCompile(`(?m)^Tests:\s+(.*)$`)
	vitestTests = regexp.MustCompile(`(?m)^\s*Tests\s+(.*)\(\d+\)`)
	jestCount   = regexp.MustCompile(`(\d+) (passed|failed|skipped|todo)`)
	jestFailed  = regexp.MustCompile(`(?m)^\s*● (.+)$`)
)

func parseJest(out string) (passed, failed, skipped int, fails []FailedTest) {
	m := jestTests.FindStringSubmatch(out)
	if m == nil {
		m = vitestTests.FindStringSubmatch(out)
	}
	if m != nil {
		for _, c := range jestCount.FindAllStringSubmatch(m[1], -1) {
			n, _ := strconv.Atoi(c[1])
			switch c[2] {
			case "passed":
				passed += n
			case "failed":
				failed += n
			default:
				skipped += n
			}
		}
	}
	seen := map[string]bool{}
	for _, f := range jestFailed.FindAllStringSubmatch(out, 50) {
		if name := strings.TrimSpace(f[1]); !seen[name] && !strings.HasPrefix(name, "Console") {
			seen[name] = true
			fails = append(fails, FailedTest{Name: name})
		}
	}
	return
}
