package daytonatest

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/docker/docker/api/types"
	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/pkg/stdcopy"
)

// session is one persistent shell in a sandbox's container. Each command
// is written to its stdin with its output redirected into files under the
// log mount, read by the fake from the host side.
type session struct {
	id      string
	b       *sandbox
	s       *Server
	hostDir string // b.logDir/<id>
	ctrDir  string // logMount/<id>
	conn    io.WriteCloser
	closeFn func()
	mu      sync.Mutex
	cmds    []*command
	seq     int
	closed  bool
}

type command struct{ id, command string }

func (s *Server) toolboxMux() http.Handler {
	m := http.NewServeMux()
	m.HandleFunc("POST /process/execute", s.execute)
	m.HandleFunc("POST /process/session", s.createSession)
	m.HandleFunc("GET /process/session/{sid}", s.getSession)
	m.HandleFunc("DELETE /process/session/{sid}", s.deleteSession)
	m.HandleFunc("POST /process/session/{sid}/exec", s.sessionExec)
	m.HandleFunc("GET /process/session/{sid}/command/{cid}", s.getCommand)
	m.HandleFunc("GET /process/session/{sid}/command/{cid}/logs", s.commandLogs)
	m.HandleFunc("GET /user-home-dir", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, 200, map[string]string{"dir": "/home/" + sandboxUser})
	})
	m.HandleFunc("POST /files/upload", s.upload)
	m.HandleFunc("GET /files/download", s.download)
	m.HandleFunc("GET /files/info", s.info)
	m.HandleFunc("POST /files/folder", s.folder)
	m.HandleFunc("DELETE /files", s.deleteFile)
	return m
}

// dexec runs argv in the sandbox's container and returns its streams and
// exit code.
func (s *Server) dexec(ctx context.Context, b *sandbox, user, dir string, env []string, stdin []byte, argv ...string) (stdout, stderr []byte, code int, err error) {
	cr, err := s.cli.ContainerExecCreate(ctx, b.container, container.ExecOptions{
		User: user, Cmd: argv, WorkingDir: dir, Env: env,
		AttachStdin: stdin != nil, AttachStdout: true, AttachStderr: true,
	})
	if err != nil {
		return nil, nil, 0, err
	}
	hr, err := s.cli.ContainerExecAttach(ctx, cr.ID, container.ExecAttachOptions{})
	if err != nil {
		return nil, nil, 0, err
	}
	defer hr.Close()
	if stdin != nil {
		go func() {
			hr.Conn.Write(stdin)
			hr.CloseWrite()
		}()
	}
	var o, e bytes.Buffer
	if _, err := stdcopy.StdCopy(&o, &e, hr.Reader); err != nil {
		return nil, nil, 0, err
	}
	ins, err := s.cli.ContainerExecInspect(ctx, cr.ID)
	if err != nil {
		return nil, nil, 0, err
	}
	return o.Bytes(), e.Bytes(), ins.ExitCode, nil
}

// execute is /process/execute: output merged, {exitCode, result}, 408
// once the request's timeout passes (the whole process group is killed).
func (s *Server) execute(w http.ResponseWriter, r *http.Request) {
	b := boxOf(r)
	var req struct {
		Command string            `json:"command"`
		Cwd     string            `json:"cwd"`
		Envs    map[string]string `json:"envs"`
		Timeout int               `json:"timeout"`
	}
	if err := readJSON(r, &req); err != nil || req.Command == "" {
		w.WriteHeader(http.StatusBadRequest) // the daemon sends some 400s with an empty body
		return
	}
	argv := []string{"bash", "-c", req.Command}
	if req.Timeout > 0 {
		argv = append([]string{"timeout", "-s", "KILL", strconv.Itoa(req.Timeout)}, argv...)
	}
	var env []string
	for k, v := range req.Envs {
		env = append(env, k+"="+v)
	}
	start := time.Now()
	o, e, code, err := s.dexec(r.Context(), b, sandboxUser, req.Cwd, env, nil, argv...)
	if err != nil {
		writeErr(w, r, 500, err.Error(), "INTERNAL_SERVER_ERROR")
		return
	}
	if req.Timeout > 0 && code == 137 && time.Since(start) >= time.Duration(req.Timeout)*time.Second {
		writeErr(w, r, http.StatusRequestTimeout, "command execution timeout", "REQUEST_TIMEOUT")
		return
	}
	writeJSON(w, 200, map[string]any{"exitCode": code, "result": string(o) + string(e)})
}

