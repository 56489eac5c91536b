// Package daytona is a runtime driver over Daytona sandboxes, driven
// through Daytona's own generated Go clients for the control plane
// (api-client-go) and the in-sandbox toolbox (toolbox-api-client-go).
//
// # Layout
//
// One Daytona sandbox serves one (user, project) pair, found by its labels
// managed-by=grove, grove-user=<user>, grove-project=<project> and created
// from Config.Snapshot when none exists. Every workspace of the pair lives
// in that sandbox, in its own directory.
//
// # Work directory contract
//
// Workspaces here have no host path. driver.Spec.WorkDir, when set, is an
// absolute path inside the sandbox; when empty the driver uses
// Config.WorkspaceRoot/<workspace id>. Create makes that directory through
// the toolbox files API. Nothing on the Grove host is visible to the
// sandbox: Spec.ReadOnlyPaths and Spec.ProtectedPaths name host paths and
// are refused when set, since this driver cannot honour them. Git data
// travels to and from the sandbox as files through the toolbox files API
// (see Files); credentials never enter a sandbox.
//
// # Exec
//
// Each Exec opens a toolbox session, runs one command in it asynchronously
// (runAsync), polls the command until it has an exit code, reads stdout
// and stderr separately from the session's logs and deletes the session,
// which ends its processes. The command runs under env -i with Grove's
// clean environment (HOME is the sandbox user's home, asked of the
// toolbox) and under coreutils timeout (its own process group, killed
// with SIGKILL two seconds after SIGTERM); the driver also keeps a
// deadline of its own in case the sandbox never answers. A timed-out
// command gives exit 124, TimedOut and the output read so far. Each
// stream is capped inside the sandbox (head -c then wc -c), so neither
// the toolbox's logs nor the driver hold more than the cap; the omitted
// counts come back on a status line the driver strips from stderr. A Dir
// that is missing, not a directory, or leaves the workspace through a
// symlink is reported by the wrapper and mapped to ErrNotFound,
// ErrInvalid, ErrPathOutside. Before every command the sandbox's state is
// read and a stopped, archived or paused sandbox is started again.
//
// Request environment values travel inside the command text sent to the
// toolbox (shell-quoted); stdin travels as a file uploaded through the
// files API into a per-exec directory under /tmp, removed afterwards.
//
// # Network and lifecycle
//
// Sandboxes are created with the configured network (Config.Network):
// networkBlockAll by default, a networkAllowList, or Daytona's default;
// Capabilities reports that one mode and Create refuses others. An
// adopted sandbox with other settings is updated through Daytona's
// network-settings endpoint before first use. When Destroy removes the
// last workspace runtime of a sandbox, the sandbox is stopped (kept) once
// idle for Config.IdleStopDelay. A sandbox gone under Grove (404,
// destroyed) is looked up again by its labels, or created, once per
// request (network.go, lifecycle.go).
//
// # Errors and retries
//
// All HTTP goes through one transport that adds the authentication and
// SDK headers and retries 429 and gateway errors with backoff (mapErr in
// errors.go holds the status → Grove kind mapping).
package daytona

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net/http"
	"path"
	"strings"
	"sync"
	"time"

	apiclient "github.com/daytonaio/daytona/libs/api-client-go"
	toolbox "github.com/daytonaio/daytona/libs/toolbox-api-client-go"

	"github.com/grove-dev/grove"
	"github.com/grove-dev/grove/driver"
)

// SDKVersion is sent as X-Daytona-SDK-Version: the toolbox splits session
// output into stdout and stderr only for SDK versions of at least 0.167.0.
const SDKVersion = "0.190.0"

// Label keys on Grove's sandboxes.
const (
	LabelManagedBy = "managed-by"
	LabelUser      = "grove-user"
	LabelProject   = "grove-project"
	managedBy      = "grove"
)

