package gitrepo

import (
	"context"
	"net"
	"net/netip"
	"net/url"
	"os"
	"path/filepath"
	"strings"

	"github.com/grove-dev/grove"
)

// NotAccessibleMessage is the one answer a network caller gets for a local
// path or file:// URL it may not use — whether the path exists, is a
// repository, is outside every allowed root or is Grove's own data — so
// the answer reveals nothing about the server's disk.
const NotAccessibleMessage = "repository not found or not accessible"

func errNotAccessible() error { return grove.Errorf(grove.ErrNotFound, NotAccessibleMessage) }

// SourcePolicy is what callers that reach Grove over the network may name
// as a repository and where Grove fetches for them (docs/SECURITY.md,
// "Repository sources and outbound fetches"). The in-process CLI is the
// operator and is not restricted. The zero value allows no local
// repositories and only the platform host.
type SourcePolicy struct {
	// LocalRoots are directories under which local repositories may be
	// named (GROVE_LOCAL_REPO_ROOTS). Empty: none.
	LocalRoots []string
	// DenyRoots are never a source, even under a LocalRoot: Grove's own
	// data root.
	DenyRoots []string
	// AllowedHosts are host or host:port entries the operator trusts
	// explicitly (GROVE_ALLOWED_GIT_HOSTS): they may have any address. An
	// entry without a port matches every port of the host.
	AllowedHosts []string
	// PlatformHost is the git platform's host[:port] (from GITHUB_BASE_URL,
	// default github.com). It is allowed, but its addresses are checked
	// unless PlatformExplicit (the operator configured it).
	PlatformHost     string
	PlatformExplicit bool
	// LookupHost resolves a host name; nil uses the system resolver.
	LookupHost func(ctx context.Context, host string) ([]netip.Addr, error)
}

// parseLocalRestricted is parseLocal for a network caller: only absolute
// paths, only under an allowed root once every symlink is resolved, never
// under a denied root, never a gitfile redirect; every refusal is
// errNotAccessible.
func parseLocalRestricted(p string, pol *SourcePolicy) (Remote, error) {
	if len(pol.LocalRoots) == 0 || !strings.HasPrefix(p, "/") {
		return Remote{}, errNotAccessible()
	}
	for _, seg := range strings.Split(p, "/") {
		if seg == ".." || seg == "." || strings.HasPrefix(seg, "-") {
			return Remote{}, errNotAccessible()
		}
	}
	real, err := filepath.EvalSymlinks(filepath.Clean(p))
	if err != nil || !pol.localAllowed(real) {
		return Remote{}, errNotAccessible()
	}
	// A working tree's .git must be a directory: a gitfile could point at
	// any repository on the machine (another user's workspace).
	if fi, err := os.Lstat(filepath.Join(real, ".git")); err == nil && !fi.IsDir() {
		return Remote{}, errNotAccessible()
	}
	if !isGitDir(real) {
		return Remote{}, errNotAccessible()
	}
	return localRemote(real), nil
}

// localAllowed reports whether the resolved path real lies under a
// (resolved) allowed root and under no denied root.
func (p *SourcePolicy) localAllowed(real string) bool {
	for _, d := range p.DenyRoots {
		if within(real, resolved(d)) {
			return false
		}
	}
	for _, r := range p.LocalRoots {
		if r == "" || !filepath.IsAbs(r) {
			continue
		}
		if within(real, resolved(r)) {
			return true
		}
	}
	return false
}

func resolved(p string) string {
	p = filepath.Clean(p)
	if r, err := filepath.EvalSymlinks(p); err == nil {
		return r
	}
	return p
}

// within reports whether p is dir or below it.
func within(p, dir string) bool {
	rel, err := filepath.Rel(dir, p)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, "../") && !filepath.IsAbs(rel)
}

// endpoint is where a remote's URL points.
type endpoint struct {
	scheme string // https, http, ssh, git
	host   string // lower case, no brackets
	port   string // explicit or the scheme's default
}

func endpointOf(r Remote) (endpoint, error) {
	if strings.Contains(r.URL, "://") {
		u, err := url.Parse(r.URL)
		if err != nil {
			return endpoint{}, grove.Errorf(grove.ErrInvalid, "repo: malformed URL")
		}
		e := endpoint{scheme: u.Scheme, host: strings.ToLower(u.Hostname()), port: u.Port()}
		switch e.scheme {
		case "git+ssh", "ssh+git":
			e.scheme = "ssh"
		}
		if e.port == "" {
			e.port = map[string]string{"https": "443", "http": "80", "ssh": "22", "git": "9418"}[e.scheme]
		}
		return e, nil
	}
	// scp-like [user@]host:path
	hostPart, _, _ := strings.Cut(r.URL, ":")
	if at := strings.LastIndexByte(hostPart, '@'); at >= 0 {
		hostPart = hostPart[at+1:]
	}
	return endpoint{scheme: "ssh", host: strings.ToLower(hostPart), port: "22"}, nil
}

// hostMatches reports whether entry (host or host:port) names e.
func hostMatches(entry string, e endpoint) bool {
	entry = strings.ToLower(strings.TrimSpace(entry))
	if entry == "" {
		return false
	}
	h, port := entry, ""
	if hh, pp, err := net.SplitHostPort(entry); err == nil {
		h, port = hh, pp
	}
	h = strings.TrimSuffix(strings.TrimPrefix(h, "["), "]")
	return h == e.host && (port == "" || port == e.port)
}

// allowed says whether e may be contacted at all, and whether the operator
// named it explicitly (then any address is fine).
func (p *SourcePolicy) allowed(e endpoint) (ok, explicit bool) {
	for _, a := range p.AllowedHosts {
		if hostMatches(a, e) {
			return true, true
		}
	}
	ph := p.PlatformHost
	if ph == "" {
		ph = defaultHost
	}
	if hostMatches(ph, e) {
		return true, p.PlatformExplicit
	}
	return false, false
}

