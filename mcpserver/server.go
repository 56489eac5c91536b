// Package mcpserver serves Grove's agent tool catalog (package tools) over
// the Model Context Protocol with the official Go SDK, on stdio or
// streamable HTTP.
//
// A server is either bound to one workspace — workspace_id is hidden from
// every tool and the agent cannot name another workspace — or unbound, and
// then every workspace tool requires workspace_id and workspace_open is
// offered. Tool errors are results with isError and the "E_CODE: message.
// Hint: …" text, never protocol errors; successful calls carry the model's
// text in content and the typed result in structuredContent. Long tools
// send progress notifications when the client gave a progress token, and a
// cancelled request cancels the call's context (the command's process
// group dies).
package mcpserver

import (
	"context"
	"encoding/json"
	"net/http"
	"time"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/grove-dev/grove"
	"github.com/grove-dev/grove/tools"
)

// Options configure a server.
type Options struct {
	// Tools is the catalog; required. One Toolset serves many servers (it
	// holds background processes, so it outlives sessions).
	Tools *tools.Toolset
	// WorkspaceID binds the server to one workspace; empty means unbound.
	WorkspaceID string
	// Writable says whether the bound workspace may be written, which
	// decides whether write tools are listed. Nil: ask the Service.
	Writable *bool
	// Caller is the authenticated user and their per-call git token. The
	// transport sets it; it never comes from tool input.
	Caller tools.Caller
	// Name and Version identify the server to clients.
	Name, Version string
	// CancelWith, when set, also cancels every tool call when it ends.
	// Stateless HTTP sets it to the request's context: the request is the
	// call's whole life, a client that closed it will never read the
	// result, and a notifications/cancelled sent on another request cannot
	// reach this one's session.
	CancelWith context.Context
	// Gate, when set, admits every tool call (each call of a JSON-RPC
	// batch on its own): it returns the context the call runs under — the
	// transport may tie it to more than the SDK's, such as its request
	// and the caller's key — and a release func for when the call ends;
	// or the error the call answers with instead (a tool error result).
	Gate func(ctx context.Context, tool string) (context.Context, func(), error)
}

// NewServer returns an MCP server exposing the catalog.
func NewServer(svc grove.Service, opt Options) *mcp.Server {
	if opt.Name == "" {
		opt.Name = "grove"
	}
	if opt.Version == "" {
		opt.Version = "dev"
	}
	s := mcp.NewServer(&mcp.Implementation{Name: opt.Name, Version: opt.Version}, &mcp.ServerOptions{
		Instructions: instructions(opt.WorkspaceID != ""),
	})
	bound := opt.WorkspaceID != ""
	writable := true
	if bound {
		writable = isWritable(svc, opt)
	}
	for _, t := range opt.Tools.Catalog(writable) {
		if bound && t.Unbound {
			continue
		}
		addTool(s, svc, opt, t, bound)
	}
	if !writable {
		s.AddReceivingMiddleware(refuseWriteTools(opt.Tools))
	}
	return s
}

// refuseWriteTools answers a call to a write tool that a read-only
// workspace does not list the way every other transport does — a tool
// error E_READ_ONLY_WORKSPACE — rather than the protocol's "unknown tool",
// which would send the agent looking for a typo.
func refuseWriteTools(ts *tools.Toolset) mcp.Middleware {
	return func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			if method != "tools/call" {
				return next(ctx, method, req)
			}
			p, ok := req.GetParams().(*mcp.CallToolParamsRaw)
			if !ok {
				return next(ctx, method, req)
			}
			if t, ok := ts.Lookup(p.Name); ok && t.Write {
				return errorResult(&tools.Error{Code: "E_READ_ONLY_WORKSPACE", Msg: "workspace is read-only (analysis mode); " + t.Name + " changes it",
					Hint: "open an edit or task workspace with workspace_open to make changes", Err: grove.ErrReadOnly}), nil
			}
			return next(ctx, method, req)
		}
	}
}

func instructions(bound bool) string {
	if bound {
		return "Tools act on one git workspace; paths are relative to its root. Read before you edit, run the tests after."
	}
	return "Open a workspace with workspace_open, then pass its id as workspace_id to every other tool. Paths are relative to the workspace root."
}

func isWritable(svc grove.Service, opt Options) bool {
	if opt.Writable != nil {
		return *opt.Writable
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	ws, err := svc.Get(ctx, opt.WorkspaceID)
	// When in doubt list fewer tools; every write path checks again.
	return err == nil && ws.Capabilities().Writable
}

func addTool(s *mcp.Server, svc grove.Service, opt Options, t *tools.Tool, bound bool) {
	in := t.InputSchema
	needsWS := !bound && !t.Unbound
	if needsWS {
		in = withWorkspaceID(in)
	}
	open := t.Annotations.OpenWorld
	destructive := t.Annotations.Destructive
	s.AddTool(&mcp.Tool{
		Name: t.Name, Title: t.Title, Description: t.Description,
		InputSchema: in, OutputSchema: t.OutputSchema,
		Annotations: &mcp.ToolAnnotations{
			Title:           t.Title,
			ReadOnlyHint:    t.Annotations.ReadOnly,
			DestructiveHint: &destructive,
			IdempotentHint:  t.Annotations.Idempotent,
			OpenWorldHint:   &open,
		},
	}, func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		if opt.CancelWith != nil {
			var cancel context.CancelFunc
			ctx, cancel = context.WithCancel(ctx)
			defer cancel()
			defer context.AfterFunc(opt.CancelWith, cancel)()
		}
		args := req.Params.Arguments
		wsID := opt.WorkspaceID
		if needsWS {
			var err error
			if wsID, args, err = splitWorkspaceID(args); err != nil {
				return errorResult(err), nil
			}
		}
		if opt.Gate != nil {
			gctx, release, err := opt.Gate(ctx, t.Name)
			if err != nil {
				return errorResult(err), nil
			}
			defer release()
			ctx = gctx
		}
		progress := progressFunc(ctx, req)
		res, err := opt.Tools.Call(tools.WithCaller(ctx, opt.Caller), svc, wsID, t.Name, args, progress)
		if err != nil {
			return errorResult(err), nil
		}
		return &mcp.CallToolResult{
			Content:           []mcp.Content{&mcp.TextContent{Text: res.Text}},
			StructuredContent: res.Structured,
		}, nil
	})
}

