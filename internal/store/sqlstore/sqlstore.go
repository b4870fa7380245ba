// Package sqlstore implements store.Store on database/sql for the SQL
// backends. The queries are standard SQL that SQLite and PostgreSQL both
// speak (upserts with ON CONFLICT, RETURNING); what differs — schema DDL,
// migration locking, placeholders, driver error codes, connection set-up —
// comes from each backend's Dialect. Times are stored as integer Unix
// microseconds (UTC; 0 for the zero time) and lists as JSON text, the same
// in both, so a round trip is exact.
package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/latchkey/latchkey/internal/store"
)

// Dialect is what a backend supplies.
type Dialect struct {
	Name string // "sqlite" | "postgres"
	// Numbered placeholders ($1, $2, ...) instead of "?".
	NumberedPlaceholders bool
	// Translate maps a driver error to store.ErrConflict/ErrNotFound, or returns it unchanged.
	Translate func(error) error
	// Migrations in version order.
	Migrations []Migration
	// LockMigrations runs inside the migration transaction before anything
	// else ("" for none): PostgreSQL serialises instances that start together.
	LockMigrations string
	// BeginTx starts a read-write transaction (SQLite: BEGIN IMMEDIATE via the DSN).
	TxOptions *sql.TxOptions
	// ForUpdate locks the rows a SELECT reads until the transaction ends
	// (" FOR UPDATE" on PostgreSQL; "" on SQLite, whose writer transaction
	// already excludes every other writer).
	ForUpdate string
}

// Migration is one numbered schema change.
type Migration struct {
	Version int
	Name    string
	SQL     string
}

// DB is a store.Store on database/sql.
type DB struct {
	d      *Dialect
	write  *sql.DB // writes and transactions
	read   *sql.DB // plain reads (SQLite: a pool of read-only connections); may equal write
	q      querier // write, or the transaction
	inTx   bool
	rebind *sync.Map
}

type querier interface {
	ExecContext(ctx context.Context, q string, args ...any) (sql.Result, error)
	QueryContext(ctx context.Context, q string, args ...any) (*sql.Rows, error)
	QueryRowContext(ctx context.Context, q string, args ...any) *sql.Row
}

// New returns a DB on write (and read, which may be the same pool).
func New(d *Dialect, write, read *sql.DB) *DB {
	if read == nil {
		read = write
	}
	return &DB{d: d, write: write, read: read, q: write, rebind: &sync.Map{}}
}

// Backend names the backend.
func (db *DB) Backend() string { return db.d.Name }

// Ping checks both pools.
func (db *DB) Ping(ctx context.Context) error {
	if err := db.write.PingContext(ctx); err != nil {
		return err
	}
	return db.read.PingContext(ctx)
}

// Close closes the pools.
func (db *DB) Close() error {
	err := db.write.Close()
	if db.read != db.write {
		err = errors.Join(err, db.read.Close())
	}
	return err
}

// Tx runs fn in one transaction; a nested call joins the outer one.
func (db *DB) Tx(ctx context.Context, fn func(store.Store) error) (err error) {
	if db.inTx {
		return fn(db)
	}
	tx, err := db.write.BeginTx(ctx, db.d.TxOptions)
	if err != nil {
		return db.d.Translate(err)
	}
	child := &DB{d: db.d, write: db.write, read: db.read, q: tx, inTx: true, rebind: db.rebind}
	defer func() {
		if p := recover(); p != nil {
			_ = tx.Rollback()
			panic(p)
		}
	}()
	if err := fn(child); err != nil {
		_ = tx.Rollback()
		return err
	}
	return db.d.Translate(tx.Commit())
}

