package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/docker/docker/client"

	"github.com/grove-dev/grove"
	"github.com/grove-dev/grove/driver"
	"github.com/grove-dev/grove/driver/daytona"
	"github.com/grove-dev/grove/driver/daytona/daytonatest"
	"github.com/grove-dev/grove/driver/docker"
	agentsandbox "github.com/grove-dev/grove/images/agent-sandbox"
	"github.com/grove-dev/grove/internal/testenv"
)

// TestDaytonaWalkthrough runs the README's CLI walkthrough with
// --runtime daytona against the fake Daytona (started by this test; each
// grove command is its own process, so every one adopts the sandboxes by
// their labels): acquire, write, exec, search, status, commit, push to a
// local bare remote, release, rm, acquire again.
func TestDaytonaWalkthrough(t *testing.T) {
	cli, err := client.NewClientWithOpts(client.FromEnv, client.WithAPIVersionNegotiation())
	why := ""
	if err == nil {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		_, err = cli.Ping(ctx)
		cancel()
	}
	if err != nil {
		why = "docker engine not reachable: " + err.Error()
	}
	testenv.Require(t, "docker", err == nil, why)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
	defer cancel()
	img, err := docker.EnsureImage(ctx, cli, agentsandbox.Full, os.Stderr)
	if err != nil {
		t.Fatalf("agent image: %v", err)
	}
	fake := daytonatest.New(t, cli, daytonatest.Options{Image: img, APIKey: "walkthrough-key"})

	root := t.TempDir()
	src := gitRepo(t)
	bare := filepath.Join(t.TempDir(), "remote.git")
	if out, err := exec.Command("git", "clone", "-q", "--bare", src, bare).CombinedOutput(); err != nil {
		t.Fatalf("%v %s", err, out)
	}
	grove := func(stdin string, args ...string) cliResult {
		t.Helper()
		cmd := exec.Command(os.Args[0], args...)
		cmd.Env = append(os.Environ(), "GROVE_CLI_MAIN=1", "GROVE_ROOT="+root, "GROVE_USER=alice",
			"GROVE_RUNTIME=daytona", "DAYTONA_API_URL="+fake.URL, "DAYTONA_API_KEY=walkthrough-key",
			"DAYTONA_WORKSPACE_ROOT=/home/agent/grove", "GROVE_DAYTONA_FAKE=")
		cmd.Stdin = strings.NewReader(stdin)
		var out, errb bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &errb
		err := cmd.Run()
		code := 0
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			code = ee.ExitCode()
		} else if err != nil {
			t.Fatal(err)
		}
		return cliResult{code, out.String(), errb.String()}
	}
	ok := func(stdin string, args ...string) string {
		t.Helper()
		r := grove(stdin, args...)
		if r.code != 0 {
			t.Fatalf("grove %v: exit %d\n%s", args, r.code, r.stderr)
		}
		return r.stdout
	}

	ok("", "repo", "ensure", bare)
	var ws map[string]any
	out := ok("", "ws", "acquire", "--repo", bare, "--project", "p", "--conversation", "c42", "--json")
	if err := json.Unmarshal([]byte(out), &ws); err != nil {
		t.Fatalf("acquire --json: %v\n%s", err, out)
	}
	id, _ := ws["id"].(string)
	if id == "" || ws["path"] != "" && ws["path"] != nil || ws["writable"] != true {
		t.Fatalf("acquire: %s", out)
	}
	ok("new text\n", "write", id, "README.md")
	if r := grove("", "exec", id, "--", "sh", "-c", "cat README.md; echo err >&2; exit 3"); r.code != 3 || r.stdout != "new text\n" || !strings.Contains(r.stderr, "err") {
		t.Fatalf("exec: %+v", r)
	}
	if got := ok("", "search", id, "new text"); !strings.Contains(got, "README.md") {
		t.Fatalf("search: %q", got)
	}
	var st map[string]any
	if err := json.Unmarshal([]byte(ok("", "git", "status", id, "--json")), &st); err != nil || st["clean"] != false {
		t.Fatalf("status: %v %v", err, st)
	}
	var c map[string]any
	if err := json.Unmarshal([]byte(ok("", "git", "commit", id, "-m", "agent: update readme", "--json")), &c); err != nil {
		t.Fatal(err)
	}
	sha, _ := c["sha"].(string)
	ok("", "git", "push", id)
	if got, err := exec.Command("git", "--git-dir", bare, "rev-parse", "refs/heads/agent/edits-c42").Output(); err != nil || strings.TrimSpace(string(got)) != sha {
		t.Fatalf("the remote has %q (%v), want %s", got, err, sha)
	}
	if got := ok("", "ws", "list"); !strings.Contains(got, id) {
		t.Fatalf("ws list: %q", got)
	}
	// A new process looks into the running sandbox: the working tree is
	// where the record says, nothing else is there.
	if got := ok("", "reconcile"); got != "store and disk agree\n" {
		t.Fatalf("reconcile: %q", got)
	}
	ok("", "evict")
	ok("", "ws", "release", id)
	if got := ok("", "read", id, "README.md"); got != "new text\n" {
		t.Fatalf("read after release: %q", got)
	}
	ok("", "ws", "rm", id)
	if n := len(fake.Sandboxes()); n != 1 {
		t.Fatalf("%d sandboxes after rm, want the one kept", n)
	}
	out = ok("", "ws", "acquire", "--repo", bare, "--project", "p", "--conversation", "c42", "--json")
	if err := json.Unmarshal([]byte(out), &ws); err != nil {
		t.Fatal(err)
	}
	if got := ok("", "read", ws["id"].(string), "README.md"); got != "new text\n" {
		t.Fatalf("committed work after rm and acquire: %q", got)
	}
}

