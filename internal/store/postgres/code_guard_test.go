package postgres

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/latchkey/latchkey/internal/store"
	"github.com/latchkey/latchkey/internal/store/postgres/pgtest"
)

// codeExchange is an exchange's transaction on code: its use and the
// code's person (UseAuthCodeGuardPerson), then, for an active person, a
// grant named after the run with the code's grant set to it, or for one
// who is not, nothing more (a refusal, which commits the use). between
// runs in the first run after the read; with begin, a locking read after
// it begins the transaction before the writes. It returns the reads of
// every run.
func codeExchange(ctx context.Context, s store.Store, code, name string, begin bool,
	between func()) (runs []store.Person, err error) {
	err = s.Tx(ctx, func(tx store.Store) error {
		_, p, err := tx.UseAuthCodeGuardPerson(ctx, []byte(code), time.Now())
		runs = append(runs, p)
		if err != nil {
			return err
		}
		if len(runs) == 1 {
			between()
		}
		if begin {
			if _, err := tx.LockPerson(ctx, "p-other"); err != nil && !errors.Is(err, store.ErrNotFound) {
				return err
			}
		}
		if p.Status != "ACTIVATED" {
			return nil
		}
		g := fmt.Sprintf("g%d-%s", len(runs), name)
		if err := issueWrites(ctx, tx, g, g, "p1"); err != nil {
			return err
		}
		return tx.SetAuthCodeGrant(ctx, []byte(code), g)
	})
	return runs, err
}

func newCode(t *testing.T, s store.Store, hash string) {
	t.Helper()
	now := time.Now().UTC()
	if err := s.CreateAuthCode(context.Background(), store.AuthCode{Hash: []byte(hash), ClientID: "c1", Subject: "p1",
		IssuedAt: now, ExpiresAt: now.Add(time.Minute)}); err != nil {
		t.Fatal(err)
	}
}

// TestGuardedCodeUseRunsAgainWhenItWentStale: an exchange reads its code
// and person without a lock; before its writes commit, another exchange
// uses the code, an erasure deletes it, or the person changes. Its writes
// must not commit on the stale read: the function runs again with locking
// reads and only what that run decides is stored — a replay (ErrConflict
// with the other exchange's grant), an unknown code, a refusal that still
// uses the code, or an issuance. A locking read that begins the
// transaction checks the guard first.
func TestGuardedCodeUseRunsAgainWhenItWentStale(t *testing.T) {
	s, raw := guardedStore(t)
	ctx := context.Background()
	exec := execOn(t, raw)
	for _, tc := range []struct {
		name    string
		begin   bool
		between func(code string)
		wantErr error
		// runs: the reads made; grant: the code's grant at the end.
		runs  int
		grant string
	}{
		{name: "unchanged", between: func(string) {}, runs: 1, grant: "g1-unchanged"},
		{name: "unchanged, begun", begin: true, between: func(string) {}, runs: 1, grant: "g1-unchanged, begun"},
		{name: "code used", runs: 2, wantErr: store.ErrConflict, grant: "g-other",
			between: func(c string) {
				exec(`UPDATE auth_codes SET used_at = 1, grant_id = 'g-other' WHERE hash = $1`, []byte(c))
			}},
		{name: "code used, begun", begin: true, runs: 2, wantErr: store.ErrConflict, grant: "g-other",
			between: func(c string) {
				exec(`UPDATE auth_codes SET used_at = 1, grant_id = 'g-other' WHERE hash = $1`, []byte(c))
			}},
		{name: "code erased", runs: 2, wantErr: store.ErrNotFound,
			between: func(c string) { exec(`DELETE FROM auth_codes WHERE hash = $1`, []byte(c)) }},
		{name: "person blocked", runs: 2, grant: "",
			between: func(string) { exec(`UPDATE persons SET status = 'BLOCKED' WHERE id = 'p1'`) }},
		{name: "person blocked, begun", begin: true, runs: 2, grant: "",
			between: func(string) { exec(`UPDATE persons SET status = 'BLOCKED' WHERE id = 'p1'`) }},
		{name: "person touched", runs: 2, grant: "g2-person touched",
			between: func(string) { exec(`UPDATE persons SET first_name = 'New' WHERE id = 'p1'`) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			exec(`UPDATE persons SET status = 'ACTIVATED', first_name = '' WHERE id = 'p1'`)
			code := "code-" + tc.name
			newCode(t, s, code)
			runs, err := codeExchange(ctx, s, code, tc.name, tc.begin, func() { tc.between(code) })
			if !errors.Is(err, tc.wantErr) || len(runs) != tc.runs {
				t.Fatalf("%v after %d runs; want %v after %d", err, len(runs), tc.wantErr, tc.runs)
			}
			if tc.runs == 2 {
				if _, err := s.GetGrant(ctx, "g1-"+tc.name); !errors.Is(err, store.ErrNotFound) {
					t.Errorf("the stale run's grant was stored: %v", err)
				}
			}
			c, err := s.UseAuthCode(ctx, []byte(code), time.Now())
			if tc.wantErr == store.ErrNotFound {
				if !errors.Is(err, store.ErrNotFound) {
					t.Errorf("the erased code: %v", err)
				}
				return
			}
			if !errors.Is(err, store.ErrConflict) || c.GrantID != tc.grant {
				t.Errorf("the code after the exchange: grant %q, %v; want used, grant %q", c.GrantID, err, tc.grant)
			}
			if tc.grant != "" && tc.grant != "g-other" {
				if _, err := s.GetGrant(ctx, tc.grant); err != nil {
					t.Errorf("the code's grant: %v", err)
				}
			}
		})
	}
}

