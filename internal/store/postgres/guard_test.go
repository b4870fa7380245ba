package postgres

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/latchkey/latchkey/internal/store"
	"github.com/latchkey/latchkey/internal/store/postgres/pgtest"
)

// errInactive stands for a refresh's refusal of a person who is not
// ACTIVATED.
var errInactive = errors.New("the person is not active")

// refreshWrites are a refresh's: an access token of the grant and an event.
func refreshWrites(ctx context.Context, tx store.Store, grantID, tokenID string) error {
	now := time.Now().UTC()
	if err := tx.CreateToken(ctx, store.Token{Hash: []byte(tokenID), Kind: store.KindAccess, GrantID: grantID,
		ClientID: "c1", Subject: "p1", IssuedAt: now, ExpiresAt: now.Add(time.Hour)}); err != nil {
		return err
	}
	return tx.EventSink().AppendEvents(ctx, store.Event{ID: "e-" + tokenID, Kind: store.EventOAuth, Type: "T",
		ClientID: "c1", Occurred: now})
}

// guardedStore opens a store holding activePerson, and a plain
// connection pool to its database for changes behind its back.
func guardedStore(t *testing.T) (*Store, *sql.DB) {
	dsn := pgtest.NewDatabase(t)
	s := openWithPerson(t, dsn)
	raw := openRaw(t, dsn)
	return s, raw
}

// execOn runs statements on raw, failing t on an error.
func execOn(t *testing.T, raw *sql.DB) func(q string, args ...any) {
	return func(q string, args ...any) {
		t.Helper()
		if _, err := raw.ExecContext(context.Background(), q, args...); err != nil {
			t.Fatal(err)
		}
	}
}

