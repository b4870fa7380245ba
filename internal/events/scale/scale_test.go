// Package scale measures the event searches on a large store. It holds only
// a benchmark: `LATCHKEY_EVENTS=5000000 go test -run '^$' -bench . -benchtime 1x -timeout 120m ./internal/events/scale`
// (LATCHKEY_EVENTS defaults to 100,000 so that a casual run stays short;
// LATCHKEY_BACKENDS=sqlite or =postgres runs one store).
package scale

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/stdlib"

	"github.com/latchkey/latchkey/internal/store"
	"github.com/latchkey/latchkey/internal/store/postgres"
	"github.com/latchkey/latchkey/internal/store/postgres/pgtest"
	"github.com/latchkey/latchkey/internal/store/sqlite"
)

var types = []string{"TOKEN_REQUEST_ACCESS_TOKEN_CREATED", "TOKEN_INTROSPECTION_SUCCESS", "AUTHZ_REQUEST_GRANT_CREATED",
	"TOKEN_REVOKE_ACCESS_TOKEN_SUCCESS", "LOGIN_SUCCEEDED", "CONSENT_GIVEN", "TOKEN_REQUEST_ACCESS_TOKEN_REFRESHED", "LOGIN_FAILED"}

var base = time.Now().UTC().Truncate(time.Hour).Add(-31 * 24 * time.Hour)

// load appends n events spread over 30 days: 10,000 users, 200 clients, 8 types.
func load(b *testing.B, st store.Store, n int) {
	ctx := context.Background()
	const batch = 5000
	step := 30 * 24 * time.Hour / time.Duration(n) // j * 30 days would overflow a Duration
	start := time.Now()
	for i := 0; i < n; i += batch {
		evs := make([]store.Event, 0, batch)
		for j := i; j < min(i+batch, n); j++ {
			evs = append(evs, store.Event{ID: fmt.Sprintf("%08x-0000-4000-8000-%012x", j, j), Kind: store.EventOAuth,
				Type: types[j%len(types)], Name: "e", UserID: fmt.Sprintf("user-%d", j%10_000), ClientID: fmt.Sprintf("client-%d", j%200),
				TransactionID: fmt.Sprintf("tx-%d", j/3), ClientIP: "203.0.113.9", UserAgent: "bench",
				Occurred: base.Add(step * time.Duration(j))})
		}
		if err := st.Tx(ctx, func(tx store.Store) error { return tx.AppendEvents(ctx, evs...) }); err != nil {
			b.Fatal(err)
		}
	}
	b.Logf("loaded %d events in %v", n, time.Since(start).Round(time.Second))
}

type query struct {
	name   string
	f      store.EventFilter
	offset int
}

func queries(n int) []query {
	mid := base.Add(15 * 24 * time.Hour)
	return []query{
		{"latest page", store.EventFilter{Kind: store.EventOAuth}, 0},
		{"one user", store.EventFilter{Kind: store.EventOAuth, UserID: "USER-4242"}, 0},
		// client-17's events are all of types[17 % 8] (200 clients, 8 types):
		// about 1,700 of them fall in the two days.
		{"client and type in a date range", store.EventFilter{Kind: store.EventOAuth, ClientID: "client-17",
			Types: []string{types[17%len(types)]}, From: mid, To: mid.Add(48 * time.Hour)}, 0},
		{"page 1000", store.EventFilter{Kind: store.EventOAuth}, 1000 * 20},
	}
}

// measure runs q as the API does (a page of 20 and the bounded count) reps
// times; a search that finds nothing would measure nothing, so it fails.
func measure(b *testing.B, st store.Store, q query, reps int) (p50, p99, maxd time.Duration) {
	ctx := context.Background()
	ds := make([]time.Duration, reps)
	for i := range reps {
		t := time.Now()
		page, err := st.SearchEvents(ctx, q.f, q.offset, 20)
		if err != nil {
			b.Fatal(err)
		}
		if len(page) == 0 {
			b.Fatalf("%s: an empty page", q.name)
		}
		if _, err := st.CountEvents(ctx, q.f, max(10_000, q.offset+21)); err != nil {
			b.Fatal(err)
		}
		ds[i] = time.Since(t)
	}
	slices.Sort(ds)
	return ds[reps/2], ds[reps*99/100], ds[reps-1]
}

