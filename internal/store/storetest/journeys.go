package storetest

import (
	"errors"
	"fmt"
	"slices"
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
	if err := s.EndMailAttempt(ctx(), "m1", "a", store.MailAttempt{At: t0}); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("mark by a lost lease: %v, want ErrNotFound", err)
	}
	if err := s.EndMailAttempt(ctx(), "m1", "a", store.MailAttempt{At: t0, Error: "x", RetryAt: t0}); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("defer by a lost lease: %v, want ErrNotFound", err)
	}
	// Deferred: due again later, lease given back.
	if err := s.EndMailAttempt(ctx(), "m1", "b", store.MailAttempt{At: t0, Error: "connection refused", RetryAt: t0.Add(5 * time.Minute)}); err != nil {
		t.Fatal(err)
	}
	if c, _ := s.ClaimMails(ctx(), "b", t0.Add(4*time.Minute), time.Minute, 10); len(c) != 0 {
		t.Errorf("claimed before its next attempt: %+v", c)
	}
	c, err := s.ClaimMails(ctx(), "c", t0.Add(5*time.Minute), time.Minute, 10)
	if err != nil || len(c) != 1 || c[0].ID != "m1" || c[0].LastError != "connection refused" {
		t.Fatalf("claim after the back-off: %+v, %v", c, err)
	}
	if err := s.EndMailAttempt(ctx(), "m1", "c", store.MailAttempt{At: t0.Add(5 * time.Minute)}); err != nil {
		t.Fatal(err)
	}
	sent, _ := s.GetMail(ctx(), "m1")
	if !sent.SentAt.Equal(t0.Add(5*time.Minute)) || len(sent.Body) != 0 {
		t.Errorf("sent mail: sent_at %v, body %q; want the time and no body", sent.SentAt, sent.Body)
	}
	if err := s.EndMailAttempt(ctx(), "m1", "c", store.MailAttempt{At: t0.Add(5 * time.Minute)}); !errors.Is(err, store.ErrNotFound) {
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

// personToken stores an unused token of kind for personID.
func personToken(t *testing.T, s store.Store, hash, kind, personID string) {
	t.Helper()
	if err := s.CreatePersonToken(ctx(), store.PersonToken{Hash: []byte(hash), Kind: kind, PersonID: personID,
		CreatedAt: t0, ExpiresAt: t0.Add(time.Hour)}); err != nil {
		t.Fatal(err)
	}
}

func setPersonStatus(t *testing.T, s store.Store, id, status string) {
	t.Helper()
	if err := s.UpdatePerson(ctx(), id, func(p store.Person) (store.Person, error) {
		p.Status = status
		return p, nil
	}); err != nil {
		t.Fatal(err)
	}
}

// kept reports which of hashes a person token is still stored under.
func kept(s store.Store, hashes ...string) map[string]bool {
	out := map[string]bool{}
	for _, h := range hashes {
		_, err := s.GetPersonToken(ctx(), []byte(h))
		out[h] = err == nil
	}
	return out
}

var personTokenKinds = []string{store.PersonTokenActivation, store.PersonTokenInvitation, store.PersonTokenPasswordReset,
	store.PersonTokenEmailOTP}

// A write that leaves a person BLOCKED or INACTIVE ends every unused
// mailed token of the person, of every kind, in its own transaction (a
// rolled-back block ends none); an unblock brings none back; other
// persons' tokens and used tokens stay; DeletePerson ends them too.
func testBlockEndsPersonTokens(t *testing.T, s store.Store) {
	for _, id := range []string{"p1", "p2"} {
		if err := s.CreatePerson(ctx(), person(id, id+"@example.com")); err != nil {
			t.Fatal(err)
		}
	}
	var p1 []string
	for _, kind := range personTokenKinds {
		personToken(t, s, "p1-"+kind, kind, "p1")
		p1 = append(p1, "p1-"+kind)
	}
	personToken(t, s, "p1-used", store.PersonTokenPasswordReset, "p1")
	if _, err := s.UsePersonToken(ctx(), []byte("p1-used"), store.PersonTokenPasswordReset, t0); err != nil {
		t.Fatal(err)
	}
	personToken(t, s, "p2-reset", store.PersonTokenPasswordReset, "p2")
	all := append(slices.Clone(p1), "p1-used", "p2-reset")
	every := func(v bool) map[string]bool {
		m := map[string]bool{}
		for _, h := range all {
			m[h] = v
		}
		return m
	}

	// A write that does not block keeps them.
	if err := s.UpdatePerson(ctx(), "p1", func(p store.Person) (store.Person, error) {
		p.FirstName = "Janet"
		return p, nil
	}); err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(every(true), kept(s, all...)); d != "" {
		t.Errorf("after a name change (-want +got):\n%s", d)
	}
	// A block that rolls back ends nothing.
	errUndo := errors.New("undo")
	if err := s.Tx(ctx(), func(tx store.Store) error {
		if err := tx.UpdatePerson(ctx(), "p1", func(p store.Person) (store.Person, error) {
			p.Status = store.PersonBlocked
			return p, nil
		}); err != nil {
			return err
		}
		return errUndo
	}); !errors.Is(err, errUndo) {
		t.Fatal(err)
	}
	if d := cmp.Diff(every(true), kept(s, all...)); d != "" {
		t.Errorf("after a rolled-back block (-want +got):\n%s", d)
	}

	setPersonStatus(t, s, "p1", store.PersonBlocked)
	want := every(false)
	want["p1-used"], want["p2-reset"] = true, true
	if d := cmp.Diff(want, kept(s, all...)); d != "" {
		t.Errorf("after the block (-want +got):\n%s", d)
	}
	for _, kind := range personTokenKinds {
		if _, err := s.UsePersonToken(ctx(), []byte("p1-"+kind), kind, t0); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("use of a %s token after the block: %v, want ErrNotFound", kind, err)
		}
	}
	setPersonStatus(t, s, "p1", "ACTIVATED")
	if d := cmp.Diff(want, kept(s, all...)); d != "" {
		t.Errorf("after the unblock (-want +got):\n%s", d)
	}

	// INACTIVE ends them as well; a write that leaves the person BLOCKED
	// (blocking again, a name change) sweeps what was made meanwhile.
	personToken(t, s, "p1-again", store.PersonTokenPasswordReset, "p1")
	setPersonStatus(t, s, "p1", store.PersonInactive)
	if kept(s, "p1-again")["p1-again"] {
		t.Error("INACTIVE kept a reset token")
	}
	setPersonStatus(t, s, "p1", store.PersonBlocked)
	personToken(t, s, "p1-while", store.PersonTokenActivation, "p1")
	setPersonStatus(t, s, "p1", store.PersonBlocked)
	if kept(s, "p1-while")["p1-while"] {
		t.Error("blocking again kept a token made while blocked")
	}

	// Deleting a person ends their tokens, used ones too: an ID that
	// comes back (an import) inherits none.
	personToken(t, s, "p2-activation", store.PersonTokenActivation, "p2")
	if err := s.DeletePerson(ctx(), "p2"); err != nil {
		t.Fatal(err)
	}
	if got := kept(s, "p2-reset", "p2-activation"); got["p2-reset"] || got["p2-activation"] {
		t.Errorf("after DeletePerson: %v, want none kept", got)
	}
	if err := s.CreatePerson(ctx(), person("p2", "p2@example.com")); err != nil {
		t.Fatal(err)
	}
	if _, err := s.UsePersonToken(ctx(), []byte("p2-reset"), store.PersonTokenPasswordReset, t0); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("a token of a deleted person, used after the ID came back: %v", err)
	}
}

