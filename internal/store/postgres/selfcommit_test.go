package postgres

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/latchkey/latchkey/internal/store"
	"github.com/latchkey/latchkey/internal/store/postgres/pgtest"
	"github.com/latchkey/latchkey/internal/store/sqlstore"
)

// insertOnlyTx is a client_credentials issuance's transaction: a grant, a
// token and an event, nothing read — one statement that commits itself,
// which concurrent ones share a commit with.
func insertOnlyTx(ctx context.Context, s store.Store, grantID, tokenID string) error {
	return s.Tx(ctx, func(tx store.Store) error { return issueWrites(ctx, tx, grantID, tokenID, "c1") })
}

// TestSharedCommitsKeepEachOutcome: many issuances at once, some of them
// conflicting with a stored token, share commits; each caller is told its
// own outcome, and exactly the conflicting ones wrote nothing.
func TestSharedCommitsKeepEachOutcome(t *testing.T) {
	s := newStore(t)
	ctx := context.Background()
	if err := insertOnlyTx(ctx, s, "g-taken", "taken"); err != nil {
		t.Fatal(err)
	}
	const n = 96
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			tok := fmt.Sprintf("t%d", i)
			if i%7 == 3 {
				tok = "taken"
			}
			errs[i] = insertOnlyTx(ctx, s, fmt.Sprintf("g%d", i), tok)
		}()
	}
	wg.Wait()
	for i := range n {
		grant, gerr := s.GetGrant(ctx, fmt.Sprintf("g%d", i))
		if i%7 == 3 {
			if !errors.Is(errs[i], store.ErrConflict) {
				t.Errorf("issuance %d of a taken token: %v, want ErrConflict", i, errs[i])
			}
			if gerr == nil {
				t.Errorf("issuance %d failed but its grant %s was stored", i, grant.ID)
			}
			continue
		}
		if errs[i] != nil {
			t.Errorf("issuance %d: %v", i, errs[i])
		}
		if _, err := s.GetToken(ctx, []byte(fmt.Sprintf("t%d", i))); err != nil || gerr != nil {
			t.Errorf("issuance %d succeeded: its token %v, its grant %v", i, err, gerr)
		}
	}
	es, err := s.SearchEvents(ctx, store.EventFilter{Kind: store.EventOAuth}, 0, 1000)
	if err != nil {
		t.Fatal(err)
	}
	if want := 1 + n - (n+3)/7; len(es) != want {
		t.Errorf("%d events stored, want %d (one per committed issuance)", len(es), want)
	}
}

// TestSharedCommitsPassAStalledGroup: revocations that wait for a token's
// row lock (another transaction holds it) take every runner; an issuance
// that comes after them does not wait for the lock: it starts a group of
// its own and commits while the lock is held.
func TestSharedCommitsPassAStalledGroup(t *testing.T) {
	dsn := pgtest.NewDatabase(t)
	s, err := Open(context.Background(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ctx := context.Background()
	if err := insertOnlyTx(ctx, s, "g0", "locked"); err != nil {
		t.Fatal(err)
	}
	other, err := sql.Open("pgx", dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	holder, err := other.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer holder.Rollback()
	if _, err := holder.ExecContext(ctx, `SELECT 1 FROM tokens WHERE hash = $1 FOR UPDATE`, []byte("locked")); err != nil {
		t.Fatal(err)
	}
	now := time.Now().UTC()
	revoked := make(chan error, sqlstore.SharedCommitRunners)
	for i := range sqlstore.SharedCommitRunners {
		go func() {
			revoked <- s.Tx(ctx, func(tx store.Store) error {
				if err := tx.RevokeToken(ctx, []byte("locked"), now); err != nil {
					return err
				}
				return tx.EventSink().AppendEvents(ctx, store.Event{ID: fmt.Sprintf("r%d", i), Kind: store.EventOAuth,
					Type: "T", ClientID: "c1", Occurred: now})
			})
		}()
	}
	// Both revocations wait for the lock.
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		var waiting int
		if err := other.QueryRowContext(ctx, `SELECT count(*) FROM pg_stat_activity
			WHERE datname = current_database() AND wait_event_type = 'Lock'`).Scan(&waiting); err != nil {
			t.Fatal(err)
		}
		if waiting == sqlstore.SharedCommitRunners {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d statements wait for the lock, want %d", waiting, sqlstore.SharedCommitRunners)
		}
	}
	issued := make(chan error, 1)
	go func() { issued <- insertOnlyTx(ctx, s, "g1", "free") }()
	select {
	case err := <-issued:
		if err != nil {
			t.Fatal(err)
		}
	case err := <-revoked:
		t.Fatalf("a revocation ended while the lock was held: %v", err)
	case <-time.After(30 * time.Second):
		t.Fatal("the issuance waited for a lock its statement does not need")
	}
	if err := holder.Rollback(); err != nil {
		t.Fatal(err)
	}
	for range sqlstore.SharedCommitRunners {
		if err := <-revoked; err != nil {
			t.Errorf("revocation after the lock: %v", err)
		}
	}
	tok, err := s.GetToken(ctx, []byte("locked"))
	if err != nil || tok.RevokedAt.IsZero() {
		t.Errorf("the locked token after its revocations: revoked at %v, %v", tok.RevokedAt, err)
	}
}
