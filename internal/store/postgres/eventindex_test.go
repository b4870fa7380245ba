package postgres

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/latchkey/latchkey/internal/store"
	"github.com/latchkey/latchkey/internal/store/postgres/pgtest"
	"github.com/latchkey/latchkey/internal/store/sqlstore"
	"github.com/latchkey/latchkey/internal/store/storetest"
)

// The search indexes stay dense as group commits insert events in time
// order (sizes in bytes).
func TestEventIndexesStayDense(t *testing.T) {
	s, raw := guardedStore(t)
	ctx := context.Background()
	storetest.CheckEventIndexesDense(t, 1, func(es []store.Event) error { return s.EventSink().AppendEvents(ctx, es...) },
		storetest.EventIndexSize{
			Size: func(index string) (n int64, err error) {
				err = raw.QueryRowContext(ctx, `SELECT pg_relation_size($1::regclass)`, index).Scan(&n)
				return n, err
			},
			Rebuild: func(index string) error { _, err := raw.ExecContext(ctx, `REINDEX INDEX `+index); return err },
		})
}

// BenchmarkAppendEvents: a group commit's statement (EventSink outside a
// transaction, one caller), per event.
func BenchmarkAppendEvents(b *testing.B) {
	s := openWithPerson(b, pgtest.NewDatabase(b))
	ctx := context.Background()
	storetest.BenchmarkEventBatches(b, func(es []store.Event) error { return s.EventSink().AppendEvents(ctx, es...) })
}

// Migration 31 turns descending event indexes ascending, and keeps an
// index an operator already swapped (built concurrently, then renamed).
func TestAscendingEventIndexMigration(t *testing.T) {
	dsn := pgtest.NewDatabase(t)
	var told []string // what the migration trace was told
	traced := sqlstore.WithMigrationTrace(context.Background(), &sqlstore.MigrationTrace{
		Start: func(m string) { told = append(told, "start "+m) },
		Done:  func(m string, _ time.Duration) { told = append(told, "done "+m) },
	})
	s, err := Open(traced, dsn)
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
	if len(told) > 0 {
		t.Errorf("a new store's migrations were traced: %v", told)
	}
	raw := openRaw(t, dsn)
	exec := execOn(t, raw)
	// The indexes as migration 30 left them, but events_client already
	// swapped by hand.
	exec(`DELETE FROM schema_migrations WHERE version = 31`)
	exec(`DROP INDEX events_occurred`)
	exec(`CREATE INDEX events_occurred ON events (kind, occurred DESC, id DESC)`)
	exec(`DROP INDEX events_agent`)
	exec(`CREATE INDEX events_agent ON events (kind, agent_user, occurred DESC, id DESC) WHERE agent_user <> ''`)
	exec(`DROP INDEX events_client`)
	exec(`CREATE INDEX CONCURRENTLY events_client_new ON events (kind, client_id, occurred, id)`)
	exec(`ALTER INDEX events_client_new RENAME TO events_client`)
	oid := func(name string) (n int64) {
		if err := raw.QueryRow(`SELECT to_regclass($1)::oid::bigint`, name).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	swapped, occurred := oid("events_client"), oid("events_occurred")

	s, err = Open(traced, dsn)
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
	if want := []string{"start 0031_ascending_event_indexes", "done 0031_ascending_event_indexes"}; !slices.Equal(told, want) {
		t.Errorf("the upgrade's migration trace: %v, want %v", told, want)
	}
	rows, err := raw.Query(`SELECT indexname, indexdef FROM pg_indexes WHERE tablename = 'events' AND indexname <> 'events_pkey'`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	n := 0
	for rows.Next() {
		var name, def string
		if err := rows.Scan(&name, &def); err != nil {
			t.Fatal(err)
		}
		n++
		if strings.Contains(def, "DESC") || !strings.Contains(def, "occurred, id)") {
			t.Errorf("%s after the migration: %s", name, def)
		}
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	if n != len(storetest.EventIndexes) {
		t.Errorf("%d search indexes, want %d", n, len(storetest.EventIndexes))
	}
	if oid("events_client") != swapped {
		t.Error("the index swapped beforehand was rebuilt")
	}
	if oid("events_occurred") == occurred {
		t.Error("the descending events_occurred was kept")
	}
}
