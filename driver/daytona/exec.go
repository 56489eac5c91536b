package daytona

import (
	"context"
	"fmt"
	"io"
	"os"
	"path"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/grove-dev/grove"
	"github.com/grove-dev/grove/driver"
)

// outsideExit and outsideMarker are how the command wrapper reports a
// working directory that resolves outside the workspace (through a
// symlink): the driver turns them into grove.ErrPathOutside.
const (
	outsideExit   = 213
	outsideMarker = "grove-daytona: dir outside workspace"
	missingExit   = 214
	missingMarker = "grove-daytona: dir does not exist"
	notDirExit    = 215
	notDirMarker  = "grove-daytona: dir is not a directory"
	cleanPath     = "/usr/local/bin:/usr/bin:/bin"
	killGrace     = 2 * time.Second
	// statusMarker starts the line the wrapper appends to stderr after the
	// capped output: the exit status and the bytes each capper dropped.
	statusMarker = "\x1egrove-daytona-status"
)

// Exec implements driver.Driver.
func (d *Driver) Exec(ctx context.Context, workspaceID string, req grove.ExecRequest) (*grove.ExecResult, error) {
	return d.run(ctx, workspaceID, req, nil)
}

// ExecStream implements driver.Driver. Output is delivered as the toolbox's
// logs grow, one poll at a time.
func (d *Driver) ExecStream(ctx context.Context, workspaceID string, req grove.ExecRequest, emit func(grove.Chunk) error) (*grove.ExecResult, error) {
	if emit == nil {
		return nil, errorf(grove.ErrInvalid, "nil emit")
	}
	return d.run(ctx, workspaceID, req, emit)
}

// script builds the command line the session runs: a sh -c that takes
// stdin from an uploaded file, enters the directory, checks it did not
// leave the workspace, and runs the program under env -i and timeout.
//
// Each stream is capped inside the sandbox: GNU head -c (unbuffered through stdbuf, so output still streams) never reads past
// its count, so "head -c N; wc -c" passes the first N bytes on and counts
// the rest, and neither the toolbox's logs nor the driver ever hold more
// than N bytes of a stream. Stderr reaches its capper through a FIFO. The
// omitted counts come back on a last stderr line (statusMarker) that the
// driver strips; tmp is a directory private to this exec (stdin, FIFO,
// counts), removed through the files API afterwards.
func script(root, home, dir string, req grove.ExecRequest, tmp string, stdin bool, timeout time.Duration, maxOut int) (string, error) {
	var argv []string
	switch {
	case len(req.Argv) > 0 && req.Shell != "":
		return "", errorf(grove.ErrInvalid, "exactly one of argv and shell")
	case len(req.Argv) > 0:
		if req.Argv[0] == "" {
			return "", errorf(grove.ErrInvalid, "empty program name")
		}
		argv = req.Argv
	case req.Shell != "":
		argv = []string{"/bin/bash", "-c", req.Shell}
	default:
		return "", errorf(grove.ErrInvalid, "exactly one of argv and shell")
	}
	for _, a := range argv {
		if strings.IndexByte(a, 0) >= 0 {
			return "", errorf(grove.ErrInvalid, "argument contains NUL")
		}
	}
	env := []string{"PATH=" + cleanPath, "HOME=" + home, "LANG=C.UTF-8", "TERM=dumb"}
	keys := make([]string, 0, len(req.Env))
	for k := range req.Env {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		v := req.Env[k]
		if k == "" || strings.ContainsAny(k, "=\x00") || strings.IndexByte(v, 0) >= 0 {
			return "", errorf(grove.ErrInvalid, "environment variable %q", k)
		}
		env = append(env, k+"="+v)
	}
	t := shellQuote(tmp)
	n := strconv.Itoa(maxOut)
	var b strings.Builder
	b.WriteString("mkdir -p " + t + " || exit 1; ")
	if stdin {
		b.WriteString("exec 0<" + t + "/stdin; ")
	} else {
		b.WriteString("exec 0</dev/null; ")
	}
	q := shellQuote(dir)
	b.WriteString("[ -e " + q + " ] || { echo " + shellQuote(missingMarker) + " >&2; exit " + strconv.Itoa(missingExit) + "; }; ")
	b.WriteString("[ -d " + q + " ] || { echo " + shellQuote(notDirMarker) + " >&2; exit " + strconv.Itoa(notDirExit) + "; }; ")
	b.WriteString("cd " + q + " || exit 1; ")
	b.WriteString(`r=$(cd ` + shellQuote(root) + ` && pwd -P); case "$(pwd -P)" in "$r"|"$r"/*) ;; *) echo ` +
		shellQuote(outsideMarker) + ` >&2; exit ` + strconv.Itoa(outsideExit) + `;; esac; `)
	b.WriteString("mkfifo " + t + "/e || exit 1; ")
	b.WriteString("{ stdbuf -o0 head -c " + n + " >&2; wc -c >" + t + "/err.n; } <" + t + "/e & ep=$!; ")
	b.WriteString("{ env -i")
	for _, e := range env {
		b.WriteString(" " + shellQuote(e))
	}
	secs := strconv.FormatFloat(timeout.Seconds(), 'f', 3, 64)
	b.WriteString(" timeout -k " + strconv.Itoa(int(killGrace/time.Second)) + " " + secs)
	for _, a := range argv {
		b.WriteString(" " + shellQuote(a))
	}
	b.WriteString(" 2>" + t + "/e; echo $? >" + t + "/rc; } | { stdbuf -o0 head -c " + n + "; wc -c >" + t + "/out.n; }; ")
	b.WriteString(`wait $ep; rc=$(cat ` + t + `/rc); printf '` + statusMarker + ` %s %s %s\n' "$rc" $(cat ` + t + `/out.n) $(cat ` + t + `/err.n) >&2; exit "$rc"`)
	return "/bin/sh -c " + shellQuote(b.String()), nil
}

