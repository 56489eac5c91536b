package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"time"
)

// config is the effective configuration: flags override the environment,
// which overrides the defaults.
type config struct {
	Root            string        // GROVE_ROOT: data root (store, caches, workspaces)
	Runtime         string        // GROVE_RUNTIME: bwrap | subprocess | docker; "" picks bwrap where available
	AllowUnisolated bool          // GROVE_ALLOW_UNISOLATED: writable workspaces on an unisolated runtime
	Network         string        // GROVE_NETWORK: none | limited | default
	Freshness       time.Duration // GROVE_FETCH_FRESHNESS: how long a fetch stays fresh
	AccessCheckTTL  time.Duration // GROVE_ACCESS_CHECK_TTL: how long a user's successful access check on a repository is remembered
	BaseURL         string        // GITHUB_BASE_URL: GitHub (Enterprise) base URL
	User            string        // GROVE_USER: the acting user for in-process commands
	AuthorName      string        // GROVE_AUTHOR_NAME: commit identity
	AuthorEmail     string        // GROVE_AUTHOR_EMAIL
	NoSync          bool          // GROVE_NO_SYNC: skip fsync on file writes (still atomic)
	Image           string        // GROVE_IMAGE: agent image for the docker runtime (default: built by grove image build)
	Locks           string        // GROVE_LOCKS: local (default) | a postgres:// DSN | a redis:// URL, shared by several processes
	Store           string        // GROVE_STORE: sqlite (default: <root>/grove.db) | a postgres:// DSN shared by several processes
	JSON            bool
	Quiet           bool
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
		User:            envOr("GROVE_USER", envOr("USER", "grove")),
		AuthorName:      envOr("GROVE_AUTHOR_NAME", "Grove Agent"),
		AuthorEmail:     envOr("GROVE_AUTHOR_EMAIL", "agent@grove.invalid"),
		Image:           os.Getenv("GROVE_IMAGE"),
		NoSync:          envBool("GROVE_NO_SYNC"),
		Store:           os.Getenv("GROVE_STORE"),
		Locks:           os.Getenv("GROVE_LOCKS"),
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

// pickRuntime resolves "" to the best runtime this machine has.
func (c *config) pickRuntime() (string, error) {
	switch c.Runtime {
	case "":
		if _, err := exec.LookPath("bwrap"); err == nil {
			return "bwrap", nil
		}
		return "subprocess", nil
	case "bwrap", "subprocess", "docker":
		return c.Runtime, nil
	}
	return "", fmt.Errorf("unknown runtime %q (want bwrap, subprocess or docker)", c.Runtime)
}
