package postgres

import (
	"context"
	"embed"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/grove-dev/grove/store/internal/sqlrow"
)

// migrations are this adapter's schema steps (see sqlrow.Migration).
//
//go:embed migrations/*.sql
var migrations embed.FS

func loadMigrations() ([]sqlrow.Migration, error) {
	return sqlrow.LoadMigrations(migrations, "migrations")
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
			return dbError(ctx, err, "postgres store: migration "+m.Name, nil)
		}
	}
	return nil
}

func apply(ctx context.Context, pool *pgxpool.Pool, lockID int64, m sqlrow.Migration) error {
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
			m.Version).Scan(&applied); err != nil {
			return err
		}
		if applied {
			return nil
		}
		// No arguments: pgx sends it by the simple protocol, which runs a
		// file of several statements.
		if _, err := tx.Exec(ctx, m.SQL); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, `INSERT INTO schema_migrations (version, name, applied_at) VALUES ($1, $2, $3)`,
			m.Version, m.Name, time.Now().UnixNano())
		return err
	})
}