// withoutStatus is stderr without the wrapper's status line, and without
// any tail that may be the start of one still being written.
func withoutStatus(stderr string) string {
	if i := strings.LastIndex(stderr, statusMarker); i >= 0 {
		return stderr[:i]
	}
	for k := min(len(statusMarker)-1, len(stderr)); k > 0; k-- {
		if strings.HasSuffix(stderr, statusMarker[:k]) {
			return stderr[:len(stderr)-k]
		}
	}
	return stderr
}

// confineDir resolves a workspace-relative directory lexically; symlinks
// are checked inside the sandbox by the command wrapper.
func confineDir(root, rel string) (string, error) {
	if rel == "" || rel == "." {
		return root, nil
	}
	if path.IsAbs(rel) || strings.IndexByte(rel, 0) >= 0 {
		return "", errorf(grove.ErrPathOutside, "dir %q", rel)
	}
	clean := path.Clean(rel)
	if clean == ".." || strings.HasPrefix(clean, "../") {
		return "", errorf(grove.ErrPathOutside, "dir %q", rel)
	}
	return path.Join(root, clean), nil
}

// capped accumulates one stream under a cap.
type capped struct {
	buf     []byte
	omitted int64
	seen    int // bytes of the stream consumed so far
}

// take consumes the stream's full text so far and returns the new bytes
// kept under the cap.
func (c *capped) take(all string, max int) []byte {
	if len(all) <= c.seen {
		return nil
	}
	fresh := all[c.seen:]
	c.seen = len(all)
	room := max - len(c.buf)
	if room < 0 {
		room = 0
	}
	keep := fresh
	if len(keep) > room {
		keep = keep[:room]
	}
	c.omitted += int64(len(fresh) - len(keep))
	c.buf = append(c.buf, keep...)
	return []byte(keep)
}