func (s *Server) createSession(w http.ResponseWriter, r *http.Request) {
	b := boxOf(r)
	var req struct {
		SessionID string `json:"sessionId"`
	}
	if err := readJSON(r, &req); err != nil || req.SessionID == "" || strings.ContainsAny(req.SessionID, "/.") {
		writeErr(w, r, 400, "invalid session id", "BAD_REQUEST")
		return
	}
	b.mu.Lock()
	_, exists := b.sessions[req.SessionID]
	b.mu.Unlock()
	if exists {
		writeErr(w, r, http.StatusConflict, "session already exists", "CONFLICT")
		return
	}
	ss := &session{id: req.SessionID, b: b, s: s,
		hostDir: filepath.Join(b.logDir, req.SessionID), ctrDir: path.Join(logMount, req.SessionID)}
	if err := os.Mkdir(ss.hostDir, 0o777); err != nil {
		writeErr(w, r, 500, err.Error(), "")
		return
	}
	os.Chmod(ss.hostDir, 0o777)
	cr, err := s.cli.ContainerExecCreate(context.Background(), b.container, container.ExecOptions{
		User: sandboxUser, Cmd: []string{"setsid", "bash", "--noprofile", "--norc"}, AttachStdin: true,
	})
	if err == nil {
		var hr hijacked
		hr, err = s.cli.ContainerExecAttach(context.Background(), cr.ID, container.ExecAttachOptions{})
		if err == nil {
			go io.Copy(io.Discard, hr.Reader)
			ss.conn = hr.Conn
			ss.closeFn = hr.Close
		}
	}
	if err != nil {
		writeErr(w, r, 500, err.Error(), "")
		return
	}
	if _, err := fmt.Fprintf(ss.conn, "cd ~; echo $$ > %s/pid\n", ss.ctrDir); err != nil {
		writeErr(w, r, 500, err.Error(), "")
		return
	}
	b.mu.Lock()
	b.sessions[ss.id] = ss
	b.mu.Unlock()
	w.WriteHeader(http.StatusCreated)
}

func (s *Server) session(w http.ResponseWriter, r *http.Request) *session {
	b := boxOf(r)
	b.mu.Lock()
	ss := b.sessions[r.PathValue("sid")]
	b.mu.Unlock()
	if ss == nil {
		writeErr(w, r, http.StatusNotFound, "session not found", "NOT_FOUND")
	}
	return ss
}

func (ss *session) exitCode(id string) (int, bool) {
	b, err := os.ReadFile(filepath.Join(ss.hostDir, id+".exit"))
	if err != nil {
		return 0, false
	}
	n, err := strconv.Atoi(strings.TrimSpace(string(b)))
	return n, err == nil
}

func (ss *session) dto(c *command) map[string]any {
	d := map[string]any{"id": c.id, "command": c.command}
	if code, ok := ss.exitCode(c.id); ok {
		d["exitCode"] = code
	}
	return d
}

func (s *Server) getSession(w http.ResponseWriter, r *http.Request) {
	ss := s.session(w, r)
	if ss == nil {
		return
	}
	ss.mu.Lock()
	cmds := []map[string]any{}
	for _, c := range ss.cmds {
		cmds = append(cmds, ss.dto(c))
	}
	ss.mu.Unlock()
	writeJSON(w, 200, map[string]any{"sessionId": ss.id, "commands": cmds})
}

func (s *Server) deleteSession(w http.ResponseWriter, r *http.Request) {
	ss := s.session(w, r)
	if ss == nil {
		return
	}
	b := boxOf(r)
	b.mu.Lock()
	delete(b.sessions, ss.id)
	b.mu.Unlock()
	ss.close()
	w.WriteHeader(http.StatusNoContent)
}

// close kills every process of the session (its shell is a session
// leader; coreutils timeout makes its own process group inside it).
func (ss *session) close() {
	ss.mu.Lock()
	if ss.closed {
		ss.mu.Unlock()
		return
	}
	ss.closed = true
	ss.mu.Unlock()
	if pid, err := os.ReadFile(filepath.Join(ss.hostDir, "pid")); err == nil {
		sid := strings.TrimSpace(string(pid))
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		script := `for d in /proc/[0-9]*; do set -- $(sed 's/^.*) //' "$d/stat" 2>/dev/null); [ "$4" = "` + sid +
			`" ] && kill -9 "${d#/proc/}" 2>/dev/null; done; true`
		_, _, _, _ = ss.s.dexec(ctx, ss.b, "root", "", nil, nil, "sh", "-c", script)
		cancel()
	}
	if ss.closeFn != nil {
		ss.closeFn()
	}
}

