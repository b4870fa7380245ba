package postgres

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/latchkey/latchkey/internal/client"
	"github.com/latchkey/latchkey/internal/store"
	"github.com/latchkey/latchkey/internal/store/sqlstore"
)

// A request that decides on the generations last read (client.Optimistic)
// confirms them in its first write. Its event outside a transaction is
// one statement, with no read of the generations, while they hold; once
// another instance has moved them, that event is not inserted, no write of
// the request is made, and each answers store.ErrRunAgain. In a batch shared
// with other requests only the stale request's events are left out.
func TestOptimisticRequestsConfirmInTheirWrite(t *testing.T) {
	o := newOptimisticSetup(t)
	a, b, raw, gens, now, ctx := o.a, o.b, o.raw, o.gens, o.now, context.Background()
	statements := &o.statements
	token := func(int) store.Token { return o.issue(t, store.KindAccess, "") }
	event := func(id string) store.Event {
		return store.Event{ID: id, Kind: store.EventOAuth, Type: "T", ClientID: "c1", Occurred: now}
	}
	stored := func(id string) bool { return o.exists(t, "events", id) }
	optimistic := func() context.Context { return o.optimistic(t) }
	t1, t2, t3 := token(1), token(2), token(3)
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

	// A revocation without a read is its one statement too.
	req = optimistic()
	before = statements.Load()
	if ok, err := a.RevokeLiveToken(req, store.KindAccess, t3.Hash, "c1", now, event("revoked")); !ok || err != nil ||
		statements.Load()-before != 1 || !stored("revoked") {
		t.Errorf("a revocation without a read: %v, %v after %d statements, stored %v; want it alone",
			ok, err, statements.Load()-before, stored("revoked"))
	}

	if err := b.RevokeToken(ctx, t1.Hash, now); err != nil { // another instance moves the token generation
		t.Fatal(err)
	}
	req = optimistic()
	if err := a.EventSink().AppendEvents(req, event("stale")); !errors.Is(err, store.ErrRunAgain) || stored("stale") {
		t.Errorf("moved generations: %v, stored %v; want ErrRunAgain and no event", err, stored("stale"))
	}
	before = statements.Load()
	if err := client.Confirm(req); !errors.Is(err, store.ErrRunAgain) || statements.Load() != before {
		t.Errorf("Confirm after a stale insert: %v after %d statements; want ErrRunAgain without one", err, statements.Load()-before)
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
		"a use": func(ctx context.Context) error { _, err := a.SpendTokenUse(ctx, t2.Hash, nil); return err },
		"a revocation without a read": func(ctx context.Context) error {
			_, err := a.RevokeLiveToken(ctx, store.KindAccess, t2.Hash, "c1", now, event("stale revocation"))
			return err
		},
	} {
		req := optimistic()
		n++
		if err := b.RevokeToken(ctx, token(n).Hash, now); err != nil {
			t.Fatal(err)
		}
		if err := write(req); !errors.Is(err, store.ErrRunAgain) {
			t.Errorf("%s of a stale request: %v, want ErrRunAgain", name, err)
		}
	}
	var revoked, uses int64
	if err := raw.QueryRowContext(ctx, `SELECT revoked_at, usage_count FROM tokens WHERE hash = $1`, t2.Hash).Scan(&revoked, &uses); err != nil || revoked != 0 || uses != 0 {
		t.Errorf("t2 after stale writes: revoked_at %d, usage_count %d, %v; want untouched", revoked, uses, err)
	}
	if stored("stale revocation") {
		t.Error("a stale revocation without a read inserted its event")
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
		if stale := i%2 == 0; stale != errors.Is(err, store.ErrRunAgain) || stale == stored(id) || !stale && err != nil {
			t.Errorf("%s (stale %v): %v, stored %v", id, stale, err, stored(id))
		}
	}
}