func errorResult(err error) *mcp.CallToolResult {
	return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: err.Error()}}}
}

// withWorkspaceID adds the required workspace_id property for unbound
// servers.
func withWorkspaceID(s *jsonschema.Schema) *jsonschema.Schema {
	c := s.CloneSchemas()
	if c.Properties == nil {
		c.Properties = map[string]*jsonschema.Schema{}
	}
	c.Properties["workspace_id"] = &jsonschema.Schema{Type: "string", Description: "id of the workspace, from workspace_open"}
	c.Required = append([]string{"workspace_id"}, c.Required...)
	c.PropertyOrder = append([]string{"workspace_id"}, c.PropertyOrder...)
	return c
}

// splitWorkspaceID takes workspace_id out of the arguments; the rest goes
// to the tool, whose schema knows nothing of it.
func splitWorkspaceID(args json.RawMessage) (string, json.RawMessage, error) {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(args, &m); err != nil || m == nil {
		return "", nil, &tools.Error{Code: "E_INVALID_ARGUMENT", Msg: "arguments must be a JSON object with workspace_id", Hint: "open a workspace with workspace_open and pass its id", Err: grove.ErrInvalid}
	}
	var id string
	if raw, ok := m["workspace_id"]; !ok || json.Unmarshal(raw, &id) != nil || id == "" {
		return "", nil, &tools.Error{Code: "E_INVALID_ARGUMENT", Msg: "workspace_id (a string) is required", Hint: "open a workspace with workspace_open and pass its id", Err: grove.ErrInvalid}
	}
	delete(m, "workspace_id")
	rest, err := json.Marshal(m)
	return id, rest, err
}

// progressFunc sends progress notifications when the client asked for
// them with a progress token, and does nothing otherwise.
func progressFunc(ctx context.Context, req *mcp.CallToolRequest) tools.Progress {
	token := req.Params.GetProgressToken()
	if token == nil || req.Session == nil {
		return nil
	}
	last := -1.0
	return func(done, total float64, msg string) {
		// The protocol wants progress to increase with every notification.
		if done <= last {
			done = last + 0.001
		}
		last = done
		_ = req.Session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{ProgressToken: token, Progress: done, Total: total, Message: msg})
	}
}

// ServeStdio runs a server on stdin/stdout until the client disconnects or
// ctx ends.
func ServeStdio(ctx context.Context, svc grove.Service, opt Options) error {
	return NewServer(svc, opt).Run(ctx, &mcp.StdioTransport{})
}

// HTTPHandler serves streamable HTTP. options is called for each request
// and returns the server options for it (the binding and the authenticated
// caller), or an error to refuse it — with the status the error's kind
// maps to, so authentication stays with the transport that mounts this.
//
// The handler is stateless (no Mcp-Session-Id): every request is
// authenticated on its own, so a session id can never carry one caller's
// binding to another. Progress still streams on the request's SSE
// response, and closing the request cancels the call.
func HTTPHandler(svc grove.Service, options func(*http.Request) (Options, error)) http.Handler {
	h := &httpHandler{options: options}
	h.mcp = mcp.NewStreamableHTTPHandler(func(r *http.Request) *mcp.Server {
		o, ok := r.Context().Value(optKey{}).(Options)
		if !ok {
			return nil
		}
		o.CancelWith = r.Context()
		return NewServer(svc, o)
	}, StreamableOptions())
	return h
}

// StreamableOptions are the streamable HTTP options Grove serves MCP
// with: stateless, and a call's handler context ends with its request for
// every protocol version (the SDK's PropagateRequestCancellation covers
// 2026-07-28 and later; Options.CancelWith covers the older ones).
func StreamableOptions() *mcp.StreamableHTTPOptions {
	return &mcp.StreamableHTTPOptions{Stateless: true, PropagateRequestCancellation: true}
}

type httpHandler struct {
	options func(*http.Request) (Options, error)
	mcp     http.Handler
}

type optKey struct{}

func (h *httpHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	opt, err := h.options(r)
	if err != nil {
		http.Error(w, tools.Code(err)+": "+err.Error(), statusOf(err))
		return
	}
	// A caller over HTTP is a network caller (grove.WithRemoteCaller).
	ctx := grove.WithRemoteCaller(r.Context())
	h.mcp.ServeHTTP(w, r.WithContext(context.WithValue(ctx, optKey{}, opt)))
}

func statusOf(err error) int {
	switch grove.KindOf(err) {
	case grove.ErrUnauthorized, grove.ErrAuthFailed:
		return http.StatusUnauthorized
	case grove.ErrNotFound, grove.ErrForbidden:
		// Someone else's workspace is indistinguishable from none.
		return http.StatusNotFound
	case grove.ErrInvalid:
		return http.StatusBadRequest
	}
	return http.StatusInternalServerError
}
