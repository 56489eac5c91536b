// Package tools is Grove's agent tool catalog (design/TOOLS.md): one
// transport-neutral definition per tool — name, a description written for
// a model, input and output JSON schemas derived from Go types,
// annotations, and a handler over grove.Service. The MCP server, the HTTP
// API's tool endpoint and any function-calling framework share it.
//
// Handlers return text for the model (numbered lines, diffs, snippets) and a
// typed result matching the output schema. Errors are values the model can
// act on: "E_CODE: message. Hint: …" (see Error).
package tools

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"strconv"
	"strings"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/grove-dev/grove"
)

// Annotations are the MCP tool hints; each tool sets them truthfully.
type Annotations struct {
	ReadOnly    bool
	Destructive bool
	Idempotent  bool
	OpenWorld   bool
}

// Progress reports long work: done out of total (0: unknown) with a short
// message. Handlers call it from the calling goroutine only.
type Progress func(done, total float64, msg string)

// Handler runs one tool call against workspaceID. input has already been
// validated against the tool's input schema.
type Handler func(ctx context.Context, svc grove.Service, workspaceID string, input json.RawMessage, progress Progress) (*Result, error)

// Result is a successful tool call.
type Result struct {
	// Text is what the model reads.
	Text string
	// Structured is the typed result; it marshals to JSON matching the
	// tool's output schema.
	Structured any
}

// Tool is one catalog entry.
type Tool struct {
	Name        string
	Title       string
	Description string
	Annotations Annotations
	// Write tools change the workspace (or the world) and are listed only
	// for writable workspaces.
	Write bool
	// Unbound tools take no workspace: they are offered only by servers
	// not bound to one (workspace_open).
	Unbound      bool
	InputSchema  *jsonschema.Schema
	OutputSchema *jsonschema.Schema
	Handler      Handler

	input *jsonschema.Resolved
}

// Toolset is the catalog plus the state some tools keep between calls
// (background processes). Create one per server with New and Close it on
// shutdown; it is safe for concurrent use.
type Toolset struct {
	tools  []*Tool
	byName map[string]*Tool
	procs  *processes
}

// Options tune a Toolset.
type Options struct {
	// MaxProcesses bounds background processes in total (default 64),
	// MaxProcessesPerUser per caller (default 8) and
	// MaxProcessesPerWorkspace per workspace (default 4).
	MaxProcesses             int
	MaxProcessesPerUser      int
	MaxProcessesPerWorkspace int
}

// New builds the catalog.
func New(opt Options) *Toolset {
	ts := &Toolset{byName: map[string]*Tool{}, procs: newProcesses(opt.MaxProcesses, opt.MaxProcessesPerWorkspace, opt.MaxProcessesPerUser)}
	for _, t := range ts.definitions() {
		ts.tools = append(ts.tools, t)
		ts.byName[t.Name] = t
	}
	return ts
}

// Close kills background processes and waits for them to end.
func (ts *Toolset) Close() { ts.procs.close() }

// Catalog lists the tools for a workspace; a read-only workspace gets no
// write tools. The Tools are shared: do not modify them.
func (ts *Toolset) Catalog(writable bool) []*Tool {
	var out []*Tool
	for _, t := range ts.tools {
		if t.Write && !writable {
			continue
		}
		out = append(out, t)
	}
	return out
}

// Lookup returns the named tool.
func (ts *Toolset) Lookup(name string) (*Tool, bool) {
	t, ok := ts.byName[name]
	return t, ok
}

// Call validates input against the tool's schema and runs it. Every error
// is an *Error: unknown tool E_NOT_FOUND, bad input E_INVALID_ARGUMENT,
// a write tool on a read-only workspace E_READ_ONLY_WORKSPACE.
func (ts *Toolset) Call(ctx context.Context, svc grove.Service, workspaceID, name string, input json.RawMessage, progress Progress) (*Result, error) {
	t, ok := ts.byName[name]
	if !ok {
		return nil, &Error{Code: "E_NOT_FOUND", Msg: fmt.Sprintf("unknown tool %q", clip(name, 64)), Hint: "list the tools to see their names", Err: grove.ErrNotFound}
	}
	if err := t.validate(input); err != nil {
		return nil, err
	}
	if progress == nil {
		progress = func(float64, float64, string) {}
	}
	if !t.Unbound {
		if workspaceID == "" {
			return nil, invalidf("workspace_id is required")
		}
		if t.Write {
			ws, err := svc.Get(ctx, workspaceID)
			if err != nil {
				return nil, asError(workspaceNotFound(ctx, svc, workspaceID, err))
			}
			if err := ws.RequireWritable(); err != nil {
				return nil, asError(err)
			}
		}
	}
	res, err := t.Handler(ctx, svc, workspaceID, input, progress)
	if err != nil {
		if !t.Unbound {
			err = workspaceNotFound(ctx, svc, workspaceID, err)
		}
		return nil, asError(err)
	}
	return res, nil
}