// Config configures the driver. Zero values take the documented defaults.
type Config struct {
	APIURL   string // control plane base URL, e.g. https://…/api (DAYTONA_API_URL)
	APIKey   string // DAYTONA_API_KEY
	Target   string // region (DAYTONA_TARGET); empty: the organisation's default
	Snapshot string // snapshot sandboxes are created from (DAYTONA_SNAPSHOT)
	// WorkspaceRoot is the directory inside a sandbox under which
	// workspaces live (DAYTONA_WORKSPACE_ROOT); default /home/daytona/grove.
	WorkspaceRoot string
	// AutoStopMinutes stops an idle sandbox (0 disables; default 15).
	// AutoArchiveMinutes archives a stopped one (default 7 days).
	AutoStopMinutes    int
	AutoArchiveMinutes int
	AllowMutating      bool
	HTTPClient         *http.Client // base transport; nil: http.DefaultTransport
	// Retries is the number of attempts for retryable answers (default 5);
	// RetryBackoff the first wait (default 200ms).
	Retries      int
	RetryBackoff time.Duration
	// PollInterval is the longest wait between polls of a running command
	// (default 250ms; polling starts faster).
	PollInterval time.Duration
	// StartTimeout bounds waiting for a sandbox to start (default 3 min).
	StartTimeout time.Duration
	// Network is the network of the sandboxes (DAYTONA_NETWORK):
	// driver.NetworkNone sends Daytona's networkBlockAll=true;
	// driver.NetworkLimited sends networkBlockAll=false and
	// networkAllowList; driver.NetworkDefault sends neither (Daytona's
	// default for the organisation). Empty: NetworkLimited when
	// NetworkAllowList is set, else NetworkNone.
	Network driver.NetworkMode
	// NetworkAllowList is the allow-list (DAYTONA_NETWORK_ALLOW_LIST):
	// IPv4 CIDR blocks, at most MaxAllowList.
	NetworkAllowList []string
	// IdleStopDelay: when Destroy removes the last workspace runtime of a
	// sandbox, the sandbox is stopped (never deleted) once no request has
	// used it for this long (default 10s: the engine still removes the
	// working tree through the sandbox after Destroy). Negative: never;
	// Daytona's auto-stop does it.
	IdleStopDelay time.Duration
}

// Driver is the daytona runtime driver.
type Driver struct {
	cfg   Config
	http  *http.Client
	api   *apiclient.APIClient
	mu    sync.Mutex
	boxes map[string]*box            // by user+"\x00"+project
	rts   map[string]*driver.Runtime // by workspace id
}

// box is one sandbox as this driver knows it.
type box struct {
	id      string
	tb      *toolbox.APIClient
	tbURL   string
	startMu sync.Mutex
	homeMu  sync.Mutex
	home    string // the sandbox user's home directory, from the toolbox
	// netStale: the sandbox was adopted with network settings other than
	// the configured ones (guarded by startMu).
	netStale bool
	// Guarded by Driver.mu: requests under way, the last one's end, and
	// the pending stop after the last workspace was destroyed.
	busy      int
	lastUse   time.Time
	idle      bool
	idleTimer *time.Timer
}

