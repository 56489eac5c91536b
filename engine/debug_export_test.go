package engine

import (
	"context"

	"github.com/grove-dev/grove/debug"
)

// DebugHost is the debug.Host the engine gives workspace id's manager, for
// tests that check what the host side can and cannot do without a DAP
// client.
func DebugHost(ctx context.Context, e *Engine, id string) (debug.Host, error) {
	ws, err := e.workspace(ctx, id)
	if err != nil {
		return nil, err
	}
	d, err := e.debugger(ctx, ws)
	if err != nil {
		return nil, err
	}
	return d.host, nil
}
