package gitrepo

import (
	"crypto/sha256"
	"encoding/hex"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/grove-dev/grove"
)

// DefaultBaseURL is the GitHub that `owner/repo` names when the caller
// configures nothing else.
const DefaultBaseURL = "https://github.com"

// defaultHost is the host whose caches live directly under the root
// (DESIGN §1); every other host gets its own directory level.
const defaultHost = "github.com"

// LocalHost is the RepoID.Host of repositories on this machine.
const LocalHost = "local"

// ParseOptions configure ParseRepo. The caller reads GITHUB_BASE_URL and
// passes its value; this package never reads the environment.
type ParseOptions struct {
	BaseURL string // GitHub (Enterprise) base URL; "" means DefaultBaseURL
	// Sources, when set, restricts local paths and file:// URLs to what a
	// network caller may name (SourcePolicy); every refusal answers
	// grove.ErrNotFound NotAccessibleMessage, whatever is on the disk.
	// Nil: the in-process CLI, which may name any local repository.
	Sources *SourcePolicy
}

// Remote is a parsed, validated repository: its identity and the
// credential-free URL (or absolute path, for local repos) git clones from.
type Remote struct {
	ID    grove.RepoID
	URL   string
	Local bool
}

// ParseRepo turns what a caller typed — `owner/repo`, an https, ssh or file
// URL, `git@host:owner/repo`, or a path to a local git repository — into a
// Remote. Every spelling of one remote yields the same ID. The input is
// untrusted: anything that could smuggle an option, a credential, a path
// escape or an exotic transport into git is rejected with grove.ErrInvalid.
//
// Only a bare `owner/repo` (exactly two segments) is taken as the GitHub
// shorthand; other relative inputs are local paths, resolved against the
// working directory without climbing (`..` is refused — pass an absolute
// path instead). The shorthand never probes the disk, so a server taking
// `owner/repo` from a request never looks at its own files.
func ParseRepo(s string, opt ParseOptions) (Remote, error) {
	if s == "" {
		return Remote{}, grove.Errorf(grove.ErrInvalid, "repo: empty")
	}
	if len(s) > 2048 {
		return Remote{}, grove.Errorf(grove.ErrInvalid, "repo: longer than 2048 bytes")
	}
	if !utf8.ValidString(s) {
		return Remote{}, grove.Errorf(grove.ErrInvalid, "repo: not valid UTF-8")
	}
	for _, r := range s {
		if unicode.IsControl(r) || unicode.IsSpace(r) {
			return Remote{}, grove.Errorf(grove.ErrInvalid, "repo: contains whitespace or control characters")
		}
	}
	if strings.HasPrefix(s, "-") {
		return Remote{}, grove.Errorf(grove.ErrInvalid, "repo: must not start with '-'")
	}
	// git's "<transport>::<address>" syntax (ext::, fd::, remote helpers)
	// runs arbitrary programs; nothing legitimate here needs it.
	if strings.Contains(s, "::") {
		return Remote{}, grove.Errorf(grove.ErrInvalid, "repo: transport helpers (<scheme>::) are not allowed")
	}
	switch {
	case strings.Contains(s, "://"):
		return parseURL(s, opt)
	case strings.HasPrefix(s, "/"), strings.HasPrefix(s, "./"):
		return parseLocal(s, opt)
	case isSCP(s):
		return parseSCP(s, opt)
	case strings.Count(s, "/") == 1:
		return parseShorthand(s, opt)
	default:
		return parseLocal(s, opt)
	}
}

func baseURL(opt ParseOptions) (*url.URL, error) {
	b := opt.BaseURL
	if b == "" {
		b = DefaultBaseURL
	}
	u, err := url.Parse(strings.TrimRight(b, "/"))
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" || u.User != nil {
		return nil, grove.Errorf(grove.ErrInvalid, "GitHub base URL must be http(s)://host without credentials")
	}
	return u, nil
}

func parseShorthand(s string, opt ParseOptions) (Remote, error) {
	b, err := baseURL(opt)
	if err != nil {
		return Remote{}, err
	}
	owner, name, err := splitRepoPath(s)
	if err != nil {
		return Remote{}, err
	}
	host := normHost(b.Scheme, b.Host)
	id := grove.RepoID{Host: host, Owner: owner, Name: name}
	id = foldGitHub(id, opt)
	return Remote{ID: id, URL: b.Scheme + "://" + b.Host + "/" + id.Owner + "/" + id.Name + ".git"}, nil
}