// New returns a driver talking to cfg.APIURL.
func New(cfg Config) (*Driver, error) {
	if cfg.APIURL == "" || cfg.APIKey == "" {
		return nil, grove.Errorf(grove.ErrInvalid, "daytona: API URL and API key are required")
	}
	if cfg.WorkspaceRoot == "" {
		cfg.WorkspaceRoot = "/home/daytona/grove"
	}
	if !path.IsAbs(cfg.WorkspaceRoot) {
		return nil, grove.Errorf(grove.ErrInvalid, "daytona: workspace root %q is not absolute", cfg.WorkspaceRoot)
	}
	if cfg.AutoStopMinutes == 0 {
		cfg.AutoStopMinutes = 15
	}
	if cfg.AutoArchiveMinutes == 0 {
		cfg.AutoArchiveMinutes = 7 * 24 * 60
	}
	if cfg.Retries <= 0 {
		cfg.Retries = 5
	}
	if cfg.RetryBackoff <= 0 {
		cfg.RetryBackoff = 200 * time.Millisecond
	}
	if cfg.PollInterval <= 0 {
		cfg.PollInterval = 250 * time.Millisecond
	}
	if cfg.StartTimeout <= 0 {
		cfg.StartTimeout = 3 * time.Minute
	}
	if cfg.IdleStopDelay == 0 {
		cfg.IdleStopDelay = 10 * time.Second
	}
	if err := resolveNetwork(&cfg); err != nil {
		return nil, err
	}
	base := http.DefaultTransport
	if cfg.HTTPClient != nil && cfg.HTTPClient.Transport != nil {
		base = cfg.HTTPClient.Transport
	}
	hc := &http.Client{Transport: &retryTransport{
		base: base, attempts: cfg.Retries, backoff: cfg.RetryBackoff, maxWait: 5 * time.Second,
		header: map[string]string{
			"Authorization":         "Bearer " + cfg.APIKey,
			"X-Daytona-Source":      "grove",
			"X-Daytona-SDK-Version": SDKVersion,
		},
	}}
	ac := apiclient.NewConfiguration()
	ac.HTTPClient = hc
	ac.Servers = apiclient.ServerConfigurations{{URL: strings.TrimRight(cfg.APIURL, "/")}}
	return &Driver{cfg: cfg, http: hc, api: apiclient.NewAPIClient(ac),
		boxes: map[string]*box{}, rts: map[string]*driver.Runtime{}}, nil
}

// Kind implements driver.Driver.
func (d *Driver) Kind() string { return "daytona" }

// Capabilities implements driver.Driver. Sandboxes are isolated from the
// Grove host; limits and confinement between workspaces of one sandbox
// are not enforced by this driver yet. The network mode is the one
// configured (Config.Network), since it is a property of the sandbox,
// which all workspaces of a (user, project) share: block-all is reported
// as driver.NetworkNone, an allow-list as driver.NetworkLimited.
func (d *Driver) Capabilities() driver.Capabilities {
	return driver.Capabilities{
		Isolated:      false, // workspaces of one (user, project) share a sandbox user
		AllowMutating: d.cfg.AllowMutating,
		Network:       []driver.NetworkMode{d.cfg.Network},
		Persistent:    true,
		Streaming:     true,
	}
}

func boxKey(user, project string) string { return user + "\x00" + project }

