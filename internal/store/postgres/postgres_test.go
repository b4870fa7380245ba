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
	a, b, _ := twoInstances(t)
	fresh := &client.Fresh[int64]{Read: a.ClientGeneration}
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
	now := time.Now().UTC()
	if err := s.CreateGrant(ctx, store.Grant{ID: "g1", ClientID: "c1", Subject: "p1", CreatedAt: now,
		ExpiresAt: now.Add(time.Hour)}); err != nil {
		t.Fatal(err)
	}
	if err := s.CreateToken(ctx, store.Token{Hash: []byte("r1"), Kind: store.KindRefresh, GrantID: "g1", ClientID: "c1",
		Subject: "p1", IssuedAt: now, ExpiresAt: now.Add(time.Hour)}); err != nil {
		t.Fatal(err)
	}
	setStatus := func(status string) error {
		return s.UpdatePerson(ctx, "p1", func(p store.Person) (store.Person, error) {
			p.Status = status
			return p, nil
		})
	}
	for name, share := range map[string]func(ctx context.Context, tx store.Store) (store.Person, error){
		"SharePerson": func(ctx context.Context, tx store.Store) (store.Person, error) { return tx.SharePerson(ctx, "p1") },
		"GetTokenGrantSharePerson": func(ctx context.Context, tx store.Store) (store.Person, error) {
			_, _, p, err := tx.GetTokenGrantSharePerson(ctx, []byte("r1"))
			return p, err
		},
	} {
		t.Run(name, func(t *testing.T) {
			if err := setStatus("ACTIVATED"); err != nil {
				t.Fatal(err)
			}
			held, release, first := make(chan struct{}), make(chan struct{}), make(chan error, 1)
			go func() {
				first <- s.Tx(ctx, func(tx store.Store) error {
					if _, err := share(ctx, tx); err != nil {
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
				_, err := share(shortCtx, tx)
				return err
			}); err != nil {
				t.Fatalf("a second issuance waited for the first: %v", err)
			}
			blocked := make(chan error, 1)
			go func() { blocked <- setStatus("BLOCKED") }()
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
				p, err := share(ctx, tx)
				if err == nil && p.Status != "BLOCKED" {
					err = fmt.Errorf("status %q after the block", p.Status)
				}
				return err
			})
			if err != nil {
				t.Error(err)
			}
		})
	}
}

