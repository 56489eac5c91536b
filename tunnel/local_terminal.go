package tunnel

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"time"
)

// DefaultTmuxSocket is the tmux socket name (tmux -L) of the agent's
// terminal: a server of its own, so Grove never touches the developer's
// default tmux server. tmux places it under $TMUX_TMPDIR (default /tmp)
// in tmux-<uid>/.
const DefaultTmuxSocket = "grove-tunnel"

// maxMirrorBytes bounds the terminal's log file; past it the file starts
// over (tail -F follows the truncation).
const maxMirrorBytes = 32 << 20

// terminal makes the agent's commands visible to the developer: each
// command that is not hidden, its output and its exit are appended to a
// log file, and a detached tmux session grove-<workspace> follows that
// file with tail -F. The command itself never runs in tmux: it runs under
// the agent's own process control (exit code, timeout, separate streams);
// tmux only shows it. Without tmux the log file alone is the view.
type terminal struct {
	log     *slog.Logger
	path    string // the log file
	dir     string // its private directory, removed at close
	tmux    string // the tmux binary, "" without tmux
	socket  string
	session string // tmux session name, "" without tmux

	mu   sync.Mutex
	f    *os.File
	size int64
}

// TerminalOptions configure the agent's terminal mirror.
type TerminalOptions struct {
	// Disabled turns the mirror off: commands run unseen, as hidden ones.
	Disabled bool
	// TmuxSocket is the tmux -L socket name (default DefaultTmuxSocket).
	TmuxSocket string
	// NoTmux keeps to the log file even when tmux is installed.
	NoTmux bool
}

// tmuxSessionName is grove-<workspace> with the characters tmux does not
// allow in a session name ('.' and ':') replaced by '_'.
func tmuxSessionName(workspace string) string {
	return "grove-" + strings.NewReplacer(".", "_", ":", "_").Replace(workspace)
}

func openTerminal(workspace, workDir string, o TerminalOptions, log *slog.Logger) (*terminal, error) {
	dir, err := os.MkdirTemp("", "grove-tunnel-term-")
	if err != nil {
		return nil, err
	}
	t := &terminal{log: log, dir: dir, path: filepath.Join(dir, tmuxSessionName(workspace)+".log")}
	if t.f, err = os.OpenFile(t.path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600); err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	fmt.Fprintf(t.f, "# grove tunnel %q: the agent's commands and their output appear here.\n", workspace)
	if o.NoTmux {
		return t, nil
	}
	bin, err := exec.LookPath("tmux")
	if err != nil {
		return t, nil
	}
	t.tmux, t.socket, t.session = bin, o.TmuxSocket, tmuxSessionName(workspace)
	if t.socket == "" {
		t.socket = DefaultTmuxSocket
	}
	// The pane follows the log; a session of that name left by an earlier
	// agent is reused (respawned), so a developer attached to it stays.
	pane := []string{"tail", "-n", "+1", "-F", "--", t.path}
	if t.run("has-session", "-t", "="+t.session) == nil {
		err = t.run(append([]string{"respawn-pane", "-k", "-t", "=" + t.session + ":", "-c", workDir}, pane...)...)
	} else {
		err = t.run(append([]string{"new-session", "-d", "-s", t.session, "-x", "200", "-y", "50", "-c", workDir}, pane...)...)
	}
	if err != nil {
		log.Warn("tunnel: tmux session not started; the log file alone shows the commands", "err", err, "log_file", t.path)
		t.tmux, t.session = "", ""
	}
	return t, nil
}

// run runs one tmux command on the agent's socket, with the agent's
// environment minus its API key and without $TMUX (the agent may itself
// run inside the developer's tmux).
func (t *terminal) run(args ...string) error {
	_, err := t.output(args...)
	return err
}

