package postgres

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/latchkey/latchkey/internal/client"
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

// An instance starting on an up-to-date database neither takes the
// migration lock nor writes: while another session holds the lock (an
// instance migrating), it still opens at once.
func TestUpToDateStartTakesNoMigrationLock(t *testing.T) {
	dsn := pgtest.NewDatabase(t)
	first, err := Open(context.Background(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer first.Close()
	holder, err := sql.Open("pgx", dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer holder.Close()
	conn, err := holder.Conn(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := conn.ExecContext(context.Background(), `SELECT pg_advisory_lock(7809847814149645689)`); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	second, err := Open(ctx, dsn)
	if err != nil {
		t.Fatalf("open beside a held migration lock: %v", err)
	}
	defer second.Close()
	if got := second.Migrations().Applied; len(got) != 0 {
		t.Errorf("the second open applied %v", got)
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

// Two instances (two store handles, each with its own pool) that rotate
// the signing key at once add one key between them.
func TestPostgresTwoInstancesRotateOnce(t *testing.T) {
	dsn := pgtest.NewDatabase(t)
	var instances [2]*Store
	for i := range instances {
		s, err := Open(context.Background(), dsn)
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		instances[i] = s
	}
	now := time.Now()
	first := store.SigningKey{KID: "a", Generation: 1, Algorithm: "ES256", SealedPrivate: []byte{1},
		PublicJWK: []byte(`{}`), CreatedAt: now, PublishAt: now, SignFrom: now}
	if err := instances[0].AddSigningKey(context.Background(), first, time.Hour); err != nil {
		t.Fatal(err)
	}
	const rounds = 10 // each round, both instances rotate past the newest key at once
	for round := range rounds {
		gen := int64(round + 2)
		var wg sync.WaitGroup
		errs := make([]error, len(instances))
		start := make(chan struct{})
		for i, s := range instances {
			wg.Add(1)
			go func() {
				defer wg.Done()
				k := first
				k.KID, k.Generation = fmt.Sprintf("k%d-%d", gen, i), gen
				<-start
				errs[i] = s.AddSigningKey(context.Background(), k, time.Hour)
			}()
		}
		close(start)
		wg.Wait()
		wins := 0
		for i, err := range errs {
			switch {
			case err == nil:
				wins++
			case !errors.Is(err, store.ErrConflict):
				t.Fatalf("round %d, instance %d: %v", round, i, err)
			}
		}
		if wins != 1 {
			t.Fatalf("round %d: %d instances added generation %d, want 1", round, wins, gen)
		}
	}
	keys, err := instances[1].ListSigningKeys(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(keys) != rounds+1 {
		t.Errorf("%d keys stored after %d rounds of racing rotations, want %d", len(keys), rounds, rounds+1)
	}
}

// The scope cache of one instance follows another instance's scope writes
// from the next request on (its generation read), and sends no statement
// while nothing changed.
func TestScopeCacheFollowsOtherInstances(t *testing.T) {
	dsn := pgtest.NewDatabase(t)
	open := func() *Store {
		s, err := Open(context.Background(), dsn)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		return s
	}
	a, b := open(), open()
	fresh := &client.Fresh{Read: a.ClientGeneration}
	a.UseScopeCache(&sqlstore.ScopeCache{Generation: fresh.Latest})
	var statements atomic.Int64
	a.ObserveStatements(func(string, time.Duration) { statements.Add(1) })
	ctx := context.Background()
	if err := b.CreateScope(ctx, store.Scope{ID: "metered", UsageLimit: 5}); err != nil {
		t.Fatal(err)
	}
	limit := func() int {
		t.Helper()
		if _, err := fresh.Get(ctx); err != nil { // what each request's client lookup does
			t.Fatal(err)
		}
		got, err := a.GetScopes(ctx, []string{"metered"})
		if err != nil || len(got) != 1 {
			t.Fatalf("GetScopes = %v, %v", got, err)
		}
		return got[0].UsageLimit
	}
	if got := limit(); got != 5 {
		t.Fatalf("usage limit %d, want 5", got)
	}
	if _, err := fresh.Get(ctx); err != nil {
		t.Fatal(err)
	}
	before := statements.Load()
	if got, err := a.GetScopes(ctx, []string{"metered"}); err != nil || len(got) != 1 || got[0].UsageLimit != 5 {
		t.Fatalf("GetScopes = %v, %v", got, err)
	}
	if n := statements.Load() - before; n != 0 {
		t.Errorf("an unchanged scope configuration cost %d statements", n)
	}
	if err := b.ReplaceScope(ctx, store.Scope{ID: "metered", UsageLimit: 9}); err != nil {
		t.Fatal(err)
	}
	if got := limit(); got != 9 {
		t.Errorf("after the other instance's change: usage limit %d, want 9", got)
	}
	if err := b.DeleteScope(ctx, "metered"); err != nil {
		t.Fatal(err)
	}
	if _, err := fresh.Get(ctx); err != nil {
		t.Fatal(err)
	}
	if got, err := a.GetScopes(ctx, []string{"metered"}); err != nil || len(got) != 0 {
		t.Errorf("after the other instance's delete: %v, %v", got, err)
	}
}

// Issuances share the person's row (SharePerson): a second one does not
// wait for the first, while a status change waits for both and later
// issuances see it.
func TestSharePersonLetsIssuancesShareAndWritersWait(t *testing.T) {
	s := newStore(t)
	ctx := context.Background()
	if err := s.CreatePerson(ctx, store.Person{ID: "p1", Email: "a@example.com", Status: "ACTIVATED"}); err != nil {
		t.Fatal(err)
	}
	held, release, first := make(chan struct{}), make(chan struct{}), make(chan error, 1)
	go func() {
		first <- s.Tx(ctx, func(tx store.Store) error {
			if _, err := tx.SharePerson(ctx, "p1"); err != nil {
				return err
			}
			close(held)
			<-release
			return nil
		})
	}()
	<-held
	shortCtx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := s.Tx(shortCtx, func(tx store.Store) error {
		_, err := tx.SharePerson(shortCtx, "p1")
		return err
	}); err != nil {
		t.Fatalf("a second issuance waited for the first: %v", err)
	}
	blocked := make(chan error, 1)
	go func() {
		blocked <- s.UpdatePerson(ctx, "p1", func(p store.Person) (store.Person, error) {
			p.Status = "BLOCKED"
			return p, nil
		})
	}()
	// The block must still be waiting while the first issuance holds the
	// row; it cannot finish before release, whatever the machine's speed.
	select {
	case err := <-blocked:
		t.Fatalf("the block did not wait for the issuance: %v", err)
	case <-time.After(200 * time.Millisecond):
	}
	close(release)
	if err := <-first; err != nil {
		t.Fatal(err)
	}
	if err := <-blocked; err != nil {
		t.Fatal(err)
	}
	err := s.Tx(ctx, func(tx store.Store) error {
		p, err := tx.SharePerson(ctx, "p1")
		if err == nil && p.Status != "BLOCKED" {
			err = fmt.Errorf("status %q after the block", p.Status)
		}
		return err
	})
	if err != nil {
		t.Error(err)
	}
}

// TestEventCountFollowsOtherInstances: instance a remembers that all OAuth
// events reached the search's bound; deletions by instance b, by an
// operator's statement and by TRUNCATE must each end that at a's next count.
func TestEventCountFollowsOtherInstances(t *testing.T) {
	dsn := pgtest.NewDatabase(t)
	ctx := context.Background()
	open := func() *Store {
		s, err := Open(ctx, dsn)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		return s
	}
	a, b := open(), open()
	raw, err := sql.Open("pgx", dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	base := time.Now().UTC().Truncate(time.Second)
	fill := func(n int) {
		t.Helper()
		var evs []store.Event
		for i := range n {
			evs = append(evs, store.Event{ID: fmt.Sprintf("e%d-%d", base.UnixNano(), i), Kind: store.EventOAuth, Type: "A",
				Name: "a", Occurred: base.Add(time.Duration(i) * time.Millisecond)})
		}
		if err := b.AppendEvents(ctx, evs...); err != nil {
			t.Fatal(err)
		}
		base = base.Add(time.Second)
	}
	all := store.EventFilter{Kind: store.EventOAuth}
	saturate := func() {
		t.Helper()
		for range 2 {
			if n, err := a.CountEvents(ctx, all, 3); err != nil || n != 3 {
				t.Fatalf("count = %d, %v; want 3", n, err)
			}
		}
	}
	expect := func(want int, after string) {
		t.Helper()
		if n, err := a.CountEvents(ctx, all, 3); err != nil || n != want {
			t.Errorf("after %s: count = %d, %v; want %d", after, n, err, want)
		}
	}
	fill(5)
	saturate()
	if n, err := b.DeleteEventsBefore(ctx, base, 4); err != nil || n != 4 {
		t.Fatalf("b deleted %d, %v", n, err)
	}
	expect(1, "the other instance's retention")
	fill(4)
	saturate()
	if _, err := raw.ExecContext(ctx, `DELETE FROM events WHERE id IN (SELECT id FROM events ORDER BY id LIMIT 4)`); err != nil {
		t.Fatal(err)
	}
	expect(1, "an operator's DELETE")
	fill(4)
	saturate()
	if _, err := raw.ExecContext(ctx, `TRUNCATE events`); err != nil {
		t.Fatal(err)
	}
	expect(0, "TRUNCATE")
}
