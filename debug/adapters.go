package debug

import (
	"context"
	"regexp"
	"strings"
	"sync"
	"time"

	grove "github.com/grove-dev/grove"
)

// adapter is one kind of debug adapter Grove knows how to launch.
type adapter struct {
	name      string
	types     []string // launch.json types it serves
	languages []string
	// probe is a shell script that prints "path<TAB>version" and exits 0
	// when the adapter is there and starts; it looks only on the Host's
	// PATH so that the Host's environment decides what exists.
	probe string
	// evalContext is the evaluate context that gives values for
	// expressions: lldb-dap's "repl" may run an lldb command instead.
	evalContext string
}

var (
	lldbDAP = &adapter{
		name:        "lldb-dap",
		types:       []string{"lldb-dap", "lldb", "cppdbg"},
		languages:   []string{"c", "cpp", "rust"},
		evalContext: "watch",
		// lldb-dap 19 prints nothing for --version; --help proves it runs.
		probe: `for c in lldb-dap lldb-dap-21 lldb-dap-20 lldb-dap-19 lldb-dap-18 lldb-dap-17 lldb-dap-16 lldb-dap-15 lldb-vscode lldb-vscode-17 lldb-vscode-16 lldb-vscode-15; do
  p=$(command -v "$c") || continue
  "$p" --help >/dev/null 2>&1 || continue
  v=$("$p" --version 2>/dev/null | head -n 1)
  printf '%s\t%s\n' "$p" "$v"; exit 0
done; exit 1`,
	}
	delve = &adapter{
		name:        "dlv",
		types:       []string{"go"},
		languages:   []string{"go"},
		evalContext: "repl",
		probe: `p=$(command -v dlv) || exit 1
v=$("$p" version 2>/dev/null) || exit 1
printf '%s\t%s\n' "$p" "$(printf '%s\n' "$v" | sed -n 's/^Version: //p' | head -n 1)"`,
	}
	debugpy = &adapter{
		name:        "debugpy",
		types:       []string{"debugpy", "python"},
		languages:   []string{"python"},
		evalContext: "repl",
		// The first python on PATH may lack debugpy (pyenv) while the
		// system one has it: try each.
		probe: `for c in python3 /usr/bin/python3 python python3.14 python3.13 python3.12 python3.11 python3.10 python3.9 python3.8; do
  p=$(command -v "$c") || continue
  v=$("$p" -c 'import debugpy; print(debugpy.__version__)' 2>/dev/null) || continue
  printf '%s\t%s\n' "$p" "$v"; exit 0
done; exit 1`,
	}
	adapters = []*adapter{lldbDAP, delve, debugpy}
)

// adapterForType maps a launch.json type to its adapter.
func adapterForType(typ string) *adapter {
	for _, a := range adapters {
		for _, t := range a.types {
			if t == typ {
				return a
			}
		}
	}
	return nil
}

// adapterForLanguage maps a language to its adapter.
func adapterForLanguage(lang string) *adapter {
	switch strings.ToLower(lang) {
	case "c++", "cxx":
		lang = "cpp"
	case "golang":
		lang = "go"
	case "py", "python3":
		lang = "python"
	}
	for _, a := range adapters {
		for _, l := range a.languages {
			if l == lang {
				return a
			}
		}
	}
	return nil
}

// probeTTL is how long a probe's answer is trusted: long enough that a
// burst of starts probes once, short enough that installing an adapter is
// noticed.
const probeTTL = time.Minute

// probeTimeout bounds one probe. A missing adapter answers at once
// (command -v); this bounds only adapters that hang.
const probeTimeout = 10 * time.Second

type probeResult struct {
	path, version string
	err           error
	at            time.Time
}

type prober struct {
	h   Host
	now func() time.Time

	mu    sync.Mutex
	cache map[string]*probeResult
	// inflight lets concurrent callers share one probe.
	inflight map[string]chan struct{}
}

var digits = regexp.MustCompile(`(?:llvm-|-)(\d+)(?:/bin/[^/]*)?$`)

// probe reports where a's adapter is and its version, or
// ErrDebugAdapterUnavailable.
func (p *prober) probe(ctx context.Context, a *adapter) (path, version string, err error) {
	for {
		p.mu.Lock()
		if r := p.cache[a.name]; r != nil && p.now().Sub(r.at) < probeTTL {
			p.mu.Unlock()
			return r.path, r.version, r.err
		}
		if wait, ok := p.inflight[a.name]; ok {
			p.mu.Unlock()
			select {
			case <-wait:
				continue
			case <-ctx.Done():
				return "", "", grove.Errorf(grove.ErrTimeout, "probing %s: %v", a.name, ctx.Err())
			}
		}
		done := make(chan struct{})
		p.inflight[a.name] = done
		p.mu.Unlock()

		r := p.run(ctx, a)
		p.mu.Lock()
		delete(p.inflight, a.name)
		if ctx.Err() == nil { // a cancelled probe says nothing about the adapter
			p.cache[a.name] = r
		}
		p.mu.Unlock()
		close(done)
		return r.path, r.version, r.err
	}
}

func (p *prober) run(ctx context.Context, a *adapter) *probeResult {
	r := &probeResult{at: p.now()}
	stdout, stderr, code, err := p.h.Run(ctx, []string{"/bin/sh", "-c", a.probe}, probeTimeout)
	line := strings.TrimSpace(stdout)
	if err == nil && code == 0 && line != "" {
		path, version, _ := strings.Cut(strings.SplitN(line, "\n", 2)[0], "\t")
		version = strings.TrimSpace(version)
		if version == "" {
			if m := digits.FindStringSubmatch(path); m != nil {
				version = m[1]
			}
		}
		r.path, r.version = path, version
		return r
	}
	why := "not found on PATH or failed to start"
	if err != nil {
		why = err.Error()
	} else if s := strings.TrimSpace(stderr); s != "" {
		why += ": " + firstLine(s)
	}
	r.err = grove.Errorf(grove.ErrDebugAdapterUnavailable, "%s (%s) is not available here: %s", a.name, strings.Join(a.languages, ", "), why)
	return r
}

func firstLine(s string) string {
	s, _, _ = strings.Cut(s, "\n")
	if len(s) > 200 {
		s = s[:200]
	}
	return s
}