// A link minted under LockPerson (the journeys: lock, check the status,
// store the token) and a concurrent block never leave an unused token of
// a BLOCKED person: either the mint commits first and the block ends the
// token, or the block commits first and the mint sees BLOCKED.
func testBlockVsLinkRace(t *testing.T, s store.Store) {
	if err := s.CreatePerson(ctx(), person("p1", "a@example.com")); err != nil {
		t.Fatal(err)
	}
	errBlocked := errors.New("blocked")
	for round := range 20 {
		start := make(chan struct{})
		var wg sync.WaitGroup
		wg.Add(2)
		hash := fmt.Sprintf("race-%d", round)
		go func() {
			defer wg.Done()
			<-start
			err := s.Tx(ctx(), func(tx store.Store) error {
				p, err := tx.LockPerson(ctx(), "p1")
				if err != nil {
					return err
				}
				if p.Status == store.PersonBlocked {
					return errBlocked
				}
				return tx.CreatePersonToken(ctx(), store.PersonToken{Hash: []byte(hash), Kind: store.PersonTokenPasswordReset,
					PersonID: "p1", CreatedAt: t0, ExpiresAt: t0.Add(time.Hour)})
			})
			if err != nil && !errors.Is(err, errBlocked) {
				t.Error(err)
			}
		}()
		go func() {
			defer wg.Done()
			<-start
			if err := s.UpdatePerson(ctx(), "p1", func(p store.Person) (store.Person, error) {
				p.Status = store.PersonBlocked
				return p, nil
			}); err != nil {
				t.Error(err)
			}
		}()
		close(start)
		wg.Wait()
		if kept(s, hash)[hash] {
			t.Fatalf("round %d: an unused token of a BLOCKED person survived", round)
		}
		setPersonStatus(t, s, "p1", "ACTIVATED")
	}
}