// TestGuardedReadRunsAgainWhenItWentStale: a refresh-like transaction reads
// with GetTokenGrantGuardPerson, then something changes the person, the
// token or the grant before its writes commit (or holds the person's row
// under a writer's lock at that commit). Its writes must not commit on the
// stale read: the function runs again with the locking read, sees the
// change, and only what that run decides is stored. A rotation's UPDATE,
// which begins the transaction, checks the guard first.
func TestGuardedReadRunsAgainWhenItWentStale(t *testing.T) {
	s, raw := guardedStore(t)
	ctx := context.Background()
	now := time.Now().UTC()
	exec := execOn(t, raw)
	for _, tc := range []struct {
		name   string
		rotate bool
		// between runs after the first run's read, before its writes.
		between func(t *testing.T, refresh []byte)
		// second reports whether the second run's read sees the change.
		second func(tok store.Token, g store.Grant, p store.Person) bool
	}{
		{name: "unchanged", between: func(*testing.T, []byte) {}},
		{name: "person blocked",
			between: func(t *testing.T, _ []byte) { exec(`UPDATE persons SET status = 'BLOCKED' WHERE id = 'p1'`) },
			second:  func(_ store.Token, _ store.Grant, p store.Person) bool { return p.Status == "BLOCKED" }},
		{name: "person touched, status unchanged",
			between: func(t *testing.T, _ []byte) { exec(`UPDATE persons SET first_name = 'New' WHERE id = 'p1'`) },
			second:  func(_ store.Token, _ store.Grant, p store.Person) bool { return p.FirstName == "New" }},
		{name: "token revoked",
			between: func(t *testing.T, r []byte) { exec(`UPDATE tokens SET revoked_at = 1 WHERE hash = $1`, r) },
			second:  func(tok store.Token, _ store.Grant, _ store.Person) bool { return !tok.RevokedAt.IsZero() }},
		{name: "grant revoked",
			between: func(t *testing.T, r []byte) {
				exec(`UPDATE grants SET revoked_at = 1 WHERE id = (SELECT grant_id FROM tokens WHERE hash = $1)`, r)
			},
			second: func(_ store.Token, g store.Grant, _ store.Person) bool { return !g.RevokedAt.IsZero() }},
		{name: "person blocked, rotation", rotate: true,
			between: func(t *testing.T, _ []byte) { exec(`UPDATE persons SET status = 'BLOCKED' WHERE id = 'p1'`) },
			second:  func(_ store.Token, _ store.Grant, p store.Person) bool { return p.Status == "BLOCKED" }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			exec(`UPDATE persons SET status = 'ACTIVATED', first_name = '' WHERE id = 'p1'`)
			grantID, refresh := "g-"+tc.name, []byte("r-"+tc.name)
			if err := s.CreateGrant(ctx, store.Grant{ID: grantID, ClientID: "c1", Subject: "p1", CreatedAt: now,
				ExpiresAt: now.Add(time.Hour)}); err != nil {
				t.Fatal(err)
			}
			if err := s.CreateToken(ctx, store.Token{Hash: refresh, Kind: store.KindRefresh, GrantID: grantID,
				ClientID: "c1", Subject: "p1", IssuedAt: now, ExpiresAt: now.Add(time.Hour)}); err != nil {
				t.Fatal(err)
			}
			runs, sawChange := 0, false
			err := s.Tx(ctx, func(tx store.Store) error {
				runs++
				tok, g, p, err := tx.GetTokenGrantGuardPerson(ctx, refresh)
				if err != nil {
					return err
				}
				if runs == 1 {
					tc.between(t, refresh)
				} else if tc.second != nil {
					sawChange = tc.second(tok, g, p)
				}
				if p.Status != "ACTIVATED" || !tok.RevokedAt.IsZero() || !g.RevokedAt.IsZero() {
					return errInactive
				}
				if tc.rotate {
					if _, err := tx.UseRefreshToken(ctx, refresh, now); err != nil {
						return err
					}
				}
				return refreshWrites(ctx, tx, grantID, fmt.Sprintf("a%d-%s", runs, tc.name))
			})
			first := []byte(fmt.Sprintf("a1-%s", tc.name))
			if tc.second == nil {
				if err != nil || runs != 1 {
					t.Fatalf("unchanged: %v after %d runs", err, runs)
				}
				if _, err := s.GetToken(ctx, first); err != nil {
					t.Errorf("the issued token: %v", err)
				}
				return
			}
			if runs != 2 || !sawChange {
				t.Errorf("%d runs, the second saw the change: %v", runs, sawChange)
			}
			if _, err := s.GetToken(ctx, first); !errors.Is(err, store.ErrNotFound) {
				t.Errorf("the stale run's token was stored: %v", err)
			}
			if tc.name == "person touched, status unchanged" {
				if err != nil {
					t.Errorf("the second run: %v", err)
				}
				if _, err := s.GetToken(ctx, []byte(fmt.Sprintf("a2-%s", tc.name))); err != nil {
					t.Errorf("the second run's token: %v", err)
				}
			} else if !errors.Is(err, errInactive) {
				t.Errorf("the second run: %v, want the refusal", err)
			}
		})
	}
}

