// Package postgres is latchkey's scale-out store: PostgreSQL through pgx,
// shared by any number of stateless latchkey instances.
package postgres

import (
	"context"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"runtime"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/stdlib"

	"github.com/latchkey/latchkey/internal/client"
	"github.com/latchkey/latchkey/internal/store"
	"github.com/latchkey/latchkey/internal/store/sqlstore"
)

//go:embed migrations/*.sql
var migrationFiles embed.FS

// Migrations are the PostgreSQL dialect's migrations.
func Migrations() ([]sqlstore.Migration, error) {
	sub, _ := fs.Sub(migrationFiles, "migrations")
	return sqlstore.LoadMigrations(sub)
}

// migrationLock is the pg_advisory_xact_lock key that serialises migrations
// of instances starting at once ("latchkey" in ASCII, as a number).
const migrationLock = `SELECT pg_advisory_xact_lock(7809847814149645689)`

// Store is the PostgreSQL backend.
type Store struct {
	*sqlstore.DB
	gens *client.Fresh[sqlstore.Generations]
}

// SharedGenerations reads the client and token generations for this store's
// token cache and for the server's client and scope caches: one shared
// read serves them all (client.Fresh, once per request with
// client.PerRequest).
func (s *Store) SharedGenerations() *client.Fresh[sqlstore.Generations] { return s.gens }

// Open connects to dsn (postgres://...), checks the connection and applies
// the migrations.
func Open(ctx context.Context, dsn string) (*Store, error) {
	ms, err := Migrations()
	if err != nil {
		return nil, err
	}
	cfg, err := pgconnConfig(dsn)
	if err != nil {
		return nil, err
	}
	db := stdlib.OpenDB(*cfg)
	n := max(4, runtime.NumCPU()*4)
	db.SetMaxOpenConns(n)
	db.SetMaxIdleConns(n)
	d := &sqlstore.Dialect{Name: "postgres", NumberedPlaceholders: true, Translate: translate,
		Migrations: ms, LockMigrations: migrationLock, ForUpdate: " FOR UPDATE",
		ForNoKeyUpdate: " FOR NO KEY UPDATE", KeyShare: " FOR KEY SHARE", ForShare: " FOR SHARE", ArrayInsert: true, CoalesceUses: true, ReturningFrom: true,
		TablesQuery: `SELECT tablename FROM pg_tables WHERE schemaname = current_schema() ORDER BY tablename`}
	d.Pipe = openPipe(db)
	s := &Store{DB: sqlstore.New(d, db, nil)}
	if err := s.Ping(ctx); err != nil {
		s.Close()
		return nil, fmt.Errorf("postgres: %w", err)
	}
	if err := s.Migrate(ctx); err != nil {
		s.Close()
		return nil, fmt.Errorf("postgres: %w", err)
	}
	// Introspection answers an access token from memory while the token
	// generation (migration 0027) has not moved: concurrent requests share
	// one read of it, each a read that began after the request did.
	s.gens = &client.Fresh[sqlstore.Generations]{Read: s.Generations}
	tc := sqlstore.NewTokenCache()
	tc.Generation = func(ctx context.Context) (int64, error) {
		g, err := s.gens.Get(ctx)
		return g.Token, err
	}
	s.UseTokenCache(tc)
	// A request may decide on the generations last read (client.Optimistic):
	// its writes confirm them first, and its events outside a transaction
	// are inserted only where they still hold.
	s.UseOptimism(&sqlstore.Optimism{
		Expected: func(ctx context.Context) (sqlstore.Generations, bool) { return client.Unconfirmed(ctx, s.gens) },
		Settle:   func(ctx context.Context, held bool) { client.Settle(ctx, s.gens, held) },
		Confirm:  client.Confirm,
	})
	return s, nil
}

// translate maps unique violations (SQLSTATE 23505) to store.ErrConflict.
func translate(err error) error {
	if err == nil {
		return nil
	}
	var pe *pgconn.PgError
	if errors.As(err, &pe) && pe.Code == "23505" {
		return fmt.Errorf("%w: %v", store.ErrConflict, err)
	}
	if pe != nil && pe.Code == "LK001" { // latchkey_guard_issue, latchkey_guard_code
		return fmt.Errorf("%w: %v", sqlstore.ErrReadChanged, err)
	}
	if pe != nil && pe.Code == "LK002" { // latchkey_guard_generations
		return fmt.Errorf("%w: %v", store.ErrRunAgain, err)
	}
	return err
}
