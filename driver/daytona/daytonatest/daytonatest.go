// Package daytonatest is a fake Daytona for tests: a control plane and a
// toolbox, both httptest servers in the test process, backed by real
// Docker containers made from Grove's agent image so commands really run.
//
// Every request and response is validated against the OpenAPI documents
// shipped in Daytona's generated client modules (api/openapi.yaml of
// api-client-go and toolbox-api-client-go at the version go.mod pins);
// a violation fails the test.
//
// Covered (control plane): POST /sandbox, GET /sandbox (labels and states filters, cursor pages),
// GET /sandbox/{id}, POST /sandbox/{id}/start and /stop, DELETE
// /sandbox/{id}, POST /sandbox/{id}/network-settings. Network: a
// networkBlockAll sandbox's container is on Docker's none network; a
// networkAllowList sandbox's container is routed to the listed blocks
// only (allowlist.go); others are on the default bridge. Covered (toolbox, at {toolboxProxyUrl}/{sandboxId}/...):
// POST /process/execute (merged output, {exitCode, result}, 408 past its
// timeout), sessions (create, exec sync and runAsync, get command, logs
// split into stdout and stderr as for SDK versions ≥ 0.167.0, delete,
// which kills the session's processes), files (multipart upload,
// download, info, folder). A session is one long-lived shell in the
// container, so cd and export persist between its commands, as in
// Daytona's daemon.
//
// Simulations: FailNext makes the next n requests to a path answer a
// status (429 with Retry-After, 5xx); StopBehind stops a sandbox's
// container as auto-stop would; ArchiveBehind archives it, DeleteBehind
// deletes it, SetNetworkBehind changes its network settings;
// ExecuteTimeoutCap bounds /process/execute.
package daytonatest

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/mount"
	"github.com/docker/docker/client"
)

const faultHeader = "X-Daytonatest-Fault"

// sandboxUser is the agent image's user; Daytona's own default is "daytona".
const sandboxUser = "agent"

// logMount is where a sandbox's session logs live inside its container; a
// host directory of the test is mounted there so the fake reads them
// without an exec.
const logMount = "/var/lib/daytonatest"

// Options configure a fake.
type Options struct {
	APIKey string // required bearer token; default "test-key"
	Image  string // container image; required (Grove's agent image)
	// MinSDKVersion is the least X-Daytona-SDK-Version that gets split
	// stdout/stderr from sessions (default 0.167.0); older or missing
	// headers get merged output, as Daytona's daemon does.
	MinSDKVersion string
	// HostMounts are host directories bind-mounted at the same path in
	// every sandbox: only for running driver/drivertest, whose cases
	// inspect the workspace from the host. Daytona has no such thing.
	HostMounts []string
	// Report receives each OpenAPI violation; default t.Errorf.
	Report func(string)
	// PageSize, when set, caps every page of GET /sandbox below the
	// request's limit, so tests see listings that need several pages.
	PageSize int
}

// Server is a fake Daytona.
type Server struct {
	t       testing.TB
	opts    Options
	cli     *client.Client
	api, tb *httptest.Server
	tbURL   string // the toolbox's base URL, fixed before either server starts
	// URL is the control plane's base URL (DAYTONA_API_URL).
	URL string

	mu        sync.Mutex
	seq       int
	sandboxes map[string]*sandbox
	faults    []*fault
	requests  map[string]int // "METHOD path-pattern" → count
}

type fault struct {
	method, prefix string
	status, n      int
}

type sandbox struct {
	id, name  string
	labels    map[string]string
	state     string
	container string
	logDir    string // host side of logMount
	created   time.Time
	autoStop  int32
	autoArch  int32
	// blockAll and allowList are the sandbox's network settings. The
	// container of a block-all sandbox is on Docker's "none" network (no
	// interface but loopback); the container of an allow-list sandbox is
	// on the default bridge with routes to the listed blocks only
	// (restrictRoutes).
	blockAll  bool
	allowList string
	mu        sync.Mutex
	sessions  map[string]*session
}

