-- HTTP API keys. Only the SHA-256 of a key's secret is stored; the secret
-- is shown once by `grove keys create`.

CREATE TABLE api_keys (
	id           TEXT    NOT NULL PRIMARY KEY CHECK (id <> ''),
	user_name    TEXT    NOT NULL CHECK (user_name <> ''),
	admin        BOOLEAN NOT NULL,
	secret_hash  TEXT    NOT NULL UNIQUE CHECK (secret_hash <> ''),
	created_at   BIGINT,
	last_used_at BIGINT,
	revoked_at   BIGINT
);
