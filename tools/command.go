package tools

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/grove-dev/grove"
)

type RunCommandInput struct {
	Command        string `json:"command" jsonschema:"shell command, run with bash -c in the workspace's sandbox"`
	Cwd            string `json:"cwd,omitempty" jsonschema:"working directory relative to the workspace root (default: the root)"`
	TimeoutS       int    `json:"timeout_s,omitempty" jsonschema:"seconds before the command's whole process group is killed (default 120; over 3600, or over the server's cap, it is lowered to the cap and the result says so)"`
	Stdin          string `json:"stdin,omitempty" jsonschema:"text fed to the command's standard input"`
	Background     bool   `json:"background,omitempty" jsonschema:"start it and return at once with a process_id for process_io (servers, watchers, long builds)"`
	MaxOutputBytes int    `json:"max_output_bytes,omitempty" jsonschema:"bytes of stdout and of stderr to keep, head and tail (default 30000, max 1000000)"`
}

type RunCommandOutput struct {
	ExitCode        int    `json:"exit_code"`
	Stdout          string `json:"stdout"`
	Stderr          string `json:"stderr"`
	Truncated       bool   `json:"truncated"`
	OmittedBytes    int64  `json:"omitted_bytes"`
	FullLogPath     string `json:"full_log_path,omitempty"`
	TimedOut        bool   `json:"timed_out"`
	TimeoutCappedS  int    `json:"timeout_capped_s,omitempty" jsonschema:"set when timeout_s was over the server's maximum: the timeout the command ran under"`
	DurationMS      int64  `json:"duration_ms"`
	ProcessID       string `json:"process_id,omitempty"`
	BackgroundStart bool   `json:"background,omitempty"`
}

const (
	defaultTimeout   = 120 * time.Second
	maxTimeout       = time.Hour
	defaultMaxOutput = 30000
	// streamCap is how much of each stream the runtime passes on; past it
	// the middle of the output is lost and counted as omitted.
	streamCap = 8 << 20
)

// commandTimeout is the timeout for timeout_s; one over the maximum is
// lowered to it (capped says so) rather than refused.
func commandTimeout(s int) (d time.Duration, capped bool, err error) {
	switch {
	case s < 0:
		return 0, false, invalidf("timeout_s must be positive")
	case s == 0:
		return defaultTimeout, false, nil
	case s > int(maxTimeout/time.Second):
		return maxTimeout, true, nil
	}
	return time.Duration(s) * time.Second, false, nil
}

// runStreamed runs req with ExecStream, keeping the head and tail of each
// stream and reporting progress at most once a second. The runtime's own
// cap only keeps a head, which loses the summary at the end of long
// output.
func (c *call) runStreamed(ctx context.Context, req grove.ExecRequest, maxOut int, onLine func(grove.Stream, []byte)) (*grove.ExecResult, *headTail, *headTail, error) {
	stdout, stderr := newHeadTail(maxOut), newHeadTail(maxOut)
	start := time.Now()
	last := start
	var partial [2][]byte
	res, err := c.svc.ExecStream(ctx, c.ws, req, func(ch grove.Chunk) error {
		w, i := stdout, 0
		if ch.Stream == grove.Stderr {
			w, i = stderr, 1
		}
		_, _ = w.Write(ch.Data)
		if onLine != nil {
			data := append(partial[i], ch.Data...)
			for {
				nl := bytes.IndexByte(data, '\n')
				if nl < 0 {
					break
				}
				onLine(ch.Stream, data[:nl])
				data = data[nl+1:]
			}
			// A line longer than 64 KiB is not worth keeping whole.
			partial[i] = append(partial[i][:0], data[:min(len(data), 64<<10)]...)
		}
		if now := time.Now(); now.Sub(last) >= time.Second {
			last = now
			c.progress(now.Sub(start).Seconds(), req.Timeout.Seconds(), fmt.Sprintf("running for %ds, %d bytes of output", int(now.Sub(start).Seconds()), stdout.total+stderr.total))
		}
		return nil
	})
	if err != nil {
		return nil, nil, nil, err
	}
	return res, stdout, stderr, nil
}

func runCommand(ctx context.Context, c *call, in RunCommandInput, procs *processes) (RunCommandOutput, string, error) {
	if strings.TrimSpace(in.Command) == "" {
		return RunCommandOutput{}, "", invalidf("command is empty")
	}
	timeout, capped, err := commandTimeout(in.TimeoutS)
	if err != nil {
		return RunCommandOutput{}, "", err
	}
	maxOut := in.MaxOutputBytes
	if maxOut <= 0 {
		maxOut = defaultMaxOutput
	}
	if maxOut > 1_000_000 {
		return RunCommandOutput{}, "", invalidf("max_output_bytes %d is over the maximum of 1000000", maxOut)
	}
	dir, err := c.relPath(ctx, in.Cwd)
	if err != nil {
		return RunCommandOutput{}, "", err
	}
	req := grove.ExecRequest{
		// Not a login shell: /etc/profile would replace the sandbox's PATH
		// (GROVE_SANDBOX_PATH) with the distribution's.
		Argv:  []string{"bash", "-c", in.Command},
		Dir:   dir,
		Class: grove.ClassWrite, Timeout: timeout,
		// The runtime stops streaming at its cap, keeping only a head; a
		// larger cap lets our head+tail buffer see the end of the output.
		MaxOutput: streamCap,
	}
	if in.Stdin != "" {
		req.Stdin = []byte(in.Stdin)
	}
	if in.Background {
		if in.TimeoutS == 0 {
			req.Timeout = maxTimeout
		}
		id, err := procs.start(callerFrom(ctx), c.svc, c.ws, in.Command, req)
		if err != nil {
			return RunCommandOutput{}, "", err
		}
		out := RunCommandOutput{ProcessID: id, BackgroundStart: true}
		text := fmt.Sprintf("Started in the background as %s (killed after %s", id, req.Timeout)
		if capped {
			out.TimeoutCappedS = int(timeout / time.Second)
			text += ", the maximum; timeout_s was over it"
		}
		return out, text + "). Poll it with process_io.", nil
	}
	c.progress(0, timeout.Seconds(), "started")
	res, stdout, stderr, err := c.runStreamed(ctx, req, maxOut, nil)
	if err != nil {
		return RunCommandOutput{}, "", err
	}
	out := RunCommandOutput{
		ExitCode: res.ExitCode, Stdout: stdout.String(), Stderr: stderr.String(),
		OmittedBytes: stdout.omitted() + stderr.omitted() + res.StdoutOmitted + res.StderrOmitted,
		TimedOut:     res.TimedOut, DurationMS: res.Duration.Milliseconds(),
	}
	out.Truncated = out.OmittedBytes > 0
	if res.CappedTimeout > 0 && res.CappedTimeout < timeout {
		// A remote server lowered it further to its own cap.
		timeout, capped = res.CappedTimeout, true
	}
	if capped {
		out.TimeoutCappedS = int(timeout / time.Second)
	}
	return out, commandText(out, timeout), nil
}

