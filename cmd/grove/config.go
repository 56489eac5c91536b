package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/grove-dev/grove/driver"
)

// config is the effective configuration: flags override the environment,
// which overrides the defaults.
type config struct {
	Root            string        // GROVE_ROOT: data root (store, caches, workspaces)
	Runtime         string        // GROVE_RUNTIME: bwrap | subprocess | docker | daytona; "" picks bwrap where available
	AllowUnisolated bool          // GROVE_ALLOW_UNISOLATED: writable workspaces on an unisolated runtime
	Network         string        // GROVE_NETWORK: none | limited | default
	Freshness       time.Duration // GROVE_FETCH_FRESHNESS: how long a fetch stays fresh
	AccessCheckTTL  time.Duration // GROVE_ACCESS_CHECK_TTL: how long a user's successful access check on a repository is remembered
	BaseURL         string        // GITHUB_BASE_URL: GitHub (Enterprise) base URL
	LocalRepoRoots  []string      // GROVE_LOCAL_REPO_ROOTS: colon-separated directories API callers may name local repositories under
	AllowedGitHosts []string      // GROVE_ALLOWED_GIT_HOSTS: comma-separated host[:port] API callers may fetch from besides the platform's
	User            string        // GROVE_USER: the acting user for in-process commands
	AuthorName      string        // GROVE_AUTHOR_NAME: commit identity
	AuthorEmail     string        // GROVE_AUTHOR_EMAIL
	NoSync          bool          // GROVE_NO_SYNC: skip fsync on file writes (still atomic)
	Image           string        // GROVE_IMAGE: agent image for the docker runtime (default: built by grove image build)
	Locks           string        // GROVE_LOCKS: file (default, flock under the root) | local | a postgres:// DSN | a redis:// URL
	Store           string        // GROVE_STORE: sqlite (default: <root>/grove.db) | a postgres:// DSN shared by several processes
	WorkspaceQuota  int64         // GROVE_WORKSPACE_QUOTA: bytes one workspace may take (0: 10 GiB, -1: none)
	UserQuota       int64         // GROVE_USER_QUOTA: bytes one user's workspaces may take (0: 50 GiB, -1: none)
	DiskReserve     uint64        // GROVE_DISK_RESERVE: free bytes kept for Grove itself (0: 1 GiB)
	PinsPerUser     int           // GROVE_PINS_PER_USER: pinned workspaces per user (0: 10)
	WorkspacesPer   int           // GROVE_WORKSPACES_PER_USER: workspaces per user (0: 100, -1: none)
	MaxRepoBytes    int64         // GROVE_MAX_REPO_BYTES: bytes one clone or fetch may add (0: 20 GiB, -1: none)
	MaxCaches       int           // GROVE_MAX_CACHES: repository caches the server keeps (0: 200, -1: none)
	SandboxPath     string        // GROVE_SANDBOX_PATH: PATH of sandboxed commands (default: see sandboxPath)
	// SandboxLimits bound each workspace's commands (docs/SECURITY.md,
	// "Sandboxes"): GROVE_SANDBOX_MEMORY (bytes), GROVE_SANDBOX_CPUS,
	// GROVE_SANDBOX_PIDS, GROVE_SANDBOX_USER_PIDS, GROVE_SANDBOX_TMP
	// (bytes). Zero or unset: the runtime's defaults.
	SandboxLimits driver.Limits
	JSON          bool
	Quiet         bool
}

func defaultRoot() string {
	if d := os.Getenv("XDG_DATA_HOME"); d != "" {
		return filepath.Join(d, "grove")
	}
	if h, err := os.UserHomeDir(); err == nil {
		return filepath.Join(h, ".local", "share", "grove")
	}
	return filepath.Join(os.TempDir(), "grove-"+strconv.Itoa(os.Getuid()))
}

func envBool(name string) bool {
	v, _ := strconv.ParseBool(os.Getenv(name))
	return v
}

func envOr(name, def string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return def
}

