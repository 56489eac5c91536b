package grove

import "context"

type remoteCallerKey struct{}

// WithRemoteCaller marks ctx as serving a caller that reached Grove over
// the network (the HTTP API, MCP over HTTP). Transports set it once, in
// their outermost handler, so every route carries it by construction; the
// engine then refuses such callers the server's disk as a repository
// source and fetches for them only from allow-listed hosts. A ctx without
// the mark is the in-process CLI: the operator on the machine itself.
func WithRemoteCaller(ctx context.Context) context.Context {
	return context.WithValue(ctx, remoteCallerKey{}, true)
}

// IsRemoteCaller reports whether ctx carries WithRemoteCaller.
func IsRemoteCaller(ctx context.Context) bool {
	v, _ := ctx.Value(remoteCallerKey{}).(bool)
	return v
}
