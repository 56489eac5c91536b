package drivertest

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/grove-dev/grove"
)

func (s *suite) execForms(t *testing.T) {
	w := s.runtime(t, nil)
	tests := []struct {
		name        string
		req         grove.ExecRequest
		code        int
		out, errOut string
	}{
		{"argv", argv("echo", "hello", "$HOME"), 0, "hello $HOME\n", ""},
		{"argv keeps spaces", argv("printf", "%s|", "a b", "c"), 0, "a b|c|", ""},
		{"shell pipeline", sh("echo abc | tr a-c x-z"), 0, "xyz\n", ""},
		{"shell stderr", sh("echo oops >&2"), 0, "", "oops\n"},
		{"non-zero exit is a result", sh("echo partial; exit 3"), 3, "partial\n", ""},
		{"argv false", argv("false"), 1, "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res := w.exec(t, tt.req)
			if res.ExitCode != tt.code || string(res.Stdout) != tt.out || string(res.Stderr) != tt.errOut {
				t.Fatalf("got exit %d stdout %q stderr %q, want %d %q %q", res.ExitCode, res.Stdout, res.Stderr, tt.code, tt.out, tt.errOut)
			}
			if res.TimedOut || res.Truncated {
				t.Fatalf("unexpected flags: %+v", res)
			}
		})
	}
}

func (s *suite) invalidRequest(t *testing.T) {
	w := s.runtime(t, nil)
	tests := []struct {
		name string
		req  grove.ExecRequest
	}{
		{"empty", grove.ExecRequest{}},
		{"argv and shell", grove.ExecRequest{Argv: []string{"true"}, Shell: "true"}},
		{"empty program", argv("")},
		{"bad env name", grove.ExecRequest{Argv: []string{"true"}, Env: map[string]string{"A=B": "c"}}},
		{"negative timeout", grove.ExecRequest{Argv: []string{"true"}, Timeout: -time.Second}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := w.d.Exec(context.Background(), w.id, tt.req); !errors.Is(err, grove.ErrInvalid) {
				t.Fatalf("Exec = %v, want ErrInvalid", err)
			}
		})
	}
}

func (s *suite) cleanEnv(t *testing.T) {
	t.Setenv("GROVE_DRIVERTEST_HOST_SECRET", "must-not-leak")
	w := s.runtime(t, nil)
	res := w.ok(t, grove.ExecRequest{Argv: []string{"env"}, Env: map[string]string{"GROVE_REQ": "named"}})
	env := envMap(res.Stdout)
	if _, ok := env["GROVE_DRIVERTEST_HOST_SECRET"]; ok {
		t.Fatalf("host environment leaked into the command: %s", res.Stdout)
	}
	want := map[string]string{"LANG": "C.UTF-8", "TERM": "dumb", "GROVE_REQ": "named"}
	for k, v := range want {
		if env[k] != v {
			t.Errorf("%s = %q, want %q", k, env[k], v)
		}
	}
	if env["PATH"] == "" || env["HOME"] == "" {
		t.Errorf("PATH and HOME must be set: %s", res.Stdout)
	}
	// Variables a runtime itself may add; anything else came from
	// somewhere it should not have.
	allowed := map[string]bool{"PATH": true, "HOME": true, "LANG": true, "TERM": true, "GROVE_REQ": true,
		"PWD": true, "OLDPWD": true, "SHLVL": true, "_": true, "HOSTNAME": true}
	for k := range env {
		if !allowed[k] {
			t.Errorf("unexpected variable %s in the clean environment", k)
		}
	}
	// HOME must be usable: tools write dotfiles there.
	w.ok(t, sh(`echo x > "$HOME/.grove-drivertest" && cat "$HOME/.grove-drivertest"`))
}