// New starts a fake on cli. Containers it made are removed at cleanup.
func New(t testing.TB, cli *client.Client, opts Options) *Server {
	t.Helper()
	if opts.APIKey == "" {
		opts.APIKey = "test-key"
	}
	if opts.MinSDKVersion == "" {
		opts.MinSDKVersion = "0.167.0"
	}
	if opts.Image == "" {
		t.Fatal("daytonatest: Options.Image is required")
	}
	apiDoc, tbDoc, err := loadSpecs()
	if err != nil {
		t.Fatal(err)
	}
	s := &Server{t: t, opts: opts, cli: cli, sandboxes: map[string]*sandbox{}, requests: map[string]int{}}
	report := opts.Report
	if report == nil {
		report = func(msg string) { t.Errorf("daytonatest: %s", msg) }
	}

	// Each server's handler needs its own URL (the validators match
	// requests against it), and the control plane answers with the
	// toolbox's: both URLs are taken from the listeners and the handlers
	// set before either server starts — httptest writes a server's URL in
	// Start, which would race with requests the other already serves.
	s.api = httptest.NewUnstartedServer(nil)
	s.URL = "http://" + s.api.Listener.Addr().String()
	s.tb = httptest.NewUnstartedServer(nil)
	s.tbURL = "http://" + s.tb.Listener.Addr().String()
	av, err := newValidator("control plane", apiDoc, s.URL, report)
	if err != nil {
		t.Fatal(err)
	}
	s.api.Config.Handler = s.front(av.wrap(s.apiMux()), false)
	tv, err := newValidator("toolbox", tbDoc, s.tbURL, report)
	if err != nil {
		t.Fatal(err)
	}
	s.tb.Config.Handler = s.front(tv.wrap(s.toolboxMux()), true)
	s.tb.Start()
	s.api.Start()

	t.Cleanup(func() {
		s.api.Close()
		s.tb.Close()
		s.mu.Lock()
		boxes := make([]*sandbox, 0, len(s.sandboxes))
		for _, b := range s.sandboxes {
			boxes = append(boxes, b)
		}
		s.mu.Unlock()
		for _, b := range boxes {
			s.removeContainer(b)
		}
	})
	return s
}

// FailNext makes the next n requests whose path (after the toolbox's
// sandbox id) starts with prefix and whose method matches (empty: any)
// answer status: 429 carries Retry-After: 0.
func (s *Server) FailNext(method, prefix string, status, n int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.faults = append(s.faults, &fault{method: method, prefix: prefix, status: status, n: n})
}

// ClearFaults drops faults not yet delivered.
func (s *Server) ClearFaults() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.faults = nil
}

// Requests returns how many requests matched method and path prefix so
// far, faulted ones included.
func (s *Server) Requests(method, prefix string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for k, c := range s.requests {
		m, p, _ := strings.Cut(k, " ")
		if (method == "" || m == method) && strings.HasPrefix(p, prefix) {
			n += c
		}
	}
	return n
}

// front authenticates, counts, injects faults and, for the toolbox,
// resolves the sandbox from the first path element.
func (s *Server) front(next http.Handler, toolbox bool) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer "+s.opts.APIKey {
			writeErr(w, r, http.StatusUnauthorized, "Unauthorized", "")
			return
		}
		if toolbox {
			id, rest, _ := strings.Cut(strings.TrimPrefix(r.URL.Path, "/"), "/")
			s.mu.Lock()
			b := s.sandboxes[id]
			s.mu.Unlock()
			if b == nil {
				writeErr(w, r, http.StatusNotFound, "sandbox not found", "NOT_FOUND")
				return
			}
			b.mu.Lock()
			st := b.state
			b.mu.Unlock()
			if st != "started" {
				// Daytona's proxy refuses toolbox calls to a sandbox that is not running.
				w.Header().Set(faultHeader, "1")
				writeErr(w, r, http.StatusBadRequest, "Sandbox is not started", "BAD_REQUEST")
				return
			}
			r.URL.Path = "/" + rest
			r = r.WithContext(context.WithValue(r.Context(), boxKey{}, b))
		}
		s.mu.Lock()
		s.requests[r.Method+" "+r.URL.Path]++
		var hit *fault
		for _, f := range s.faults {
			if f.n > 0 && (f.method == "" || f.method == r.Method) && strings.HasPrefix(r.URL.Path, f.prefix) {
				f.n--
				hit = f
				break
			}
		}
		s.mu.Unlock()
		if hit != nil {
			if hit.status == http.StatusTooManyRequests {
				w.Header().Set("Retry-After", "0")
			}
			writeErr(w, r, hit.status, http.StatusText(hit.status), "")
			return
		}
		next.ServeHTTP(w, r)
	})
}

