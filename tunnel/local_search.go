package tunnel

import (
	"context"
	"encoding/json"

	"github.com/grove-dev/grove"
	"github.com/grove-dev/grove/fsops"
	"github.com/grove-dev/grove/search"
)

// search is grove.Service.Search on the directory: the same rg arguments,
// pages and errors as a server workspace's (search.InRuntime), run by the
// machine's rg in the directory with a clean environment. The path is
// first resolved through fsops, so a symlink out of the directory (or
// into .git) is E_PATH_OUTSIDE_WORKSPACE before rg, which follows a
// symlink named on its command line, sees it.
func (l *Local) search(ctx context.Context, payload json.RawMessage) (any, error) {
	var req grove.SearchRequest
	if err := decode(payload, &req); err != nil {
		return nil, err
	}
	if req.Pattern == "" {
		return nil, grove.Errorf(grove.ErrInvalid, "empty search pattern")
	}
	if req.Path != "" {
		var err error
		if req.Path, err = fsops.CleanPath(req.Path); err != nil {
			return nil, err
		}
		if _, err := l.fs.Stat(req.Path); err != nil {
			return nil, err
		}
	}
	return search.InRuntime(ctx, localExecer{l}, l.workspace, req)
}
