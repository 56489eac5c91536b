package engine_test

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/grove-dev/grove"
	"github.com/grove-dev/grove/driver"
	"github.com/grove-dev/grove/driver/bwrap"
	"github.com/grove-dev/grove/engine"
	"github.com/grove-dev/grove/internal/testenv"
)

// The trust boundary (DESIGN.md §3, docs/SECURITY.md): nothing on the host
// executes, or reads with trust, anything a sandbox can write. Each attack
// below is planted by agent code from inside the workspace's runtime; then
// every host-side path that touches a workspace runs — requests (status,
// diff, log, commit, push, search), release, reconcile, a restart,
// eviction under pressure and destroy — and the test proves from the host
// that the planted program never ran there, that a host file the agent
// pointed git at is unchanged, and that its content never came back.

// gitAttack plants hostile git metadata. The script gets the command that
// would prove host execution as $1 (it creates a file in a host directory
// no sandbox can see) and a host file as $2.
type gitAttack struct {
	name  string
	plant string
}

// evilConfig is git configuration naming programs in every key git runs
// one from. Written where the workspace's own .git/config (mounted
// read-only) cannot be: a common directory the agent points .git at, a
// nested repository, an include.
const evilConfig = `[core]
	repositoryformatversion = 0
	bare = false
	fsmonitor = "$1; false"
	hooksPath = "$PWD/.git/evil/hooks"
	pager = "$1; cat"
	sshCommand = "$1"
[filter "x"]
	clean = "$1; cat"
	smudge = "$1; cat"
	process = "$1"
	required = true
[diff "x"]
	textconv = "$1; cat"
[diff]
	external = "$1"
[merge "x"]
	driver = "$1"
[uploadpack]
	packObjectsHook = "$1"
[include]
	path = "$PWD/.git/evil/more.config"
`

var gitAttacks = []gitAttack{
	{"commondir redirect with filters, fsmonitor, hooks, textconv, external diff and includes", `set -e
mkdir -p .git/evil/info .git/evil/hooks
ln -s ../objects .git/evil/objects
ln -s ../refs .git/evil/refs
cat > .git/evil/config <<EOF
` + evilConfig + `EOF
printf '[core]\n\tfsmonitor = "%s; false"\n' "$1" > .git/evil/more.config
for h in pre-commit post-commit commit-msg reference-transaction post-checkout pre-push pre-auto-gc post-index-change; do
  printf '#!/bin/sh\n%s\n' "$1" > .git/evil/hooks/$h; chmod +x .git/evil/hooks/$h
done
printf '* filter=x diff=x merge=x\n' > .git/evil/info/attributes
printf '* filter=x diff=x merge=x\n' > .gitattributes
echo evil > .git/commondir
`},
	{"nested repository (gitlink) with its own hostile config", `set -e
git init -q sub
git -C sub -c user.name=a -c user.email=a@b commit -q --allow-empty -m x
cat > sub/.git/config <<EOF
` + evilConfig + `EOF
git add sub
`},
	{"submodule with an update command and a gitfile redirect", `set -e
mkdir -p evilgit/info
git init -q --bare evilgit/repo
cat > evilgit/repo/config <<EOF
` + evilConfig + `EOF
mkdir -p mod
printf 'gitdir: %s/evilgit/repo\n' "$PWD" > mod/.git
printf '[submodule "mod"]\n\tpath = mod\n\turl = ./mod\n\tupdate = !%s\n' "$1" > .gitmodules
`},
	{"ref, packed-refs and index symlinks to a host file", `set -e
rm -f .git/packed-refs
ln -s "$2" .git/packed-refs
ln -s "$2" .git/refs/heads/evil
mkdir -p .git/refs/tags
ln -s "$2" .git/refs/tags/evil
cp .git/index .git/index.real
ln -sf "$2" .git/index
`},
	{"alternates and object directories pointing at host paths", `
# alternates is mounted read-only: the attempt must fail, the rest stands
echo "$2" > .git/objects/info/alternates 2>/dev/null && exit 9
mkdir -p .git/objects/info
printf '%s\n' "$(dirname "$2")" > .git/objects/info/http-alternates
ln -s "$(dirname "$2")" .git/objects/evil
exit 0
`},
}