// TestGuardedReadDoesNotCommitUnderAWritersLock: the person's row is under
// a writer's lock (a block in progress) when the guarded writes commit.
// They do not wait for it inside a shared commit, and do not commit
// either: the function runs again, its locking read waits for the writer,
// and sees what it committed.
func TestGuardedReadDoesNotCommitUnderAWritersLock(t *testing.T) {
	s, raw := guardedStore(t)
	ctx := context.Background()
	now := time.Now().UTC()
	if err := s.CreateGrant(ctx, store.Grant{ID: "g1", ClientID: "c1", Subject: "p1", CreatedAt: now,
		ExpiresAt: now.Add(time.Hour)}); err != nil {
		t.Fatal(err)
	}
	if err := s.CreateToken(ctx, store.Token{Hash: []byte("r1"), Kind: store.KindRefresh, GrantID: "g1",
		ClientID: "c1", Subject: "p1", IssuedAt: now, ExpiresAt: now.Add(time.Hour)}); err != nil {
		t.Fatal(err)
	}
	writer, err := raw.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer writer.Rollback()
	read, locked, done := make(chan struct{}), make(chan struct{}), make(chan error, 1)
	var statuses []string
	go func() {
		done <- s.Tx(ctx, func(tx store.Store) error {
			_, _, p, err := tx.GetTokenGrantGuardPerson(ctx, []byte("r1"))
			if err != nil {
				return err
			}
			statuses = append(statuses, p.Status)
			if len(statuses) == 1 {
				close(read)
				<-locked
			}
			if p.Status != "ACTIVATED" {
				return errInactive
			}
			return refreshWrites(ctx, tx, "g1", fmt.Sprintf("a%d", len(statuses)))
		})
	}()
	<-read
	if _, err := writer.ExecContext(ctx, `UPDATE persons SET status = 'BLOCKED' WHERE id = 'p1'`); err != nil {
		t.Fatal(err)
	}
	close(locked)
	// The rerun's locking read waits for the writer; it cannot finish
	// before the commit below, whatever the machine's speed.
	select {
	case err := <-done:
		t.Fatalf("finished under the writer's lock: %v, statuses %v", err, statuses)
	case <-time.After(200 * time.Millisecond):
	}
	if err := writer.Commit(); err != nil {
		t.Fatal(err)
	}
	if err := <-done; !errors.Is(err, errInactive) || len(statuses) != 2 || statuses[1] != "BLOCKED" {
		t.Errorf("%v after reads of %v; want the refusal after a read of BLOCKED", err, statuses)
	}
	if _, err := s.GetToken(ctx, []byte("a1")); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("the stale run's token was stored: %v", err)
	}
}

// TestKeptGuardedReadsAreConfirmedOrReadAgain: a refresh's guarded read
// is kept, and a later refresh of the same token that writes sends only
// its write; but a decision on a kept read stands only where the write's
// guard confirmed it. A person blocked, a token revoked after the read
// was kept are seen by the refresh after; a refusal decided on a kept
// read (no guard sent) is decided again on a read.
func TestKeptGuardedReadsAreConfirmedOrReadAgain(t *testing.T) {
	s, proxy := openCounted(t)
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
			return refreshWrites(ctx, tx, "g0", id)
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
	// The least of three: a pooled connection idle for a second is pinged
	// first, which a slow machine may add to any one of them.
	leastTurns := func() int64 {
		t.Helper()
		least := int64(1 << 30)
		for range 3 {
			_, _, turns, err := refresh()
			if err != nil {
				t.Fatalf("a refresh on a kept read: %v", err)
			}
			least = min(least, turns)
		}
		return least
	}
	if turns := leastTurns(); turns != 1 {
		t.Errorf("a refresh on a kept read: %d round trips, want 1", turns)
	}
	// Blocked after the read was kept: the guard fails, and the run after
	// it reads the person blocked.
	setStatus("BLOCKED")
	refused := []int{n + 1}
	if status, _, _, err := refresh(); !errors.Is(err, errRefused) || status != "BLOCKED" {
		t.Errorf("after a block: saw %q, %v; want BLOCKED, refused", status, err)
	}
	// Active again: a refusal decided on the kept read of the blocked
	// person is decided again on a read.
	setStatus("ACTIVATED")
	if status, _, _, err := refresh(); err != nil || status != "ACTIVATED" {
		t.Errorf("after the person is active again: saw %q, %v; want ACTIVATED, nil", status, err)
	}
	if turns := leastTurns(); turns != 1 {
		t.Errorf("then on a kept read again: %d round trips, want 1", turns)
	}
	// Revoked after the read was kept.
	if err := s.RevokeGrant(ctx, "g0", now); err != nil {
		t.Fatal(err)
	}
	refused = append(refused, n+1)
	if _, revoked, _, err := refresh(); !errors.Is(err, errRefused) || !revoked {
		t.Errorf("after the grant's revocation: saw it revoked %v, %v; want true, refused", revoked, err)
	}
	// No access token was issued by a refused refresh, one by each other.
	for i := 1; i <= n; i++ {
		_, err := s.GetToken(ctx, []byte(fmt.Sprintf("ra%d", i)))
		if issued, want := err == nil, !slices.Contains(refused, i); issued != want {
			t.Errorf("ra%d issued %v (%v), want %v", i, issued, err, want)
		}
	}
}