func errHostNotAllowed(e endpoint) error {
	return grove.Errorf(grove.ErrForbidden, "repository host %q is not allowed on this server", sanitizeForMessage(e.host))
}

// CheckHost refuses a remote whose host is not allowed, without any name
// resolution: cheap enough for every acquire. Local remotes are checked by
// ParseRepo (ParseOptions.Sources) and pass here.
func (p *SourcePolicy) CheckHost(r Remote) error {
	if r.Local {
		return nil
	}
	e, err := endpointOf(r)
	if err != nil {
		return err
	}
	if e.scheme != "https" && e.scheme != "http" {
		// ssh would authenticate as the server's own account (OpenSSH finds
		// ~/.ssh through the password database, whatever HOME says), and
		// git:// has no authentication at all: neither can show that the
		// caller may read the repository.
		return grove.Errorf(grove.ErrForbidden, "API callers name repositories over https (their token travels with the request); %s URLs are for the server's own command line", e.scheme)
	}
	ok, explicit := p.allowed(e)
	if !ok {
		return errHostNotAllowed(e)
	}
	if !explicit {
		if a, err := netip.ParseAddr(e.host); err == nil {
			if !publicAddr(a) {
				return errHostNotAllowed(e)
			}
		} else if numericSpelling(e.host) {
			return errHostNotAllowed(e)
		}
	}
	return nil
}

// FetchConfig checks r like CheckHost and returns the git configuration a
// fetch for a network caller runs with: redirects are never followed, and
// over http(s) a host that is not explicitly trusted is resolved here,
// every address must be public, and git is pinned to the address checked
// (http.curloptResolve), so a second DNS answer cannot send it elsewhere.
// SSH and git:// are checked against the host allow-list only.
func (p *SourcePolicy) FetchConfig(ctx context.Context, r Remote) ([][2]string, error) {
	if err := p.CheckHost(r); err != nil {
		return nil, err
	}
	if r.Local {
		return nil, nil
	}
	e, err := endpointOf(r)
	if err != nil {
		return nil, err
	}
	if e.scheme != "http" && e.scheme != "https" {
		return nil, nil
	}
	cfg := [][2]string{{"http.followRedirects", "false"}}
	if _, explicit := p.allowed(e); explicit {
		return cfg, nil
	}
	if _, err := netip.ParseAddr(e.host); err == nil {
		return cfg, nil // a literal address, checked by CheckHost
	}
	lookup := p.LookupHost
	if lookup == nil {
		lookup = func(ctx context.Context, host string) ([]netip.Addr, error) {
			return net.DefaultResolver.LookupNetIP(ctx, "ip", host)
		}
	}
	addrs, err := lookup(ctx, e.host)
	if err != nil || len(addrs) == 0 {
		return nil, grove.Errorf(grove.ErrUnavailable, "cannot resolve repository host %q", sanitizeForMessage(e.host))
	}
	for _, a := range addrs {
		if !publicAddr(a) {
			return nil, errHostNotAllowed(e)
		}
	}
	a := addrs[0].Unmap()
	addr := a.String()
	if a.Is6() {
		addr = "[" + addr + "]"
	}
	return append(cfg, [2]string{"http.curloptResolve", e.host + ":" + e.port + ":" + addr}), nil
}

var nonPublic = []netip.Prefix{
	netip.MustParsePrefix("0.0.0.0/8"),     // "this network"
	netip.MustParsePrefix("100.64.0.0/10"), // carrier-grade NAT
	netip.MustParsePrefix("192.0.0.0/24"),  // IETF protocol assignments
	netip.MustParsePrefix("198.18.0.0/15"), // benchmarking
	netip.MustParsePrefix("240.0.0.0/4"),   // reserved, broadcast
	netip.MustParsePrefix("64:ff9b::/96"),  // NAT64: embeds any IPv4 address
	netip.MustParsePrefix("64:ff9b:1::/48"),
	netip.MustParsePrefix("2002::/16"), // 6to4: embeds any IPv4 address
}

// publicAddr reports whether a is an ordinary public unicast address: not
// loopback, link-local (cloud metadata at 169.254.169.254), private,
// unspecified, multicast or a range that embeds or reaches such addresses.
func publicAddr(a netip.Addr) bool {
	a = a.Unmap()
	if !a.IsValid() || a.IsLoopback() || a.IsPrivate() || a.IsUnspecified() || a.IsLinkLocalUnicast() ||
		a.IsLinkLocalMulticast() || a.IsInterfaceLocalMulticast() || a.IsMulticast() || a.Zone() != "" {
		return false
	}
	for _, p := range nonPublic {
		if p.Contains(a) {
			return false
		}
	}
	return true
}

// numericSpelling reports host names that resolvers may read as an IPv4
// address in a non-canonical spelling (2130706433, 0x7f.1, 0177.0.0.1,
// 127.1): refused rather than guessed at.
func numericSpelling(h string) bool {
	labels := strings.Split(strings.TrimSuffix(h, "."), ".")
	last := labels[len(labels)-1]
	if last == "" {
		return false
	}
	if strings.HasPrefix(last, "0x") {
		return true
	}
	for _, r := range last {
		if r < '0' || r > '9' {
			return false
		}
	}
	return true // a name whose last label is all digits is no DNS name
}

// PlatformHost is the host[:port] owner/repo names resolve to under opt
// (its default port dropped).
func (opt ParseOptions) PlatformHost() string {
	b, err := baseURL(opt)
	if err != nil {
		return defaultHost
	}
	return normHost(b.Scheme, b.Host)
}