type boxKey struct{}

func boxOf(r *http.Request) *sandbox { return r.Context().Value(boxKey{}).(*sandbox) }

// writeErr answers Daytona's error shape (the toolbox's ErrorResponse
// carries the API's fields plus code and source).
func writeErr(w http.ResponseWriter, r *http.Request, status int, msg, code string) {
	body := map[string]any{"statusCode": status, "message": msg, "path": r.URL.Path,
		"timestamp": time.Now().UTC().Format(time.RFC3339), "error": http.StatusText(status)}
	if code != "" {
		body["code"] = code
		body["source"] = "DAYTONA_DAEMON"
		body["method"] = r.Method
		delete(body, "error")
	}
	writeJSON(w, status, body)
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

func readJSON(r *http.Request, v any) error {
	b, err := io.ReadAll(r.Body)
	if err != nil {
		return err
	}
	return json.Unmarshal(b, v)
}

// --- control plane ---

func (s *Server) apiMux() http.Handler {
	m := http.NewServeMux()
	m.HandleFunc("POST /sandbox", s.create)
	m.HandleFunc("GET /sandbox", s.list)
	m.HandleFunc("GET /sandbox/{id}", func(w http.ResponseWriter, r *http.Request) {
		if b := s.find(w, r); b != nil {
			writeJSON(w, 200, s.dto(b, true))
		}
	})
	m.HandleFunc("POST /sandbox/{id}/start", s.start)
	m.HandleFunc("POST /sandbox/{id}/stop", s.stop)
	m.HandleFunc("DELETE /sandbox/{id}", s.delete)
	m.HandleFunc("POST /sandbox/{id}/network-settings", s.networkSettings)
	return m
}

func (s *Server) find(w http.ResponseWriter, r *http.Request) *sandbox {
	s.mu.Lock()
	defer s.mu.Unlock()
	id := r.PathValue("id")
	if b := s.sandboxes[id]; b != nil {
		return b
	}
	for _, b := range s.sandboxes {
		if b.name == id {
			return b
		}
	}
	writeErr(w, r, http.StatusNotFound, fmt.Sprintf("Sandbox with ID or name %s not found", id), "")
	return nil
}

func (s *Server) dto(b *sandbox, full bool) map[string]any {
	b.mu.Lock()
	defer b.mu.Unlock()
	d := map[string]any{
		"id": b.id, "organizationId": "org-test", "name": b.name, "user": sandboxUser,
		"labels": b.labels, "public": false, "target": "local",
		"cpu": 1, "gpu": 0, "memory": 1, "disk": 3, "state": b.state,
		"autoStopInterval": b.autoStop, "autoArchiveInterval": b.autoArch,
		"toolboxProxyUrl": s.tbURL, "createdAt": b.created.UTC().Format(time.RFC3339),
		"updatedAt": time.Now().UTC().Format(time.RFC3339),
	}
	if full {
		d["env"] = map[string]string{}
		d["networkBlockAll"] = b.blockAll
		if b.allowList != "" {
			d["networkAllowList"] = b.allowList
		}
	}
	return d
}

func (s *Server) create(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Name                string            `json:"name"`
		Labels              map[string]string `json:"labels"`
		Snapshot            string            `json:"snapshot"`
		CPU                 int               `json:"cpu"`
		Memory              int               `json:"memory"`
		AutoStopInterval    *int32            `json:"autoStopInterval"`
		AutoArchiveInterval *int32            `json:"autoArchiveInterval"`
		NetworkBlockAll     *bool             `json:"networkBlockAll"`
		NetworkAllowList    *string           `json:"networkAllowList"`
	}
	if err := readJSON(r, &req); err != nil {
		writeErr(w, r, 400, err.Error(), "")
		return
	}
	if req.Snapshot != "" && (req.CPU != 0 || req.Memory != 0) {
		writeErr(w, r, 400, "Cannot specify Sandbox resources when using a snapshot", "")
		return
	}
	s.mu.Lock()
	s.seq++
	id := fmt.Sprintf("sbx%04d%d", s.seq, time.Now().UnixNano()%100000)
	s.mu.Unlock()
	b := &sandbox{id: id, name: req.Name, labels: req.Labels, state: "creating", created: time.Now(),
		autoStop: 15, autoArch: 10080, sessions: map[string]*session{}}
	if b.name == "" {
		b.name = id
	}
	if b.labels == nil {
		b.labels = map[string]string{}
	}
	if req.AutoStopInterval != nil {
		b.autoStop = *req.AutoStopInterval
	}
	if req.AutoArchiveInterval != nil {
		b.autoArch = *req.AutoArchiveInterval
	}
	if req.NetworkBlockAll != nil {
		b.blockAll = *req.NetworkBlockAll
	}
	if req.NetworkAllowList != nil {
		if err := checkAllowList(*req.NetworkAllowList); err != nil {
			writeErr(w, r, 400, err.Error(), "")
			return
		}
		b.allowList = *req.NetworkAllowList
	}
	if err := s.makeContainer(r.Context(), b); err != nil {
		writeErr(w, r, 500, err.Error(), "")
		return
	}
	if err := s.restrictRoutes(r.Context(), b); err != nil {
		s.removeContainer(b)
		writeErr(w, r, 500, err.Error(), "")
		return
	}
	b.state = "started"
	s.mu.Lock()
	s.sandboxes[id] = b
	s.mu.Unlock()
	writeJSON(w, 200, s.dto(b, true))
}

