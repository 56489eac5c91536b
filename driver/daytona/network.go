package daytona

import (
	"context"
	"net"
	"slices"
	"strings"

	apiclient "github.com/daytonaio/daytona/libs/api-client-go"

	"github.com/grove-dev/grove"
	"github.com/grove-dev/grove/driver"
)

// MaxAllowList is how many CIDR blocks Daytona accepts in a sandbox's
// networkAllowList ("up to 5 CIDR network blocks", Daytona's network
// limits documentation; the OpenAPI document gives no bound).
const MaxAllowList = 5

// ParseAllowList parses Daytona's allow-list format: comma-separated IPv4
// CIDR blocks (spaces around them ignored), at most MaxAllowList. An empty
// string is an empty list.
func ParseAllowList(s string) ([]string, error) {
	if strings.TrimSpace(s) == "" {
		return nil, nil
	}
	var out []string
	for _, f := range strings.Split(s, ",") {
		f = strings.TrimSpace(f)
		if err := checkCIDR(f); err != nil {
			return nil, err
		}
		out = append(out, f)
	}
	if len(out) > MaxAllowList {
		return nil, grove.Errorf(grove.ErrInvalid, "daytona: network allow list has %d CIDR blocks; Daytona accepts at most %d", len(out), MaxAllowList)
	}
	return out, nil
}

func checkCIDR(c string) error {
	ip, _, err := net.ParseCIDR(c)
	if err != nil || ip.To4() == nil || strings.Contains(c, ":") {
		return grove.Errorf(grove.ErrInvalid, "daytona: network allow list entry %q is not an IPv4 CIDR block such as 10.0.0.0/8 (Daytona accepts IPv4 CIDRs only)", c)
	}
	return nil
}

// netModes maps DAYTONA_NETWORK's words to the driver's network modes.
var netModes = map[string]driver.NetworkMode{
	"block-all": driver.NetworkNone, "none": driver.NetworkNone,
	"allow-list": driver.NetworkLimited, "limited": driver.NetworkLimited,
	"default": driver.NetworkDefault,
}

// ParseNetworkMode parses DAYTONA_NETWORK: block-all (or none),
// allow-list (or limited), default; empty is empty (New's default).
func ParseNetworkMode(s string) (driver.NetworkMode, error) {
	if s == "" {
		return "", nil
	}
	m, ok := netModes[strings.ToLower(strings.TrimSpace(s))]
	if !ok {
		return "", grove.Errorf(grove.ErrInvalid, "daytona: network %q: want block-all, allow-list or default", s)
	}
	return m, nil
}

// resolveNetwork applies New's network defaults and checks the pair of
// settings: no mode means allow-list when a list is given, else block-all.
func resolveNetwork(cfg *Config) error {
	for _, c := range cfg.NetworkAllowList {
		if err := checkCIDR(c); err != nil {
			return err
		}
	}
	if len(cfg.NetworkAllowList) > MaxAllowList {
		return grove.Errorf(grove.ErrInvalid, "daytona: network allow list has %d CIDR blocks; Daytona accepts at most %d", len(cfg.NetworkAllowList), MaxAllowList)
	}
	has := len(cfg.NetworkAllowList) > 0
	switch cfg.Network {
	case "":
		cfg.Network = driver.NetworkNone
		if has {
			cfg.Network = driver.NetworkLimited
		}
	case driver.NetworkLimited:
		if !has {
			return grove.Errorf(grove.ErrInvalid, "daytona: network allow-list needs a non-empty allow list (DAYTONA_NETWORK_ALLOW_LIST)")
		}
	case driver.NetworkNone, driver.NetworkDefault:
		if has {
			return grove.Errorf(grove.ErrInvalid, "daytona: a network allow list contradicts network mode %q", cfg.Network)
		}
	default:
		return grove.Errorf(grove.ErrInvalid, "daytona: network mode %q", cfg.Network)
	}
	return nil
}

// applyNetwork sets the create request's network fields for the
// configured mode: block-all sends networkBlockAll=true; allow-list sends
// networkBlockAll=false and networkAllowList; default sends neither.
func (d *Driver) applyNetwork(req *apiclient.CreateSandbox) {
	switch d.cfg.Network {
	case driver.NetworkNone:
		req.SetNetworkBlockAll(true)
	case driver.NetworkLimited:
		req.SetNetworkBlockAll(false)
		req.SetNetworkAllowList(strings.Join(d.cfg.NetworkAllowList, ","))
	}
}

// networkMatches reports whether a sandbox's network settings are the
// configured ones.
func (d *Driver) networkMatches(blockAll bool, allowList string) bool {
	have, _ := ParseAllowList(allowList)
	switch d.cfg.Network {
	case driver.NetworkNone:
		return blockAll
	case driver.NetworkLimited:
		return !blockAll && sameSet(have, d.cfg.NetworkAllowList)
	default:
		return !blockAll && strings.TrimSpace(allowList) == ""
	}
}

func sameSet(a, b []string) bool {
	a, b = slices.Clone(a), slices.Clone(b)
	slices.Sort(a)
	slices.Sort(b)
	return slices.Equal(slices.Compact(a), slices.Compact(b))
}

// ensureNetwork brings an adopted sandbox whose network settings differ
// from the configuration in line through Daytona's
// POST /sandbox/{id}/network-settings (which acts on a running sandbox,
// so callers start it first). Sandboxes this driver created carry the
// configured settings already.
func (d *Driver) ensureNetwork(ctx context.Context, b *box) error {
	b.startMu.Lock()
	defer b.startMu.Unlock()
	if !b.netStale {
		return nil
	}
	u := apiclient.NewUpdateSandboxNetworkSettings()
	switch d.cfg.Network {
	case driver.NetworkNone:
		u.SetNetworkBlockAll(true)
	case driver.NetworkLimited:
		u.SetNetworkBlockAll(false)
		u.SetNetworkAllowList(strings.Join(d.cfg.NetworkAllowList, ","))
	default:
		u.SetNetworkBlockAll(false)
		u.SetNetworkAllowList("")
	}
	sb, resp, err := d.api.SandboxAPI.UpdateNetworkSettings(ctx, b.id).UpdateSandboxNetworkSettings(*u).Execute()
	if err := mapErr(ctx, "update network settings", resp, err); err != nil {
		return err
	}
	if !d.networkMatches(sb.GetNetworkBlockAll(), sb.GetNetworkAllowList()) {
		return errorf(grove.ErrUnavailable, "sandbox %s kept network settings blockAll=%v allowList=%q after an update to mode %s",
			b.id, sb.GetNetworkBlockAll(), sb.GetNetworkAllowList(), d.cfg.Network)
	}
	b.netStale = false
	return nil
}
