// TEMPORARY STUB (branch h/rtdebug only): the signatures of package debug
// as announced, so the engine compiles until the real package is merged.
// Drop this file when merging the real package.
package debug

import (
	"context"
	"io"
	"log/slog"
	"time"

	"github.com/grove-dev/grove"
)

type Process interface {
	io.Reader
	io.Writer
	Close() error
}

type Host interface {
	Root() string
	Run(ctx context.Context, argv []string, timeout time.Duration) (stdout, stderr string, exitCode int, err error)
	Spawn(ctx context.Context, argv []string, env map[string]string, dir string) (Process, error)
	ReadFile(ctx context.Context, rel string) ([]byte, error)
}

type Options struct {
	MaxSessions int
	Log         *slog.Logger
	Now         func() time.Time
}

type Manager struct{}

func NewManager(h Host, opt Options) *Manager { return &Manager{} }

var errStub = grove.Errorf(grove.ErrNotSupported, "debug: stub package")

func (m *Manager) Context(ctx context.Context) (*grove.DebugContext, error) { return nil, errStub }
func (m *Manager) Start(ctx context.Context, req grove.DebugStartRequest) (*grove.DebugSession, error) {
	return nil, errStub
}
func (m *Manager) Breakpoints(ctx context.Context, req grove.DebugBreakpointsRequest) (*grove.DebugBreakpointsResult, error) {
	return nil, errStub
}
func (m *Manager) Continue(ctx context.Context, req grove.DebugContinueRequest) (*grove.DebugSnapshot, error) {
	return nil, errStub
}
func (m *Manager) Step(ctx context.Context, req grove.DebugStepRequest) (*grove.DebugSnapshot, error) {
	return nil, errStub
}
func (m *Manager) Snapshot(ctx context.Context, req grove.DebugSnapshotRequest) (*grove.DebugSnapshot, error) {
	return nil, errStub
}
func (m *Manager) Evaluate(ctx context.Context, req grove.DebugEvaluateRequest) (*grove.DebugEvaluation, error) {
	return nil, errStub
}
func (m *Manager) Sessions(ctx context.Context) []grove.DebugSession { return nil }
func (m *Manager) Stop(ctx context.Context, session string) error    { return errStub }
func (m *Manager) Close() error                                      { return nil }
