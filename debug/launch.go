package debug

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"sort"
	"strings"

	grove "github.com/grove-dev/grove"
)

// plan is a launch ready to send: which adapter, and the arguments of its
// launch (or attach) request.
type plan struct {
	adapter *adapter
	request string // "launch" or "attach"
	args    map[string]any
	program string // as shown in DebugSession.Program
	env     map[string]string
}

// buildPlan turns a start request into a plan: from an explicit
// configuration, a launch.json entry, or a language and program.
func (m *Manager) buildPlan(ctx context.Context, req grove.DebugStartRequest) (*plan, error) {
	root := m.h.Root()
	var cfg map[string]any
	switch {
	case len(req.Config) > 0:
		if err := json.Unmarshal(stripJSONC(req.Config), &cfg); err != nil || cfg == nil {
			return nil, grove.Errorf(grove.ErrInvalid, "config is not a JSON object")
		}
	case req.ConfigName != "":
		b, err := m.h.ReadFile(ctx, launchJSONPath)
		if errors.Is(err, grove.ErrNotFound) {
			return nil, grove.Errorf(grove.ErrNotFound, "configuration %q: the workspace has no %s", req.ConfigName, launchJSONPath)
		}
		if err != nil {
			return nil, err
		}
		configs, err := ParseLaunchJSON(b)
		if err != nil {
			return nil, err
		}
		for _, c := range configs {
			if c.Name == req.ConfigName {
				_ = json.Unmarshal(c.Raw, &cfg)
				break
			}
		}
		if cfg == nil {
			return nil, grove.Errorf(grove.ErrNotFound, "no configuration named %q in %s", req.ConfigName, launchJSONPath)
		}
	case req.Language != "":
		return languagePlan(root, req)
	default:
		return nil, grove.Errorf(grove.ErrInvalid, "give config, config_name, or language and program")
	}
	return configPlan(root, cfg, req)
}

// languagePlan builds the launch arguments each adapter expects for a
// plain "run this program".
func languagePlan(root string, req grove.DebugStartRequest) (*plan, error) {
	a := adapterForLanguage(req.Language)
	if a == nil {
		return nil, grove.Errorf(grove.ErrInvalid, "language %q: Grove debugs c, cpp, rust, go and python", req.Language)
	}
	if req.Program == "" {
		return nil, grove.Errorf(grove.ErrInvalid, "program is required with language")
	}
	cfg := map[string]any{
		"type":    a.types[0],
		"request": "launch",
		"program": req.Program,
	}
	if a == delve {
		cfg["mode"] = "debug"
	}
	return configPlan(root, cfg, req)
}

// configPlan completes a launch configuration: variables substituted,
// paths confined to the workspace, the request's program, arguments,
// environment and stopOnEntry merged in, and each adapter's settings that
// Grove's headless use needs.
func configPlan(root string, cfg map[string]any, req grove.DebugStartRequest) (*plan, error) {
	typ, _ := cfg["type"].(string)
	a := adapterForType(typ)
	if a == nil {
		return nil, grove.Errorf(grove.ErrDebugAdapterUnavailable, "configuration type %q: Grove launches lldb-dap (lldb-dap, lldb, cppdbg with MIMode lldb), dlv (go) and debugpy (debugpy, python)", typ)
	}
	if typ == "cppdbg" {
		if mode, _ := cfg["MIMode"].(string); mode != "lldb" {
			return nil, grove.Errorf(grove.ErrDebugAdapterUnavailable, "cppdbg with MIMode %q needs Microsoft's cpptools adapter, which Grove does not run; use type lldb-dap or MIMode lldb", mode)
		}
	}
	request, _ := cfg["request"].(string)
	if request == "" {
		request = "launch"
	}
	if request != "launch" && request != "attach" {
		return nil, grove.Errorf(grove.ErrInvalid, "request %q: want launch or attach", request)
	}

	file := req.Program
	if file == "" {
		file, _ = cfg["program"].(string)
	}
	sub, err := substitute(cfg, root, file)
	if err != nil {
		return nil, err
	}
	cfg = sub.(map[string]any)

	if req.Program != "" {
		cfg["program"] = req.Program
	}
	if len(req.Args) > 0 {
		args := make([]any, len(req.Args))
		for i, s := range req.Args {
			args[i] = s
		}
		cfg["args"] = args
	}
	if req.Cwd != "" {
		cfg["cwd"] = req.Cwd
	}
	if req.StopOnEntry {
		cfg["stopOnEntry"] = true
	}
	for _, k := range []string{"program", "cwd"} {
		if v, ok := cfg[k].(string); ok && v != "" {
			p, err := confine(root, v)
			if err != nil {
				return nil, grove.Errorf(grove.ErrPathOutside, "%s %q is outside the workspace", k, v)
			}
			cfg[k] = p
		}
	}
	if _, ok := cfg["cwd"]; !ok {
		cfg["cwd"] = root
	}
	env, err := mergeEnv(cfg, req.Env)
	if err != nil {
		return nil, err
	}

	// Grove is headless: no terminal to run the program in, so its output
	// must come back as output events.
	switch a {
	case lldbDAP:
		cfg["type"] = "lldb-dap"
		delete(cfg, "MIMode")
		delete(cfg, "miDebuggerPath")
		delete(cfg, "runInTerminal")
		// lldb-dap 19 takes the environment as "NAME=value" strings.
		if len(env) > 0 {
			list := make([]any, 0, len(env))
			for _, k := range sortedKeys(env) {
				list = append(list, k+"="+env[k])
			}
			cfg["env"] = list
		}
	case delve:
		cfg["console"] = "internalConsole"
		cfg["outputMode"] = "remote"
		if _, ok := cfg["mode"]; !ok && request == "launch" {
			cfg["mode"] = "debug"
		}
		if env != nil {
			cfg["env"] = toAny(env)
		}
	case debugpy:
		cfg["type"] = "debugpy"
		cfg["console"] = "internalConsole"
		if env != nil {
			cfg["env"] = toAny(env)
		}
	}
	if cfg["name"] == nil {
		cfg["name"] = "grove"
	}
	cfg["request"] = request

	program, _ := cfg["program"].(string)
	if program == "" {
		program, _ = cfg["module"].(string)
	}
	if rel, err := filepath.Rel(root, program); err == nil && !strings.HasPrefix(rel, "..") && filepath.IsAbs(program) {
		program = rel
	}
	return &plan{adapter: a, request: request, args: cfg, program: program, env: env}, nil
}

