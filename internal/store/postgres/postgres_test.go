package postgres

import (
	"context"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/latchkey/latchkey/internal/store"
	"github.com/latchkey/latchkey/internal/store/postgres/pgtest"
	"github.com/latchkey/latchkey/internal/store/sqlite"
	"github.com/latchkey/latchkey/internal/store/sqlstore"
	"github.com/latchkey/latchkey/internal/store/storetest"
)

func newStore(t *testing.T) store.Store {
	s, err := Open(context.Background(), pgtest.NewDatabase(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func TestPostgres(t *testing.T) {
	storetest.RunTests(t, newStore)
	storetest.RunConcurrencyTests(t, newStore)
}

// Two instances starting at once against one database both succeed and
// apply each migration once (pg_advisory_xact_lock serialises them).
func TestPostgresConcurrentMigrate(t *testing.T) {
	dsn := pgtest.NewDatabase(t)
	var wg sync.WaitGroup
	stores := make([]*Store, 4)
	errs := make([]error, 4)
	for i := range stores {
		wg.Add(1)
		go func() {
			defer wg.Done()
			stores[i], errs[i] = Open(context.Background(), dsn)
		}()
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("instance %d: %v", i, err)
		}
		defer stores[i].Close()
	}
	got, err := stores[0].AppliedVersions(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	ms, _ := Migrations()
	if d := cmp.Diff(sqlstore.Versions(ms), got); d != "" {
		t.Errorf("applied versions (-want +got):\n%s", d)
	}
	// Running again is a no-op.
	if err := stores[1].Migrate(context.Background()); err != nil {
		t.Errorf("second migrate: %v", err)
	}
}

func TestDialectsHaveTheSameMigrations(t *testing.T) {
	pg, err := Migrations()
	if err != nil {
		t.Fatal(err)
	}
	lite, err := sqlite.Migrations()
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(sqlstore.Versions(lite), sqlstore.Versions(pg)); d != "" {
		t.Errorf("migration versions differ between sqlite and postgres (-sqlite +postgres):\n%s", d)
	}
}

func TestOpenUnreachable(t *testing.T) {
	_, err := Open(context.Background(), "postgres://nobody:secret-pw@127.0.0.1:1/none?sslmode=disable&connect_timeout=2")
	if err == nil {
		t.Fatal("Open of an unreachable server succeeded")
	}
	if got := err.Error(); strings.Contains(got, "secret-pw") {
		t.Errorf("the error shows the password: %s", got)
	}
}