// TestEventCountFollowsOtherInstances: instance a remembers that all OAuth
// events reached the search's bound; deletions by instance b, by an
// operator's statement and by TRUNCATE must each end that at a's next count.
func TestEventCountFollowsOtherInstances(t *testing.T) {
	a, b, dsn := twoInstances(t)
	ctx := context.Background()
	raw := openRaw(t, dsn)
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

// TestTokenCacheFollowsOtherInstances: instance a answers an access token
// from its cache while nothing changed (one statement: the generation
// read), and sees at its next read every change that another instance or
// an operator made to the token, its grant or its person.
func TestTokenCacheFollowsOtherInstances(t *testing.T) {
	a, b, dsn := twoInstances(t)
	ctx := context.Background()
	var statements atomic.Int64
	a.ObserveStatements(func(string, time.Duration) { statements.Add(1) })
	raw := openRaw(t, dsn)
	now := time.Now().UTC().Truncate(time.Microsecond)
	n := 0
	issue := func(kind string) (store.Token, store.Grant) {
		t.Helper()
		n++
		g := store.Grant{ID: fmt.Sprintf("g%d", n), ClientID: "c1", Subject: fmt.Sprintf("p%d", n), Scopes: []string{"read"},
			Data: []byte(`{"v":1}`), CreatedAt: now, ExpiresAt: now.Add(time.Hour)}
		tk := store.Token{Hash: []byte(fmt.Sprintf("h%d", n)), Kind: kind, GrantID: g.ID, ClientID: "c1", Subject: g.Subject,
			Scopes: []string{"read"}, IssuedAt: now, ExpiresAt: now.Add(time.Hour)}
		if err := b.CreateGrant(ctx, g); err != nil {
			t.Fatal(err)
		}
		if err := b.CreateToken(ctx, tk); err != nil {
			t.Fatal(err)
		}
		for range 2 {
			if _, _, err := a.GetTokenGrant(ctx, tk.Hash); err != nil {
				t.Fatal(err)
			}
		}
		return tk, g
	}
	read := func(hash []byte) (store.Token, store.Grant, error) {
		t.Helper()
		before := statements.Load()
		tk, g, err := a.GetTokenGrant(ctx, hash)
		if kind := tk.Kind; err == nil && kind == store.KindAccess && statements.Load()-before > 2 {
			t.Errorf("an access token read took %d statements", statements.Load()-before)
		}
		return tk, g, err
	}
	tk, _ := issue(store.KindAccess)
	before := statements.Load()
	if _, _, err := a.GetTokenGrant(ctx, tk.Hash); err != nil || statements.Load()-before != 1 {
		t.Errorf("an unchanged access token: %d statements, %v; want 1 (the generation)", statements.Load()-before, err)
	}
	// A request that authenticates its client and then looks a token up
	// (introspection) reads both generations with one statement.
	req := client.PerRequest(ctx)
	before = statements.Load()
	if g, err := a.SharedGenerations().Get(req); err != nil {
		t.Fatalf("generations %+v, %v", g, err)
	}
	if _, _, err := a.GetTokenGrant(req, tk.Hash); err != nil || statements.Load()-before != 1 {
		t.Errorf("a client's generation and then an unchanged access token in one request: %d statements, %v; want 1",
			statements.Load()-before, err)
	}
	for name, tc := range map[string]struct {
		change func(tk store.Token, g store.Grant) error
		check  func(tk store.Token, g store.Grant, err error) bool
	}{
		"b revokes the token": {func(tk store.Token, _ store.Grant) error { return b.RevokeToken(ctx, tk.Hash, now) },
			func(tk store.Token, _ store.Grant, err error) bool { return err == nil && !tk.RevokedAt.IsZero() }},
		// As the revocation endpoint does: the UPDATE and the event are one
		// WITH statement, whose UPDATE must still fire the trigger.
		"b revokes the token with its event": {func(tk store.Token, _ store.Grant) error {
			return b.Tx(ctx, func(tx store.Store) error {
				if err := tx.RevokeToken(ctx, tk.Hash, now); err != nil {
					return err
				}
				return tx.EventSink().AppendEvents(ctx, store.Event{ID: "e-" + string(tk.Hash), Kind: store.EventOAuth,
					Type: "T", ClientID: "c1", Occurred: now})
			})
		}, func(tk store.Token, _ store.Grant, err error) bool { return err == nil && !tk.RevokedAt.IsZero() }},
		"b revokes the grant": {func(_ store.Token, g store.Grant) error { return b.RevokeGrant(ctx, g.ID, now) },
			func(tk store.Token, g store.Grant, err error) bool { return err == nil && !g.RevokedAt.IsZero() }},
		"b blocks the person": {func(_ store.Token, g store.Grant) error { _, err := b.RevokePerson(ctx, g.Subject, now); return err },
			func(tk store.Token, g store.Grant, err error) bool { return err == nil && !tk.RevokedAt.IsZero() }},
		"b replaces the grant's data": {func(_ store.Token, g store.Grant) error { return b.SetGrantData(ctx, g.ID, []byte(`{"v":2}`)) },
			func(_ store.Token, g store.Grant, err error) bool { return err == nil && string(g.Data) == `{"v":2}` }},
		"an operator revokes the token": {func(tk store.Token, _ store.Grant) error {
			_, err := raw.ExecContext(ctx, `UPDATE tokens SET revoked_at = 1 WHERE hash = $1`, tk.Hash)
			return err
		}, func(tk store.Token, _ store.Grant, err error) bool { return err == nil && !tk.RevokedAt.IsZero() }},
		"an operator deletes the token": {func(tk store.Token, _ store.Grant) error {
			_, err := raw.ExecContext(ctx, `DELETE FROM tokens WHERE hash = $1`, tk.Hash)
			return err
		}, func(_ store.Token, _ store.Grant, err error) bool { return errors.Is(err, store.ErrNotFound) }},
		"an operator truncates": {func(store.Token, store.Grant) error {
			_, err := raw.ExecContext(ctx, `TRUNCATE tokens`)
			return err
		}, func(_ store.Token, _ store.Grant, err error) bool { return errors.Is(err, store.ErrNotFound) }},
	} {
		tk, g := issue(store.KindAccess)
		if err := tc.change(tk, g); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if got, gg, err := read(tk.Hash); !tc.check(got, gg, err) {
			t.Errorf("after %s: a read %+v, %+v, %v", name, got, gg, err)
		}
	}
	// A refresh token's use moves no generation: refresh tokens are not kept.
	rt, _ := issue(store.KindRefresh)
	if _, err := b.UseRefreshToken(ctx, rt.Hash, now); err != nil {
		t.Fatal(err)
	}
	if got, _, err := read(rt.Hash); err != nil || got.UsedAt.IsZero() {
		t.Errorf("a refresh token used by b: %+v, %v", got, err)
	}
}

// openRaw opens dsn without latchkey's store, for an operator's
// statements and for checks of what the store wrote; closed at the end of
// the test.
func openRaw(t *testing.T, dsn string) *sql.DB {
	t.Helper()
	raw, err := sql.Open("pgx", dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { raw.Close() })
	return raw
}

// twoInstances opens two stores on one fresh database, as two instances
// of a deployment, and returns its DSN for statements of an operator's.
func twoInstances(t *testing.T) (a, b *Store, dsn string) {
	t.Helper()
	dsn = pgtest.NewDatabase(t)
	open := func() *Store {
		s, err := Open(context.Background(), dsn)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		return s
	}
	return open(), open(), dsn
}
