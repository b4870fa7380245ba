package storetest

import (
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/latchkey/latchkey/internal/store"
)

func mail(id string, due time.Time) store.Mail {
	return store.Mail{ID: id, Kind: "password_reset", PersonID: "p1", Recipient: "jane@example.com",
		Body: []byte("sealed"), NextAttemptAt: due, CreatedAt: t0}
}

func testOutbox(t *testing.T, s store.Store) {
	if err := s.EnqueueMail(ctx(), mail("m1", t0)); err != nil {
		t.Fatal(err)
	}
	if err := s.EnqueueMail(ctx(), mail("m1", t0)); !errors.Is(err, store.ErrConflict) {
		t.Errorf("a taken id: %v, want ErrConflict", err)
	}
	if err := s.EnqueueMail(ctx(), mail("m2", t0.Add(time.Hour))); err != nil {
		t.Fatal(err)
	}
	got, err := s.GetMail(ctx(), "m1")
	want := mail("m1", t0.UTC())
	want.CreatedAt = t0.UTC()
	if err != nil || !cmp.Equal(want, got) {
		t.Errorf("round trip: %v (-want +got):\n%s", err, cmp.Diff(want, got))
	}
	if _, err := s.GetMail(ctx(), "nope"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("unknown mail: %v, want ErrNotFound", err)
	}

	// Only the due mail is claimed; a leased mail is not claimed again
	// within its lease.
	claimed, err := s.ClaimMails(ctx(), "a", t0, time.Minute, 10)
	if err != nil || len(claimed) != 1 || claimed[0].ID != "m1" || claimed[0].Attempts != 1 || claimed[0].LeaseOwner != "a" ||
		!claimed[0].LeaseUntil.Equal(t0.Add(time.Minute)) || string(claimed[0].Body) != "sealed" {
		t.Fatalf("claim: %+v, %v; want m1 leased to a for a minute", claimed, err)
	}
	if again, err := s.ClaimMails(ctx(), "b", t0.Add(30*time.Second), time.Minute, 10); err != nil || len(again) != 0 {
		t.Errorf("claim within the lease: %+v, %v; want none", again, err)
	}
	// The lease ran out (its holder died): another instance claims it.
	again, err := s.ClaimMails(ctx(), "b", t0.Add(61*time.Second), time.Minute, 10)
	if err != nil || len(again) != 1 || again[0].ID != "m1" || again[0].Attempts != 2 {
		t.Fatalf("claim after the lease: %+v, %v; want m1 again", again, err)
	}
	// The old holder lost its lease: it can neither mark nor defer.
	if err := s.FinishMail(ctx(), "m1", "a", t0, ""); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("mark by a lost lease: %v, want ErrNotFound", err)
	}
	if err := s.DeferMail(ctx(), "m1", "a", t0, "x"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("defer by a lost lease: %v, want ErrNotFound", err)
	}
	// Deferred: due again later, lease given back.
	if err := s.DeferMail(ctx(), "m1", "b", t0.Add(5*time.Minute), "connection refused"); err != nil {
		t.Fatal(err)
	}
	if c, _ := s.ClaimMails(ctx(), "b", t0.Add(4*time.Minute), time.Minute, 10); len(c) != 0 {
		t.Errorf("claimed before its next attempt: %+v", c)
	}
	c, err := s.ClaimMails(ctx(), "c", t0.Add(5*time.Minute), time.Minute, 10)
	if err != nil || len(c) != 1 || c[0].ID != "m1" || c[0].LastError != "connection refused" {
		t.Fatalf("claim after the back-off: %+v, %v", c, err)
	}
	if err := s.FinishMail(ctx(), "m1", "c", t0.Add(5*time.Minute), ""); err != nil {
		t.Fatal(err)
	}
	sent, _ := s.GetMail(ctx(), "m1")
	if !sent.SentAt.Equal(t0.Add(5*time.Minute)) || len(sent.Body) != 0 {
		t.Errorf("sent mail: sent_at %v, body %q; want the time and no body", sent.SentAt, sent.Body)
	}
	if err := s.FinishMail(ctx(), "m1", "c", t0.Add(5*time.Minute), ""); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("mark twice: %v, want ErrNotFound", err)
	}
	// A sent mail is never claimed; m2 comes when due. The limit holds.
	for i := range 3 {
		if err := s.EnqueueMail(ctx(), mail(fmt.Sprintf("m%d", i+3), t0)); err != nil {
			t.Fatal(err)
		}
	}
	c, err = s.ClaimMails(ctx(), "d", t0.Add(2*time.Hour), time.Minute, 2)
	if err != nil || len(c) != 2 {
		t.Fatalf("claim with limit 2: %+v, %v", c, err)
	}
	for _, m := range c {
		if m.ID == "m1" {
			t.Errorf("a sent mail was claimed")
		}
	}
	// Sent mails are swept after their retention, unsent ones never.
	if _, err := s.DeleteExpired(ctx(), t0.Add(8*24*time.Hour)); err != nil {
		t.Fatal(err)
	}
	if _, err := s.GetMail(ctx(), "m1"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("sent mail after retention: %v, want ErrNotFound", err)
	}
	if _, err := s.GetMail(ctx(), "m2"); err != nil {
		t.Errorf("an unsent mail was swept: %v", err)
	}
}