func (s *Server) sessionExec(w http.ResponseWriter, r *http.Request) {
	ss := s.session(w, r)
	if ss == nil {
		return
	}
	var req struct {
		Command  string `json:"command"`
		RunAsync bool   `json:"runAsync"`
		Async    bool   `json:"async"`
	}
	if err := readJSON(r, &req); err != nil || req.Command == "" {
		writeErr(w, r, 400, "command is required", "BAD_REQUEST")
		return
	}
	ss.mu.Lock()
	ss.seq++
	c := &command{id: fmt.Sprintf("cmd-%s-%d", ss.id, ss.seq), command: req.Command}
	ss.cmds = append(ss.cmds, c)
	d := ss.ctrDir + "/" + c.id
	line := "{ " + req.Command + "\n} >" + d + ".out 2>" + d + ".err </dev/null; echo $? >" + d + ".tmp; mv " + d + ".tmp " + d + ".exit\n"
	_, err := io.WriteString(ss.conn, line)
	ss.mu.Unlock()
	if err != nil {
		writeErr(w, r, 500, err.Error(), "")
		return
	}
	if req.RunAsync || req.Async {
		writeJSON(w, http.StatusAccepted, map[string]any{"cmdId": c.id})
		return
	}
	for {
		if _, ok := ss.exitCode(c.id); ok {
			break
		}
		select {
		case <-r.Context().Done():
			return
		case <-time.After(20 * time.Millisecond):
		}
	}
	code, _ := ss.exitCode(c.id)
	o, e := ss.logs(c.id)
	resp := map[string]any{"cmdId": c.id, "exitCode": code, "output": merged(o, e)}
	if s.splitOutput(r) {
		resp["output"] = marked(o, e)
		resp["stdout"], resp["stderr"] = o, e
	}
	writeJSON(w, 200, resp)
}

func (ss *session) command(id string) *command {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	for _, c := range ss.cmds {
		if c.id == id {
			return c
		}
	}
	return nil
}

func (ss *session) logs(id string) (stdout, stderr string) {
	o, _ := os.ReadFile(filepath.Join(ss.hostDir, id+".out"))
	e, _ := os.ReadFile(filepath.Join(ss.hostDir, id+".err"))
	return string(o), string(e)
}

func (s *Server) getCommand(w http.ResponseWriter, r *http.Request) {
	ss := s.session(w, r)
	if ss == nil {
		return
	}
	c := ss.command(r.PathValue("cid"))
	if c == nil {
		writeErr(w, r, http.StatusNotFound, "command not found", "NOT_FOUND")
		return
	}
	writeJSON(w, 200, ss.dto(c))
}

func (s *Server) commandLogs(w http.ResponseWriter, r *http.Request) {
	ss := s.session(w, r)
	if ss == nil {
		return
	}
	c := ss.command(r.PathValue("cid"))
	if c == nil {
		writeErr(w, r, http.StatusNotFound, "command not found", "NOT_FOUND")
		return
	}
	o, e := ss.logs(c.id)
	if !s.splitOutput(r) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		io.WriteString(w, merged(o, e))
		return
	}
	writeJSON(w, 200, map[string]any{"output": marked(o, e), "stdout": o, "stderr": e})
}

// splitOutput reports whether the caller's SDK version gets stdout and
// stderr apart (the daemon's rule, keyed on X-Daytona-SDK-Version).
func (s *Server) splitOutput(r *http.Request) bool {
	v := r.Header.Get("X-Daytona-SDK-Version")
	if v == "" {
		return r.Header.Get("X-Daytona-Split-Output") == "true"
	}
	return versionAtLeast(v, s.opts.MinSDKVersion)
}

func versionAtLeast(v, min string) bool {
	parse := func(s string) [3]int {
		var out [3]int
		for i, p := range strings.SplitN(strings.TrimPrefix(s, "v"), ".", 3) {
			n, _ := strconv.Atoi(strings.SplitN(p, "-", 2)[0])
			out[i] = n
		}
		return out
	}
	a, b := parse(v), parse(min)
	for i := range a {
		if a[i] != b[i] {
			return a[i] > b[i]
		}
	}
	return true
}

func merged(o, e string) string { return o + e }

// marked is the daemon's raw log: every stdout line prefixed 01 01 01,
// every stderr line 02 02 02 (the fake keeps no interleaving order).
func marked(o, e string) string {
	var b strings.Builder
	for _, part := range []struct {
		text, mark string
	}{{o, "\x01\x01\x01"}, {e, "\x02\x02\x02"}} {
		sc := bufio.NewScanner(strings.NewReader(part.text))
		sc.Buffer(make([]byte, 64<<10), 64<<20)
		for sc.Scan() {
			b.WriteString(part.mark + sc.Text() + "\n")
		}
	}
	return b.String()
}