// TestDaytonaNetworkConfig: DAYTONA_NETWORK and DAYTONA_NETWORK_ALLOW_LIST
// give block-all by default, an allow-list when one is set, default on
// request, and clear errors for a bad CIDR, too many blocks or a
// contradiction.
func TestDaytonaNetworkConfig(t *testing.T) {
	for _, c := range []struct {
		mode, list string
		want       driver.NetworkMode
		wantList   int
		err        string
	}{
		{"", "", driver.NetworkNone, 0, ""},
		{"block-all", "", driver.NetworkNone, 0, ""},
		{"default", "", driver.NetworkDefault, 0, ""},
		{"", "10.0.0.0/8, 192.168.1.0/24", driver.NetworkLimited, 2, ""},
		{"allow-list", "1.2.3.4/32", driver.NetworkLimited, 1, ""},
		{"allow-list", "", "", 0, "needs DAYTONA_NETWORK_ALLOW_LIST"},
		{"default", "10.0.0.0/8", "", 0, "DAYTONA_NETWORK_ALLOW_LIST is set"},
		{"", "10.0.0.300/8", "", 0, "not an IPv4 CIDR"},
		{"", "10.0.0.1", "", 0, "not an IPv4 CIDR"},
		{"", "fd00::/8", "", 0, "not an IPv4 CIDR"},
		{"", "1.0.0.0/8,2.0.0.0/8,3.0.0.0/8,4.0.0.0/8,5.0.0.0/8,6.0.0.0/8", "", 0, "at most 5"},
		{"open", "", "", 0, "DAYTONA_NETWORK"},
	} {
		t.Setenv("DAYTONA_API_URL", "http://x")
		t.Setenv("DAYTONA_API_KEY", "k")
		t.Setenv("DAYTONA_NETWORK", c.mode)
		t.Setenv("DAYTONA_NETWORK_ALLOW_LIST", c.list)
		cfg, err := daytonaConfig()
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) || !errors.Is(err, grove.ErrInvalid) {
				t.Errorf("%q %q: error %v, want %q", c.mode, c.list, err, c.err)
			}
			continue
		}
		if err != nil {
			t.Errorf("%q %q: %v", c.mode, c.list, err)
			continue
		}
		d, err := daytona.New(cfg)
		if err != nil {
			t.Errorf("%q %q: New: %v", c.mode, c.list, err)
			continue
		}
		if got := d.Capabilities().Network; len(got) != 1 || got[0] != c.want || len(cfg.NetworkAllowList) != c.wantList {
			t.Errorf("%q %q: modes %v, list %v; want %s with %d blocks", c.mode, c.list, got, cfg.NetworkAllowList, c.want, c.wantList)
		}
	}
}