// substitute replaces VS Code's variables in every string of v.
// ${file} is the program being debugged: there is no editor here.
func substitute(v any, root, file string) (any, error) {
	switch t := v.(type) {
	case string:
		s := t
		s = strings.ReplaceAll(s, "${workspaceFolder}", root)
		s = strings.ReplaceAll(s, "${workspaceRoot}", root)
		s = strings.ReplaceAll(s, "${workspaceFolderBasename}", filepath.Base(root))
		if strings.Contains(s, "${file}") {
			if file == "" || strings.Contains(file, "${file}") {
				return nil, grove.Errorf(grove.ErrInvalid, "the configuration uses ${file}; give program to say which file")
			}
			f, err := confine(root, file)
			if err != nil {
				return nil, err
			}
			s = strings.ReplaceAll(s, "${file}", f)
		}
		if i := strings.Index(s, "${"); i >= 0 && !strings.HasPrefix(s[i:], "${env:") {
			end := strings.IndexByte(s[i:], '}')
			name := s[i:]
			if end > 0 {
				name = s[i : i+end+1]
			}
			return nil, grove.Errorf(grove.ErrInvalid, "variable %s is not supported here (only ${workspaceFolder}, ${workspaceRoot}, ${file})", name)
		}
		return s, nil
	case map[string]any:
		out := make(map[string]any, len(t))
		for k, e := range t {
			r, err := substitute(e, root, file)
			if err != nil {
				return nil, err
			}
			out[k] = r
		}
		return out, nil
	case []any:
		out := make([]any, len(t))
		for i, e := range t {
			r, err := substitute(e, root, file)
			if err != nil {
				return nil, err
			}
			out[i] = r
		}
		return out, nil
	}
	return v, nil
}

// mergeEnv reads a configuration's environment, in any of the shapes
// launch.json uses (an object; "NAME=value" strings; cppdbg's
// {name, value} list), and adds the request's on top. nil: none at all.
func mergeEnv(cfg map[string]any, add map[string]string) (map[string]string, error) {
	var env map[string]string
	switch t := cfg["env"].(type) {
	case nil:
	case map[string]any:
		env = map[string]string{}
		for k, v := range t {
			env[k] = fmt.Sprint(v)
		}
	case []any:
		env = map[string]string{}
		for _, e := range t {
			switch e := e.(type) {
			case string:
				k, v, _ := strings.Cut(e, "=")
				env[k] = v
			case map[string]any:
				k, _ := e["name"].(string)
				env[k] = fmt.Sprint(e["value"])
			}
		}
	default:
		return nil, grove.Errorf(grove.ErrInvalid, "env: want an object")
	}
	if cfgEnv, ok := cfg["environment"].([]any); ok { // cppdbg's name for it
		if env == nil {
			env = map[string]string{}
		}
		for _, e := range cfgEnv {
			if e, ok := e.(map[string]any); ok {
				k, _ := e["name"].(string)
				env[k] = fmt.Sprint(e["value"])
			}
		}
		delete(cfg, "environment")
	}
	if len(add) > 0 && env == nil {
		env = map[string]string{}
	}
	for k, v := range add {
		env[k] = v
	}
	return env, nil
}

func toAny(env map[string]string) map[string]any {
	out := make(map[string]any, len(env))
	for k, v := range env {
		out[k] = v
	}
	return out
}

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