// list answers GET /sandbox: the labels and states filters, oldest first,
// one page at a time (limit, default 100, capped by Options.PageSize) with
// an opaque cursor to the next.
func (s *Server) list(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	want := map[string]string{}
	if l := q.Get("labels"); l != "" {
		if err := json.Unmarshal([]byte(l), &want); err != nil {
			writeErr(w, r, 400, "labels must be a JSON object", "")
			return
		}
	}
	states := q["states"]
	page := 100
	if l := q.Get("limit"); l != "" {
		f, err := strconv.ParseFloat(l, 64)
		if err != nil || f < 1 || f > 200 {
			writeErr(w, r, 400, "limit must be a number from 1 to 200", "")
			return
		}
		page = int(f)
	}
	if s.opts.PageSize > 0 {
		page = min(page, s.opts.PageSize)
	}
	off := 0
	if c := q.Get("cursor"); c != "" {
		n, err := strconv.Atoi(strings.TrimPrefix(c, "o"))
		if err != nil || !strings.HasPrefix(c, "o") || n < 0 {
			writeErr(w, r, 400, "invalid cursor", "")
			return
		}
		off = n
	}
	type entry struct {
		b       *sandbox
		created time.Time
	}
	s.mu.Lock()
	var match []entry
	for _, b := range s.sandboxes {
		b.mu.Lock()
		ok := len(states) == 0 || slices.Contains(states, b.state)
		for k, v := range want {
			if b.labels[k] != v {
				ok = false
			}
		}
		created := b.created
		b.mu.Unlock()
		if ok {
			match = append(match, entry{b, created})
		}
	}
	s.mu.Unlock()
	sort.Slice(match, func(i, j int) bool {
		if !match[i].created.Equal(match[j].created) {
			return match[i].created.Before(match[j].created)
		}
		return match[i].b.id < match[j].b.id
	})
	items := []map[string]any{}
	for _, e := range match[min(off, len(match)):min(off+page, len(match))] {
		items = append(items, s.dto(e.b, false))
	}
	var next any
	if off+page < len(match) {
		next = "o" + strconv.Itoa(off+page)
	}
	writeJSON(w, 200, map[string]any{"items": items, "nextCursor": next})
}

// AddDestroying lists a sandbox with labels in state "destroying" and no
// container, older than every other: what Daytona lists for a while after
// a delete. A lookup by labels must pass over it, to the next page when
// pages are small.
func (s *Server) AddDestroying(labels map[string]string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.seq++
	id := fmt.Sprintf("destroying-%d", s.seq)
	s.sandboxes[id] = &sandbox{id: id, name: id, labels: labels, state: "destroying", created: time.Unix(0, 0), sessions: map[string]*session{}}
	return id
}

func (s *Server) start(w http.ResponseWriter, r *http.Request) {
	b := s.find(w, r)
	if b == nil {
		return
	}
	if err := s.cli.ContainerStart(r.Context(), b.container, container.StartOptions{}); err != nil {
		writeErr(w, r, 500, err.Error(), "")
		return
	}
	if err := s.restrictRoutes(r.Context(), b); err != nil {
		writeErr(w, r, 500, err.Error(), "")
		return
	}
	b.mu.Lock()
	b.state = "starting"
	b.mu.Unlock()
	resp := s.dto(b, true)
	// Start answers with the transitional state; the sandbox reaches
	// "started" a moment later, so clients must poll.
	go func() {
		time.Sleep(150 * time.Millisecond)
		b.mu.Lock()
		if b.state == "starting" {
			b.state = "started"
		}
		b.mu.Unlock()
	}()
	writeJSON(w, 200, resp)
}