// Concurrent claimers (instances) never get the same mail.
func testOutboxClaimRace(t *testing.T, s store.Store) {
	const mails, claimers = 60, 8
	for i := range mails {
		if err := s.EnqueueMail(ctx(), mail(fmt.Sprintf("m%03d", i), t0)); err != nil {
			t.Fatal(err)
		}
	}
	var mu sync.Mutex
	seen := map[string]string{}
	var wg sync.WaitGroup
	errs := make(chan error, claimers)
	for c := range claimers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			owner := fmt.Sprintf("owner%d", c)
			for {
				got, err := s.ClaimMails(ctx(), owner, t0, time.Minute, 3)
				if err != nil {
					errs <- err
					return
				}
				if len(got) == 0 {
					return
				}
				mu.Lock()
				for _, m := range got {
					if prev, ok := seen[m.ID]; ok {
						errs <- fmt.Errorf("mail %s claimed by %s and %s", m.ID, prev, owner)
					}
					seen[m.ID] = owner
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if len(seen) != mails {
		t.Errorf("%d mails claimed, want %d", len(seen), mails)
	}
}

func testPersonTokens(t *testing.T, s store.Store) {
	tok := store.PersonToken{Hash: []byte("h1"), Kind: store.PersonTokenPasswordReset, PersonID: "p1", CreatedAt: t0,
		ExpiresAt: t0.Add(time.Hour)}
	if err := s.CreatePersonToken(ctx(), tok); err != nil {
		t.Fatal(err)
	}
	if err := s.CreatePersonToken(ctx(), tok); !errors.Is(err, store.ErrConflict) {
		t.Errorf("taken hash: %v, want ErrConflict", err)
	}
	want := tok
	want.CreatedAt, want.ExpiresAt = t0.UTC(), t0.Add(time.Hour).UTC()
	if got, err := s.GetPersonToken(ctx(), []byte("h1")); err != nil || !cmp.Equal(want, got) {
		t.Errorf("round trip: %v (-want +got):\n%s", err, cmp.Diff(want, got))
	}
	if _, err := s.UsePersonToken(ctx(), []byte("h1"), store.PersonTokenActivation, t0); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("use as another kind: %v, want ErrNotFound", err)
	}
	if _, err := s.UsePersonToken(ctx(), []byte("h1"), store.PersonTokenPasswordReset, t0.Add(time.Hour)); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("use at expiry: %v, want ErrNotFound", err)
	}
	used, err := s.UsePersonToken(ctx(), []byte("h1"), store.PersonTokenPasswordReset, t0.Add(time.Minute))
	if err != nil || used.PersonID != "p1" || !used.UsedAt.Equal(t0.Add(time.Minute)) {
		t.Errorf("use: %+v, %v", used, err)
	}
	if _, err := s.UsePersonToken(ctx(), []byte("h1"), store.PersonTokenPasswordReset, t0.Add(2*time.Minute)); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("second use: %v, want ErrNotFound", err)
	}
	if got, _ := s.GetPersonToken(ctx(), []byte("h1")); got.UsedAt.IsZero() {
		t.Errorf("a used token reads as unused")
	}
	// DeletePersonTokens drops the unused ones of the kind only.
	for _, k := range []string{"h2", "h3"} {
		if err := s.CreatePersonToken(ctx(), store.PersonToken{Hash: []byte(k), Kind: store.PersonTokenPasswordReset,
			PersonID: "p1", CreatedAt: t0, ExpiresAt: t0.Add(time.Hour)}); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.CreatePersonToken(ctx(), store.PersonToken{Hash: []byte("a1"), Kind: store.PersonTokenActivation,
		PersonID: "p1", CreatedAt: t0, ExpiresAt: t0.Add(time.Hour)}); err != nil {
		t.Fatal(err)
	}
	if err := s.DeletePersonTokens(ctx(), "p1", store.PersonTokenPasswordReset); err != nil {
		t.Fatal(err)
	}
	for hash, want := range map[string]bool{"h1": true, "h2": false, "h3": false, "a1": true} {
		_, err := s.GetPersonToken(ctx(), []byte(hash))
		if (err == nil) != want {
			t.Errorf("after DeletePersonTokens, token %s: %v (kept: want %v)", hash, err, want)
		}
	}
	// Expired tokens are swept after their retention.
	if _, err := s.DeleteExpired(ctx(), t0.Add(8*24*time.Hour)); err != nil {
		t.Fatal(err)
	}
	if _, err := s.GetPersonToken(ctx(), []byte("a1")); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("expired token after retention: %v", err)
	}
}

// Of concurrent uses of one token exactly one succeeds.
func testPersonTokenRace(t *testing.T, s store.Store) {
	if err := s.CreatePersonToken(ctx(), store.PersonToken{Hash: []byte("r"), Kind: store.PersonTokenActivation,
		PersonID: "p1", CreatedAt: t0, ExpiresAt: t0.Add(time.Hour)}); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	wins := 0
	for range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err := s.UsePersonToken(ctx(), []byte("r"), store.PersonTokenActivation, t0)
			if err != nil && !errors.Is(err, store.ErrNotFound) {
				t.Error(err)
			}
			if err == nil {
				mu.Lock()
				wins++
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if wins != 1 {
		t.Errorf("%d uses succeeded, want 1", wins)
	}
}
