package bench

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	_ "github.com/jackc/pgx/v5/stdlib" // the preload's PostgreSQL connection
	_ "modernc.org/sqlite"             // and its SQLite one

	"github.com/latchkey/latchkey/internal/store/backend"
)

// preloadChunk is the rows of one table one statement writes.
const preloadChunk = 100_000

// PreloadSize is how many rows Preload writes to each table.
type PreloadSize struct {
	Grants, Tokens, Events int
}

// Each is n rows of each table: every access token its own grant.
func Each(n int) PreloadSize { return PreloadSize{Grants: n, Tokens: n, Events: n} }

// Preloaded is what Preload wrote and how long it took.
type Preloaded struct {
	Rows  int64 // grants, tokens and events together
	Took  time.Duration
	Bytes int64 // the database's size after the load
	Size  PreloadSize
	Now   time.Time // the rows were written over the 30 days before it
}

// Preload migrates database and bulk-loads size's grants, access tokens
// and events into it, as a service that has run for a month would hold
// them: grants made over the last 30 days and living 60, access tokens of
// an hour (most of them expired, kept with their grant; with more tokens
// than grants, consecutive tokens share one), events of both kinds over
// the last 30 days, each naming a grant, of 10 clients and 100,000
// persons. The rows are generated inside the database, by one statement
// per chunk and table; the server must not run meanwhile (an embedded
// store is locked to one process).
func Preload(ctx context.Context, database string, size PreloadSize, progress func(done int)) (Preloaded, error) {
	if size.Grants < 1 || size.Tokens < 0 || size.Events < 0 {
		return Preloaded{}, fmt.Errorf("bench: preload: want at least one grant, got %+v", size)
	}
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
	counts := []int{size.Grants, size.Tokens, size.Events} // q's order
	n := max(size.Grants, size.Tokens, size.Events)
	for lo := 1; lo <= n; lo += preloadChunk {
		hi := min(lo+preloadChunk-1, n)
		for i, stmt := range q {
			if lo > counts[i] {
				continue
			}
			args := []any{lo, min(hi, counts[i]), now.UnixMicro(), counts[i]}
			if i > 0 { // tokens and events name their grant
				args = append(args, size.Grants)
			}
			if _, err := db.ExecContext(ctx, stmt, args...); err != nil {
				return Preloaded{}, fmt.Errorf("bench: preload: %w", err)
			}
		}
		if progress != nil {
			progress(hi)
		}
	}
	out := Preloaded{Rows: int64(size.Grants) + int64(size.Tokens) + int64(size.Events), Size: size, Now: now}
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
		// What autovacuum would have done after a month of service: the
		// planner's statistics, and the rows' hint bits and visibility map
		// set (else the scenarios' first reads of old pages set them, and
		// write the pages again). Then a checkpoint, so that the load's
		// dirty pages are not written while the scenarios run; it needs
		// pg_checkpoint or a superuser, and without it the run goes on.
		if _, err := db.ExecContext(ctx, `VACUUM (ANALYZE) grants, tokens, events`); err != nil {
			return out, err
		}
		if _, err := db.ExecContext(ctx, `CHECKPOINT`); err != nil && !isInsufficientPrivilege(err) {
			return out, err
		}
		if err := db.QueryRowContext(ctx, `SELECT pg_database_size(current_database())`).Scan(&out.Bytes); err != nil {
			return out, err
		}
	}
	out.Took = time.Since(start)
	return out, nil
}

// The statements of one chunk, grants, tokens then events: rows lo ($1) to
// hi ($2) of the table's n ($4), now ($3, Unix microseconds), of g grants
// ($5). Row i was written at t = now - 30 days + i/n of 30 days, in the
// order latchkey writes: row i of a table with as many rows as grants
// names grant i (the transaction of its token and its event), and row i of
// a larger one names grant (i-1)·g/n + 1, written at about the same t.
// Their keys are what latchkey makes at t (token.OrderedID for grants, a
// UUIDv7 for events, a token key starting with its millisecond stamp), so
// rows are appended at each b-tree's right edge as in a month of service.
var sqlitePreload = []string{
	`WITH RECURSIVE s(i) AS (SELECT ?1 UNION ALL SELECT i + 1 FROM s WHERE i < ?2),
		r(i, t) AS (SELECT i, ?3 - 2592000000000 + i * (2592000000000 / ?4) FROM s)
	INSERT INTO grants (id, client_id, subject, scopes, amr, created_at, expires_at)
	SELECT printf('%012x%014d', t / 1000, i), 'bench-pre-' || (i % 10), 'pre-person-' || (i % 100000),
		'["read"]', '[]', t, t + 5184000000000 FROM r`,
	`WITH RECURSIVE s(i) AS (SELECT ?1 UNION ALL SELECT i + 1 FROM s WHERE i < ?2),
		r(i, t, g) AS (SELECT i, ?3 - 2592000000000 + i * (2592000000000 / ?4), (i - 1) * ?5 / ?4 + 1 FROM s),
		rg(i, t, g, gt) AS (SELECT i, t, g, ?3 - 2592000000000 + g * (2592000000000 / ?5) FROM r)
	INSERT INTO tokens (hash, kind, grant_id, client_id, subject, scopes, issued_at, expires_at)
	SELECT unhex(printf('%012x', t / 1000)) || randomblob(32), 'access', printf('%012x%014d', gt / 1000, g),
		'bench-pre-' || (g % 10), 'pre-person-' || (g % 100000), '["read"]', t, t + 3600000000 FROM rg`,
	`WITH RECURSIVE s(i) AS (SELECT ?1 UNION ALL SELECT i + 1 FROM s WHERE i < ?2),
		r(i, t, g) AS (SELECT i, ?3 - 2592000000000 + i * (2592000000000 / ?4), (i - 1) * ?5 / ?4 + 1 FROM s),
		rg(i, t, g, gt) AS (SELECT i, t, g, ?3 - 2592000000000 + g * (2592000000000 / ?5) FROM r)
	INSERT INTO events (id, kind, type, name, client_id, transaction_id, user_id, user_id_lower, agent_user, occurred)
	SELECT printf('%08x-%04x-7000-8000-%012x', t / 1000 >> 16, t / 1000 & 65535, i),
		CASE WHEN i % 20 = 0 THEN 'person' ELSE 'oauth' END,
		CASE WHEN i % 20 = 0 THEN 'person.PersonUpdatedEvent' WHEN i % 4 = 0 THEN 'TOKEN_INTROSPECTION_SUCCESS'
			WHEN i % 4 = 1 THEN 'TOKEN_REQUEST_ACCESS_TOKEN_CREATED' WHEN i % 4 = 2 THEN 'LOGIN_SUCCEEDED' ELSE 'CONSENT_GIVEN' END,
		'preloaded', 'bench-pre-' || (g % 10), printf('%012x%014d', gt / 1000, g),
		'pre-person-' || (g % 100000), 'pre-person-' || (g % 100000), CASE WHEN i % 20 = 0 THEN 'admin' ELSE '' END,
		t / 1000 FROM rg`,
}

