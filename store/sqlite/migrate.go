package sqlite

import (
	"context"
	"database/sql"
	"embed"
	"fmt"
	"io/fs"
	"strconv"
	"strings"
	"time"
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

func apply(ctx context.Context, db *sql.DB, m migration) error {
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return dbError(ctx, err, "sqlite store: migration "+m.name, nil)
	}
	defer func() { _ = tx.Rollback() }() // a no-op after Commit
	var applied bool
	if err := tx.QueryRowContext(ctx,
		`SELECT EXISTS (SELECT 1 FROM schema_migrations WHERE version = ?)`, m.version).Scan(&applied); err != nil {
		return dbError(ctx, err, "sqlite store: migration "+m.name, nil)
	}
	if applied {
		return nil
	}
	if _, err := tx.ExecContext(ctx, m.sql); err != nil {
		return dbError(ctx, err, "sqlite store: migration "+m.name, nil)
	}
	if _, err := tx.ExecContext(ctx,
		`INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, ?, ?)`,
		m.version, m.name, time.Now().UnixNano()); err != nil {
		return dbError(ctx, err, "sqlite store: migration "+m.name, nil)
	}
	if err := tx.Commit(); err != nil {
		return dbError(ctx, err, "sqlite store: migration "+m.name, nil)
	}
	return nil
}