func loadConfig() config {
	c := config{
		Root:            envOr("GROVE_ROOT", defaultRoot()),
		Runtime:         os.Getenv("GROVE_RUNTIME"),
		AllowUnisolated: envBool("GROVE_ALLOW_UNISOLATED"),
		Network:         os.Getenv("GROVE_NETWORK"),
		Freshness:       5 * time.Minute,
		BaseURL:         os.Getenv("GITHUB_BASE_URL"),
		LocalRepoRoots:  splitList(os.Getenv("GROVE_LOCAL_REPO_ROOTS"), ":"),
		AllowedGitHosts: splitList(os.Getenv("GROVE_ALLOWED_GIT_HOSTS"), ","),
		User:            envOr("GROVE_USER", envOr("USER", "grove")),
		AuthorName:      envOr("GROVE_AUTHOR_NAME", "Grove Agent"),
		AuthorEmail:     envOr("GROVE_AUTHOR_EMAIL", "agent@grove.invalid"),
		Image:           os.Getenv("GROVE_IMAGE"),
		NoSync:          envBool("GROVE_NO_SYNC"),
		Store:           os.Getenv("GROVE_STORE"),
		Locks:           os.Getenv("GROVE_LOCKS"),
		SandboxPath:     os.Getenv("GROVE_SANDBOX_PATH"),
	}
	c.WorkspaceQuota, _ = strconv.ParseInt(os.Getenv("GROVE_WORKSPACE_QUOTA"), 10, 64)
	c.UserQuota, _ = strconv.ParseInt(os.Getenv("GROVE_USER_QUOTA"), 10, 64)
	c.DiskReserve, _ = strconv.ParseUint(os.Getenv("GROVE_DISK_RESERVE"), 10, 64)
	c.PinsPerUser, _ = strconv.Atoi(os.Getenv("GROVE_PINS_PER_USER"))
	c.WorkspacesPer, _ = strconv.Atoi(os.Getenv("GROVE_WORKSPACES_PER_USER"))
	c.MaxRepoBytes, _ = strconv.ParseInt(os.Getenv("GROVE_MAX_REPO_BYTES"), 10, 64)
	c.MaxCaches, _ = strconv.Atoi(os.Getenv("GROVE_MAX_CACHES"))
	c.SandboxLimits.MemoryBytes, _ = strconv.ParseInt(os.Getenv("GROVE_SANDBOX_MEMORY"), 10, 64)
	c.SandboxLimits.CPUs, _ = strconv.ParseFloat(os.Getenv("GROVE_SANDBOX_CPUS"), 64)
	c.SandboxLimits.Processes, _ = strconv.Atoi(os.Getenv("GROVE_SANDBOX_PIDS"))
	c.SandboxLimits.UserProcesses, _ = strconv.Atoi(os.Getenv("GROVE_SANDBOX_USER_PIDS"))
	c.SandboxLimits.TmpBytes, _ = strconv.ParseInt(os.Getenv("GROVE_SANDBOX_TMP"), 10, 64)
	if l := &c.SandboxLimits; l.MemoryBytes < 0 || l.CPUs < 0 || l.Processes < 0 || l.UserProcesses < 0 || l.TmpBytes < 0 {
		// A negative limit would refuse every workspace: keep the defaults.
		c.SandboxLimits = driver.Limits{}
	}
	if v := os.Getenv("GROVE_ACCESS_CHECK_TTL"); v != "" {
		if d, err := time.ParseDuration(v); err == nil {
			c.AccessCheckTTL = d
		}
	}
	if v := os.Getenv("GROVE_FETCH_FRESHNESS"); v != "" {
		if d, err := time.ParseDuration(v); err == nil {
			c.Freshness = d
		}
	}
	return c
}

// splitList splits an environment list, dropping empty entries.
func splitList(v, sep string) []string {
	var out []string
	for _, s := range strings.Split(v, sep) {
		if s = strings.TrimSpace(s); s != "" {
			out = append(out, s)
		}
	}
	return out
}

// pickRuntime resolves "" to the best runtime this machine has.
func (c *config) pickRuntime() (string, error) {
	switch c.Runtime {
	case "":
		if _, err := exec.LookPath("bwrap"); err == nil {
			return "bwrap", nil
		}
		return "subprocess", nil
	case "bwrap", "subprocess", "docker", "daytona":
		return c.Runtime, nil
	}
	return "", fmt.Errorf("unknown runtime %q (want bwrap, subprocess, docker or daytona)", c.Runtime)
}

// toolchainDirs are where language toolchains install themselves outside
// the standard PATH; the ones present on this host join the sandbox PATH,
// so run_tests finds go or cargo where they usually live.
var toolchainDirs = []string{"/usr/local/go/bin", "/usr/local/cargo/bin"}

// sandboxPath is the PATH commands run with: GROVE_SANDBOX_PATH, else for
// host runtimes (bwrap, subprocess: they see the host's /usr) the standard
// directories plus the toolchain directories that exist here. For docker
// it is "" — the image's own PATH.
func (c *config) sandboxPath(runtime string) string {
	if c.SandboxPath != "" {
		return c.SandboxPath
	}
	if runtime == "docker" || runtime == "daytona" {
		return ""
	}
	dirs := []string{"/usr/local/sbin", "/usr/local/bin"}
	for _, d := range toolchainDirs {
		if fi, err := os.Stat(d); err == nil && fi.IsDir() {
			dirs = append(dirs, d)
		}
	}
	dirs = append(dirs, "/usr/sbin", "/usr/bin", "/sbin", "/bin")
	return strings.Join(dirs, ":")
}
