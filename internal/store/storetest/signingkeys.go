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

// signingKey is key number gen, published at pub and signing a day later.
func signingKey(gen int64, pub time.Time) store.SigningKey {
	return store.SigningKey{
		KID: fmt.Sprintf("kid-%d", gen), Generation: gen, Algorithm: "ES256",
		SealedPrivate: []byte{1, 0, byte(gen)}, PublicJWK: []byte(`{"kty":"EC"}`),
		CreatedAt: pub, PublishAt: pub, SignFrom: pub.Add(24 * time.Hour),
	}
}

func testSigningKeys(t *testing.T, s store.Store) {
	if ks, err := s.ListSigningKeys(ctx()); err != nil || len(ks) != 0 {
		t.Fatalf("ListSigningKeys on a fresh store = %v, %v; want none", ks, err)
	}
	const lifetime = 2 * time.Hour
	a := signingKey(1, t0)
	a.SignFrom = t0 // the first key signs at once
	if err := s.AddSigningKey(ctx(), a, lifetime); err != nil {
		t.Fatal(err)
	}
	b := signingKey(2, t0.Add(time.Hour))
	if err := s.AddSigningKey(ctx(), b, lifetime); err != nil {
		t.Fatal(err)
	}
	// Adding b retired a when b signs; a leaves the JWKS a lifetime later.
	wantA, wantB := a, b
	for _, k := range []*store.SigningKey{&wantA, &wantB} {
		k.CreatedAt, k.PublishAt, k.SignFrom = k.CreatedAt.UTC(), k.PublishAt.UTC(), k.SignFrom.UTC()
	}
	wantA.RetireAt, wantA.ExpireAt = b.SignFrom.UTC(), b.SignFrom.Add(lifetime).UTC()
	got, err := s.ListSigningKeys(ctx())
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff([]store.SigningKey{wantA, wantB}, got); d != "" {
		t.Errorf("ListSigningKeys (-want +got):\n%s", d)
	}

	// A generation that is stored, or older than the newest, is a lost race.
	for _, k := range []store.SigningKey{signingKey(2, t0), signingKey(1, t0)} {
		k.KID = "other"
		if err := s.AddSigningKey(ctx(), k, lifetime); !errors.Is(err, store.ErrConflict) {
			t.Errorf("AddSigningKey of generation %d after 2: %v, want ErrConflict", k.Generation, err)
		}
	}
	// A kid that is taken is a conflict too, and retires nothing.
	dup := signingKey(3, t0.Add(2*time.Hour))
	dup.KID = b.KID
	if err := s.AddSigningKey(ctx(), dup, lifetime); !errors.Is(err, store.ErrConflict) {
		t.Errorf("AddSigningKey with a taken kid: %v, want ErrConflict", err)
	}
	if got, _ := s.ListSigningKeys(ctx()); len(got) != 2 || !got[1].RetireAt.IsZero() {
		t.Errorf("after refused adds: %d keys, newest retired at %v; want 2 and not retired", len(got), got[len(got)-1].RetireAt)
	}

	// A later key retires b only: a keeps its dates.
	c := signingKey(3, t0.Add(3*time.Hour))
	if err := s.AddSigningKey(ctx(), c, lifetime); err != nil {
		t.Fatal(err)
	}
	got, err = s.ListSigningKeys(ctx())
	if err != nil || len(got) != 3 {
		t.Fatalf("ListSigningKeys = %d keys, %v; want 3", len(got), err)
	}
	if !got[0].ExpireAt.Equal(wantA.ExpireAt) || !got[1].RetireAt.Equal(c.SignFrom) || !got[2].RetireAt.IsZero() {
		t.Errorf("after the third key: a expires %v (want %v), b retires %v (want %v), c retires %v (want zero)",
			got[0].ExpireAt, wantA.ExpireAt, got[1].RetireAt, c.SignFrom, got[2].RetireAt)
	}

	// DeleteExpired removes a once its ExpireAt has passed, and only a.
	if _, err := s.DeleteExpired(ctx(), wantA.ExpireAt.Add(-time.Second)); err != nil {
		t.Fatal(err)
	}
	if got, _ := s.ListSigningKeys(ctx()); len(got) != 3 {
		t.Errorf("DeleteExpired before a's ExpireAt left %d keys, want 3", len(got))
	}
	if _, err := s.DeleteExpired(ctx(), wantA.ExpireAt.Add(time.Second)); err != nil {
		t.Fatal(err)
	}
	got, err = s.ListSigningKeys(ctx())
	if err != nil {
		t.Fatal(err)
	}
	var kids []string
	for _, k := range got {
		kids = append(kids, k.KID)
	}
	if d := cmp.Diff([]string{b.KID, c.KID}, kids); d != "" {
		t.Errorf("keys after DeleteExpired past a's ExpireAt (-want +got):\n%s", d)
	}
}

