package storetest

import (
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/latchkey/latchkey/internal/store"
)

// testTokenGrantReadsSeeWrites reads a token and its grant (introspection's
// read, which the embedded store answers from memory) after each kind of
// write that changes what it answers: every write must show at once.
func testTokenGrantReadsSeeWrites(t *testing.T, s store.Store) {
	for _, id := range []string{"g1", "g2", "g3"} {
		if err := s.CreateGrant(ctx(), grant(id)); err != nil {
			t.Fatal(err)
		}
	}
	limited := tok("l1", store.KindAccess, "g2")
	limited.UsageLimit = 3
	for _, tk := range []store.Token{tok("a1", store.KindAccess, "g1"), tok("a2", store.KindAccess, "g1"),
		tok("r1", store.KindRefresh, "g1"), tok("a3", store.KindAccess, "g2"), tok("a4", store.KindAccess, "g3"), limited} {
		if err := s.CreateToken(ctx(), tk); err != nil {
			t.Fatal(err)
		}
	}
	read := func(hash string) (store.Token, store.Grant) {
		t.Helper()
		tk, g, err := s.GetTokenGrant(ctx(), []byte(hash))
		if err != nil {
			t.Fatalf("GetTokenGrant %s: %v", hash, err)
		}
		// A revocation's read (which caches only revoked tokens) agrees.
		tc, gc, err := s.GetTokenGrantToChange(ctx(), []byte(hash))
		if err != nil || !tc.RevokedAt.Equal(tk.RevokedAt) || !tc.UsedAt.Equal(tk.UsedAt) || gc.ID != g.ID ||
			!gc.RevokedAt.Equal(g.RevokedAt) || string(gc.Data) != string(g.Data) {
			t.Errorf("GetTokenGrantToChange %s: revoked %v used %v, grant %s %v %s, %v; GetTokenGrant: %v %v, %s %v %s",
				hash, tc.RevokedAt, tc.UsedAt, gc.ID, gc.RevokedAt, gc.Data, err, tk.RevokedAt, tk.UsedAt, g.ID, g.RevokedAt, g.Data)
		}
		return tk, g
	}
	for _, h := range []string{"a1", "a2", "r1", "a3", "a4", "l1"} { // read each twice: the second may come from memory
		read(h)
		read(h)
	}
	now := t0.Add(time.Minute)

	if err := s.RevokeToken(ctx(), []byte("a1"), now); err != nil {
		t.Fatal(err)
	}
	if tk, _ := read("a1"); tk.RevokedAt.IsZero() {
		t.Error("a revoked token still reads as not revoked")
	}
	if tk, _ := read("a2"); !tk.RevokedAt.IsZero() {
		t.Error("revoking one token revoked another")
	}

	if _, err := s.UseRefreshToken(ctx(), []byte("r1"), now); err != nil {
		t.Fatal(err)
	}
	if tk, _ := read("r1"); tk.UsedAt.IsZero() {
		t.Error("a used refresh token still reads as unused")
	}

	if err := s.SetGrantData(ctx(), "g2", []byte(`{"user_details":{"email":"new"}}`)); err != nil {
		t.Fatal(err)
	}
	if _, g := read("a3"); string(g.Data) != `{"user_details":{"email":"new"}}` {
		t.Errorf("grant data after SetGrantData: %s", g.Data)
	}

	// A token with a usage limit: its uses are counted in the store whatever
	// a read answered before, and its revocation shows at once.
	for want := 1; want <= 3; want++ {
		read("l1")
		if got, err := s.SpendTokenUse(ctx(), []byte("l1"), nil); err != nil || got.UsageCount != want {
			t.Fatalf("use %d of the limited token: count %d, %v", want, got.UsageCount, err)
		}
	}
	read("l1")
	if got, err := s.SpendTokenUse(ctx(), []byte("l1"), nil); !errors.Is(err, store.ErrConflict) || got.UsageCount != 3 {
		t.Errorf("a use past the limit after a read: count %d, %v; want 3 and ErrConflict", got.UsageCount, err)
	}
	if err := s.RevokeToken(ctx(), []byte("l1"), now); err != nil {
		t.Fatal(err)
	}
	if tk, _ := read("l1"); tk.RevokedAt.IsZero() {
		t.Error("a revoked limited token still reads as not revoked")
	}

	// A revocation inside a transaction shows once the transaction commits,
	// and one rolled back never shows.
	if err := s.Tx(ctx(), func(tx store.Store) error { return tx.RevokeGrant(ctx(), "g1", now) }); err != nil {
		t.Fatal(err)
	}
	if tk, g := read("a2"); g.RevokedAt.IsZero() || tk.RevokedAt.IsZero() {
		t.Error("a token of a revoked grant still reads as active")
	}
	errRollback := fmt.Errorf("roll back")
	if err := s.Tx(ctx(), func(tx store.Store) error {
		if err := tx.RevokeGrant(ctx(), "g3", now); err != nil {
			return err
		}
		return errRollback
	}); err != errRollback {
		t.Fatalf("rolled back Tx: %v", err)
	}
	if _, g := read("a4"); !g.RevokedAt.IsZero() {
		t.Error("a rolled-back revocation shows")
	}

	// Expired grants are deleted with their tokens.
	if _, err := s.DeleteExpired(ctx(), t0.Add(2*time.Hour)); err != nil {
		t.Fatal(err)
	}
	if _, _, err := s.GetTokenGrant(ctx(), []byte("a4")); err == nil {
		t.Error("a deleted token still reads")
	}
}

// testRevocationRace revokes tokens while other goroutines read them: once
// RevokeToken (or RevokeGrant) has returned, no read that starts after it
// may answer the token as live.
func testRevocationRace(t *testing.T, s store.Store) {
	const n = 40
	for i := range n {
		g := grant(fmt.Sprintf("g%d", i))
		if err := s.CreateGrant(ctx(), g); err != nil {
			t.Fatal(err)
		}
		if err := s.CreateToken(ctx(), tok(fmt.Sprintf("t%d", i), store.KindAccess, g.ID)); err != nil {
			t.Fatal(err)
		}
	}
	var revoked [n]atomic.Bool
	var stop atomic.Bool
	var stale atomic.Int64
	var wg sync.WaitGroup
	for r := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for k := r; !stop.Load(); k++ {
				i := k % n
				done := revoked[i].Load() // before the read starts
				tk, g, err := s.GetTokenGrant(ctx(), []byte(fmt.Sprintf("t%d", i)))
				if err != nil {
					t.Errorf("read t%d: %v", i, err)
					return
				}
				if done && tk.RevokedAt.IsZero() && g.RevokedAt.IsZero() {
					stale.Add(1)
				}
			}
		}()
	}
	for i := range n {
		var err error
		if i%2 == 0 {
			err = s.RevokeToken(ctx(), []byte(fmt.Sprintf("t%d", i)), t0)
		} else {
			err = s.RevokeGrant(ctx(), fmt.Sprintf("g%d", i), t0)
		}
		if err != nil {
			t.Fatal(err)
		}
		revoked[i].Store(true)
		time.Sleep(time.Millisecond)
	}
	stop.Store(true)
	wg.Wait()
	if n := stale.Load(); n > 0 {
		t.Errorf("%d reads started after a revocation returned answered the token as live", n)
	}
}
