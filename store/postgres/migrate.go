package postgres

import (
	"context"
	"embed"
	"fmt"
	"io/fs"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// migrations are applied in file-name order; each name starts with its
// version number: 0001_init.sql. A migration, once released, is never
// edited — a change is a new file.
//
//go:embed migrations/*.sql
var migrations embed.FS

type migration struct {
	version int
	name    string
	sql     string
}

func loadMigrations() ([]migration, error) {
	entries, err := fs.ReadDir(migrations, "migrations")
	if err != nil {
		return nil, err
	}
	var out []migration
	for _, e := range entries { // ReadDir sorts by name
		prefix, _, ok := strings.Cut(e.Name(), "_")
		v, err := strconv.Atoi(prefix)
		if !ok || err != nil || v <= 0 {
			return nil, fmt.Errorf("migration %s: name must start with a version number and '_'", e.Name())
		}
		if len(out) > 0 && out[len(out)-1].version >= v {
			return nil, fmt.Errorf("migration %s: version %d is not above the previous one", e.Name(), v)
		}
		body, err := fs.ReadFile(migrations, "migrations/"+e.Name())
		if err != nil {
			return nil, err
		}
		out = append(out, migration{version: v, name: e.Name(), sql: string(body)})
	}
	return out, nil
}

// migrate applies the migrations the schema lacks, each in a transaction
// of its own that first takes the writer lock (the same lock as every
// write; see the package comment). Two processes migrating one schema at
// once therefore take turns, and the second finds the first's work in
// schema_migrations: each migration is applied exactly once. Even
// CREATE TABLE IF NOT EXISTS needs the lock: run concurrently, both
// creators can pass the check and one fails on a catalog unique index.
func migrate(ctx context.Context, pool *pgxpool.Pool, lockID int64) error {
	ms, err := loadMigrations()
	if err != nil {
		return fmt.Errorf("postgres store: %w", err)
	}
	for _, m := range ms {
		if err := apply(ctx, pool, lockID, m); err != nil {
			return dbError(ctx, err, "postgres store: migration "+m.name, nil)
		}
	}
	return nil
}

func apply(ctx context.Context, pool *pgxpool.Pool, lockID int64, m migration) error {
	return pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, lockSQL, lockID); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `CREATE TABLE IF NOT EXISTS schema_migrations (
			version    INTEGER NOT NULL PRIMARY KEY,
			name       TEXT    NOT NULL,
			applied_at BIGINT  NOT NULL -- unix nanoseconds
		)`); err != nil {
			return err
		}
		var applied bool
		if err := tx.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM schema_migrations WHERE version = $1)`,
			m.version).Scan(&applied); err != nil {
			return err
		}
		if applied {
			return nil
		}
		// No arguments: pgx sends it by the simple protocol, which runs a
		// file of several statements.
		if _, err := tx.Exec(ctx, m.sql); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, `INSERT INTO schema_migrations (version, name, applied_at) VALUES ($1, $2, $3)`,
			m.version, m.name, time.Now().UnixNano())
		return err
	})
}