func (s *suite) workingDir(t *testing.T) {
	w := s.runtime(t, nil)
	if err := os.MkdirAll(filepath.Join(w.dir, "sub", "deeper"), 0o755); err != nil {
		t.Fatal(err)
	}
	outside := t.TempDir()
	if err := os.Symlink(outside, filepath.Join(w.dir, "escape")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("sub", filepath.Join(w.dir, "inner")); err != nil {
		t.Fatal(err)
	}
	root, err := filepath.EvalSymlinks(w.dir)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		dir  string
		want string // pwd -P; empty means an error is expected
		err  error
	}{
		{"", root, nil},
		{".", root, nil},
		{"sub", filepath.Join(root, "sub"), nil},
		{"sub/deeper/..", filepath.Join(root, "sub"), nil},
		{"inner", filepath.Join(root, "sub"), nil},
		{"../x", "", grove.ErrPathOutside},
		{"sub/../../x", "", grove.ErrPathOutside},
		{"/etc", "", grove.ErrPathOutside},
		{outside, "", grove.ErrPathOutside},
		{"escape", "", grove.ErrPathOutside},
		{"missing", "", grove.ErrNotFound},
	}
	for _, tt := range tests {
		t.Run(strings.ReplaceAll(tt.dir, "/", "_"), func(t *testing.T) {
			res, err := w.d.Exec(context.Background(), w.id, grove.ExecRequest{Argv: []string{"pwd", "-P"}, Dir: tt.dir})
			if tt.err != nil {
				if !errors.Is(err, tt.err) {
					t.Fatalf("Dir %q: err %v, want %v", tt.dir, err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatalf("Dir %q: %v", tt.dir, err)
			}
			if got := strings.TrimSpace(string(res.Stdout)); got != tt.want {
				t.Fatalf("Dir %q: pwd %q, want %q", tt.dir, got, tt.want)
			}
		})
	}
}

func (s *suite) stdin(t *testing.T) {
	w := s.runtime(t, nil)
	big := bytes.Repeat([]byte("0123456789abcdef"), 64<<10) // 1 MiB, more than a pipe holds
	tests := []struct {
		name  string
		req   grove.ExecRequest
		input []byte
		want  string
	}{
		{"cat", argv("cat"), []byte("hello stdin\n"), "hello stdin\n"},
		{"shell reads", sh("read a; echo got:$a"), []byte("line\n"), "got:line\n"},
		{"no stdin is empty", argv("wc", "-c"), nil, "0\n"},
		{"large", argv("wc", "-c"), big, "1048576\n"},
		{"ignored", argv("true"), big, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req := tt.req
			req.Stdin = tt.input
			res := w.ok(t, req)
			if got := strings.TrimLeft(string(res.Stdout), " "); got != tt.want {
				t.Fatalf("stdout %q, want %q", got, tt.want)
			}
		})
	}
}

func (s *suite) missingBinary(t *testing.T) {
	w := s.runtime(t, nil)
	for _, req := range []grove.ExecRequest{
		argv("grove-drivertest-no-such-binary", "x"),
		sh("grove-drivertest-no-such-binary x"),
	} {
		res, err := w.d.Exec(context.Background(), w.id, req)
		if err != nil {
			t.Fatalf("Exec(%q%q) = %v, want a result", req.Argv, req.Shell, err)
		}
		if res.ExitCode != 127 {
			t.Fatalf("Exec(%q%q) exit %d, want 127 (stderr %q)", req.Argv, req.Shell, res.ExitCode, res.Stderr)
		}
	}
}

func (s *suite) timeout(t *testing.T) {
	t.Parallel()
	w := s.runtime(t, nil)
	start := time.Now()
	res := w.exec(t, grove.ExecRequest{
		Shell:   "echo partial; echo err-partial >&2; (sleep 1; echo alive > marker) & sleep 30",
		Timeout: 300 * time.Millisecond,
	})
	if took := time.Since(start); took > 5*time.Second {
		t.Fatalf("timed-out command took %v", took)
	}
	if res.ExitCode != 124 || !res.TimedOut {
		t.Fatalf("exit %d timed_out %v, want 124 true", res.ExitCode, res.TimedOut)
	}
	if string(res.Stdout) != "partial\n" || string(res.Stderr) != "err-partial\n" {
		t.Fatalf("partial output lost: stdout %q stderr %q", res.Stdout, res.Stderr)
	}
	markerGone(t, filepath.Join(w.dir, "marker"), start.Add(time.Second))
}

func (s *suite) outputCap(t *testing.T) {
	w := s.runtime(t, nil)
	res := w.ok(t, grove.ExecRequest{
		Shell:     "head -c 100000 /dev/zero | tr '\\0' o; head -c 5000 /dev/zero | tr '\\0' e >&2",
		MaxOutput: 1000,
	})
	if !res.Truncated || len(res.Stdout) != 1000 || res.StdoutOmitted != 99000 ||
		len(res.Stderr) != 1000 || res.StderrOmitted != 4000 {
		t.Fatalf("truncated %v, stdout %d bytes + %d omitted, stderr %d + %d; want 1000+99000, 1000+4000",
			res.Truncated, len(res.Stdout), res.StdoutOmitted, len(res.Stderr), res.StderrOmitted)
	}
	if strings.Trim(string(res.Stdout), "o") != "" {
		t.Fatal("the kept output must be the head of the stream")
	}
	small := w.ok(t, grove.ExecRequest{Shell: "echo fits", MaxOutput: 1000})
	if small.Truncated || small.StdoutOmitted != 0 {
		t.Fatalf("small output flagged truncated: %+v", small)
	}
}

func (s *suite) outputFlood(t *testing.T) {
	t.Parallel()
	w := s.runtime(t, nil)
	// Far more output than the cap, finite: the command finishes, and
	// every byte is counted without being kept.
	const total = 200 << 20
	start := time.Now()
	res := w.ok(t, grove.ExecRequest{Shell: "yes | head -c 209715200", MaxOutput: 4096, Timeout: 60 * time.Second})
	if len(res.Stdout) != 4096 || res.StdoutOmitted != total-4096 || !res.Truncated {
		t.Fatalf("kept %d, omitted %d, truncated %v; want 4096, %d, true", len(res.Stdout), res.StdoutOmitted, res.Truncated, total-4096)
	}
	t.Logf("200 MiB of output drained in %v", time.Since(start))
	// Endless output: bounded by the timeout, with bounded memory.
	start = time.Now()
	res = w.exec(t, grove.ExecRequest{Argv: []string{"yes"}, MaxOutput: 4096, Timeout: time.Second})
	if took := time.Since(start); took > 6*time.Second {
		t.Fatalf("endless output returned after %v", took)
	}
	if !res.TimedOut || res.ExitCode != 124 || len(res.Stdout) != 4096 || res.StdoutOmitted == 0 {
		t.Fatalf("yes: exit %d timed_out %v kept %d omitted %d", res.ExitCode, res.TimedOut, len(res.Stdout), res.StdoutOmitted)
	}
}

func (s *suite) ctxCancel(t *testing.T) {
	t.Parallel()
	w := s.runtime(t, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err := w.d.Exec(ctx, w.id, sh("(sleep 1; echo alive > marker) & sleep 30"))
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Exec with a cancelled ctx = %v, want context.DeadlineExceeded", err)
	}
	if took := time.Since(start); took > 5*time.Second {
		t.Fatalf("cancelled exec returned after %v", took)
	}
	markerGone(t, filepath.Join(w.dir, "marker"), start.Add(time.Second))
}

func (s *suite) streaming(t *testing.T) {
	t.Parallel()
	w := s.runtime(t, nil)
	start := time.Now()
	var first time.Duration
	var out bytes.Buffer
	res, err := w.d.ExecStream(context.Background(), w.id, sh("echo a; sleep 1; echo b; echo e >&2"), func(c grove.Chunk) error {
		if first == 0 {
			first = time.Since(start)
		}
		if c.Stream == grove.Stdout {
			out.Write(c.Data)
		}
		return nil
	})
	if err != nil {
		t.Fatalf("ExecStream: %v", err)
	}
	total := time.Since(start)
	if first == 0 || total-first < 600*time.Millisecond {
		t.Fatalf("first chunk at %v, command ended at %v: output was not streamed", first, total)
	}
	if out.String() != "a\nb\n" || string(res.Stdout) != "a\nb\n" || string(res.Stderr) != "e\n" {
		t.Fatalf("streamed %q, result stdout %q stderr %q", out.String(), res.Stdout, res.Stderr)
	}
}

func (s *suite) emitError(t *testing.T) {
	t.Parallel()
	w := s.runtime(t, nil)
	errStop := errors.New("client went away")
	start := time.Now()
	// The background writer waits 6 s: past the 5 s within which the
	// command must have been killed (checked below), so a writer that
	// still writes survived the kill — a loaded CI machine (the race
	// detector, a container engine) took 4.5 s to kill with a 3 s wait.
	_, err := w.d.ExecStream(context.Background(), w.id, sh("echo a; (sleep 6; echo alive > marker) & sleep 30"), func(grove.Chunk) error {
		return errStop
	})
	if !errors.Is(err, errStop) {
		t.Fatalf("ExecStream = %v, want the emit error", err)
	}
	if took := time.Since(start); took > 5*time.Second {
		t.Fatalf("an emit error did not kill the command: returned after %v", took)
	}
	markerGone(t, filepath.Join(w.dir, "marker"), start.Add(6*time.Second))
}

// concurrent: two workspaces of one (user, project) — which the docker
// driver hosts in one container — run commands at the same time.
func (s *suite) concurrent(t *testing.T) {
	t.Parallel()
	d := s.h.New(t)
	a, b := s.workspace(t, d, nil), s.workspace(t, d, nil)
	if a.spec.User != b.spec.User || a.spec.Project != b.spec.Project {
		t.Fatalf("the case needs two workspaces of one (user, project), got %s/%s and %s/%s",
			a.spec.User, a.spec.Project, b.spec.User, b.spec.Project)
	}
	// Each command reports when it ran (the clock inside the runtime);
	// the two intervals must overlap. Overlap, not a wall-clock bound,
	// because a remote backend's per-command overhead on a loaded machine
	// says nothing about serialisation.
	var wg sync.WaitGroup
	spans := make([][2]int64, 2)
	for i, w := range []*workspace{a, b} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			res, err := w.d.Exec(context.Background(), w.id, argv("sh", "-c", "date +%s%N; sleep 1; date +%s%N"))
			if err != nil || res.ExitCode != 0 {
				t.Errorf("sleep in %s: %v %+v", w.id, err, res)
				return
			}
			f := strings.Fields(string(res.Stdout))
			if len(f) != 2 {
				t.Errorf("%s: output %q", w.id, res.Stdout)
				return
			}
			spans[i][0], _ = strconv.ParseInt(f[0], 10, 64)
			spans[i][1], _ = strconv.ParseInt(f[1], 10, 64)
		}()
	}
	wg.Wait()
	if t.Failed() {
		return
	}
	if !(spans[0][0] < spans[1][1] && spans[1][0] < spans[0][1]) {
		t.Fatalf("two 1 s commands in two workspaces ran one after the other (%v, %v): they were serialised", spans[0], spans[1])
	}
}
