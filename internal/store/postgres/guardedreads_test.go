package postgres

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"testing"
	"time"

	"github.com/latchkey/latchkey/internal/store"
	"github.com/latchkey/latchkey/internal/store/postgres/pgtest"
)

// TestKeptGuardedReadsAreConfirmedOrReadAgain: a refresh's guarded read
// is kept, and a later refresh of the same token that writes sends only
// its write; but a decision on a kept read stands only where the write's
// guard confirmed it. A person blocked, a token revoked after the read
// was kept are seen by the refresh after; a refusal decided on a kept
// read (no guard sent) is decided again on a read.
func TestKeptGuardedReadsAreConfirmedOrReadAgain(t *testing.T) {
	dsn := pgtest.NewDatabase(t)
	u, err := url.Parse(dsn)
	if err != nil {
		t.Fatal(err)
	}
	proxy := newTurnCounter(t, u.Host)
	u.Host = proxy.ln.Addr().String()
	s := openWithPerson(t, u.String())
	ctx := context.Background()
	now := time.Now().UTC()
	if err := issueWrites(ctx, s, "g0", "at0", "p1"); err != nil {
		t.Fatal(err)
	}
	if err := s.CreateToken(ctx, store.Token{Hash: []byte("r0"), Kind: store.KindRefresh, GrantID: "g0", ClientID: "c1",
		Subject: "p1", IssuedAt: now, ExpiresAt: now.Add(time.Hour)}); err != nil {
		t.Fatal(err)
	}
	errRefused := errors.New("refused")
	n := 0
	// refresh runs a refresh's transaction and reports what its last run
	// saw, and the round trips it took.
	refresh := func() (status string, revoked bool, turns int64, err error) {
		before := proxy.turns.Load()
		n++
		err = s.Tx(ctx, func(tx store.Store) error {
			tk, _, p, err := tx.GetTokenGrantGuardPerson(ctx, []byte("r0"))
			if err != nil {
				return err
			}
			status, revoked = p.Status, !tk.RevokedAt.IsZero()
			if p.Status != "ACTIVATED" || revoked {
				return errRefused
			}
			id := fmt.Sprintf("ra%d", n)
			if err := tx.CreateToken(ctx, store.Token{Hash: []byte(id), Kind: store.KindAccess, GrantID: "g0",
				ClientID: "c1", Subject: "p1", IssuedAt: now, ExpiresAt: now.Add(time.Hour)}); err != nil {
				return err
			}
			return tx.EventSink().AppendEvents(ctx, store.Event{ID: "e-" + id, Kind: store.EventOAuth, Type: "T",
				ClientID: "c1", Occurred: now})
		})
		return status, revoked, proxy.turns.Load() - before, err
	}
	setStatus := func(status string) {
		t.Helper()
		if err := s.UpdatePerson(ctx, "p1", func(p store.Person) (store.Person, error) {
			p.Status = status
			return p, nil
		}); err != nil {
			t.Fatal(err)
		}
	}
	for i := range 3 { // the first prepares its statements
		if _, _, _, err := refresh(); err != nil {
			t.Fatalf("refresh %d: %v", i, err)
		}
	}
	if _, _, turns, err := refresh(); err != nil || turns != 1 {
		t.Errorf("a refresh on a kept read: %d round trips, %v; want 1, nil", turns, err)
	}
	// Blocked after the read was kept: the guard fails, and the run after
	// it reads the person blocked.
	setStatus("BLOCKED")
	if status, _, _, err := refresh(); !errors.Is(err, errRefused) || status != "BLOCKED" {
		t.Errorf("after a block: saw %q, %v; want BLOCKED, refused", status, err)
	}
	// Active again: a refusal decided on the kept read of the blocked
	// person is decided again on a read.
	setStatus("ACTIVATED")
	if status, _, _, err := refresh(); err != nil || status != "ACTIVATED" {
		t.Errorf("after the person is active again: saw %q, %v; want ACTIVATED, nil", status, err)
	}
	if _, _, turns, err := refresh(); err != nil || turns != 1 {
		t.Errorf("then on a kept read again: %d round trips, %v; want 1, nil", turns, err)
	}
	// Revoked after the read was kept.
	if err := s.RevokeGrant(ctx, "g0", now); err != nil {
		t.Fatal(err)
	}
	if _, revoked, _, err := refresh(); !errors.Is(err, errRefused) || !revoked {
		t.Errorf("after the grant's revocation: saw it revoked %v, %v; want true, refused", revoked, err)
	}
	// No access token was issued by a refused refresh.
	for i := 1; i <= n; i++ {
		_, err := s.GetToken(ctx, []byte(fmt.Sprintf("ra%d", i)))
		if issued, want := err == nil, i <= 4 || i == 6 || i == 7; issued != want {
			t.Errorf("ra%d issued %v (%v), want %v", i, issued, err, want)
		}
	}
}