// sql rewrites "?" placeholders to "$n" for dialects that number them. The
// queries of this package hold no "?" in literals, so the rewrite is exact.
func (db *DB) sql(q string) string {
	if !db.d.NumberedPlaceholders {
		return q
	}
	if v, ok := db.rebind.Load(q); ok {
		return v.(string)
	}
	var b strings.Builder
	n := 0
	for i := 0; i < len(q); i++ {
		if q[i] == '?' {
			n++
			b.WriteByte('$')
			b.WriteString(strconv.Itoa(n))
			continue
		}
		b.WriteByte(q[i])
	}
	out := b.String()
	db.rebind.Store(q, out)
	return out
}

func (db *DB) exec(ctx context.Context, q string, args ...any) (sql.Result, error) {
	res, err := db.q.ExecContext(ctx, db.sql(q), args...)
	return res, db.d.Translate(err)
}

// queryRow reads through the transaction when there is one, else the read pool.
func (db *DB) queryRow(ctx context.Context, q string, args ...any) *sql.Row {
	if db.inTx {
		return db.q.QueryRowContext(ctx, db.sql(q), args...)
	}
	return db.read.QueryRowContext(ctx, db.sql(q), args...)
}

// queryRowWrite runs a writing statement that returns a row (RETURNING).
func (db *DB) queryRowWrite(ctx context.Context, q string, args ...any) *sql.Row {
	return db.q.QueryRowContext(ctx, db.sql(q), args...)
}

func (db *DB) query(ctx context.Context, q string, args ...any) (*sql.Rows, error) {
	var rows *sql.Rows
	var err error
	if db.inTx {
		rows, err = db.q.QueryContext(ctx, db.sql(q), args...)
	} else {
		rows, err = db.read.QueryContext(ctx, db.sql(q), args...)
	}
	return rows, db.d.Translate(err)
}

// scanErr maps sql.ErrNoRows to store.ErrNotFound.
func (db *DB) scanErr(err error) error {
	if errors.Is(err, sql.ErrNoRows) {
		return store.ErrNotFound
	}
	return db.d.Translate(err)
}

func affected(res sql.Result) (int64, error) {
	n, err := res.RowsAffected()
	if err != nil {
		return 0, fmt.Errorf("rows affected: %w", err)
	}
	return n, nil
}

// Migrate applies the pending migrations, each in its own transaction, and
// is a no-op when all are applied.
func (db *DB) Migrate(ctx context.Context) error {
	for _, m := range db.d.Migrations {
		if err := db.migrateOne(ctx, m); err != nil {
			return fmt.Errorf("migration %04d_%s: %w", m.Version, m.Name, err)
		}
	}
	return nil
}

func (db *DB) migrateOne(ctx context.Context, m Migration) error {
	tx, err := db.write.BeginTx(ctx, db.d.TxOptions)
	if err != nil {
		return err
	}
	defer tx.Rollback() //nolint:errcheck // no-op after commit
	if db.d.LockMigrations != "" {
		if _, err := tx.ExecContext(ctx, db.d.LockMigrations); err != nil {
			return err
		}
	}
	if _, err := tx.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS schema_migrations (
		version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at BIGINT NOT NULL)`); err != nil {
		return err
	}
	var n int
	if err := tx.QueryRowContext(ctx, db.sql(`SELECT COUNT(*) FROM schema_migrations WHERE version = ?`), m.Version).Scan(&n); err != nil {
		return err
	}
	if n > 0 {
		return nil
	}
	if _, err := tx.ExecContext(ctx, m.SQL); err != nil {
		return err
	}
	if _, err := tx.ExecContext(ctx, db.sql(`INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, ?, ?)`),
		m.Version, m.Name, time.Now().UnixMicro()); err != nil {
		return err
	}
	return tx.Commit()
}

// AppliedVersions lists the applied migration versions in order.
func (db *DB) AppliedVersions(ctx context.Context) ([]int, error) {
	rows, err := db.write.QueryContext(ctx, `SELECT version FROM schema_migrations ORDER BY version`)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []int
	for rows.Next() {
		var v int
		if err := rows.Scan(&v); err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	return out, rows.Err()
}

var _ store.Store = (*DB)(nil)