// withoutIndexes runs load with the events table's secondary indexes
// dropped and builds them afterwards from their own stored definitions:
// building an index from sorted data takes minutes where keeping seven of
// them up to date row by row takes an hour at this size. The searches run
// on exactly the indexes the migrations create.
func withoutIndexes(b *testing.B, db *sql.DB, list string, load func()) {
	rows, err := db.Query(list)
	if err != nil {
		b.Fatal(err)
	}
	var names, defs []string
	for rows.Next() {
		var name, def string
		if err := rows.Scan(&name, &def); err != nil {
			b.Fatal(err)
		}
		names, defs = append(names, name), append(defs, def)
	}
	if err := rows.Err(); err != nil {
		b.Fatal(err)
	}
	rows.Close()
	if len(defs) == 0 {
		b.Fatal("no secondary indexes found on events")
	}
	for _, n := range names {
		if _, err := db.Exec("DROP INDEX " + n); err != nil {
			b.Fatal(err)
		}
	}
	load()
	start := time.Now()
	for _, d := range defs {
		if _, err := db.Exec(d); err != nil {
			b.Fatal(err)
		}
	}
	b.Logf("built %d indexes (%s) in %v", len(names), strings.Join(names, ", "), time.Since(start).Round(time.Second))
}

// analyze gives PostgreSQL's planner the statistics that autovacuum keeps
// in a running service: right after a bulk load it has none and guesses
// that kind = 'oauth' matches a few rows, sorting 5 million for page one.
func analyze(b *testing.B, dsn string) {
	cfg, err := pgx.ParseConfig(dsn)
	if err != nil {
		b.Fatal(err)
	}
	db := stdlib.OpenDB(*cfg)
	defer db.Close()
	if _, err := db.Exec("ANALYZE events"); err != nil {
		b.Fatal(err)
	}
}

func BenchmarkEventSearchAtScale(b *testing.B) {
	n := 100_000
	if v := os.Getenv("LATCHKEY_EVENTS"); v != "" {
		var err error
		if n, err = strconv.Atoi(v); err != nil {
			b.Fatal(err)
		}
	}
	backends := []string{"sqlite", "postgres"}
	if v := os.Getenv("LATCHKEY_BACKENDS"); v != "" {
		backends = strings.Split(v, ",")
	}
	for _, backend := range backends {
		b.Run(backend, func(b *testing.B) {
			var st store.Store
			var err error
			dsn, path := "", filepath.Join(b.TempDir(), "events.db")
			if backend == "sqlite" {
				st, err = sqlite.Open(context.Background(), path)
			} else {
				dsn = pgtest.NewDatabase(b)
				st, err = postgres.Open(context.Background(), dsn)
			}
			if err != nil {
				b.Fatal(err)
			}
			defer st.Close()
			var raw *sql.DB
			list := ""
			if backend == "sqlite" {
				raw, err = sql.Open("sqlite", "file:"+path+"?_pragma=busy_timeout(10000)")
				list = `SELECT name, sql FROM sqlite_master WHERE type = 'index' AND tbl_name = 'events' AND sql IS NOT NULL`
			} else {
				cfg, perr := pgx.ParseConfig(dsn)
				if perr != nil {
					b.Fatal(perr)
				}
				raw = stdlib.OpenDB(*cfg)
				list = `SELECT indexname, indexdef FROM pg_indexes WHERE tablename = 'events' AND indexname <> 'events_pkey'`
			}
			if err != nil {
				b.Fatal(err)
			}
			defer raw.Close()
			withoutIndexes(b, raw, list, func() { load(b, st, n) })
			if dsn != "" {
				analyze(b, dsn)
			}
			for _, q := range queries(n) {
				p50, p99, mx := measure(b, st, q, 200)
				b.Logf("%-8s %-34s p50 %-10v p99 %-10v max %v", backend, q.name, p50.Round(10*time.Microsecond),
					p99.Round(10*time.Microsecond), mx.Round(10*time.Microsecond))
			}
		})
	}
}
