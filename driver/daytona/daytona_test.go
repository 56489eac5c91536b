package daytona

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/docker/docker/client"
	"github.com/grove-dev/grove"
	"github.com/grove-dev/grove/driver"
	"github.com/grove-dev/grove/driver/daytona/daytonatest"
	"github.com/grove-dev/grove/driver/docker"
	agentsandbox "github.com/grove-dev/grove/images/agent-sandbox"
	"github.com/grove-dev/grove/internal/testenv"
)

var engineOnce struct {
	sync.Once
	cli   *client.Client
	image string
	err   string
}

// engine returns a Docker client and Grove's agent image, or skips/fails
// through testenv.
func engine(t testing.TB) (*client.Client, string) {
	t.Helper()
	engineOnce.Do(func() {
		cli, err := client.NewClientWithOpts(client.FromEnv, client.WithAPIVersionNegotiation())
		if err != nil {
			engineOnce.err = err.Error()
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if _, err := cli.Ping(ctx); err != nil {
			engineOnce.err = "docker engine not reachable: " + err.Error()
			return
		}
		bctx, bcancel := context.WithTimeout(context.Background(), 20*time.Minute)
		defer bcancel()
		img, err := docker.EnsureImage(bctx, cli, agentsandbox.Full, os.Stderr)
		if err != nil {
			engineOnce.err = "agent image: " + err.Error()
			return
		}
		engineOnce.cli, engineOnce.image = cli, img
	})
	testenv.Require(t, "docker", engineOnce.cli != nil, engineOnce.err)
	return engineOnce.cli, engineOnce.image
}

const root = "/home/agent/grove"

func newFake(t *testing.T) (*daytonatest.Server, *Driver) {
	t.Helper()
	cli, img := engine(t)
	fake := daytonatest.New(t, cli, daytonatest.Options{Image: img, APIKey: "k1"})
	d, err := New(Config{APIURL: fake.URL, APIKey: "k1", WorkspaceRoot: root, AllowMutating: true,
		RetryBackoff: 10 * time.Millisecond, PollInterval: 100 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	return fake, d
}

func create(t *testing.T, d *Driver, ws, user string) *driver.Runtime {
	t.Helper()
	rt, err := d.Create(context.Background(), driver.Spec{WorkspaceID: ws, User: user, Project: "p", Writable: true})
	if err != nil {
		t.Fatal(err)
	}
	return rt
}

func run(t *testing.T, d *Driver, ws string, req grove.ExecRequest) *grove.ExecResult {
	t.Helper()
	res, err := d.Exec(context.Background(), ws, req)
	if err != nil {
		t.Fatalf("%+v: %v", req, err)
	}
	return res
}

func sh(s string) grove.ExecRequest { return grove.ExecRequest{Shell: s} }

// TestExecContract holds the driver to Grove's exec contract (the cases of
// driver/drivertest's Exec group that do not need a host path) against the
// fake, whose commands run in a real container.
func TestExecContract(t *testing.T) {
	fake, d := newFake(t)
	rt := create(t, d, "ws1", "alice")
	if rt.Spec.WorkDir != root+"/ws1" || rt.BackendID == "" {
		t.Fatalf("runtime %+v", rt)
	}
	ctx := context.Background()

	t.Run("CreateIdempotent", func(t *testing.T) {
		again := create(t, d, "ws1", "alice")
		if again.BackendID != rt.BackendID || len(fake.Sandboxes()) != 1 {
			t.Fatalf("second create: %+v, sandboxes %v", again, fake.Sandboxes())
		}
		// A second workspace of the pair shares the sandbox.
		if other := create(t, d, "ws1b", "alice"); other.BackendID != rt.BackendID {
			t.Fatalf("second workspace in another sandbox: %s", other.BackendID)
		}
	})
	t.Run("FindsSandboxByLabels", func(t *testing.T) {
		d2, err := New(Config{APIURL: fake.URL, APIKey: "k1", WorkspaceRoot: root, AllowMutating: true})
		if err != nil {
			t.Fatal(err)
		}
		if rt2 := create(t, d2, "ws1", "alice"); rt2.BackendID != rt.BackendID {
			t.Fatalf("a fresh driver made a new sandbox %s, want %s", rt2.BackendID, rt.BackendID)
		}
	})
	t.Run("GetUnknown", func(t *testing.T) {
		if _, err := d.Get(ctx, "nope"); !errors.Is(err, grove.ErrNotFound) {
			t.Fatalf("Get unknown: %v", err)
		}
		if _, err := d.Exec(ctx, "nope", sh("true")); !errors.Is(err, grove.ErrNotFound) {
			t.Fatalf("Exec unknown: %v", err)
		}
	})
	t.Run("Forms", func(t *testing.T) {
		res := run(t, d, "ws1", grove.ExecRequest{Argv: []string{"echo", "hello", "$HOME", "it's"}})
		if string(res.Stdout) != "hello $HOME it's\n" || res.ExitCode != 0 {
			t.Fatalf("argv: %q %d", res.Stdout, res.ExitCode)
		}
		res = run(t, d, "ws1", sh("echo out; echo err >&2; exit 3"))
		if string(res.Stdout) != "out\n" || string(res.Stderr) != "err\n" || res.ExitCode != 3 {
			t.Fatalf("shell: %q %q %d", res.Stdout, res.Stderr, res.ExitCode)
		}
	})
	t.Run("InvalidRequest", func(t *testing.T) {
		for _, req := range []grove.ExecRequest{{}, {Argv: []string{"a"}, Shell: "b"}, {Argv: []string{""}}, {Shell: "x", Timeout: -1}, {Shell: "x", Env: map[string]string{"A=B": "c"}}} {
			if _, err := d.Exec(ctx, "ws1", req); !errors.Is(err, grove.ErrInvalid) {
				t.Errorf("%+v: %v", req, err)
			}
		}
	})
	t.Run("CleanEnvironment", func(t *testing.T) {
		res := run(t, d, "ws1", grove.ExecRequest{Argv: []string{"env"}, Env: map[string]string{"GROVE_REQ": "a b'c"}})
		got := map[string]string{}
		for _, l := range strings.Split(strings.TrimSpace(string(res.Stdout)), "\n") {
			k, v, _ := strings.Cut(l, "=")
			got[k] = v
		}
		want := map[string]string{"PATH": cleanPath, "HOME": "/home/agent", "LANG": "C.UTF-8", "TERM": "dumb", "GROVE_REQ": "a b'c"}
		if len(got) != len(want) {
			t.Fatalf("environment %v, want %v", got, want)
		}
		for k, v := range want {
			if got[k] != v {
				t.Fatalf("environment %v, want %v", got, want)
			}
		}
	})
	t.Run("WorkingDirectory", func(t *testing.T) {
		run(t, d, "ws1", sh("mkdir -p sub && ln -sfn / escape"))
		if res := run(t, d, "ws1", grove.ExecRequest{Argv: []string{"pwd"}, Dir: "sub"}); string(res.Stdout) != root+"/ws1/sub\n" {
			t.Fatalf("pwd %q", res.Stdout)
		}
		for _, dir := range []string{"..", "../ws1b", "/etc", "escape"} {
			if _, err := d.Exec(ctx, "ws1", grove.ExecRequest{Argv: []string{"pwd"}, Dir: dir}); !errors.Is(err, grove.ErrPathOutside) {
				t.Errorf("dir %q: %v", dir, err)
			}
		}
	})
	t.Run("Stdin", func(t *testing.T) {
		res := run(t, d, "ws1", grove.ExecRequest{Argv: []string{"tr", "a-z", "A-Z"}, Stdin: []byte("hello\n")})
		if string(res.Stdout) != "HELLO\n" {
			t.Fatalf("stdin: %q %q", res.Stdout, res.Stderr)
		}
		// Only this command's own exec directory is there.
		if res := run(t, d, "ws1", sh("ls /tmp | grep -c grove-exec || true")); strings.TrimSpace(string(res.Stdout)) != "1" {
			t.Fatalf("exec directories left behind: %q", res.Stdout)
		}
	})
	t.Run("MissingBinary", func(t *testing.T) {
		if res := run(t, d, "ws1", grove.ExecRequest{Argv: []string{"no-such-program-grove"}}); res.ExitCode != 127 {
			t.Fatalf("exit %d", res.ExitCode)
		}
		if res := run(t, d, "ws1", sh("no-such-program-grove")); res.ExitCode != 127 {
			t.Fatalf("shell exit %d", res.ExitCode)
		}
	})
	t.Run("Timeout", func(t *testing.T) {
		start := time.Now()
		res := run(t, d, "ws1", grove.ExecRequest{Shell: "echo before; echo e >&2; (sleep 60; echo child) & sleep 60", Timeout: 1500 * time.Millisecond})
		if res.ExitCode != 124 || !res.TimedOut || string(res.Stdout) != "before\n" || string(res.Stderr) != "e\n" {
			t.Fatalf("timeout: %+v", res)
		}
		if el := time.Since(start); el > 10*time.Second {
			t.Fatalf("took %v", el)
		}
		// The whole tree died: no sleep 60 is left.
		if res := run(t, d, "ws1", sh(`for p in /proc/[0-9]*; do tr '\0' ' ' < $p/cmdline 2>/dev/null; echo; done | grep -c '^sleep 60' || true`)); strings.TrimSpace(string(res.Stdout)) != "0" {
			t.Fatalf("processes survived the timeout: %q", res.Stdout)
		}
	})
	t.Run("OutputCap", func(t *testing.T) {
		res := run(t, d, "ws1", grove.ExecRequest{Shell: "head -c 5000 /dev/zero | tr '\\0' a; head -c 10 /dev/zero | tr '\\0' b >&2", MaxOutput: 1000})
		if len(res.Stdout) != 1000 || res.StdoutOmitted != 4000 || !res.Truncated || string(res.Stderr) != "bbbbbbbbbb" || res.StderrOmitted != 0 {
			t.Fatalf("cap: %d %d %v %q", len(res.Stdout), res.StdoutOmitted, res.Truncated, res.Stderr)
		}
	})
	t.Run("Streaming", func(t *testing.T) {
		var mu sync.Mutex
		var chunks []grove.Chunk
		var firstAt time.Time
		start := time.Now()
		res, err := d.ExecStream(ctx, "ws1", sh("echo one; echo warn >&2; sleep 2; echo two"), func(c grove.Chunk) error {
			mu.Lock()
			defer mu.Unlock()
			if firstAt.IsZero() {
				firstAt = time.Now()
			}
			chunks = append(chunks, c)
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		var out, errs bytes.Buffer
		for _, c := range chunks {
			if c.Stream == grove.Stdout {
				out.Write(c.Data)
			} else {
				errs.Write(c.Data)
			}
		}
		if out.String() != "one\ntwo\n" || errs.String() != "warn\n" || string(res.Stdout) != "one\ntwo\n" {
			t.Fatalf("chunks %q %q, result %q", out.String(), errs.String(), res.Stdout)
		}
		if firstAt.Sub(start) > 1500*time.Millisecond {
			t.Fatalf("first chunk after %v: output was not streamed", firstAt.Sub(start))
		}
	})
	t.Run("StreamEmitError", func(t *testing.T) {
		boom := errors.New("boom")
		start := time.Now()
		_, err := d.ExecStream(ctx, "ws1", sh("echo x; sleep 30"), func(grove.Chunk) error { return boom })
		if !errors.Is(err, boom) || time.Since(start) > 10*time.Second {
			t.Fatalf("emit error: %v after %v", err, time.Since(start))
		}
	})
	t.Run("ContextCancel", func(t *testing.T) {
		c, cancel := context.WithTimeout(ctx, 700*time.Millisecond)
		defer cancel()
		if _, err := d.Exec(c, "ws1", sh("sleep 30")); !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("cancel: %v", err)
		}
	})
	t.Run("RejectMutating", func(t *testing.T) {
		ro, err := New(Config{APIURL: fake.URL, APIKey: "k1", WorkspaceRoot: root})
		if err != nil {
			t.Fatal(err)
		}
		create(t, ro, "ws1", "alice")
		if _, err := ro.Exec(ctx, "ws1", sh("true")); !errors.Is(err, grove.ErrRejected) {
			t.Fatalf("write on read-only: %v", err)
		}
		if res, err := ro.Exec(ctx, "ws1", grove.ExecRequest{Shell: "echo r", Class: grove.ClassRead}); err != nil || string(res.Stdout) != "r\n" {
			t.Fatalf("read: %v %+v", err, res)
		}
	})
	t.Run("Files", func(t *testing.T) {
		f := d.Files("ws1")
		data := []byte("bundle\x00bytes\xff\n")
		if err := f.WriteFile(ctx, "in/a.bin", data); err != nil {
			t.Fatal(err)
		}
		got, err := f.ReadFile(ctx, "in/a.bin", 1<<20)
		if err != nil || !bytes.Equal(got, data) {
			t.Fatalf("read back %q, %v", got, err)
		}
		if res := run(t, d, "ws1", sh("wc -c < in/a.bin")); strings.TrimSpace(string(res.Stdout)) != "14" {
			t.Fatalf("seen by commands: %q", res.Stdout)
		}
		if _, err := f.ReadFile(ctx, "in/a.bin", 3); !errors.Is(err, grove.ErrTooLarge) {
			t.Fatalf("cap: %v", err)
		}
		if _, err := f.ReadFile(ctx, "missing", 10); !errors.Is(err, grove.ErrNotFound) {
			t.Fatalf("missing: %v", err)
		}
		if err := f.WriteFile(ctx, "../x", data); !errors.Is(err, grove.ErrPathOutside) {
			t.Fatalf("outside: %v", err)
		}
	})
}

// TestLifecycleAndFaults covers a sandbox stopped under Grove's feet, Stop
// and resume, 429 and 5xx retries, the 408 of /process/execute, a wrong
// key, and deletion.
func TestLifecycleAndFaults(t *testing.T) {
	fake, d := newFake(t)
	ctx := context.Background()
	rt := create(t, d, "w", "bob")
	run(t, d, "w", sh("echo kept > f && git init -q -b topic . && git -c user.email=a@b -c user.name=a commit -q --allow-empty -m x"))

	t.Run("StoppedUnderFeet", func(t *testing.T) {
		fake.StopBehind(rt.BackendID)
		if got, err := d.Get(ctx, "w"); err != nil || got.State != driver.StateStopped {
			t.Fatalf("Get after stop: %+v %v", got, err)
		}
		res := run(t, d, "w", sh("cat f; git branch --show-current"))
		if string(res.Stdout) != "kept\ntopic\n" || fake.State(rt.BackendID) != "started" {
			t.Fatalf("after restart: %q %q state %s", res.Stdout, res.Stderr, fake.State(rt.BackendID))
		}
	})
	t.Run("StopThenExecResumes", func(t *testing.T) {
		if err := d.Stop(ctx, "w"); err != nil {
			t.Fatal(err)
		}
		if res := run(t, d, "w", sh("cat f")); string(res.Stdout) != "kept\n" {
			t.Fatalf("%q", res.Stdout)
		}
		if got, _ := d.Get(ctx, "w"); got.State != driver.StateRunning {
			t.Fatalf("state %s", got.State)
		}
	})
	t.Run("RateLimited", func(t *testing.T) {
		before := fake.Requests(http.MethodGet, "/sandbox/")
		fake.FailNext(http.MethodGet, "/sandbox/", http.StatusTooManyRequests, 2)
		fake.FailNext(http.MethodPost, "/process/session", http.StatusTooManyRequests, 1)
		fake.FailNext(http.MethodGet, "/process/session/", http.StatusServiceUnavailable, 2)
		if res := run(t, d, "w", sh("echo ok")); string(res.Stdout) != "ok\n" {
			t.Fatalf("%q", res.Stdout)
		}
		if n := fake.Requests(http.MethodGet, "/sandbox/") - before; n < 3 {
			t.Fatalf("%d sandbox reads: the 429s were not retried", n)
		}
	})
	t.Run("RetriesRunOut", func(t *testing.T) {
		fake.FailNext(http.MethodGet, "/sandbox/", http.StatusTooManyRequests, 100)
		defer fake.ClearFaults()
		_, err := d.Exec(ctx, "w", sh("true"))
		if !errors.Is(err, grove.ErrUnavailable) {
			t.Fatalf("429 forever: %v", err)
		}
	})
	t.Run("ExecuteTimeout408", func(t *testing.T) {
		// /process/execute merges the streams and answers 408 past its
		// timeout; Grove maps that to ErrUnavailable.
		_, b, err := d.runtime("w")
		if err != nil {
			t.Fatal(err)
		}
		req := newExecute("echo out; echo err >&2; exit 2", 0)
		r, resp, err := b.tb.ProcessAPI.ExecuteCommand(ctx).Request(*req).Execute()
		if err != nil || r.GetExitCode() != 2 || r.Result != "out\nerr\n" {
			t.Fatalf("execute: %+v %v", r, err)
		}
		_ = resp
		_, resp, err = b.tb.ProcessAPI.ExecuteCommand(ctx).Request(*newExecute("sleep 5", 1)).Execute()
		if err := mapErr(ctx, "execute", resp, err); !errors.Is(err, grove.ErrUnavailable) || resp.StatusCode != http.StatusRequestTimeout {
			t.Fatalf("408: %v", err)
		}
	})
	t.Run("FakeSessionsLikeDaemon", func(t *testing.T) {
		// The fake's sessions behave like Daytona's: one shell, so cd and
		// export persist; a duplicate id is 409; logs are split for new
		// SDK versions and merged text without the version header.
		_, b, err := d.runtime("w")
		if err != nil {
			t.Fatal(err)
		}
		p := b.tb.ProcessAPI
		if _, err := p.CreateSession(ctx).Request(*newCreateSession("s1")).Execute(); err != nil {
			t.Fatal(err)
		}
		defer p.DeleteSession(ctx, "s1").Execute()
		if resp, err := p.CreateSession(ctx).Request(*newCreateSession("s1")).Execute(); !errors.Is(mapErr(ctx, "x", resp, err), grove.ErrConflict) {
			t.Fatalf("duplicate session: %v", err)
		}
		sync := func(cmd string) (string, string) {
			r := newSessionExec(cmd)
			r.SetRunAsync(false)
			res, _, err := p.SessionExecuteCommand(ctx, "s1").Request(*r).Execute()
			if err != nil {
				t.Fatal(err)
			}
			return res.GetStdout(), res.GetStderr()
		}
		sync("cd /tmp && export GROVE_X=42")
		if o, e := sync("pwd; echo $GROVE_X; echo oops >&2"); o != "/tmp\n42\n" || e != "oops\n" {
			t.Fatalf("session state: %q %q", o, e)
		}
		r := newSessionExec("echo a; echo b >&2")
		res, _, err := p.SessionExecuteCommand(ctx, "s1").Request(*r).Execute()
		if err != nil {
			t.Fatal(err)
		}
		for {
			c, _, err := p.GetSessionCommand(ctx, "s1", res.CmdId).Execute()
			if err != nil {
				t.Fatal(err)
			}
			if c.ExitCode != nil {
				break
			}
			time.Sleep(20 * time.Millisecond)
		}
		req, _ := http.NewRequest(http.MethodGet, b.tbURL+"/process/session/s1/command/"+res.CmdId+"/logs", nil)
		req.Header.Set("Authorization", "Bearer k1")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		if !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/plain") || string(body) != "a\nb\n" {
			t.Fatalf("logs without SDK version: %s %q", resp.Header.Get("Content-Type"), body)
		}
	})
	t.Run("WrongKey", func(t *testing.T) {
		bad, err := New(Config{APIURL: fake.URL, APIKey: "wrong", WorkspaceRoot: root})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := bad.Create(ctx, driver.Spec{WorkspaceID: "x", User: "u", Project: "p"}); !errors.Is(err, grove.ErrAuthFailed) {
			t.Fatalf("wrong key: %v", err)
		}
	})
	t.Run("DestroyAndDelete", func(t *testing.T) {
		if err := d.Destroy(ctx, "w"); err != nil {
			t.Fatal(err)
		}
		if _, err := d.Get(ctx, "w"); !errors.Is(err, grove.ErrNotFound) {
			t.Fatalf("after destroy: %v", err)
		}
		if err := d.DeleteSandbox(ctx, "bob", "p"); err != nil {
			t.Fatal(err)
		}
		if len(fake.Sandboxes()) != 0 {
			t.Fatalf("left: %v", fake.Sandboxes())
		}
	})
}