func (d *Driver) run(ctx context.Context, workspaceID string, req grove.ExecRequest, emit func(grove.Chunk) error) (*grove.ExecResult, error) {
	rt, b, err := d.runtime(workspaceID)
	if err != nil {
		return nil, err
	}
	if req.Timeout < 0 || req.MaxOutput < 0 {
		return nil, errorf(grove.ErrInvalid, "negative timeout or output cap")
	}
	if req.Class == "" {
		req.Class = grove.ClassWrite
	}
	if req.Class.Mutating() && !d.cfg.AllowMutating {
		return nil, errorf(grove.ErrRejected, "%s command on a read-only runtime", req.Class)
	}
	timeout := req.Timeout
	if timeout == 0 {
		timeout = driver.DefaultTimeout
	}
	maxOut := req.MaxOutput
	if maxOut == 0 {
		maxOut = driver.DefaultMaxOutput
	}
	dir, err := confineDir(rt.Spec.WorkDir, req.Dir)
	if err != nil {
		return nil, err
	}
	// Validate the request before any remote call.
	if _, err := script(rt.Spec.WorkDir, "/", dir, req, "/tmp", false, timeout, maxOut); err != nil {
		return nil, err
	}
	b, release, err := d.use(ctx, rt, b)
	if err != nil {
		return nil, err
	}
	defer release()
	home, err := d.home(ctx, b)
	if err != nil {
		return nil, err
	}
	tmp := "/tmp/" + randomID("grove-exec-")
	defer func() {
		dctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
		defer cancel()
		r, err := b.tb.FileSystemAPI.DeleteFile(dctx).Path(tmp).Recursive(true).Execute()
		_ = mapErr(dctx, "remove exec directory", r, err)
	}()
	if len(req.Stdin) > 0 {
		if err := d.upload(ctx, b, tmp+"/stdin", req.Stdin); err != nil {
			return nil, err
		}
	}
	cmd, err := script(rt.Spec.WorkDir, home, dir, req, tmp, len(req.Stdin) > 0, timeout, maxOut)
	if err != nil {
		return nil, err
	}

	start := time.Now()
	sid := randomID("grove-")
	resp, err := b.tb.ProcessAPI.CreateSession(ctx).Request(*newCreateSession(sid)).Execute()
	if err := mapErr(ctx, "create session", resp, err); err != nil {
		return nil, err
	}
	defer func() {
		// Deleting the session ends its processes; it must happen even
		// when ctx is cancelled.
		dctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
		defer cancel()
		r, err := b.tb.ProcessAPI.DeleteSession(dctx, sid).Execute()
		_ = mapErr(dctx, "delete session", r, err)
	}()
	er, resp, err := b.tb.ProcessAPI.SessionExecuteCommand(ctx, sid).Request(*newSessionExec(cmd)).Execute()
	if err := mapErr(ctx, "session exec", resp, err); err != nil {
		return nil, err
	}
	cmdID := er.CmdId

	var out, errs capped
	deliver := func(stdout, stderr string) error {
		o := out.take(stdout, maxOut)
		e := errs.take(stderr, maxOut)
		if emit == nil {
			return nil
		}
		if len(o) > 0 {
			if err := emit(grove.Chunk{Stream: grove.Stdout, Data: o}); err != nil {
				return err
			}
		}
		if len(e) > 0 {
			if err := emit(grove.Chunk{Stream: grove.Stderr, Data: e}); err != nil {
				return err
			}
		}
		return nil
	}
	rawErr := ""
	logs := func(c context.Context) error {
		l, resp, err := b.tb.ProcessAPI.GetSessionCommandLogs(c, sid, cmdID).Execute()
		if err := mapErr(c, "command logs", resp, err); err != nil {
			return err
		}
		rawErr = l.Stderr
		return deliver(l.Stdout, withoutStatus(l.Stderr))
	}

	// The sandbox's own timeout kills the command; the driver's deadline
	// is a backstop for a sandbox that stops answering.
	deadline := start.Add(timeout + killGrace + 5*time.Second)
	wait := 20 * time.Millisecond
	exit := -1
	timedOut := false
	for {
		c, resp, err := b.tb.ProcessAPI.GetSessionCommand(ctx, sid, cmdID).Execute()
		if err := mapErr(ctx, "command status", resp, err); err != nil {
			return nil, err
		}
		if c.ExitCode != nil {
			exit = int(*c.ExitCode)
			break
		}
		if emit != nil {
			if err := logs(ctx); err != nil {
				return nil, err
			}
		}
		if time.Now().After(deadline) {
			timedOut = true
			break
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(wait):
		}
		if wait *= 2; wait > d.cfg.PollInterval {
			wait = d.cfg.PollInterval
		}
	}
	if err := logs(ctx); err != nil {
		return nil, err
	}
	elapsed := time.Since(start)
	for _, m := range []struct {
		code   int
		marker string
		kind   error
	}{{outsideExit, outsideMarker, grove.ErrPathOutside}, {missingExit, missingMarker, grove.ErrNotFound}, {notDirExit, notDirMarker, grove.ErrInvalid}} {
		if exit == m.code && strings.Contains(string(errs.buf), m.marker) {
			return nil, errorf(m.kind, "dir %q: %s", req.Dir, strings.TrimPrefix(m.marker, "grove-daytona: "))
		}
	}
	if (exit == 124 || exit == 137) && elapsed >= timeout {
		timedOut = true
	}
	if i := strings.LastIndex(rawErr, statusMarker); i >= 0 {
		// The bytes the sandbox's cappers dropped.
		var rc int
		var o, e int64
		if n, _ := fmt.Sscan(rawErr[i+len(statusMarker):], &rc, &o, &e); n == 3 {
			out.omitted += o
			errs.omitted += e
		}
	}
	res := &grove.ExecResult{
		ExitCode: exit, Stdout: out.buf, Stderr: errs.buf, TimedOut: timedOut,
		StdoutOmitted: out.omitted, StderrOmitted: errs.omitted,
		Truncated: out.omitted > 0 || errs.omitted > 0, Duration: elapsed,
	}
	if timedOut {
		res.ExitCode = 124
	}
	if req.StreamOnly && emit != nil {
		res.Stdout, res.Stderr = nil, nil
	}
	if res.Stdout == nil {
		res.Stdout = []byte{}
	}
	if res.Stderr == nil {
		res.Stderr = []byte{}
	}
	return res, nil
}

// download reads an absolute path inside the sandbox through the toolbox
// files API.
func (d *Driver) download(ctx context.Context, b *box, p string) ([]byte, error) {
	file, resp, err := b.tb.FileSystemAPI.DownloadFile(ctx).Path(p).Execute()
	if err := mapErr(ctx, "download", resp, err); err != nil {
		return nil, err
	}
	defer os.Remove(file.Name())
	defer file.Close()
	if _, err := file.Seek(0, io.SeekStart); err != nil {
		return nil, err
	}
	return io.ReadAll(file)
}

// upload writes data to an absolute path inside the sandbox through the
// toolbox files API (multipart upload).
func (d *Driver) upload(ctx context.Context, b *box, dst string, data []byte) error {
	f, err := os.CreateTemp("", "grove-daytona-upload-*")
	if err != nil {
		return err
	}
	defer os.Remove(f.Name())
	defer f.Close()
	if _, err := f.Write(data); err != nil {
		return err
	}
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return err
	}
	_, resp, err := b.tb.FileSystemAPI.UploadFile(ctx).Path(dst).File(f).Execute()
	return mapErr(ctx, "upload", resp, err)
}
