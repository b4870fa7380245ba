package postgres

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/latchkey/latchkey/internal/client"
	"github.com/latchkey/latchkey/internal/store"
)

// A request that decides on the generations last read (client.Optimistic)
// confirms them in its first write. Its event outside a transaction is
// one statement, with no read of the generations, while they hold; once
// another instance has moved them, that event is not inserted, no write of
// the request is made, and each answers store.ErrStale. In a batch shared
// with other requests only the stale request's events are left out.
func TestOptimisticRequestsConfirmInTheirWrite(t *testing.T) {
	a, b, dsn := twoInstances(t)
	ctx := context.Background()
	raw, err := sql.Open("pgx", dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	var statements atomic.Int64
	a.ObserveStatements(func(string, time.Duration) { statements.Add(1) })
	now := time.Now().UTC().Truncate(time.Microsecond)
	token := func(n int) store.Token {
		t.Helper()
		g := store.Grant{ID: fmt.Sprintf("g%d", n), ClientID: "c1", Scopes: []string{"read"}, CreatedAt: now, ExpiresAt: now.Add(time.Hour)}
		tk := store.Token{Hash: []byte(fmt.Sprintf("h%d", n)), Kind: store.KindAccess, GrantID: g.ID, ClientID: "c1",
			Scopes: []string{"read"}, IssuedAt: now, ExpiresAt: now.Add(time.Hour)}
		if err := b.CreateGrant(ctx, g); err != nil {
			t.Fatal(err)
		}
		if err := b.CreateToken(ctx, tk); err != nil {
			t.Fatal(err)
		}
		return tk
	}
	event := func(id string) store.Event {
		return store.Event{ID: id, Kind: store.EventOAuth, Type: "T", ClientID: "c1", Occurred: now}
	}
	stored := func(id string) bool {
		t.Helper()
		var n int
		if err := raw.QueryRowContext(ctx, `SELECT count(*) FROM events WHERE id = $1`, id).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n == 1
	}
	gens := a.SharedGenerations()
	gens.Now = pastEveryBackoff()
	optimistic := func() context.Context {
		t.Helper()
		req := client.Optimistic(ctx)
		if _, err := gens.Get(req); err != nil {
			t.Fatal(err)
		}
		return req
	}
	t1, t2 := token(1), token(2)
	if _, err := gens.Get(ctx); err != nil { // the value the requests below start from
		t.Fatal(err)
	}

	req := optimistic()
	if _, ok := client.Unconfirmed(req, gens); !ok {
		t.Fatal("an optimistic request read its generations")
	}
	before := statements.Load()
	if err := a.EventSink().AppendEvents(req, event("held")); err != nil {
		t.Fatal(err)
	}
	if err := client.Confirm(req); err != nil || statements.Load()-before != 1 || !stored("held") {
		t.Errorf("unchanged generations: %v after %d statements, stored %v; want the insert alone",
			err, statements.Load()-before, stored("held"))
	}

	if err := b.RevokeToken(ctx, t1.Hash, now); err != nil { // another instance moves the token generation
		t.Fatal(err)
	}
	req = optimistic()
	if err := a.EventSink().AppendEvents(req, event("stale")); !errors.Is(err, store.ErrStale) || stored("stale") {
		t.Errorf("moved generations: %v, stored %v; want ErrStale and no event", err, stored("stale"))
	}
	before = statements.Load()
	if err := client.Confirm(req); !errors.Is(err, store.ErrStale) || statements.Load() != before {
		t.Errorf("Confirm after a stale insert: %v after %d statements; want ErrStale without one", err, statements.Load()-before)
	}

	// The writes of a stale request: none is made. (Each finds out by a
	// read, which brings a's generations up to date: b moves them again
	// before each.)
	n := 2
	for name, write := range map[string]func(ctx context.Context) error{
		"a revocation": func(ctx context.Context) error { return a.RevokeToken(ctx, t2.Hash, now) },
		"a transaction": func(ctx context.Context) error {
			return a.Tx(ctx, func(tx store.Store) error { return tx.RevokeToken(ctx, t2.Hash, now) })
		},
		"a use": func(ctx context.Context) error { _, err := a.CountTokenUse(ctx, t2.Hash); return err },
	} {
		req := optimistic()
		n++
		if err := b.RevokeToken(ctx, token(n).Hash, now); err != nil {
			t.Fatal(err)
		}
		if err := write(req); !errors.Is(err, store.ErrStale) {
			t.Errorf("%s of a stale request: %v, want ErrStale", name, err)
		}
	}
	var revoked, uses int64
	if err := raw.QueryRowContext(ctx, `SELECT revoked_at, usage_count FROM tokens WHERE hash = $1`, t2.Hash).Scan(&revoked, &uses); err != nil || revoked != 0 || uses != 0 {
		t.Errorf("t2 after stale writes: revoked_at %d, usage_count %d, %v; want untouched", revoked, uses, err)
	}

	// A request that reads sees the change; optimistic ones hold again after it.
	if _, err := gens.Get(client.PerRequest(ctx)); err != nil {
		t.Fatal(err)
	}
	req = optimistic()
	if err := a.EventSink().AppendEvents(req, event("held again")); err != nil || client.Confirm(req) != nil || !stored("held again") {
		t.Errorf("after a read: %v, stored %v", err, stored("held again"))
	}

	// Stale requests and others in shared batches: each stale one's event
	// is left out, every other's is inserted.
	if err := b.RevokeToken(ctx, t2.Hash, now); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	errs := make([]error, 40)
	for i := range errs {
		ctx := ctx
		if i%2 == 0 {
			ctx = optimistic()
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = a.EventSink().AppendEvents(ctx, event(fmt.Sprintf("batch %d", i)))
		}()
	}
	wg.Wait()
	for i, err := range errs {
		id := fmt.Sprintf("batch %d", i)
		if stale := i%2 == 0; stale != errors.Is(err, store.ErrStale) || stale == stored(id) || !stale && err != nil {
			t.Errorf("%s (stale %v): %v, stored %v", id, stale, err, stored(id))
		}
	}
}

// A transaction of an optimistic request checks the generations in its
// first statement (latchkey_guard_generations) instead of reading them
// before: inserts alone are still one statement; a transaction that
// begins checks them after its BEGIN; a guarded read's statement checks
// both. Moved generations fail each with store.ErrStale and nothing of it
// is written.
func TestOptimisticTransactionsCheckInTheirFirstStatement(t *testing.T) {
	a, b, dsn := twoInstances(t)
	ctx := context.Background()
	raw, err := sql.Open("pgx", dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	var statements atomic.Int64
	a.ObserveStatements(func(string, time.Duration) { statements.Add(1) })
	now := time.Now().UTC().Truncate(time.Microsecond)
	if err := b.CreatePerson(ctx, store.Person{ID: "p1", Email: "p1@example.com", Status: "ACTIVATED"}); err != nil {
		t.Fatal(err)
	}
	n := 0
	grant := func() (store.Grant, store.Token) {
		n++
		g := store.Grant{ID: fmt.Sprintf("g%d", n), ClientID: "c1", Subject: "p1", Scopes: []string{"read"}, CreatedAt: now, ExpiresAt: now.Add(time.Hour)}
		tk := store.Token{Hash: []byte(fmt.Sprintf("h%d", n)), Kind: store.KindRefresh, GrantID: g.ID, ClientID: "c1", Subject: "p1",
			Scopes: []string{"read"}, IssuedAt: now, ExpiresAt: now.Add(time.Hour)}
		return g, tk
	}
	exists := func(table, key string) bool {
		t.Helper()
		var n int
		col := map[string]string{"grants": "id", "events": "id"}[table]
		if err := raw.QueryRowContext(ctx, `SELECT count(*) FROM `+table+` WHERE `+col+` = $1`, key).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n == 1
	}
	gens := a.SharedGenerations()
	gens.Now = pastEveryBackoff()
	optimistic := func() context.Context {
		t.Helper()
		req := client.Optimistic(ctx)
		if _, err := gens.Get(req); err != nil {
			t.Fatal(err)
		}
		return req
	}
	move := func() { // another instance revokes a token
		t.Helper()
		g, tk := grant()
		if err := b.CreateGrant(ctx, g); err != nil {
			t.Fatal(err)
		}
		if err := b.CreateToken(ctx, tk); err != nil {
			t.Fatal(err)
		}
		if err := b.RevokeToken(ctx, tk.Hash, now); err != nil {
			t.Fatal(err)
		}
	}
	g0, t0 := grant()
	if err := b.CreateGrant(ctx, g0); err != nil {
		t.Fatal(err)
	}
	if err := b.CreateToken(ctx, t0); err != nil {
		t.Fatal(err)
	}
	if _, err := gens.Get(ctx); err != nil {
		t.Fatal(err)
	}

	inserts := func(g store.Grant) func(tx store.Store) error {
		return func(tx store.Store) error {
			if err := tx.CreateGrant(ctx, g); err != nil {
				return err
			}
			return tx.EventSink().AppendEvents(ctx, store.Event{ID: "e-" + g.ID, Kind: store.EventOAuth, Type: "T", Occurred: now})
		}
	}
	begins := func(g store.Grant) func(tx store.Store) error {
		return func(tx store.Store) error {
			if _, err := tx.UseRefreshToken(ctx, t0.Hash, now); err != nil && !errors.Is(err, store.ErrConflict) {
				return err // (an UPDATE … RETURNING: it begins the transaction)
			}
			return inserts(g)(tx)
		}
	}
	guarded := func(g store.Grant) func(tx store.Store) error {
		return func(tx store.Store) error {
			if _, _, _, err := tx.GetTokenGrantGuardPerson(ctx, t0.Hash); err != nil {
				return err
			}
			return inserts(g)(tx)
		}
	}
	for _, tc := range []struct {
		name       string
		fn         func(store.Grant) func(tx store.Store) error
		statements int64 // when the generations held
	}{
		{"inserts alone", inserts, 1},
		{"a transaction that begins", begins, 1}, // BEGIN, the check and the UPDATE in one round trip (its COMMIT is not counted)
		{"a guarded read", guarded, 2},           // the read; the inserts with both guards
	} {
		g, _ := grant()
		req := optimistic()
		before := statements.Load()
		if err := a.Tx(req, tc.fn(g)); err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if got := statements.Load() - before; got != tc.statements || !exists("grants", g.ID) || !exists("events", "e-"+g.ID) {
			t.Errorf("%s with unchanged generations: %d statements (want %d), grant %v, event %v",
				tc.name, got, tc.statements, exists("grants", g.ID), exists("events", "e-"+g.ID))
		}
		before = statements.Load()
		if err := client.Confirm(req); err != nil || statements.Load() != before {
			t.Errorf("%s: Confirm after the transaction: %v after %d statements, want none", tc.name, err, statements.Load()-before)
		}

		g, _ = grant()
		req = optimistic()
		move()
		if err := a.Tx(req, tc.fn(g)); !errors.Is(err, store.ErrStale) || exists("grants", g.ID) || exists("events", "e-"+g.ID) {
			t.Errorf("%s with moved generations: %v, grant %v, event %v; want ErrStale and nothing written",
				tc.name, err, exists("grants", g.ID), exists("events", "e-"+g.ID))
		}
		if err := client.Confirm(req); !errors.Is(err, store.ErrStale) {
			t.Errorf("%s: Confirm after a stale transaction: %v", tc.name, err)
		}
		if _, err := gens.Get(client.PerRequest(ctx)); err != nil { // a's generations up to date again
			t.Fatal(err)
		}
	}
	var used int64
	if err := raw.QueryRowContext(ctx, `SELECT used_at FROM tokens WHERE hash = $1`, t0.Hash).Scan(&used); err != nil || used == 0 {
		t.Errorf("the refresh token's use of the transaction that held: %d, %v", used, err)
	}
}

// pastEveryBackoff is a Fresh's clock on which each reading is an hour
// after the one before: a stale request's backoff (client.Fresh) is over
// by the next request, so every request of a test is optimistic.
func pastEveryBackoff() func() time.Time {
	start := time.Now()
	var hours atomic.Int64
	return func() time.Time { return start.Add(time.Duration(hours.Add(1)) * time.Hour) }
}