// --- files ---

func (s *Server) upload(w http.ResponseWriter, r *http.Request) {
	b := boxOf(r)
	p := r.URL.Query().Get("path")
	f, _, err := r.FormFile("file")
	if err != nil || p == "" {
		writeErr(w, r, 400, "multipart field file and query path are required", "BAD_REQUEST")
		return
	}
	defer f.Close()
	data, err := io.ReadAll(f)
	if err != nil {
		writeErr(w, r, 400, err.Error(), "BAD_REQUEST")
		return
	}
	if data == nil {
		data = []byte{}
	}
	_, e, code, err := s.dexec(r.Context(), b, sandboxUser, "", nil, data, "sh", "-c", `mkdir -p "$(dirname "$1")" && cat > "$1"`, "_", p)
	if err != nil || code != 0 {
		writeErr(w, r, 400, fmt.Sprintf("upload: %v %s", err, e), "BAD_REQUEST")
		return
	}
	writeJSON(w, 200, map[string]any{})
}

func (s *Server) download(w http.ResponseWriter, r *http.Request) {
	b := boxOf(r)
	p := r.URL.Query().Get("path")
	o, _, code, err := s.dexec(r.Context(), b, sandboxUser, "", nil, nil, "sh", "-c", `test -e "$1" || exit 3; test -d "$1" && exit 4; cat "$1"`, "_", p)
	switch {
	case err != nil:
		writeErr(w, r, 500, err.Error(), "")
	case code == 3:
		writeErr(w, r, 404, "file not found", "FILE_NOT_FOUND")
	case code != 0:
		writeErr(w, r, 400, "path is a directory or unreadable", "BAD_REQUEST")
	default:
		w.Header().Set("Content-Type", "application/octet-stream")
		w.Write(o)
	}
}

func (s *Server) info(w http.ResponseWriter, r *http.Request) {
	b := boxOf(r)
	p := r.URL.Query().Get("path")
	o, _, code, err := s.dexec(r.Context(), b, sandboxUser, "", nil, nil, "stat", "-c", "%s|%F|%U|%G|%Y|%a|%A", p)
	if err != nil || code != 0 {
		writeErr(w, r, 404, "file not found", "FILE_NOT_FOUND")
		return
	}
	f := strings.Split(strings.TrimSpace(string(o)), "|")
	if len(f) != 7 {
		writeErr(w, r, 500, "stat: "+string(o), "")
		return
	}
	size, _ := strconv.ParseInt(f[0], 10, 64)
	sec, _ := strconv.ParseInt(f[4], 10, 64)
	mt := time.Unix(sec, 0).UTC()
	writeJSON(w, 200, map[string]any{
		"name": path.Base(p), "path": p, "isDir": f[1] == "directory", "size": size,
		"mode": f[6], "permissions": f[5], "owner": f[2], "group": f[3],
		"modifiedAt": mt.Format(time.RFC3339), "modTime": mt.String(),
	})
}

func (s *Server) folder(w http.ResponseWriter, r *http.Request) {
	b := boxOf(r)
	p, mode := r.URL.Query().Get("path"), r.URL.Query().Get("mode")
	if mode == "" {
		mode = "0755"
	}
	_, e, code, err := s.dexec(r.Context(), b, sandboxUser, "", nil, nil, "mkdir", "-p", "-m", mode, p)
	if err != nil || code != 0 {
		writeErr(w, r, 400, fmt.Sprintf("mkdir: %v %s", err, e), "BAD_REQUEST")
		return
	}
	w.WriteHeader(http.StatusCreated)
}

type hijacked = types.HijackedResponse

func (s *Server) deleteFile(w http.ResponseWriter, r *http.Request) {
	b := boxOf(r)
	p := r.URL.Query().Get("path")
	flag := "-f"
	if r.URL.Query().Get("recursive") == "true" {
		flag = "-rf"
	}
	_, e, code, err := s.dexec(r.Context(), b, sandboxUser, "", nil, nil, "sh", "-c", `test -e "$2" || test -L "$2" || exit 3; rm `+flag+` -- "$2"`, "_", flag, p)
	switch {
	case err != nil:
		writeErr(w, r, 500, err.Error(), "")
	case code == 3:
		writeErr(w, r, 404, "file not found", "FILE_NOT_FOUND")
	case code != 0:
		writeErr(w, r, 400, fmt.Sprintf("rm: %s", e), "BAD_REQUEST")
	default:
		w.WriteHeader(http.StatusNoContent)
	}
}
