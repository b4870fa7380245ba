package bench

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"strings"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib" // the preload's PostgreSQL connection
	_ "modernc.org/sqlite"             // and its SQLite one

	"github.com/latchkey/latchkey/internal/store/backend"
)

// preloadChunk is the rows of one table one statement writes.
const preloadChunk = 100_000

// Preloaded is what Preload wrote and how long it took.
type Preloaded struct {
	Rows  int64 // grants, tokens and events together
	Took  time.Duration
	Bytes int64 // the database's size after the load
}

// Preload migrates database and bulk-loads n grants, one access token for
// each and n events into it, as a service that has run for a month would
// hold them: keys spread over their whole range (a multiplicative hash of
// the row number, as random ids are), grants made over the last 30 days
// and living 60, access tokens of an hour (most of them expired, kept with
// their grant), events of both kinds over the last 30 days, of 10 clients
// and 100,000 persons. The rows are generated inside the database, by one
// statement per chunk and table; the server must not run meanwhile (an
// embedded store is locked to one process).
func Preload(ctx context.Context, database string, n int, progress func(done int)) (Preloaded, error) {
	start := time.Now()
	st, err := backend.Open(ctx, database) // creates and migrates the schema
	if err != nil {
		return Preloaded{}, err
	}
	if err := st.Close(); err != nil {
		return Preloaded{}, err
	}
	driver, dsn, q := "pgx", database, pgPreload
	path, lite := strings.CutPrefix(database, "sqlite:")
	if lite {
		driver, dsn, q = "sqlite", "file:"+path+"?_pragma=busy_timeout(10000)&_pragma=journal_mode(WAL)&_pragma=synchronous(NORMAL)&_pragma=cache_size(-1048576)", sqlitePreload
	}
	db, err := sql.Open(driver, dsn)
	if err != nil {
		return Preloaded{}, err
	}
	defer db.Close()
	db.SetMaxOpenConns(1)
	now := time.Now()
	for lo := 1; lo <= n; lo += preloadChunk {
		hi := min(lo+preloadChunk-1, n)
		for _, stmt := range q {
			if _, err := db.ExecContext(ctx, stmt, lo, hi, now.UnixMicro()); err != nil {
				return Preloaded{}, fmt.Errorf("bench: preload: %w", err)
			}
		}
		if progress != nil {
			progress(hi)
		}
	}
	out := Preloaded{Rows: 3 * int64(n)}
	if lite {
		if _, err := db.ExecContext(ctx, `PRAGMA wal_checkpoint(TRUNCATE)`); err != nil {
			return out, err
		}
		fi, err := os.Stat(path)
		if err != nil {
			return out, err
		}
		out.Bytes = fi.Size()
	} else {
		// What autovacuum would do after such a load: the planner's
		// statistics of the grown tables.
		if _, err := db.ExecContext(ctx, `ANALYZE grants, tokens, events`); err != nil {
			return out, err
		}
		if err := db.QueryRowContext(ctx, `SELECT pg_database_size(current_database())`).Scan(&out.Bytes); err != nil {
			return out, err
		}
	}
	out.Took = time.Since(start)
	return out, nil
}