// Create implements driver.Driver.
func (d *Driver) Create(ctx context.Context, spec driver.Spec) (*driver.Runtime, error) {
	if spec.WorkspaceID == "" || spec.User == "" || spec.Project == "" {
		return nil, grove.Errorf(grove.ErrInvalid, "daytona: workspace id, user and project are required")
	}
	if strings.ContainsAny(spec.WorkspaceID, "/\x00") || spec.WorkspaceID == "." || spec.WorkspaceID == ".." {
		return nil, grove.Errorf(grove.ErrInvalid, "daytona: workspace id %q", spec.WorkspaceID)
	}
	if len(spec.ReadOnlyPaths) > 0 || len(spec.ProtectedPaths) > 0 {
		return nil, grove.Errorf(grove.ErrNotSupported, "daytona: host paths cannot be shown to a remote sandbox")
	}
	if spec.Network != "" && spec.Network != d.cfg.Network {
		return nil, grove.Errorf(grove.ErrNotSupported, "daytona: network mode %q: sandboxes are configured for %q (DAYTONA_NETWORK)", spec.Network, d.cfg.Network)
	}
	d.mu.Lock()
	if rt, ok := d.rts[spec.WorkspaceID]; ok {
		d.mu.Unlock()
		cp := *rt
		return &cp, nil
	}
	d.mu.Unlock()
	if spec.WorkDir == "" {
		spec.WorkDir = path.Join(d.cfg.WorkspaceRoot, spec.WorkspaceID)
	}
	if !path.IsAbs(spec.WorkDir) || path.Clean(spec.WorkDir) != spec.WorkDir {
		return nil, grove.Errorf(grove.ErrInvalid, "daytona: work dir %q must be a clean absolute path inside the sandbox", spec.WorkDir)
	}
	b, err := d.sandbox(ctx, spec.User, spec.Project)
	if err != nil {
		return nil, err
	}
	rt := &driver.Runtime{WorkspaceID: spec.WorkspaceID, Kind: d.Kind(), State: driver.StateRunning, Spec: spec}
	if !d.isControl(rt) {
		d.mu.Lock()
		b.idle = false // a workspace again: no stop pending
		d.mu.Unlock()
	}
	b, release, err := d.use(ctx, rt, b)
	if err != nil {
		return nil, err
	}
	defer release()
	if _, err := d.home(ctx, b); err != nil {
		return nil, err
	}
	resp, err := b.tb.FileSystemAPI.CreateFolder(ctx).Path(spec.WorkDir).Mode("0755").Execute()
	if err := mapErr(ctx, "create folder", resp, err); err != nil {
		return nil, err
	}
	rt.BackendID = b.id
	d.mu.Lock()
	defer d.mu.Unlock()
	if old, ok := d.rts[spec.WorkspaceID]; ok {
		rt = old
	} else {
		d.rts[spec.WorkspaceID] = rt
	}
	if !d.isControl(rt) {
		b.idle = false
	}
	cp := *rt
	return &cp, nil
}

// sandbox finds or creates the sandbox of (user, project).
func (d *Driver) sandbox(ctx context.Context, user, project string) (*box, error) {
	return d.sandboxReplacing(ctx, user, project, nil)
}

// sandboxReplacing is sandbox, looking the sandbox up again when the
// remembered one is stale (gone under Grove).
func (d *Driver) sandboxReplacing(ctx context.Context, user, project string, stale *box) (*box, error) {
	key := boxKey(user, project)
	d.mu.Lock()
	b, ok := d.boxes[key]
	d.mu.Unlock()
	if ok && b != stale {
		return b, nil
	}
	labels := map[string]string{LabelManagedBy: managedBy, LabelUser: user, LabelProject: project}
	items, err := d.listSandboxes(ctx, labels, nil)
	if err != nil {
		return nil, err
	}
	var sb *apiclient.Sandbox
	var resp *http.Response
	netStale := false
	for _, it := range items {
		if it.State != nil && (*it.State == apiclient.SANDBOXSTATE_DESTROYED || *it.State == apiclient.SANDBOXSTATE_DESTROYING) {
			continue
		}
		sb, resp, err = d.api.SandboxAPI.GetSandbox(ctx, it.Id).Execute()
		if err := mapErr(ctx, "get sandbox", resp, err); err != nil {
			return nil, err
		}
		netStale = !d.networkMatches(sb.GetNetworkBlockAll(), sb.GetNetworkAllowList())
		break
	}
	if sb == nil {
		req := apiclient.NewCreateSandbox()
		req.SetLabels(labels)
		if d.cfg.Snapshot != "" {
			req.SetSnapshot(d.cfg.Snapshot)
		}
		if d.cfg.Target != "" {
			req.SetTarget(d.cfg.Target)
		}
		req.SetAutoStopInterval(int32(d.cfg.AutoStopMinutes))
		req.SetAutoArchiveInterval(int32(d.cfg.AutoArchiveMinutes))
		d.applyNetwork(req)
		sb, resp, err = d.api.SandboxAPI.CreateSandbox(ctx).CreateSandbox(*req).Execute()
		if err := mapErr(ctx, "create sandbox", resp, err); err != nil {
			return nil, err
		}
	}
	b = d.newBox(sb)
	b.netStale = netStale
	d.mu.Lock()
	defer d.mu.Unlock()
	if old, ok := d.boxes[key]; ok && old != stale {
		return old, nil
	}
	d.boxes[key] = b
	return b, nil
}