func parseURL(s string, opt ParseOptions) (Remote, error) {
	u, err := url.Parse(s)
	if err != nil {
		// url.Parse echoes its input, which may hold a credential.
		return Remote{}, grove.Errorf(grove.ErrInvalid, "repo: malformed URL")
	}
	switch u.Scheme {
	case "https", "http", "ssh", "git+ssh", "ssh+git", "git", "file":
	default:
		return Remote{}, grove.Errorf(grove.ErrInvalid, "repo: unsupported URL scheme %q", sanitizeForMessage(u.Scheme))
	}
	if u.RawQuery != "" || u.Fragment != "" || u.Opaque != "" {
		return Remote{}, grove.Errorf(grove.ErrInvalid, "repo: URL must not have a query or fragment")
	}
	if u.Scheme == "file" {
		if u.User != nil || (u.Host != "" && u.Host != "localhost") {
			if opt.Sources != nil {
				return Remote{}, errNotAccessible()
			}
			return Remote{}, grove.Errorf(grove.ErrInvalid, "repo: file URL must name a path on this machine")
		}
		return parseLocal(u.Path, opt)
	}
	if u.User != nil {
		_, hasPassword := u.User.Password()
		// Over http(s) any userinfo may be a token; over ssh only a bare
		// user name (git@) is normal.
		if hasPassword || u.Scheme == "https" || u.Scheme == "http" {
			return Remote{}, grove.Errorf(grove.ErrInvalid, "repo: URL must not embed credentials; pass the token separately")
		}
		if err := checkUser(u.User.Username()); err != nil {
			return Remote{}, err
		}
	}
	if u.Hostname() == "" || !validHost(u.Hostname()) || !validPort(u.Port()) {
		return Remote{}, grove.Errorf(grove.ErrInvalid, "repo: invalid host in URL")
	}
	owner, name, err := splitRepoPath(strings.TrimPrefix(u.Path, "/"))
	if err != nil {
		return Remote{}, err
	}
	host := normHost(u.Scheme, u.Host)
	id := foldGitHub(grove.RepoID{Host: host, Owner: owner, Name: name}, opt)
	clean := url.URL{Scheme: u.Scheme, Host: host, Path: "/" + owner + "/" + name + ".git"}
	if u.User != nil {
		clean.User = url.User(u.User.Username())
	}
	return Remote{ID: id, URL: clean.String()}, nil
}

// isSCP reports whether s has git's scp-like form [user@]host:path, which
// git recognises when a colon comes before the first slash.
func isSCP(s string) bool {
	colon := strings.IndexByte(s, ':')
	slash := strings.IndexByte(s, '/')
	return colon > 0 && (slash < 0 || colon < slash)
}

func parseSCP(s string, opt ParseOptions) (Remote, error) {
	hostPart, path, _ := strings.Cut(s, ":")
	user := ""
	if at := strings.LastIndexByte(hostPart, '@'); at >= 0 {
		user, hostPart = hostPart[:at], hostPart[at+1:]
		if err := checkUser(user); err != nil {
			return Remote{}, err
		}
	}
	if !validHost(hostPart) {
		return Remote{}, grove.Errorf(grove.ErrInvalid, "repo: invalid host")
	}
	owner, name, err := splitRepoPath(strings.TrimPrefix(path, "/"))
	if err != nil {
		return Remote{}, err
	}
	host := strings.ToLower(hostPart)
	id := foldGitHub(grove.RepoID{Host: host, Owner: owner, Name: name}, opt)
	prefix := host
	if user != "" {
		prefix = user + "@" + host
	}
	return Remote{ID: id, URL: prefix + ":" + owner + "/" + name + ".git"}, nil
}

func checkUser(u string) error {
	if u == "" || strings.HasPrefix(u, "-") || strings.ContainsAny(u, ":@/") {
		return grove.Errorf(grove.ErrInvalid, "repo: invalid user in URL")
	}
	return nil
}