// The statements of one chunk: rows lo ($1) to hi ($2), now ($3, Unix
// microseconds). The grant of row i is the transaction of its token and its event.
var sqlitePreload = []string{
	`WITH RECURSIVE s(i) AS (SELECT ?1 UNION ALL SELECT i + 1 FROM s WHERE i < ?2)
	INSERT INTO grants (id, client_id, subject, scopes, amr, created_at, expires_at)
	SELECT printf('pre%08x%d', (i * 2654435761) % 4294967296, i), 'bench-pre-' || (i % 10), 'pre-person-' || (i % 100000),
		'["read"]', '[]', ?3 - (i * 7919 % 2592000) * 1000000, ?3 + 5184000000000 - (i * 7919 % 2592000) * 1000000 FROM s`,
	`WITH RECURSIVE s(i) AS (SELECT ?1 UNION ALL SELECT i + 1 FROM s WHERE i < ?2)
	INSERT INTO tokens (hash, kind, grant_id, client_id, subject, scopes, issued_at, expires_at)
	SELECT randomblob(32), 'access', printf('pre%08x%d', (i * 2654435761) % 4294967296, i), 'bench-pre-' || (i % 10),
		'pre-person-' || (i % 100000), '["read"]', ?3 - (i * 7919 % 2592000) * 1000000,
		?3 + 3600000000 - (i * 7919 % 2592000) * 1000000 FROM s`,
	`WITH RECURSIVE s(i) AS (SELECT ?1 UNION ALL SELECT i + 1 FROM s WHERE i < ?2)
	INSERT INTO events (id, kind, type, name, client_id, transaction_id, user_id, user_id_lower, agent_user, occurred)
	SELECT printf('pre%08x%d', (i * 2246822519) % 4294967296, i),
		CASE WHEN i % 20 = 0 THEN 'person' ELSE 'oauth' END,
		CASE WHEN i % 20 = 0 THEN 'person.PersonUpdatedEvent' WHEN i % 4 = 0 THEN 'TOKEN_INTROSPECTION_SUCCESS'
			WHEN i % 4 = 1 THEN 'TOKEN_REQUEST_ACCESS_TOKEN_CREATED' WHEN i % 4 = 2 THEN 'LOGIN_SUCCEEDED' ELSE 'CONSENT_GIVEN' END,
		'preloaded', 'bench-pre-' || (i % 10), printf('pre%08x%d', (i * 2654435761) % 4294967296, i),
		'pre-person-' || (i % 100000), 'pre-person-' || (i % 100000), CASE WHEN i % 20 = 0 THEN 'admin' ELSE '' END,
		(?3 - (i * 7919 % 2592000) * 1000000) / 1000 FROM s`,
}

var pgPreload = []string{
	`INSERT INTO grants (id, client_id, subject, scopes, amr, created_at, expires_at)
	SELECT 'pre' || lpad(to_hex((i * 2654435761) % 4294967296), 8, '0') || i, 'bench-pre-' || (i % 10), 'pre-person-' || (i % 100000),
		'["read"]', '[]', $3 - (i * 7919 % 2592000) * 1000000, $3 + 5184000000000 - (i * 7919 % 2592000) * 1000000
	FROM generate_series($1::bigint, $2::bigint) AS s(i)`,
	`INSERT INTO tokens (hash, kind, grant_id, client_id, subject, scopes, issued_at, expires_at)
	SELECT sha256(int8send(i) || int8send($3)), 'access', 'pre' || lpad(to_hex((i * 2654435761) % 4294967296), 8, '0') || i,
		'bench-pre-' || (i % 10), 'pre-person-' || (i % 100000), '["read"]', $3 - (i * 7919 % 2592000) * 1000000,
		$3 + 3600000000 - (i * 7919 % 2592000) * 1000000
	FROM generate_series($1::bigint, $2::bigint) AS s(i)`,
	`INSERT INTO events (id, kind, type, name, client_id, transaction_id, user_id, user_id_lower, agent_user, occurred)
	SELECT 'pre' || lpad(to_hex((i * 2246822519) % 4294967296), 8, '0') || i,
		CASE WHEN i % 20 = 0 THEN 'person' ELSE 'oauth' END,
		CASE WHEN i % 20 = 0 THEN 'person.PersonUpdatedEvent' WHEN i % 4 = 0 THEN 'TOKEN_INTROSPECTION_SUCCESS'
			WHEN i % 4 = 1 THEN 'TOKEN_REQUEST_ACCESS_TOKEN_CREATED' WHEN i % 4 = 2 THEN 'LOGIN_SUCCEEDED' ELSE 'CONSENT_GIVEN' END,
		'preloaded', 'bench-pre-' || (i % 10), 'pre' || lpad(to_hex((i * 2654435761) % 4294967296), 8, '0') || i,
		'pre-person-' || (i % 100000), 'pre-person-' || (i % 100000), CASE WHEN i % 20 = 0 THEN 'admin' ELSE '' END,
		($3 - (i * 7919 % 2592000) * 1000000) / 1000
	FROM generate_series($1::bigint, $2::bigint) AS s(i)`,
}
