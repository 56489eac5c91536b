package tunnel

import (
	"context"
	"encoding/json"

	"github.com/grove-dev/grove"
)

// MaxListEntries bounds one /api/fs/list, as a server workspace's listing
// (provider/local.MaxListEntries).
const MaxListEntries = 5000

// list is grove.Service.ListDir on the directory: depth levels
// breadth-first (1 when 0, at most fsops.MaxDepth), .git skipped, symlinks
// listed but not followed below the path; more than MaxListEntries is
// E_TOO_LARGE.
func (l *Local) list(ctx context.Context, payload json.RawMessage) (any, error) {
	var req ListRequest
	if err := decode(payload, &req); err != nil {
		return nil, err
	}
	path := req.Path
	if path == "" {
		path = "."
	}
	ents, truncated, err := l.fs.ListDir(path, req.Depth, MaxListEntries)
	if err != nil {
		return nil, err
	}
	if truncated {
		return nil, grove.Errorf(grove.ErrTooLarge, "listing %q has more than %d entries; list a subdirectory or use a smaller depth", clip(req.Path, 200), MaxListEntries)
	}
	if ents == nil {
		ents = []grove.DirEntry{}
	}
	return ListResult{Entries: ents}, nil
}

// delete removes one file (never a directory: E_IS_DIRECTORY).
func (l *Local) delete(ctx context.Context, payload json.RawMessage) (any, error) {
	if l.ReadOnly {
		return nil, grove.Errorf(grove.ErrReadOnly, "this tunnel is read-only: deletes are refused")
	}
	var req DeleteRequest
	if err := decode(payload, &req); err != nil {
		return nil, err
	}
	if req.Path == "" {
		return nil, grove.Errorf(grove.ErrInvalid, "path is required")
	}
	return nil, l.fs.DeleteFile(req.Path)
}