func commandText(out RunCommandOutput, timeout time.Duration) string {
	var b strings.Builder
	if out.TimedOut {
		fmt.Fprintf(&b, "TIMED OUT after %s; the process group was killed. Partial output follows.\n", timeout)
	} else {
		fmt.Fprintf(&b, "exit code %d (%d ms)\n", out.ExitCode, out.DurationMS)
	}
	if out.Stdout != "" {
		b.WriteString("--- stdout ---\n" + out.Stdout)
		if !strings.HasSuffix(out.Stdout, "\n") {
			b.WriteByte('\n')
		}
	}
	if out.Stderr != "" {
		b.WriteString("--- stderr ---\n" + out.Stderr)
		if !strings.HasSuffix(out.Stderr, "\n") {
			b.WriteByte('\n')
		}
	}
	if out.Stdout == "" && out.Stderr == "" {
		b.WriteString("(no output)\n")
	}
	if out.TimeoutCappedS > 0 {
		fmt.Fprintf(&b, "[timeout_s was over the server's maximum; the command ran with timeout_s %d]\n", out.TimeoutCappedS)
	}
	if out.Truncated {
		fmt.Fprintf(&b, "[%d bytes omitted from the middle; to see everything, rerun with `> out.log 2>&1` and read_file or search_code out.log]\n", out.OmittedBytes)
	}
	return b.String()
}

type ProcessIOInput struct {
	ProcessID string `json:"process_id" jsonschema:"id returned by run_command with background=true"`
	Stdin     string `json:"stdin,omitempty" jsonschema:"not supported after start: pass stdin to run_command instead"`
	WaitMS    int    `json:"wait_ms,omitempty" jsonschema:"wait up to this long for the process to exit before returning (max 30000)"`
	Kill      bool   `json:"kill,omitempty" jsonschema:"kill the process group"`
}

type ProcessIOOutput struct {
	ProcessID string `json:"process_id"`
	Running   bool   `json:"running"`
	ExitCode  *int   `json:"exit_code,omitempty"`
	TimedOut  bool   `json:"timed_out"`
	Stdout    string `json:"stdout" jsonschema:"output since the previous poll"`
	Stderr    string `json:"stderr" jsonschema:"output since the previous poll"`
	Truncated bool   `json:"truncated" jsonschema:"some output since the previous poll was dropped to stay bounded"`
}

func processIO(ctx context.Context, c *call, in ProcessIOInput, procs *processes) (ProcessIOOutput, string, error) {
	if in.Stdin != "" {
		return ProcessIOOutput{}, "", &Error{Code: "E_NOT_SUPPORTED", Msg: "feeding stdin to a running background process is not supported by this server",
			Hint: "pass the input as run_command's stdin when starting the process", Err: grove.ErrNotSupported}
	}
	if in.WaitMS < 0 || in.WaitMS > 30000 {
		return ProcessIOOutput{}, "", invalidf("wait_ms must be between 0 and 30000")
	}
	p, err := procs.get(c.ws, in.ProcessID)
	if err != nil {
		return ProcessIOOutput{}, "", err
	}
	if in.Kill {
		p.cancel()
		in.WaitMS = max(in.WaitMS, 5000)
	}
	if in.WaitMS > 0 {
		t := time.NewTimer(time.Duration(in.WaitMS) * time.Millisecond)
		select {
		case <-p.done:
		case <-t.C:
		case <-ctx.Done():
		}
		t.Stop()
	}
	out := p.poll()
	if !out.Running {
		procs.forget(p)
	}
	var b strings.Builder
	if out.Running {
		fmt.Fprintf(&b, "%s is running\n", out.ProcessID)
	} else if out.ExitCode != nil {
		fmt.Fprintf(&b, "%s exited with code %d", out.ProcessID, *out.ExitCode)
		if out.TimedOut {
			b.WriteString(" (timed out)")
		}
		b.WriteString("\n")
	}
	if out.Stdout != "" {
		b.WriteString("--- new stdout ---\n" + out.Stdout + "\n")
	}
	if out.Stderr != "" {
		b.WriteString("--- new stderr ---\n" + out.Stderr + "\n")
	}
	if out.Truncated {
		b.WriteString("[some output was dropped between polls; poll more often]\n")
	}
	return out, b.String(), nil
}
