package daytonatest

import (
	"context"

	"github.com/grove-dev/grove"
)

// ExecAsRoot runs argv as root in a sandbox's container, outside any
// toolbox session (no Daytona API has this): for tests that must see all
// of a sandbox, such as searching every file and process for a token.
func (s *Server) ExecAsRoot(ctx context.Context, sandboxID string, argv ...string) (stdout, stderr []byte, code int, err error) {
	s.mu.Lock()
	b := s.sandboxes[sandboxID]
	s.mu.Unlock()
	if b == nil {
		return nil, nil, 0, grove.Errorf(grove.ErrNotFound, "daytonatest: sandbox %q", sandboxID)
	}
	return s.dexec(ctx, b, "root", "", nil, nil, argv...)
}