// trustRuntimes are the isolated runtimes the suite runs on.
func trustRuntimes(t *testing.T) map[string]func(t *testing.T) driver.Driver {
	return map[string]func(t *testing.T) driver.Driver{
		"bwrap": func(t *testing.T) driver.Driver {
			testenv.Require(t, "bwrap", bwrap.Available(), "bwrap not installed or user namespaces unavailable")
			d, err := bwrap.New(bwrap.Options{})
			if err != nil {
				t.Fatal(err)
			}
			return d
		},
		"docker": func(t *testing.T) driver.Driver { return dockerDriver(t) },
	}
}

func TestTrustBoundaryHostGitNeverObeysAgentMetadata(t *testing.T) {
	for rtName, newDrv := range trustRuntimes(t) {
		t.Run(rtName, func(t *testing.T) {
			drv := newDrv(t)
			f := newFixture(t, fixtureOpt{drv: drv})
			src := sourceRepo(t)
			project := fmt.Sprintf("trust-%s-%d", rtName, os.Getpid())
			for i, a := range gitAttacks {
				t.Run(a.name, func(t *testing.T) {
					host := t.TempDir() // never mounted into any sandbox
					marker := filepath.Join(host, "pwned")
					secret := filepath.Join(host, "secret")
					secretText := fmt.Sprintf("TOPSECRET-%d-%d", os.Getpid(), i)
					write(t, secret, secretText+"\n")
					req := grove.AcquireRequest{Repo: src, User: "mallory", Project: project, Mode: grove.ModeEdit, Conversation: fmt.Sprintf("attack%d", i)}
					ws, _, err := f.eng.Acquire(bg, req)
					if err != nil {
						t.Fatal(err)
					}
					t.Cleanup(func() { f.eng.Destroy(bg, ws.ID) })
					if err := f.eng.WriteFile(bg, ws.ID, "work.txt", []byte("agent work\n")); err != nil {
						t.Fatal(err)
					}
					res, err := f.eng.Exec(bg, ws.ID, grove.ExecRequest{
						Argv: []string{"sh", "-c", a.plant, "plant", "touch " + marker, secret},
					})
					if err != nil || res.ExitCode != 0 {
						t.Fatalf("planting the attack failed (the test would prove nothing): %v %+v\n%s%s", err, res, res.Stdout, res.Stderr)
					}

					var seen strings.Builder // everything the host paths returned
					note := func(what string, v any, err error) {
						fmt.Fprintf(&seen, "%s: %+v %v\n", what, v, err)
					}
					st, err := f.eng.Status(bg, ws.ID)
					note("status", st, err)
					d, err := f.eng.Diff(bg, ws.ID, grove.DiffRequest{})
					note("diff", d, err)
					l, err := f.eng.Log(bg, ws.ID, 5, "")
					note("log", l, err)
					sr, err := f.eng.Search(bg, ws.ID, grove.SearchRequest{Pattern: "TOPSECRET"})
					note("search", sr, err)
					c, err := f.eng.Commit(bg, ws.ID, grove.CommitRequest{Message: "agent commit"})
					note("commit", c, err)
					p, err := f.eng.Push(bg, ws.ID, grove.PushRequest{})
					note("push", p, err)
					note("release", nil, f.eng.Release(bg, ws.ID))
					rep, err := f.eng.Reconcile(bg)
					note("reconcile", rep, err)
					// A restart: a new engine over the same store and disk.
					again := f.restart(t, drv)
					rep, err = again.Reconcile(bg)
					note("restart reconcile", rep, err)
					ev, err := again.Evict(bg, engine.EvictionPolicy{MinFreeBytes: 1, FreeBytes: func() (uint64, error) {
						if _, err := os.Stat(ws.LocalPath); err != nil {
							return 1, nil
						}
						return 0, nil
					}})
					note("evict", ev, err)
					if _, err := again.Get(bg, ws.ID); err == nil {
						if err := again.Destroy(bg, ws.ID); err != nil {
							t.Errorf("the owner cannot destroy a booby-trapped workspace: %v", err)
						}
					}

					if _, err := os.Stat(marker); !errors.Is(err, os.ErrNotExist) {
						t.Fatalf("a program the agent planted ran on the host (%v); host paths saw:\n%s", err, seen.String())
					}
					if b, _ := os.ReadFile(secret); string(b) != secretText+"\n" {
						t.Fatalf("host file the agent pointed git at was changed: %q", b)
					}
					if strings.Contains(seen.String(), secretText) {
						t.Fatalf("host file content came back through a host path:\n%s", seen.String())
					}
				})
			}
		})
	}
}