// A transaction of an optimistic request checks the generations in its
// first statement (latchkey_guard_generations) instead of reading them
// before: inserts alone are still one statement; a transaction that
// begins checks them after its BEGIN; a guarded read's statement checks
// both. Moved generations, the token's or the client's, fail each with
// store.ErrRunAgain and nothing of it is written.
func TestOptimisticTransactionsCheckInTheirFirstStatement(t *testing.T) {
	o := newOptimisticSetup(t)
	a, b, raw, gens, now, ctx := o.a, o.b, o.raw, o.gens, o.now, context.Background()
	statements := &o.statements
	if err := b.CreatePerson(ctx, store.Person{ID: "p1", Email: "p1@example.com", Status: "ACTIVATED"}); err != nil {
		t.Fatal(err)
	}
	grant := func() (store.Grant, store.Token) { return o.grant(store.KindRefresh, "p1") }
	exists := func(table, key string) bool { return o.exists(t, table, key) }
	optimistic := func() context.Context { return o.optimistic(t) }
	// Another instance moves one of the generations: it revokes a token, or
	// it changes a client.
	clients := 0
	moves := []struct {
		name string
		move func()
	}{
		{"a token revoked", func() {
			t.Helper()
			if err := b.RevokeToken(ctx, o.issue(t, store.KindRefresh, "p1").Hash, now); err != nil {
				t.Fatal(err)
			}
		}},
		{"a client created", func() {
			t.Helper()
			clients++
			if err := b.CreateClient(ctx, store.Client{ID: fmt.Sprintf("other%d", clients), Name: "other",
				GrantTypes: []string{"client_credentials"}}); err != nil {
				t.Fatal(err)
			}
		}},
	}
	t0 := o.issue(t, store.KindRefresh, "p1")
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

		for _, m := range moves {
			g, _ = grant()
			req = optimistic()
			m.move()
			if err := a.Tx(req, tc.fn(g)); !errors.Is(err, store.ErrRunAgain) || exists("grants", g.ID) || exists("events", "e-"+g.ID) {
				t.Errorf("%s after %s: %v, grant %v, event %v; want ErrRunAgain and nothing written",
					tc.name, m.name, err, exists("grants", g.ID), exists("events", "e-"+g.ID))
			}
			if err := client.Confirm(req); !errors.Is(err, store.ErrRunAgain) {
				t.Errorf("%s after %s: Confirm after a stale transaction: %v", tc.name, m.name, err)
			}
			if _, err := gens.Get(client.PerRequest(ctx)); err != nil { // a's generations up to date again
				t.Fatal(err)
			}
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

// optimisticSetup is two instances on one database for the tests of
// optimistic requests: a's statements counted, and its generations' stale
// backoff over by each request (pastEveryBackoff).
type optimisticSetup struct {
	a, b       *Store
	raw        *sql.DB
	gens       *client.Fresh[sqlstore.Generations]
	statements atomic.Int64
	now        time.Time
	n          int // grants made
}

func newOptimisticSetup(t *testing.T) *optimisticSetup {
	a, b, dsn := twoInstances(t)
	o := &optimisticSetup{a: a, b: b, raw: openRaw(t, dsn), gens: a.SharedGenerations(), now: time.Now().UTC().Truncate(time.Microsecond)}
	a.ObserveStatements(func(string, time.Duration) { o.statements.Add(1) })
	o.gens.Now = pastEveryBackoff()
	return o
}

// optimistic is a request of a's that takes the generations last read.
func (o *optimisticSetup) optimistic(t *testing.T) context.Context {
	t.Helper()
	req := client.Optimistic(context.Background())
	if _, err := o.gens.Get(req); err != nil {
		t.Fatal(err)
	}
	return req
}

// grant is a new grant of client c1 and its token of kind, not stored.
func (o *optimisticSetup) grant(kind, subject string) (store.Grant, store.Token) {
	o.n++
	g := store.Grant{ID: fmt.Sprintf("g%d", o.n), ClientID: "c1", Subject: subject, Scopes: []string{"read"},
		CreatedAt: o.now, ExpiresAt: o.now.Add(time.Hour)}
	tk := store.Token{Hash: []byte(fmt.Sprintf("h%d", o.n)), Kind: kind, GrantID: g.ID, ClientID: "c1", Subject: subject,
		Scopes: []string{"read"}, IssuedAt: o.now, ExpiresAt: o.now.Add(time.Hour)}
	return g, tk
}

// issue stores a new grant and its token through b, each change of with
// made to the token first.
func (o *optimisticSetup) issue(t *testing.T, kind, subject string, with ...func(*store.Token)) store.Token {
	t.Helper()
	g, tk := o.grant(kind, subject)
	for _, change := range with {
		change(&tk)
	}
	if err := o.b.CreateGrant(context.Background(), g); err != nil {
		t.Fatal(err)
	}
	if err := o.b.CreateToken(context.Background(), tk); err != nil {
		t.Fatal(err)
	}
	return tk
}

// exists tells whether table holds the row of id.
func (o *optimisticSetup) exists(t *testing.T, table, id string) bool {
	t.Helper()
	var n int
	if err := o.raw.QueryRowContext(context.Background(), `SELECT count(*) FROM `+table+` WHERE id = $1`, id).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n == 1
}

// A revocation without a read that revokes nothing (an unknown token,
// another client's, one revoked already) runs no UPDATE: the token
// generation, which every instance's cache and every optimistic request
// follows, stays where it was. One that revokes moves it.
func TestRevocationWithoutAReadMovesTheGenerationOnlyWhenItRevokes(t *testing.T) {
	for _, kind := range []string{store.KindAccess, store.KindRefresh} {
		t.Run(kind, func(t *testing.T) {
			o := newOptimisticSetup(t)
			a, b, ctx := o.a, o.b, context.Background()
			live, revoked := o.issue(t, kind, ""), o.issue(t, kind, "")
			if err := b.RevokeGrant(ctx, revoked.GrantID, o.now); err != nil {
				t.Fatal(err)
			}
			gen := func() int64 {
				t.Helper()
				g, err := a.Generations(ctx)
				if err != nil {
					t.Fatal(err)
				}
				return g.Token
			}
			before := gen()
			ev := store.Event{ID: "e", Kind: store.EventOAuth, Type: "T", ClientID: "c1", Occurred: o.now}
			for _, c := range []struct {
				name, client string
				hash         []byte
			}{{"an unknown token", "c1", []byte("nope")}, {"another client's", "c2", live.Hash}, {"one revoked already", "c1", revoked.Hash}} {
				if ok, err := a.RevokeLiveToken(ctx, kind, c.hash, c.client, o.now, ev); ok || err != nil {
					t.Errorf("%s: %v, %v; want false, nil", c.name, ok, err)
				}
			}
			if after := gen(); after != before {
				t.Errorf("revocations of nothing moved the token generation %d → %d", before, after)
			}
			if ok, err := a.RevokeLiveToken(ctx, kind, live.Hash, "c1", o.now, ev); !ok || err != nil {
				t.Fatalf("the live token: %v, %v", ok, err)
			}
			if after := gen(); after == before {
				t.Error("a revocation left the token generation where it was")
			}
		})
	}
}

// A use of a limited token by an optimistic request checks the generations
// in the use's own statement: one statement while they hold, and none of
// the request's uses counted once they have moved (store.ErrRunAgain). In a
// write shared by concurrent requests only the uses of those whose
// generations held are counted, each told a count of its own, and only
// their events are stored with them.
func TestOptimisticUsesConfirmInTheirWrite(t *testing.T) {
	o := newOptimisticSetup(t)
	a, b, raw, gens, now, ctx := o.a, o.b, o.raw, o.gens, o.now, context.Background()
	limited := o.issue(t, store.KindAccess, "", func(tk *store.Token) { tk.UsageLimit = 100 })
	stored := func() int {
		var n int
		if err := raw.QueryRowContext(ctx, `SELECT usage_count FROM tokens WHERE hash = $1`, limited.Hash).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	// Each use goes with its event (SpendTokenUse with its event), which only
	// the uses counted store.
	event := func(id string) store.Event {
		return store.Event{ID: id, Kind: store.EventOAuth, Type: "TOKEN_INTROSPECTION_SUCCESS", Occurred: now}
	}
	storedEvents := func() []string {
		var ids []string
		rows, err := raw.QueryContext(ctx, `SELECT id FROM events ORDER BY id`)
		if err != nil {
			t.Fatal(err)
		}
		defer rows.Close()
		for rows.Next() {
			var id string
			if err := rows.Scan(&id); err != nil {
				t.Fatal(err)
			}
			ids = append(ids, id)
		}
		return ids
	}
	if _, err := gens.Get(ctx); err != nil {
		t.Fatal(err)
	}

	req := o.optimistic(t)
	before := o.statements.Load()
	if got, err := a.SpendTokenUse(req, limited.Hash, eventRef(event("u-first"))); err != nil || got.UsageCount != 1 {
		t.Fatalf("a use of a request whose generations held: %d, %v", got.UsageCount, err)
	}
	if err := client.Confirm(req); err != nil || o.statements.Load()-before != 1 {
		t.Errorf("unchanged generations: Confirm %v after %d statements; want the use's statement alone, with its event",
			err, o.statements.Load()-before)
	}
	if got := storedEvents(); !slices.Equal(got, []string{"u-first"}) {
		t.Errorf("events %v, want the use's", got)
	}

	if err := b.RevokeToken(ctx, o.issue(t, store.KindAccess, "").Hash, now); err != nil { // b moves the token generation
		t.Fatal(err)
	}
	req = o.optimistic(t)
	if _, err := a.SpendTokenUse(req, limited.Hash, eventRef(event("u-stale"))); !errors.Is(err, store.ErrRunAgain) || stored() != 1 {
		t.Errorf("a use of a stale request: %v, stored count %d; want ErrRunAgain and 1", err, stored())
	}
	before = o.statements.Load()
	if err := client.Confirm(req); !errors.Is(err, store.ErrRunAgain) || o.statements.Load() != before {
		t.Errorf("Confirm after a stale use: %v after %d statements; want ErrRunAgain without one", err, o.statements.Load()-before)
	}

	// Stale requests and others counting uses of the token at once.
	if err := b.RevokeToken(ctx, o.issue(t, store.KindAccess, "").Hash, now); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	errs, counts := make([]error, 40), make([]int, 40)
	want := []string{"u-first"}
	for i := range errs {
		ctx := ctx
		if i%2 == 0 {
			ctx = o.optimistic(t) // on the generations before b's revocation
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			var got store.Token
			got, errs[i] = a.SpendTokenUse(ctx, limited.Hash, eventRef(event(fmt.Sprintf("u%02d", i))))
			counts[i] = got.UsageCount
		}()
	}
	wg.Wait()
	seen := map[int]bool{}
	for i, err := range errs {
		if stale := i%2 == 0; stale != errors.Is(err, store.ErrRunAgain) || !stale && err != nil {
			t.Errorf("use %d (stale %v): %v", i, stale, err)
		} else if !stale {
			if seen[counts[i]] || counts[i] < 2 || counts[i] > 21 {
				t.Errorf("use %d told the count %d (told before: %v)", i, counts[i], seen[counts[i]])
			}
			seen[counts[i]] = true
			want = append(want, fmt.Sprintf("u%02d", i))
		}
	}
	if n := stored(); n != 21 {
		t.Errorf("stored count %d after 20 uses that held, want 21", n)
	}
	slices.Sort(want)
	if got := storedEvents(); !slices.Equal(got, want) {
		t.Errorf("events %v, want exactly those of the uses that held %v", got, want)
	}
}

// eventRef is ev as SpendTokenUse takes it.
func eventRef(ev store.Event) *store.Event { return &ev }