// splitRepoPath splits "group/sub/name(.git)(/)" into owner "group/sub" and
// name "name", validating every segment.
func splitRepoPath(p string) (owner, name string, err error) {
	p = strings.TrimSuffix(p, "/")
	p = strings.TrimSuffix(p, ".git")
	segs := strings.Split(p, "/")
	if len(segs) < 2 {
		return "", "", grove.Errorf(grove.ErrInvalid, "repo: want owner/name")
	}
	for _, seg := range segs {
		if err := checkSegment(seg); err != nil {
			return "", "", err
		}
	}
	return strings.Join(segs[:len(segs)-1], "/"), segs[len(segs)-1], nil
}

// checkSegment allows what GitHub and GitLab allow in owner and repository
// names: letters, digits, '-', '_' and '.', never "." or "..", never a
// leading '-' or '.'.
func checkSegment(seg string) error {
	switch {
	case seg == "":
		return grove.Errorf(grove.ErrInvalid, "repo: empty path segment")
	case seg == "." || seg == "..":
		return grove.Errorf(grove.ErrInvalid, "repo: path segment %q not allowed", seg)
	case seg[0] == '-' || seg[0] == '.':
		return grove.Errorf(grove.ErrInvalid, "repo: path segment must not start with '-' or '.'")
	case len(seg) > 100:
		return grove.Errorf(grove.ErrInvalid, "repo: path segment longer than 100 bytes")
	}
	for _, r := range seg {
		if !isNameRune(r) {
			return grove.Errorf(grove.ErrInvalid, "repo: path segment %q has a character outside [A-Za-z0-9._-]", sanitizeForMessage(seg))
		}
	}
	return nil
}

func isNameRune(r rune) bool {
	return r < utf8.RuneSelf && (r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_' || r == '.')
}

func validHost(h string) bool {
	if h == "" || len(h) > 253 || h[0] == '-' || h[0] == '.' {
		return false
	}
	if strings.HasPrefix(h, "[") && strings.HasSuffix(h, "]") {
		h = h[1 : len(h)-1] // IPv6 literal
		for _, r := range h {
			if !(r == ':' || r == '.' || r >= '0' && r <= '9' || r >= 'a' && r <= 'f' || r >= 'A' && r <= 'F') {
				return false
			}
		}
		return h != ""
	}
	for _, r := range h {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '.') {
			return false
		}
	}
	return !strings.Contains(h, "..")
}

func validPort(p string) bool {
	if p == "" {
		return true
	}
	if len(p) > 5 {
		return false
	}
	for _, r := range p {
		if r < '0' || r > '9' {
			return false
		}
	}
	return true
}

// normHost lowercases the host and drops the scheme's default port, so
// https://GitHub.com:443/x/y and https://github.com/x/y are one remote.
func normHost(scheme, host string) string {
	host = strings.ToLower(host)
	for _, def := range []string{"https:443", "http:80", "ssh:22", "git:9418"} {
		s, port, _ := strings.Cut(def, ":")
		if scheme == s {
			host = strings.TrimSuffix(host, ":"+port)
		}
	}
	return host
}

// foldGitHub lowercases owner and name on the configured GitHub host:
// GitHub names are case-insensitive, and Owner/Repo and owner/repo must not
// become two caches. Other hosts keep their case (GitLab paths are
// case-sensitive in places).
func foldGitHub(id grove.RepoID, opt ParseOptions) grove.RepoID {
	b, err := baseURL(opt)
	if err != nil {
		return id
	}
	if id.Host == normHost(b.Scheme, b.Host) || id.Host == defaultHost {
		id.Owner = strings.ToLower(id.Owner)
		id.Name = strings.ToLower(id.Name)
	}
	return id
}

