package tunnel

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/grove-dev/grove"
)

// The local Execer keeps the Execer contract execpath and search rely on.
func TestLocalExecer(t *testing.T) {
	dir := t.TempDir()
	os.Mkdir(filepath.Join(dir, "sub"), 0o755)
	l, err := OpenLocal(dir, true)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	x := localExecer{l}
	ctx := context.Background()

	t.Setenv("LEAKED_VAR", "from-the-agent")
	res, err := x.Exec(ctx, "w", grove.ExecRequest{Shell: `echo "$LEAKED_VAR|$MINE|$(pwd)"; cat; exit 5`, Dir: "sub", Env: map[string]string{"MINE": "mine"}, Stdin: []byte("in")})
	real, _ := filepath.EvalSymlinks(filepath.Join(dir, "sub"))
	if err != nil || res.ExitCode != 5 || string(res.Stdout) != "|mine|"+real+"\nin" {
		t.Fatalf("clean env, dir, stdin: %+v %q %v", res, res.Stdout, err)
	}

	// Caps: the first MaxOutput bytes kept, the rest counted.
	res, err = x.Exec(ctx, "w", grove.ExecRequest{Shell: "head -c 10000 /dev/zero", MaxOutput: 100})
	if err != nil || len(res.Stdout) != 100 || res.StdoutOmitted != 9900 || !res.Truncated {
		t.Fatalf("cap: %d kept, %d omitted, %v", len(res.Stdout), res.StdoutOmitted, err)
	}

	// StreamOnly: output only to emit, counted against the cap.
	var streamed strings.Builder
	res, err = x.ExecStream(ctx, "w", grove.ExecRequest{Shell: "echo a; echo b >&2; head -c 50 /dev/zero", MaxOutput: 10, StreamOnly: true}, func(c grove.Chunk) error {
		if c.Stream == grove.Stdout {
			streamed.Write(c.Data)
		}
		return nil
	})
	if err != nil || len(res.Stdout) != 0 || len(res.Stderr) != 0 || streamed.Len() != 10 || res.StdoutOmitted != 42 {
		t.Fatalf("stream only: %+v streamed %q %v", res, streamed.String(), err)
	}

	// Timeout: the group killed, timed_out set.
	start := time.Now()
	res, err = x.Exec(ctx, "w", grove.ExecRequest{Shell: "sleep 30", Timeout: 200 * time.Millisecond})
	if err != nil || !res.TimedOut || time.Since(start) > 5*time.Second {
		t.Fatalf("timeout: %+v %v after %s", res, err, time.Since(start))
	}

	// Leftovers of Grove's own commands die with them.
	res, err = x.Exec(ctx, "w", grove.ExecRequest{Shell: "sleep 30 >/dev/null 2>&1 & echo $!"})
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(100 * time.Millisecond)
	if st, err := os.ReadFile("/proc/" + strings.TrimSpace(string(res.Stdout)) + "/stat"); err == nil && !strings.Contains(string(st), ") Z ") {
		t.Fatalf("a leftover outlived its command: %s", st)
	}

	// A missing program is exit 127, as execpath and search read it.
	res, err = x.Exec(ctx, "w", grove.ExecRequest{Argv: []string{"no-such-program-xyz"}})
	if err != nil || res.ExitCode != 127 {
		t.Fatalf("missing program: %+v %v", res, err)
	}
	// A cwd out of the directory is refused.
	if _, err := x.Exec(ctx, "w", grove.ExecRequest{Argv: []string{"true"}, Dir: ".."}); grove.Code(err) != "E_PATH_OUTSIDE_WORKSPACE" {
		t.Fatalf("dir ..: %v", err)
	}
	// Cancelled: an error, not a result.
	cctx, cancel := context.WithCancel(ctx)
	go func() { time.Sleep(100 * time.Millisecond); cancel() }()
	if _, err := x.Exec(cctx, "w", grove.ExecRequest{Argv: []string{"sleep", "30"}}); err == nil {
		t.Fatal("a cancelled command returned a result")
	}
}

func TestCompleteUTF8(t *testing.T) {
	for _, c := range []struct {
		in   string
		want int
	}{
		{"", 0}, {"abc", 3}, {"a\xc3", 1}, {"a\xc3\xa9", 3}, {"\xe2\x82", 0}, {"\xe2\x82\xac", 3}, {"a\xf0\x9f\x98", 1}, {"\x80", 1},
	} {
		if got := completeUTF8([]byte(c.in)); got != c.want {
			t.Errorf("%q: %d, want %d", c.in, got, c.want)
		}
	}
}
