package httpapi

import "github.com/grove-dev/grove/wire"

// The wire types live in package wire so the Go client does not import
// the server. These aliases keep the handlers' names short.
type (
	AcquireBody     = wire.AcquireBody
	EnsureRepoBody  = wire.EnsureRepoBody
	PinBody         = wire.PinBody
	ExecBody        = wire.ExecBody
	ExecResponse    = wire.ExecResponse
	ChunkEvent      = wire.ChunkEvent
	PushBody        = wire.PushBody
	ToolResponse    = wire.ToolResponse
	WorkspaceList   = wire.WorkspaceList
	RepoList        = wire.RepoList
	Tree            = wire.Tree
	CommitLog       = wire.CommitLog
	ErrorBody       = wire.ErrorBody
	ErrorDetail     = wire.ErrorDetail
	PullRequestBody = wire.PullRequestBody
	PullCommentBody = wire.PullCommentBody
)