// testSigningKeyRace: instances that read the same newest key and rotate
// at once add exactly one key.
func testSigningKeyRace(t *testing.T, s store.Store) {
	if err := s.AddSigningKey(ctx(), signingKey(1, t0), time.Hour); err != nil {
		t.Fatal(err)
	}
	const n = 16
	var wg sync.WaitGroup
	var mu sync.Mutex
	wins := 0
	start := make(chan struct{})
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			k := signingKey(2, t0.Add(time.Hour))
			k.KID = fmt.Sprintf("kid-2-%d", i)
			<-start
			err := s.AddSigningKey(ctx(), k, time.Hour)
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err == nil:
				wins++
			case errors.Is(err, store.ErrConflict):
			default:
				t.Errorf("rotation %d: %v", i, err)
			}
		}()
	}
	close(start)
	wg.Wait()
	got, err := s.ListSigningKeys(ctx())
	if err != nil {
		t.Fatal(err)
	}
	if wins != 1 || len(got) != 2 {
		t.Fatalf("%d of %d rotations succeeded, %d keys stored; want 1 and 2", wins, n, len(got))
	}
	if got[0].RetireAt.IsZero() {
		t.Error("the first key was not retired by the winner")
	}
}

// testRetireSigningKey: a key is retired (out of the JWKS at once) only when
// a newer key already signs; the key that signs, or one published to sign
// later, is refused and keeps its dates.
func testRetireSigningKey(t *testing.T, s store.Store) {
	const lifetime = 2 * time.Hour
	a := signingKey(1, t0)
	a.SignFrom = t0
	b := signingKey(2, t0.Add(time.Hour)) // signs from t0+25h
	for _, k := range []store.SigningKey{a, b} {
		if err := s.AddSigningKey(ctx(), k, lifetime); err != nil {
			t.Fatal(err)
		}
	}
	before, err := s.ListSigningKeys(ctx())
	if err != nil {
		t.Fatal(err)
	}
	now := t0.Add(2 * time.Hour) // a signs, b is published
	for name, kid := range map[string]string{"the signing key": a.KID, "a key published to sign later": b.KID} {
		if err := s.RetireSigningKey(ctx(), kid, now); !errors.Is(err, store.ErrConflict) {
			t.Errorf("RetireSigningKey of %s: %v, want ErrConflict", name, err)
		}
	}
	if err := s.RetireSigningKey(ctx(), "no-such-kid", now); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("RetireSigningKey of an unknown kid: %v, want ErrNotFound", err)
	}
	if got, _ := s.ListSigningKeys(ctx()); !cmp.Equal(before, got) {
		t.Errorf("refused retirements changed the keys:\n%s", cmp.Diff(before, got))
	}

	// c signs at once (an emergency rotation): now a and b may be retired.
	c := signingKey(3, now)
	c.SignFrom = now
	if err := s.AddSigningKey(ctx(), c, lifetime); err != nil {
		t.Fatal(err)
	}
	later := now.Add(time.Minute)
	for _, kid := range []string{a.KID, b.KID} {
		if err := s.RetireSigningKey(ctx(), kid, later); err != nil {
			t.Errorf("RetireSigningKey(%s) with a newer key signing: %v", kid, err)
		}
	}
	if err := s.RetireSigningKey(ctx(), c.KID, later); !errors.Is(err, store.ErrConflict) {
		t.Errorf("RetireSigningKey of the newest signing key: %v, want ErrConflict", err)
	}
	got, err := s.ListSigningKeys(ctx())
	if err != nil || len(got) != 3 {
		t.Fatalf("ListSigningKeys = %d keys, %v", len(got), err)
	}
	// a was to retire at b's SignFrom, which is after later: it retires at
	// later; b retired when c began to sign, which stays.
	for i, want := range []time.Time{later, now} {
		if k := got[i]; !k.ExpireAt.Equal(later) || !k.RetireAt.Equal(want) {
			t.Errorf("key %d after retirement: retires %v, expires %v; want %v, %v", i+1, k.RetireAt, k.ExpireAt, want, later)
		}
	}
	if !got[2].ExpireAt.IsZero() || !got[2].RetireAt.IsZero() {
		t.Errorf("the signing key got dates: retires %v, expires %v", got[2].RetireAt, got[2].ExpireAt)
	}
	// A retired key is out of the JWKS: retiring it again is not found.
	if err := s.RetireSigningKey(ctx(), a.KID, later.Add(time.Second)); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("RetireSigningKey of a retired key: %v, want ErrNotFound", err)
	}
}