// TestGuardedCodeUseDoesNotCommitUnderAWritersLock: the code's row (another
// exchange of it in progress) or the person's (a block in progress) is
// under a writer's lock when the guarded writes commit. They neither wait
// for it inside a shared commit nor commit: the function runs again, its
// locking statement waits for the writer and sees what it committed.
func TestGuardedCodeUseDoesNotCommitUnderAWritersLock(t *testing.T) {
	s, raw := guardedStore(t)
	ctx := context.Background()
	for _, tc := range []struct {
		name, lock string
		wantErr    error
		grant      string // the code's, at the end
	}{
		{"code", `UPDATE auth_codes SET used_at = 1, grant_id = 'g-other' WHERE hash = 'code-code'`, store.ErrConflict, "g-other"},
		{"person", `UPDATE persons SET status = 'BLOCKED' WHERE id = 'p1'`, nil, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code := "code-" + tc.name
			newCode(t, s, code)
			writer, err := raw.BeginTx(ctx, nil)
			if err != nil {
				t.Fatal(err)
			}
			defer writer.Rollback()
			read, locked, done := make(chan struct{}), make(chan struct{}), make(chan error, 1)
			var runs []store.Person
			go func() {
				var err error
				runs, err = codeExchange(ctx, s, code, tc.name, false, func() { close(read); <-locked })
				done <- err
			}()
			<-read
			if _, err := writer.ExecContext(ctx, tc.lock); err != nil {
				t.Fatal(err)
			}
			close(locked)
			// The rerun waits for the writer; it cannot finish before
			// the commit below, whatever the machine's speed.
			select {
			case err := <-done:
				t.Fatalf("finished under the writer's lock: %v", err)
			case <-time.After(200 * time.Millisecond):
			}
			if err := writer.Commit(); err != nil {
				t.Fatal(err)
			}
			if err := <-done; !errors.Is(err, tc.wantErr) || len(runs) != 2 {
				t.Errorf("%v after %d runs; want %v after 2", err, len(runs), tc.wantErr)
			}
			if _, err := s.GetGrant(ctx, "g1-"+tc.name); !errors.Is(err, store.ErrNotFound) {
				t.Errorf("the stale run's grant was stored: %v", err)
			}
			if c, err := s.UseAuthCode(ctx, []byte(code), time.Now()); !errors.Is(err, store.ErrConflict) || c.GrantID != tc.grant {
				t.Errorf("the code: grant %q, %v; want used, grant %q", c.GrantID, err, tc.grant)
			}
		})
	}
}

// TestGuardedCodeUseAcrossInstances: two instances (two stores, each with
// its own shared commits) exchange one code concurrently, many times each.
// Exactly one exchange commits, the code's grant is its grant, and no other
// exchange's grant is stored: the guard holds between processes, where a
// shared commit meets the other instance's locks rather than its own.
func TestGuardedCodeUseAcrossInstances(t *testing.T) {
	dsn := pgtest.NewDatabase(t)
	a := openWithPerson(t, dsn)
	b, err := Open(context.Background(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	ctx := context.Background()
	for round := range 5 {
		code := fmt.Sprintf("code-%d", round)
		newCode(t, a, code)
		const n = 16
		errs := make(chan error, n)
		start := make(chan struct{})
		for i := range n {
			s := a
			if i%2 == 1 {
				s = b
			}
			go func() {
				<-start
				_, err := codeExchange(ctx, s, code, fmt.Sprintf("%d-%d", round, i), false, func() {})
				errs <- err
			}()
		}
		close(start)
		wins := 0
		for range n {
			switch err := <-errs; {
			case err == nil:
				wins++
			case !errors.Is(err, store.ErrConflict):
				t.Errorf("round %d: %v", round, err)
			}
		}
		if wins != 1 {
			t.Fatalf("round %d: %d of %d exchanges committed, want 1", round, wins, n)
		}
		c, err := a.UseAuthCode(ctx, []byte(code), time.Now())
		if !errors.Is(err, store.ErrConflict) || c.GrantID == "" {
			t.Fatalf("round %d: the code after the race: grant %q, %v", round, c.GrantID, err)
		}
		for i := range n {
			for run := 1; run <= 2; run++ {
				id := fmt.Sprintf("g%d-%d-%d", run, round, i)
				if _, err := a.GetGrant(ctx, id); err == nil && id != c.GrantID {
					t.Errorf("round %d: grant %s of a losing exchange was stored", round, id)
				}
			}
		}
	}
}