// newBox makes the toolbox client of a sandbox: its base URL is the
// toolboxProxyUrl the control plane answered, plus the sandbox id.
func (d *Driver) newBox(sb *apiclient.Sandbox) *box {
	u := strings.TrimRight(sb.ToolboxProxyUrl, "/") + "/" + sb.Id
	tc := toolbox.NewConfiguration()
	tc.HTTPClient = d.http
	tc.Servers = toolbox.ServerConfigurations{{URL: u}}
	return &box{id: sb.Id, tb: toolbox.NewAPIClient(tc), tbURL: u}
}

// ensureStarted reads the sandbox's state and starts it when it is not
// running (stopped under Grove's feet by auto-stop, archived, paused),
// polling until it is started.
func (d *Driver) ensureStarted(ctx context.Context, b *box) error {
	b.startMu.Lock()
	defer b.startMu.Unlock()
	ctx, cancel := context.WithTimeout(ctx, d.cfg.StartTimeout)
	defer cancel()
	started := false
	wait := 100 * time.Millisecond
	for {
		sb, resp, err := d.api.SandboxAPI.GetSandbox(ctx, b.id).Execute()
		if err := mapErr(ctx, "get sandbox", resp, err); err != nil {
			return err
		}
		st := sb.GetState()
		switch st {
		case apiclient.SANDBOXSTATE_STARTED:
			return nil
		case apiclient.SANDBOXSTATE_DESTROYED, apiclient.SANDBOXSTATE_DESTROYING:
			return grove.Errorf(grove.ErrNotFound, "daytona: sandbox %s is %s", b.id, st)
		case apiclient.SANDBOXSTATE_ERROR, apiclient.SANDBOXSTATE_BUILD_FAILED:
			return grove.Errorf(grove.ErrUnavailable, "daytona: sandbox %s is %s: %s", b.id, st, sb.GetErrorReason())
		case apiclient.SANDBOXSTATE_STOPPED, apiclient.SANDBOXSTATE_ARCHIVED, apiclient.SANDBOXSTATE_PAUSED:
			if !started {
				_, resp, err := d.api.SandboxAPI.StartSandbox(ctx, b.id).Execute()
				if err := mapErr(ctx, "start sandbox", resp, err); err != nil {
					return err
				}
				started = true
				continue
			}
		}
		select {
		case <-ctx.Done():
			return grove.Errorf(grove.ErrUnavailable, "daytona: sandbox %s did not start: %v (state %s)", b.id, ctx.Err(), st)
		case <-time.After(wait):
		}
		if wait < time.Second {
			wait *= 2
		}
	}
}

// home returns the sandbox user's home directory (HOME of commands), asked
// of the toolbox once per sandbox.
func (d *Driver) home(ctx context.Context, b *box) (string, error) {
	b.homeMu.Lock()
	defer b.homeMu.Unlock()
	if b.home != "" {
		return b.home, nil
	}
	r, resp, err := b.tb.InfoAPI.GetUserHomeDir(ctx).Execute()
	if err := mapErr(ctx, "user home dir", resp, err); err != nil {
		return "", err
	}
	if r.GetDir() == "" || !path.IsAbs(r.GetDir()) {
		return "", errorf(grove.ErrUnavailable, "sandbox %s reports home directory %q", b.id, r.GetDir())
	}
	b.home = r.GetDir()
	return b.home, nil
}

func (d *Driver) runtime(workspaceID string) (*driver.Runtime, *box, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	rt, ok := d.rts[workspaceID]
	if !ok {
		return nil, nil, grove.Errorf(grove.ErrNotFound, "daytona: runtime %q", workspaceID)
	}
	b := d.boxes[boxKey(rt.Spec.User, rt.Spec.Project)]
	if b == nil {
		return nil, nil, grove.Errorf(grove.ErrNotFound, "daytona: sandbox of runtime %q", workspaceID)
	}
	return rt, b, nil
}