func (s *Server) stop(w http.ResponseWriter, r *http.Request) {
	b := s.find(w, r)
	if b == nil {
		return
	}
	if err := s.stopBox(r.Context(), b); err != nil {
		writeErr(w, r, 500, err.Error(), "")
		return
	}
	writeJSON(w, 200, s.dto(b, true))
}

func (s *Server) delete(w http.ResponseWriter, r *http.Request) {
	b := s.find(w, r)
	if b == nil {
		return
	}
	s.removeContainer(b)
	s.mu.Lock()
	delete(s.sandboxes, b.id)
	s.mu.Unlock()
	b.mu.Lock()
	b.state = "destroyed"
	b.mu.Unlock()
	writeJSON(w, 200, s.dto(b, true))
}

// StopBehind stops a sandbox's container as Daytona's auto-stop would,
// without the client asking.
func (s *Server) StopBehind(id string) {
	s.t.Helper()
	s.mu.Lock()
	b := s.sandboxes[id]
	s.mu.Unlock()
	if b == nil {
		s.t.Fatalf("daytonatest: no sandbox %s", id)
	}
	if err := s.stopBox(context.Background(), b); err != nil {
		s.t.Fatal(err)
	}
}

// State returns a sandbox's state ("" if unknown).
func (s *Server) State(id string) string {
	s.mu.Lock()
	b := s.sandboxes[id]
	s.mu.Unlock()
	if b == nil {
		return ""
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.state
}

// Sandboxes returns the ids of live sandboxes.
func (s *Server) Sandboxes() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var ids []string
	for id := range s.sandboxes {
		ids = append(ids, id)
	}
	return ids
}

func (s *Server) stopBox(ctx context.Context, b *sandbox) error {
	b.mu.Lock()
	sessions := b.sessions
	b.sessions = map[string]*session{}
	b.state = "stopping"
	b.mu.Unlock()
	for _, ss := range sessions {
		ss.close()
	}
	t := 0
	err := s.cli.ContainerStop(ctx, b.container, container.StopOptions{Timeout: &t})
	b.mu.Lock()
	b.state = "stopped"
	b.mu.Unlock()
	return err
}

func (s *Server) makeContainer(ctx context.Context, b *sandbox) error {
	dir, err := os.MkdirTemp("", "daytonatest-"+b.id+"-")
	if err != nil {
		return err
	}
	if err := os.Chmod(dir, 0o777); err != nil {
		return err
	}
	b.logDir = dir
	mounts := []mount.Mount{{Type: mount.TypeBind, Source: dir, Target: logMount}}
	for _, m := range s.opts.HostMounts {
		mounts = append(mounts, mount.Mount{Type: mount.TypeBind, Source: m, Target: m})
	}
	resp, err := s.cli.ContainerCreate(ctx, &container.Config{
		Image:  s.opts.Image,
		User:   sandboxUser,
		Labels: map[string]string{"daytonatest": "1", "daytonatest.sandbox": b.id},
	}, &container.HostConfig{
		Mounts:      mounts,
		NetworkMode: container.NetworkMode(netName(b.blockAll)),
	}, nil, nil, "daytonatest-"+b.id)
	if err != nil {
		return err
	}
	b.container = resp.ID
	if err := s.cli.ContainerStart(ctx, resp.ID, container.StartOptions{}); err != nil {
		return err
	}
	return nil
}

func (s *Server) removeContainer(b *sandbox) {
	b.mu.Lock()
	sessions := b.sessions
	b.sessions = map[string]*session{}
	b.mu.Unlock()
	for _, ss := range sessions {
		ss.close()
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if b.container != "" {
		_ = s.cli.ContainerRemove(ctx, b.container, container.RemoveOptions{Force: true})
	}
	if b.logDir != "" {
		os.RemoveAll(b.logDir)
	}
}

func ioNopCloser(r io.Reader) io.ReadCloser { return io.NopCloser(r) }