// validate checks input against the input schema: unknown fields, wrong
// types and missing required fields are E_INVALID_ARGUMENT.
func (t *Tool) validate(input json.RawMessage) error {
	v := map[string]any{}
	if len(bytes.TrimSpace(input)) > 0 && !bytes.Equal(bytes.TrimSpace(input), []byte("null")) {
		if err := json.Unmarshal(input, &v); err != nil {
			return invalidf("input must be a JSON object: %v", err)
		}
	}
	if err := t.input.Validate(v); err != nil {
		return invalidf("input does not match the schema of %s: %v", t.Name, err)
	}
	return nil
}

// define builds a Tool from typed input and output: the schemas come from
// the Go types, and the handler decodes input into In.
func define[In, Out any](d Tool, h func(ctx context.Context, c *call, in In) (Out, string, error)) *Tool {
	t := d
	in, err := jsonschema.For[In](nil)
	if err != nil {
		panic(fmt.Sprintf("tools: schema of %s input: %v", d.Name, err))
	}
	out, err := jsonschema.For[Out](nil)
	if err != nil {
		panic(fmt.Sprintf("tools: schema of %s output: %v", d.Name, err))
	}
	if in.Properties == nil {
		// A tool without inputs still takes an (empty) object.
		in.Properties = map[string]*jsonschema.Schema{}
	}
	setMinimums(in, reflect.TypeFor[In]())
	t.InputSchema, t.OutputSchema = in, out
	if t.input, err = in.Resolve(nil); err != nil {
		panic(fmt.Sprintf("tools: resolve %s input schema: %v", d.Name, err))
	}
	t.Handler = func(ctx context.Context, svc grove.Service, ws string, raw json.RawMessage, p Progress) (*Result, error) {
		var v In
		if len(bytes.TrimSpace(raw)) > 0 {
			dec := json.NewDecoder(bytes.NewReader(raw))
			dec.DisallowUnknownFields()
			if err := dec.Decode(&v); err != nil {
				return nil, invalidf("input: %v", err)
			}
		}
		out, text, err := h(ctx, &call{svc: svc, ws: ws, progress: p}, v)
		if err != nil {
			return nil, err
		}
		return &Result{Text: text, Structured: normalize(out)}, nil
	}
	return &t
}

// setMinimums gives every integer input a "minimum": 0, or the field's
// `minimum:"N"` tag, so a negative count or offset fails the schema on
// every transport, and the model sees the bound. An omitted field is not
// checked: its zero value means "the default".
func setMinimums(s *jsonschema.Schema, t reflect.Type) {
	if t.Kind() != reflect.Struct {
		return
	}
	for i := range t.NumField() {
		f := t.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		prop := s.Properties[name]
		if prop == nil || !f.IsExported() {
			continue
		}
		switch f.Type.Kind() {
		case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		default:
			continue
		}
		m := 0.0
		if v := f.Tag.Get("minimum"); v != "" {
			n, err := strconv.Atoi(v)
			if err != nil {
				panic(fmt.Sprintf("tools: field %s: minimum tag %q", f.Name, v))
			}
			m = float64(n)
		}
		prop.Minimum = &m
	}
}

// normalize turns nil slices in a struct's top level into empty ones, so
// structured results say [] rather than null to the model.
func normalize(v any) any {
	rv := reflect.ValueOf(v)
	if rv.Kind() != reflect.Struct {
		return v
	}
	cp := reflect.New(rv.Type()).Elem()
	cp.Set(rv)
	for i := range cp.NumField() {
		f := cp.Field(i)
		if f.Kind() == reflect.Slice && f.IsNil() && f.CanSet() {
			f.Set(reflect.MakeSlice(f.Type(), 0, 0))
		}
	}
	return cp.Interface()
}

// call is what a typed handler gets besides its input.
type call struct {
	svc      grove.Service
	ws       string
	progress Progress
}

// Names lists tool names in catalog order.
func Names(ts []*Tool) []string {
	var out []string
	for _, t := range ts {
		out = append(out, t.Name)
	}
	return out
}