func (t *terminal) output(args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, t.tmux, append([]string{"-L", t.socket}, args...)...)
	var env []string
	for _, kv := range agentEnv() {
		if !strings.HasPrefix(kv, "TMUX=") && !strings.HasPrefix(kv, "TMUX_PANE=") {
			env = append(env, kv)
		}
	}
	cmd.Env = env
	out, err := cmd.CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("tmux %s: %v: %s", args[0], err, strings.TrimSpace(string(out)))
	}
	return string(out), nil
}

// Where says how the developer watches, for the agent's startup log.
func (t *terminal) Where() string {
	if t.session != "" {
		return fmt.Sprintf("tmux -L %s attach -t %s   (or: tail -f %s)", t.socket, t.session, t.path)
	}
	return "tail -f " + t.path
}

func (t *terminal) write(b []byte) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.f == nil {
		return
	}
	if t.size+int64(len(b)) > maxMirrorBytes {
		// Start over: tail -F notices the truncation and goes on.
		if err := t.f.Truncate(0); err == nil {
			t.size = 0
			n, _ := t.f.WriteString("# grove tunnel: the log reached its size limit and started over\n")
			t.size += int64(n)
		}
	}
	n, _ := t.f.Write(b)
	t.size += int64(n)
}

// begin shows a command starting; the returned mirrorCmd shows its
// output and its end.
func (t *terminal) begin(cmdline, note string) *mirrorCmd {
	if t == nil {
		return nil
	}
	if note != "" {
		note = "   # " + note
	}
	t.write([]byte("\n$ " + cmdline + note + "\n"))
	return &mirrorCmd{t: t}
}

// mirrorCmd is one command's part of the terminal.
type mirrorCmd struct {
	t       *terminal
	mu      sync.Mutex
	lastNL  bool
	written bool
}

func (m *mirrorCmd) output(b []byte) {
	if m == nil || len(b) == 0 {
		return
	}
	m.mu.Lock()
	m.written, m.lastNL = true, b[len(b)-1] == '\n'
	m.mu.Unlock()
	m.t.write(b)
}

func (m *mirrorCmd) end(r ExecResult, omitted bool) {
	if m == nil {
		return
	}
	m.mu.Lock()
	nl := ""
	if m.written && !m.lastNL {
		nl = "\n"
	}
	m.mu.Unlock()
	var parts []string
	if r.TimedOut {
		parts = append(parts, "timed out")
	}
	parts = append(parts, fmt.Sprintf("exit %d", r.ExitCode), fmt.Sprintf("%d ms", r.DurationMS))
	if omitted {
		parts = append(parts, fmt.Sprintf("output past the cap not shown: %d bytes", r.StdoutOmitted+r.StderrOmitted))
	}
	m.t.write([]byte(nl + "[" + strings.Join(parts, ", ") + "]\n"))
}

// close ends the tmux session and removes the log.
func (t *terminal) close() {
	if t == nil {
		return
	}
	// The session is ended only while it still shows this agent's log: a
	// newer agent of the same name may have taken it over.
	if t.session != "" {
		if out, err := t.output("display-message", "-p", "-t", "="+t.session+":", "#{pane_start_command}"); err == nil && strings.Contains(out, t.path) {
			if err := t.run("kill-session", "-t", "="+t.session); err != nil {
				t.log.Debug("tunnel: tmux session not killed", "err", err)
			}
		}
	}
	t.mu.Lock()
	if t.f != nil {
		t.f.Close()
		t.f = nil
	}
	t.mu.Unlock()
	os.RemoveAll(t.dir)
}

// shellQuote renders argv as a shell would need it typed, for the
// terminal's header line.
func shellQuote(argv []string) string {
	var b strings.Builder
	for i, a := range argv {
		if i > 0 {
			b.WriteByte(' ')
		}
		if a != "" && strings.Trim(a, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_./=:,+@%") == "" {
			b.WriteString(a)
			continue
		}
		b.WriteString("'" + strings.ReplaceAll(a, "'", `'\''`) + "'")
	}
	return b.String()
}