var pgPreload = []string{
	`INSERT INTO grants (id, client_id, subject, scopes, amr, created_at, expires_at)
	SELECT lpad(to_hex(t / 1000), 12, '0') || lpad(i::text, 14, '0'), 'bench-pre-' || (i % 10), 'pre-person-' || (i % 100000),
		'["read"]', '[]', t, t + 5184000000000
	FROM generate_series($1::bigint, $2::bigint) AS s(i), LATERAL (SELECT $3 - 2592000000000 + i * (2592000000000 / $4::bigint) AS t) AS r`,
	`INSERT INTO tokens (hash, kind, grant_id, client_id, subject, scopes, issued_at, expires_at)
	SELECT decode(lpad(to_hex(t / 1000), 12, '0'), 'hex') || sha256(int8send(i) || int8send($3)), 'access',
		lpad(to_hex(gt / 1000), 12, '0') || lpad(g::text, 14, '0'),
		'bench-pre-' || (g % 10), 'pre-person-' || (g % 100000), '["read"]', t, t + 3600000000
	FROM generate_series($1::bigint, $2::bigint) AS s(i),
		LATERAL (SELECT $3 - 2592000000000 + i * (2592000000000 / $4::bigint) AS t, (i - 1) * $5::bigint / $4::bigint + 1 AS g) AS r,
		LATERAL (SELECT $3 - 2592000000000 + g * (2592000000000 / $5::bigint) AS gt) AS rg`,
	`INSERT INTO events (id, kind, type, name, client_id, transaction_id, user_id, user_id_lower, agent_user, occurred)
	SELECT lpad(to_hex((t / 1000) >> 16), 8, '0') || '-' || lpad(to_hex((t / 1000) & 65535), 4, '0') || '-7000-8000-' || lpad(to_hex(i), 12, '0'),
		CASE WHEN i % 20 = 0 THEN 'person' ELSE 'oauth' END,
		CASE WHEN i % 20 = 0 THEN 'person.PersonUpdatedEvent' WHEN i % 4 = 0 THEN 'TOKEN_INTROSPECTION_SUCCESS'
			WHEN i % 4 = 1 THEN 'TOKEN_REQUEST_ACCESS_TOKEN_CREATED' WHEN i % 4 = 2 THEN 'LOGIN_SUCCEEDED' ELSE 'CONSENT_GIVEN' END,
		'preloaded', 'bench-pre-' || (g % 10), lpad(to_hex(gt / 1000), 12, '0') || lpad(g::text, 14, '0'),
		'pre-person-' || (g % 100000), 'pre-person-' || (g % 100000), CASE WHEN i % 20 = 0 THEN 'admin' ELSE '' END,
		t / 1000
	FROM generate_series($1::bigint, $2::bigint) AS s(i),
		LATERAL (SELECT $3 - 2592000000000 + i * (2592000000000 / $4::bigint) AS t, (i - 1) * $5::bigint / $4::bigint + 1 AS g) AS r,
		LATERAL (SELECT $3 - 2592000000000 + g * (2592000000000 / $5::bigint) AS gt) AS rg`,
}

// GrantID is the id of grant i, preloaded at now.
func (p Preloaded) GrantID(i int) string {
	t := p.Now.UnixMicro() - 2592000000000 + int64(i)*(2592000000000/int64(p.Size.Grants))
	return fmt.Sprintf("%012x%014d", t/1000, i)
}

// isInsufficientPrivilege: PostgreSQL's SQLSTATE 42501.
func isInsufficientPrivilege(err error) bool {
	var pe *pgconn.PgError
	return errors.As(err, &pe) && pe.Code == "42501"
}
