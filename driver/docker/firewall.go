package docker

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/grove-dev/grove"
)

// FirewallMode says who closes the host's INPUT path from the limited
// network. Docker's internal networks filter forwarded traffic only: without
// a rule in the host's INPUT chain, a container on grove-limited reaches
// every service the host listens on with a wildcard address, through the
// network's gateway.
type FirewallMode string

const (
	// FirewallInstall (the default): the driver installs the rule before a
	// limited container starts and refuses NetworkLimited when it cannot
	// (a server that is not root).
	FirewallInstall FirewallMode = ""
	// FirewallExternal: the operator installed the rule (LimitedFirewallRule)
	// and the driver does not touch the host firewall.
	FirewallExternal FirewallMode = "external"
)

// limitedRule is the rule, in iptables' syntax after the chain name.
var limitedRule = []string{"-i", limitedBridge, "-j", "DROP"}

// LimitedFirewallRule is the host firewall rule NetworkLimited depends on,
// as an operator would type it.
func LimitedFirewallRule() string {
	return "iptables -I INPUT " + strings.Join(limitedRule, " ") + " (and the same with ip6tables)"
}

// EnsureLimitedFirewall installs, idempotently, the host rule that drops
// everything arriving at the host from the limited network's bridge, for
// IPv4 and, when the host has IPv6, IPv6 (the bridge always has a
// link-local address). Create calls it before a limited container starts;
// a server may call it at start-up to report the problem early. It fails
// with grove.ErrUnavailable, saying what to do, when the rule cannot be
// installed.
func (d *Driver) EnsureLimitedFirewall(ctx context.Context) error {
	if d.firewall == FirewallExternal {
		return nil
	}
	// One check-then-insert at a time, across processes too (two servers,
	// or test packages run in parallel, on one host), so the rule is not
	// inserted twice.
	unlock := lockFile(filepath.Join(os.TempDir(), "grove-limited-firewall.lock"))
	defer unlock()
	tools := []struct {
		bin      string
		required bool
	}{
		{d.iptables, true},
		{d.ip6tables, hostHasIPv6()},
	}
	for _, tool := range tools {
		if tool.bin == "" {
			if tool.required {
				return d.firewallError(errors.New("iptables not found"))
			}
			continue
		}
		if err := ensureRule(ctx, tool.bin); err != nil {
			if !tool.required {
				continue
			}
			return d.firewallError(err)
		}
	}
	return nil
}

func (d *Driver) firewallError(err error) error {
	return grove.Errorf(grove.ErrUnavailable,
		"network limited: cannot install the host firewall rule that keeps limited containers off the host's own services (%v); "+
			"run the server as root, or install `%s` yourself and configure the docker driver with FirewallExternal",
		err, LimitedFirewallRule())
}

// ensureRule checks for the rule with -C and inserts it at the top of INPUT
// when missing. -w waits for the xtables lock instead of failing on it.
func ensureRule(ctx context.Context, bin string) error {
	check := append([]string{"-w", "5", "-C", "INPUT"}, limitedRule...)
	out, err := exec.CommandContext(ctx, bin, check...).CombinedOutput()
	if err == nil {
		return nil
	}
	var exit *exec.ExitError
	// iptables -C exits 1 for "no such rule"; anything else (permission,
	// missing tables, the lock) is a failure to report.
	if !errors.As(err, &exit) || exit.ExitCode() != 1 || bytes.Contains(out, []byte("ermission denied")) {
		return fmt.Errorf("%s -C: %v: %s", filepath.Base(bin), err, bytes.TrimSpace(out))
	}
	insert := append([]string{"-w", "5", "-I", "INPUT", "1"}, limitedRule...)
	if out, err := exec.CommandContext(ctx, bin, insert...).CombinedOutput(); err != nil {
		return fmt.Errorf("%s -I: %v: %s", filepath.Base(bin), err, bytes.TrimSpace(out))
	}
	return nil
}

// findTool looks a firewall tool up on PATH and in the sbin directories a
// non-login PATH often lacks.
func findTool(name string) string {
	if p, err := exec.LookPath(name); err == nil {
		return p
	}
	for _, dir := range []string{"/usr/sbin", "/sbin"} {
		p := filepath.Join(dir, name)
		if st, err := os.Stat(p); err == nil && !st.IsDir() && st.Mode()&0o111 != 0 {
			return p
		}
	}
	return ""
}

func hostHasIPv6() bool {
	_, err := os.Stat("/proc/net/if_inet6")
	return err == nil
}

// lockFile takes an exclusive flock on path, best effort: without the lock
// the worst case is a duplicate rule.
func lockFile(path string) (unlock func()) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return func() {}
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
		f.Close()
		return func() {}
	}
	return func() {
		_ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
		f.Close()
	}
}