// Get implements driver.Driver. State is read from the control plane.
func (d *Driver) Get(ctx context.Context, workspaceID string) (*driver.Runtime, error) {
	rt, b, err := d.runtime(workspaceID)
	if err != nil {
		return nil, err
	}
	sb, resp, err := d.api.SandboxAPI.GetSandbox(ctx, b.id).Execute()
	if err := mapErr(ctx, "get sandbox", resp, err); err != nil {
		return nil, err
	}
	cp := *rt
	cp.State = driver.StateStopped
	if sb.GetState() == apiclient.SANDBOXSTATE_STARTED {
		cp.State = driver.StateRunning
	}
	return &cp, nil
}

// Start implements driver.Driver.
func (d *Driver) Start(ctx context.Context, workspaceID string) error {
	_, _, release, err := d.runtimeFor(ctx, workspaceID)
	if err != nil {
		return err
	}
	release()
	return nil
}

// Stop implements driver.Driver. It stops the whole sandbox, which all
// workspaces of the (user, project) pair share; the next Exec of any of
// them starts it again. The sandbox's filesystem is kept.
func (d *Driver) Stop(ctx context.Context, workspaceID string) error {
	_, b, err := d.runtime(workspaceID)
	if err != nil {
		return err
	}
	_, resp, err := d.api.SandboxAPI.StopSandbox(ctx, b.id).Execute()
	if resp != nil && resp.StatusCode == http.StatusBadRequest {
		return nil // already stopped
	}
	return mapErr(ctx, "stop sandbox", resp, err)
}

// Destroy implements driver.Driver. It forgets the workspace's runtime;
// the workspace's directory stays in the sandbox. The sandbox is deleted
// by DeleteSandbox, not here, since other workspaces may live in it.
// When this was the last workspace runtime of the sandbox the driver
// knows, the sandbox is stopped (kept) once idle for IdleStopDelay.
func (d *Driver) Destroy(ctx context.Context, workspaceID string) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	rt, ok := d.rts[workspaceID]
	delete(d.rts, workspaceID)
	if !ok || d.isControl(rt) || d.cfg.IdleStopDelay < 0 {
		return nil
	}
	key := boxKey(rt.Spec.User, rt.Spec.Project)
	b := d.boxes[key]
	if b == nil {
		return nil
	}
	for _, o := range d.rts {
		if boxKey(o.Spec.User, o.Spec.Project) == key && !d.isControl(o) {
			return nil
		}
	}
	b.idle = true
	if b.idleTimer == nil {
		b.idleTimer = time.AfterFunc(d.cfg.IdleStopDelay, func() { d.idleStop(key, b) })
	} else {
		b.idleTimer.Reset(d.cfg.IdleStopDelay)
	}
	return nil
}

// DeleteSandbox deletes the sandbox of (user, project) and everything in
// it. Deleting a sandbox that does not exist is not an error.
func (d *Driver) DeleteSandbox(ctx context.Context, user, project string) error {
	b, err := d.sandbox(ctx, user, project)
	if err != nil {
		return err
	}
	_, resp, err := d.api.SandboxAPI.DeleteSandbox(ctx, b.id).Execute()
	d.mu.Lock()
	delete(d.boxes, boxKey(user, project))
	for id, rt := range d.rts {
		if rt.Spec.User == user && rt.Spec.Project == project {
			delete(d.rts, id)
		}
	}
	d.mu.Unlock()
	if resp != nil && resp.StatusCode == http.StatusNotFound {
		return nil
	}
	return mapErr(ctx, "delete sandbox", resp, err)
}

func randomID(prefix string) string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return prefix + hex.EncodeToString(b[:])
}

// shellQuote quotes s for a POSIX shell.
func shellQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

func errorf(kind error, format string, args ...any) error {
	return grove.Errorf(kind, "daytona: %s", fmt.Sprintf(format, args...))
}
