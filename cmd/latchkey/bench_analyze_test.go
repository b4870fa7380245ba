package main

import (
	"context"
	"database/sql"
	"testing"
	"time"

	"github.com/latchkey/latchkey/internal/store/postgres/pgtest"
)

// TestAnalyzeAsAutovacuum: before a scenario the bench analyzes the tables
// autovacuum would have (more than 50 rows and a tenth changed since their
// last analysis), and leaves a table nothing wrote unanalyzed, so that
// PostgreSQL does not plan its key lookups for an empty table.
func TestAnalyzeAsAutovacuum(t *testing.T) {
	ctx := context.Background()
	db, err := sql.Open("pgx", pgtest.NewDatabase(t))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	conn, err := db.Conn(ctx) // one session, whose statistics it flushes
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	for _, q := range []string{
		`CREATE TABLE written (id BIGINT PRIMARY KEY)`,
		`CREATE TABLE few (id BIGINT PRIMARY KEY)`,
		`CREATE TABLE empty (id BIGINT PRIMARY KEY)`,
		`INSERT INTO written SELECT generate_series(1, 200)`,
		`INSERT INTO few SELECT generate_series(1, 10)`,
		`SELECT pg_stat_force_next_flush()`,
	} {
		if _, err := conn.ExecContext(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	// The flush happens when that session goes idle: wait for the counts,
	// not for a time.
	deadline := time.Now().Add(30 * time.Second)
	for {
		var n int64
		if err := db.QueryRowContext(ctx, `SELECT n_mod_since_analyze FROM pg_stat_user_tables
			WHERE relname = 'written'`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		if n == 200 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the statistics show %d rows written, want 200", n)
		}
		if _, err := conn.ExecContext(ctx, `SELECT pg_stat_force_next_flush()`); err != nil {
			t.Fatal(err)
		}
	}
	if err := analyzeAsAutovacuum(ctx, db); err != nil {
		t.Fatal(err)
	}
	for table, want := range map[string]bool{"written": true, "few": false, "empty": false} {
		var analyzed bool
		if err := db.QueryRowContext(ctx, `SELECT last_analyze IS NOT NULL FROM pg_stat_user_tables WHERE relname = $1`,
			table).Scan(&analyzed); err != nil {
			t.Fatal(err)
		}
		if analyzed != want {
			t.Errorf("table %s analyzed: %v, want %v", table, analyzed, want)
		}
	}
}