func parseLocal(p string, opt ParseOptions) (Remote, error) {
	if opt.Sources != nil {
		return parseLocalRestricted(p, opt.Sources)
	}
	if p == "" {
		return Remote{}, grove.Errorf(grove.ErrInvalid, "repo: empty path")
	}
	for _, seg := range strings.Split(strings.TrimPrefix(p, "./"), "/") {
		if seg == ".." || seg == "." {
			return Remote{}, grove.Errorf(grove.ErrInvalid, "repo: path segment %q not allowed", seg)
		}
		if strings.HasPrefix(seg, "-") {
			return Remote{}, grove.Errorf(grove.ErrInvalid, "repo: path segment must not start with '-'")
		}
	}
	abs, err := filepath.Abs(p)
	if err != nil {
		return Remote{}, grove.Errorf(grove.ErrInvalid, "repo: cannot resolve local path")
	}
	if real, err := filepath.EvalSymlinks(abs); err == nil {
		abs = real
	} else {
		return Remote{}, grove.Errorf(grove.ErrNotFound, "repo: local path %s does not exist", sanitizeForMessage(p))
	}
	if !isGitDir(abs) {
		return Remote{}, grove.Errorf(grove.ErrInvalid, "repo: local path %s is not a git repository", sanitizeForMessage(p))
	}
	return localRemote(abs), nil
}

// localRemote is the Remote of the resolved repository path abs.
func localRemote(abs string) Remote {
	name := strings.TrimSuffix(filepath.Base(abs), ".git")
	if name == "" || name == "." || name == "/" {
		name = "repo"
	}
	name = sanitizeName(name)
	sum := sha256.Sum256([]byte(abs))
	return Remote{
		ID:    grove.RepoID{Host: LocalHost, Owner: hex.EncodeToString(sum[:])[:12], Name: name},
		URL:   abs,
		Local: true,
	}
}

// isGitDir reports whether dir is a working tree (has .git) or a bare
// repository (HEAD, objects/ and refs/), without running git.
func isGitDir(dir string) bool {
	if _, err := os.Stat(filepath.Join(dir, ".git")); err == nil {
		return true
	}
	for _, f := range []string{"HEAD", "objects", "refs"} {
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
			return false
		}
	}
	return true
}

// sanitizeName maps a name onto [A-Za-z0-9._-], never starting with '.'
// or '-', so it is safe as one directory name.
func sanitizeName(s string) string {
	var b strings.Builder
	for _, r := range s {
		if isNameRune(r) {
			b.WriteRune(r)
		} else {
			b.WriteByte('_')
		}
	}
	out := strings.TrimLeft(b.String(), ".-")
	if out == "" {
		out = "_"
	}
	return out
}

// sanitizeForMessage keeps error messages short and printable.
func sanitizeForMessage(s string) string {
	if len(s) > 80 {
		s = s[:80] + "…"
	}
	return strings.Map(func(r rune) rune {
		if unicode.IsControl(r) {
			return '?'
		}
		return r
	}, s)
}

// CacheDir is where the cache of id lives under root: <root>/<owner>/<repo>
// for github.com, <root>/<host>/<owner>/<repo> otherwise (DESIGN §1). The
// bare repository is BarePath(CacheDir(...)), workspaces go under
// WorkspacesDir(CacheDir(...)). id must come from ParseRepo.
func CacheDir(root string, id grove.RepoID) string {
	parts := []string{root}
	if id.Host != defaultHost {
		parts = append(parts, id.Host)
	}
	parts = append(parts, strings.Split(id.Owner, "/")...)
	parts = append(parts, id.Name)
	return filepath.Join(parts...)
}

// BarePath is the bare repository inside a cache directory.
func BarePath(cacheDir string) string { return filepath.Join(cacheDir, ".bare") }

// WorkspacesDir is the directory holding a cache's workspaces.
func WorkspacesDir(cacheDir string) string { return filepath.Join(cacheDir, "worktrees") }

// WorkspaceDirName is the directory name of a workspace:
// <user>_<scope>_<branch>, each part mapped onto a safe alphabet and
// shortened, plus a hash of the exact inputs so that names that sanitise
// or shorten alike (agent/x and agent_x; two long user names with the same
// first 40 bytes) never share a directory. The hash is 64 bits: users pick
// scopes and branch names freely, and a directory another user's workspace
// already holds must not be within reach of a brute-forced collision.
func WorkspaceDirName(user, scope, branch string) string {
	short := func(s string) string {
		s = sanitizeName(s)
		if len(s) > 40 {
			s = s[:40]
		}
		return s
	}
	sum := sha256.Sum256([]byte(user + "\x00" + scope + "\x00" + branch))
	return short(user) + "_" + short(scope) + "_" + short(branch) + "-" + hex.EncodeToString(sum[:8])
}
