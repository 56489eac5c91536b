package sqlite

import (
	"context"
	"database/sql"
	"embed"
	"fmt"
	"time"

	"github.com/grove-dev/grove/store/internal/sqlrow"
)

// migrations are this adapter's schema steps (see sqlrow.Migration).
//
//go:embed migrations/*.sql
var migrations embed.FS

func loadMigrations() ([]sqlrow.Migration, error) {
	return sqlrow.LoadMigrations(migrations, "migrations")
}

// migrate applies the migrations db lacks, each in its own transaction.
// The transactions are BEGIN IMMEDIATE (see dsn), and each re-checks
// schema_migrations after taking the write lock, so two processes opening
// one new file at once apply every migration exactly once.
func migrate(ctx context.Context, db *sql.DB) error {
	ms, err := loadMigrations()
	if err != nil {
		return fmt.Errorf("sqlite store: %w", err)
	}
	// Inside a BEGIN IMMEDIATE transaction, so a second process creating
	// the table at the same moment waits on busy_timeout instead of getting
	// SQLITE_BUSY straight away (which a bare statement can, on a new file).
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return dbError(ctx, err, "sqlite store: create schema_migrations", nil)
	}
	if _, err := tx.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS schema_migrations (
		version    INTEGER NOT NULL PRIMARY KEY,
		name       TEXT    NOT NULL,
		applied_at INTEGER NOT NULL -- unix nanoseconds
	) STRICT`); err != nil {
		tx.Rollback()
		return dbError(ctx, err, "sqlite store: create schema_migrations", nil)
	}
	if err := tx.Commit(); err != nil {
		return dbError(ctx, err, "sqlite store: create schema_migrations", nil)
	}
	for _, m := range ms {
		if err := apply(ctx, db, m); err != nil {
			return err
		}
	}
	return nil
}

func apply(ctx context.Context, db *sql.DB, m sqlrow.Migration) error {
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return dbError(ctx, err, "sqlite store: migration "+m.Name, nil)
	}
	defer func() { _ = tx.Rollback() }() // a no-op after Commit
	var applied bool
	if err := tx.QueryRowContext(ctx,
		`SELECT EXISTS (SELECT 1 FROM schema_migrations WHERE version = ?)`, m.Version).Scan(&applied); err != nil {
		return dbError(ctx, err, "sqlite store: migration "+m.Name, nil)
	}
	if applied {
		return nil
	}
	if _, err := tx.ExecContext(ctx, m.SQL); err != nil {
		return dbError(ctx, err, "sqlite store: migration "+m.Name, nil)
	}
	if _, err := tx.ExecContext(ctx,
		`INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, ?, ?)`,
		m.Version, m.Name, time.Now().UnixNano()); err != nil {
		return dbError(ctx, err, "sqlite store: migration "+m.Name, nil)
	}
	if err := tx.Commit(); err != nil {
		return dbError(ctx, err, "sqlite store: migration "+m.Name, nil)
	}
	return nil
}
