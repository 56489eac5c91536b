-- Grove's durable record, after the seeds' sandbox_repo_caches /
-- sandbox_workspaces / sandbox_runtimes; the same schema as the sqlite
-- adapter's, in PostgreSQL's types.
--
-- Times are BIGINT unix nanoseconds (UTC by definition, exact — timestamptz
-- keeps only microseconds — and they sort numerically); NULL means the zero
-- time.Time ("never"). Lists order NULLS FIRST, as SQLite does, so "never"
-- sorts before every real time on both adapters; the indexes say so too.

CREATE TABLE repo_caches (
	id              TEXT    NOT NULL PRIMARY KEY CHECK (id <> ''),
	host            TEXT    NOT NULL,
	owner           TEXT    NOT NULL,
	name            TEXT    NOT NULL,
	cache_key       TEXT    NOT NULL UNIQUE, -- grove.RepoID.Key(): host|owner/name
	url             TEXT    NOT NULL,        -- credential-free
	local_path      TEXT    NOT NULL,
	state           TEXT    NOT NULL,
	size_bytes      BIGINT  NOT NULL,
	last_fetched_at BIGINT,
	last_used_at    BIGINT,
	created_at      BIGINT,
	updated_at      BIGINT
);
CREATE INDEX repo_caches_created ON repo_caches (created_at NULLS FIRST, id);

CREATE TABLE workspaces (
	id            TEXT    NOT NULL PRIMARY KEY CHECK (id <> ''),
	ws_key        TEXT    NOT NULL UNIQUE CHECK (ws_key <> ''),
	-- No ON DELETE action: deleting a cache that workspaces still use
	-- fails, which the store reports as a conflict. CHECK constraints run
	-- before the foreign key, so an empty id is invalid, not "not found".
	repo_cache_id TEXT    NOT NULL REFERENCES repo_caches (id) CHECK (repo_cache_id <> ''),
	host          TEXT    NOT NULL,
	owner         TEXT    NOT NULL,
	name          TEXT    NOT NULL,
	user_id       TEXT    NOT NULL,
	project_id    TEXT    NOT NULL,
	mode          TEXT    NOT NULL,
	scope         TEXT    NOT NULL,
	base_ref      TEXT    NOT NULL,
	branch        TEXT    NOT NULL, -- '' when detached (analysis)
	head_sha      TEXT    NOT NULL,
	local_path    TEXT    NOT NULL, -- '' for remote providers
	state         TEXT    NOT NULL,
	dirty         BOOLEAN NOT NULL,
	pinned        BOOLEAN NOT NULL,
	size_bytes    BIGINT  NOT NULL,
	runtime_kind  TEXT    NOT NULL,
	created_at    BIGINT,
	updated_at    BIGINT,
	last_used_at  BIGINT
);

-- Two workspaces never hold the same branch of one repo; detached
-- workspaces (empty branch) are exempt.
CREATE UNIQUE INDEX workspaces_branch ON workspaces (repo_cache_id, branch) WHERE branch <> '';
-- Serves the foreign-key check on cache deletion and the RepoCacheID filter.
CREATE INDEX workspaces_repo_cache ON workspaces (repo_cache_id, created_at NULLS FIRST, id);
CREATE INDEX workspaces_user_project ON workspaces (user_id, project_id, created_at NULLS FIRST, id);
CREATE INDEX workspaces_created ON workspaces (created_at NULLS FIRST, id);

CREATE TABLE runtimes (
	-- One runtime per workspace. Runtime rows are disposable: they go
	-- with their workspace, never the other way round.
	workspace_id    TEXT    NOT NULL PRIMARY KEY CHECK (workspace_id <> '')
	                        REFERENCES workspaces (id) ON DELETE CASCADE,
	id              TEXT    NOT NULL, -- not unique: one container may host many workspaces
	kind            TEXT    NOT NULL,
	backend_id      TEXT    NOT NULL,
	image           TEXT    NOT NULL,
	state           TEXT    NOT NULL,
	last_started_at BIGINT,
	last_used_at    BIGINT,
	created_at      BIGINT,
	updated_at      BIGINT
);