// restart returns a second engine over f's store, provider and driver, as a
// restarted server would be.
func (f *fixture) restart(t *testing.T, drv driver.Driver) *engine.Engine {
	t.Helper()
	eng, err := engine.New(engine.Config{Store: f.store, Provider: f.prov, Driver: drv})
	if err != nil {
		t.Fatal(err)
	}
	return eng
}

// Search runs where the sandbox's view is the only view: a directory
// swapped for a symlink to a host directory while searching never makes a
// search return the host's files.
func TestTrustBoundarySearchRaceNeverReachesTheHost(t *testing.T) {
	for rtName, newDrv := range trustRuntimes(t) {
		t.Run(rtName, func(t *testing.T) {
			drv := newDrv(t)
			f := newFixture(t, fixtureOpt{drv: drv})
			src := sourceRepo(t)
			host := t.TempDir()
			secretText := fmt.Sprintf("HOSTSECRET%d", os.Getpid())
			write(t, filepath.Join(host, "leak.txt"), secretText+"\n")
			ws, _, err := f.eng.Acquire(bg, grove.AcquireRequest{Repo: src, User: "mallory", Project: fmt.Sprintf("race-%d", os.Getpid()), Mode: grove.ModeEdit, Conversation: "race"})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { f.eng.Destroy(bg, ws.ID) })
			if err := f.eng.WriteFile(bg, ws.ID, "d/inside.txt", []byte(secretText+" decoy in the workspace is fine\n")); err != nil {
				t.Fatal(err)
			}
			// The swapping loop runs inside the sandbox for the whole test.
			loop := fmt.Sprintf(`end=$(( $(date +%%s) + 30 ))
while [ "$(date +%%s)" -lt "$end" ]; do
  mv d d.real; ln -s %q d; rm d; mv d.real d
done`, host)
			var wg sync.WaitGroup
			wg.Add(1)
			stop := make(chan struct{})
			go func() {
				defer wg.Done()
				ctx, cancel := contextUntil(stop)
				defer cancel()
				f.eng.Exec(ctx, ws.ID, grove.ExecRequest{Argv: []string{"sh", "-c", loop}, Timeout: 40 * time.Second})
			}()
			defer func() { close(stop); wg.Wait() }()
			time.Sleep(200 * time.Millisecond)

			tries := 1000
			if rtName == "docker" {
				tries = 300 // each exec costs a round trip to the engine
			}
			var leaked, found atomic.Int64
			var sw sync.WaitGroup
			for g := 0; g < 4; g++ {
				sw.Add(1)
				go func() {
					defer sw.Done()
					for i := 0; i < tries/4; i++ {
						for _, path := range []string{"", "d"} {
							res, err := f.eng.Search(bg, ws.ID, grove.SearchRequest{Pattern: secretText, Path: path})
							if err != nil {
								continue // the path vanished mid-swap: a fine answer
							}
							for _, m := range res.Matches {
								found.Add(1)
								if !strings.Contains(m.Text, "decoy") {
									leaked.Add(1)
								}
							}
						}
					}
				}()
			}
			sw.Wait()
			if leaked.Load() > 0 {
				t.Fatalf("%d of the searches returned the host's file", leaked.Load())
			}
			if found.Load() == 0 {
				t.Fatalf("no search found even the decoy: the test proves nothing")
			}
		})
	}
}
