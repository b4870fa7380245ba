package signing

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-jose/go-jose/v4"
	"github.com/google/go-cmp/cmp"

	"github.com/latchkey/latchkey/internal/seal"
	"github.com/latchkey/latchkey/internal/store"
	"github.com/latchkey/latchkey/internal/store/postgres"
	"github.com/latchkey/latchkey/internal/store/postgres/pgtest"
	"github.com/latchkey/latchkey/internal/store/sqlite"
)

// clock is a settable clock; it starts at the wall clock's now, so no test
// depends on today's date.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func newClock() *clock { return &clock{t: time.Now()} }

func (c *clock) Now() time.Time          { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) Advance(d time.Duration) { c.mu.Lock(); c.t = c.t.Add(d); c.mu.Unlock() }

var serverKey = bytes.Repeat([]byte{42}, 32)

const (
	period   = 90 * 24 * time.Hour
	ahead    = 24 * time.Hour
	lifetime = 2 * time.Hour
)

func testConfig(alg string) Config {
	return Config{Algorithm: alg, RotationPeriod: period, PublishAhead: ahead, MaxSignedLifetime: lifetime,
		Refresh: time.Minute}
}

func sqliteStore(t testing.TB) store.Store {
	st, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

func newKeys(t testing.TB, st store.SigningKeys, c *clock, cfg Config) *Keys {
	t.Helper()
	sealer, err := seal.New(serverKey, SealPurpose)
	if err != nil {
		t.Fatal(err)
	}
	k, err := New(st, sealer, cfg, c.Now)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

// claims are JSON claims that expire d after now.
func claims(now time.Time, d time.Duration) []byte {
	return fmt.Appendf(nil, `{"iss":"https://issuer.example","sub":"p1","exp":%d}`, now.Add(d).Unix())
}

// sign signs claims valid for a minute and returns the token and its kid.
func sign(t *testing.T, k *Keys, now time.Time) (string, string) {
	t.Helper()
	tok, err := k.Sign(context.Background(), claims(now, time.Minute), "JWT")
	if err != nil {
		t.Fatal(err)
	}
	jws, err := jose.ParseSignedCompact(tok, []jose.SignatureAlgorithm{jose.RS256, jose.ES256, jose.EdDSA})
	if err != nil {
		t.Fatal(err)
	}
	return tok, jws.Signatures[0].Header.KeyID
}

// servedJWKS fetches the JWKS the way a relying party does: over HTTP.
func servedJWKS(t *testing.T, k *Keys) (jose.JSONWebKeySet, http.Header) {
	t.Helper()
	rec := httptest.NewRecorder()
	if err := k.ServeJWKS(rec, httptest.NewRequest("GET", PathJWKS, nil)); err != nil {
		t.Fatal(err)
	}
	if rec.Code != http.StatusOK {
		t.Fatalf("JWKS status %d", rec.Code)
	}
	if body := rec.Body.String(); strings.Contains(body, `"d"`) || strings.Contains(body, `"p"`) {
		t.Fatalf("the JWKS holds private key members: %s", body)
	}
	var set jose.JSONWebKeySet
	if err := json.Unmarshal(rec.Body.Bytes(), &set); err != nil {
		t.Fatal(err)
	}
	return set, rec.Header()
}

func kids(set jose.JSONWebKeySet) []string {
	out := []string{}
	for _, k := range set.Keys {
		out = append(out, k.KeyID)
	}
	return out
}

// verifyWithJWKS checks tok as a relying party would: with a key of the set.
func verifyWithJWKS(set jose.JSONWebKeySet, tok string) error {
	jws, err := jose.ParseSignedCompact(tok, []jose.SignatureAlgorithm{jose.RS256, jose.ES256, jose.EdDSA})
	if err != nil {
		return err
	}
	keys := set.Key(jws.Signatures[0].Header.KeyID)
	if len(keys) != 1 {
		return fmt.Errorf("kid %q is not in the JWKS", jws.Signatures[0].Header.KeyID)
	}
	_, err = jws.Verify(keys[0])
	return err
}

func states(t *testing.T, k *Keys) []string {
	t.Helper()
	infos, err := k.List(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	out := []string{}
	for _, in := range infos {
		out = append(out, in.KID+"="+in.State)
	}
	return out
}

// A whole rotation, for each algorithm: A signs; the rotation publishes B
// while A still signs; after the publish-ahead time B signs and A is still
// published; once A's last token has expired A leaves the JWKS. A second
// instance on the same store serves a JWKS that verifies every token the
// first one signed.
func TestRotation(t *testing.T) {
	for _, alg := range Algorithms {
		t.Run(alg, func(t *testing.T) {
			ctx := context.Background()
			c := newClock()
			st := sqliteStore(t)
			one, two := newKeys(t, st, c, testConfig(alg)), newKeys(t, st, c, testConfig(alg))

			if _, err := one.Sign(ctx, claims(c.Now(), time.Minute), "JWT"); !errors.Is(err, ErrNoKey) {
				t.Fatalf("Sign before EnsureKeys: %v, want ErrNoKey", err)
			}
			if err := one.EnsureKeys(ctx); err != nil {
				t.Fatal(err)
			}
			// The first key of an empty store signs at once.
			tokA, a := sign(t, one, c.Now())
			set, hdr := servedJWKS(t, two)
			if d := cmp.Diff([]string{a}, kids(set)); d != "" {
				t.Errorf("JWKS of the second instance (-want +got):\n%s", d)
			}
			if got := hdr.Get("Cache-Control"); got != "public, max-age=3600" {
				t.Errorf("Cache-Control = %q", got)
			}
			if err := verifyWithJWKS(set, tokA); err != nil {
				t.Errorf("a token of the first instance does not verify with the second's JWKS: %v", err)
			}
			if set.Keys[0].Algorithm != alg || set.Keys[0].Use != "sig" {
				t.Errorf("JWK alg %q use %q, want %s sig", set.Keys[0].Algorithm, set.Keys[0].Use, alg)
			}
			// Nothing is due: starting again adds no key.
			if err := two.EnsureKeys(ctx); err != nil {
				t.Fatal(err)
			}
			if got := states(t, one); len(got) != 1 {
				t.Fatalf("keys after a second EnsureKeys: %v, want one", got)
			}

			// Just before the rotation is due, nothing happens.
			c.Advance(period - ahead - time.Second)
			if err := two.EnsureKeys(ctx); err != nil {
				t.Fatal(err)
			}
			if got := states(t, one); len(got) != 1 {
				t.Fatalf("keys before the rotation is due: %v", got)
			}
			// Due: B is published, A still signs.
			c.Advance(time.Second)
			if err := two.EnsureKeys(ctx); err != nil {
				t.Fatal(err)
			}
			infos, err := two.List(ctx)
			if err != nil || len(infos) != 2 {
				t.Fatalf("List = %v, %v; want two keys", infos, err)
			}
			b := infos[1].KID
			if d := cmp.Diff([]string{a + "=signing", b + "=published"}, states(t, one)); d != "" {
				t.Errorf("states after the rotation (-want +got):\n%s", d)
			}
			if !infos[1].SignFrom.Equal(infos[1].PublishAt.Add(ahead)) || !infos[0].RetireAt.Equal(infos[1].SignFrom) ||
				!infos[0].ExpireAt.Equal(infos[1].SignFrom.Add(lifetime)) {
				t.Errorf("dates: B published %v signs %v; A retires %v expires %v", infos[1].PublishAt, infos[1].SignFrom,
					infos[0].RetireAt, infos[0].ExpireAt)
			}
			// The first instance's cache is fresh: it has not read B yet and
			// must not need to, since B does not sign yet.
			if _, kid := sign(t, one, c.Now()); kid != a {
				t.Errorf("signed with %s before B's sign_from, want A %s", kid, a)
			}
			c.Advance(time.Minute) // the caches refresh
			set, _ = servedJWKS(t, one)
			if d := cmp.Diff([]string{a, b}, kids(set)); d != "" {
				t.Errorf("JWKS while B waits (-want +got):\n%s", d)
			}

			// One second before B's sign_from A still signs; then B does.
			c.Advance(ahead - time.Minute - time.Second)
			if _, kid := sign(t, one, c.Now()); kid != a {
				t.Errorf("signed with %s a second before B's sign_from, want A", kid)
			}
			tokA, _ = sign(t, one, c.Now())
			c.Advance(time.Second)
			tokB, kid := sign(t, one, c.Now())
			if kid != b {
				t.Errorf("signed with %s at B's sign_from, want B %s", kid, b)
			}
			set, _ = servedJWKS(t, two)
			if d := cmp.Diff([]string{b, a}, kids(set)); d != "" {
				t.Errorf("JWKS once B signs (-want +got):\n%s", d)
			}
			for name, tok := range map[string]string{"A": tokA, "B": tokB} {
				if err := verifyWithJWKS(set, tok); err != nil {
					t.Errorf("token of %s: %v", name, err)
				}
				if _, err := two.Verify(ctx, tok, "JWT"); err != nil {
					t.Errorf("Verify of a token of %s: %v", name, err)
				}
			}
			if d := cmp.Diff([]string{a + "=retired", b + "=signing"}, states(t, two)); d != "" {
				t.Errorf("states once B signs (-want +got):\n%s", d)
			}

			// A's last token expires lifetime after A retired: until then A is published.
			c.Advance(lifetime - time.Second)
			if set, _ := servedJWKS(t, two); len(set.Keys) != 2 {
				t.Errorf("A left the JWKS before its last token expired: %v", kids(set))
			}
			c.Advance(time.Second)
			set, _ = servedJWKS(t, two)
			if d := cmp.Diff([]string{b}, kids(set)); d != "" {
				t.Errorf("JWKS after A expired (-want +got):\n%s", d)
			}
			if _, err := two.Verify(ctx, tokA, "JWT"); !errors.Is(err, ErrInvalid) {
				t.Errorf("Verify of A's token after A expired: %v, want ErrInvalid", err)
			}
			if d := cmp.Diff([]string{a + "=expired", b + "=signing"}, states(t, two)); d != "" {
				t.Errorf("states after A expired (-want +got):\n%s", d)
			}
			if _, err := st.DeleteExpired(ctx, c.Now().Add(time.Microsecond)); err != nil {
				t.Fatal(err)
			}
			if d := cmp.Diff([]string{b + "=signing"}, states(t, two)); d != "" {
				t.Errorf("states after DeleteExpired (-want +got):\n%s", d)
			}
		})
	}
}

// An instance that holds a cache of the keys picks up a rotation made by
// another one within Refresh, long before the new key signs.
func TestOtherInstanceRotates(t *testing.T) {
	ctx := context.Background()
	c := newClock()
	st := sqliteStore(t)
	one, two := newKeys(t, st, c, testConfig(ES256)), newKeys(t, st, c, testConfig(ES256))
	if err := one.EnsureKeys(ctx); err != nil {
		t.Fatal(err)
	}
	_, a := sign(t, two, c.Now()) // two reads A into its cache
	c.Advance(time.Second)        // a rotation in the same microsecond as A would count as concurrent with it
	b, err := one.Rotate(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if b.State != StatePublished || !b.SignFrom.Equal(b.PublishAt.Add(ahead)) || b.KID == a {
		t.Fatalf("Rotate = %+v, want a new key published now that signs %v later", b, ahead)
	}
	c.Advance(time.Minute)
	set, _ := servedJWKS(t, two)
	if d := cmp.Diff([]string{a, b.KID}, kids(set)); d != "" {
		t.Errorf("JWKS of the other instance a refresh after the rotation (-want +got):\n%s", d)
	}
	c.Advance(ahead)
	if _, kid := sign(t, two, c.Now()); kid != b.KID {
		t.Errorf("the other instance signs with %s after the new key's sign_from, want %s", kid, b.KID)
	}
}

// Rotate forces a new key whatever the schedule; each call adds one.
func TestRotateForces(t *testing.T) {
	ctx := context.Background()
	c := newClock()
	k := newKeys(t, sqliteStore(t), c, testConfig(EdDSA))
	first, err := k.Rotate(ctx) // on an empty store: the first key, signing at once
	if err != nil {
		t.Fatal(err)
	}
	if first.State != StateSigning || first.Generation != 1 {
		t.Fatalf("Rotate on an empty store = %+v, want generation 1, signing", first)
	}
	for gen := int64(2); gen <= 3; gen++ {
		c.Advance(time.Hour)
		in, err := k.Rotate(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if in.Generation != gen || in.State != StatePublished {
			t.Errorf("Rotate = generation %d %s, want %d published", in.Generation, in.State, gen)
		}
	}
	// Key 2 never signs before key 3: it signs from its own sign_from until 3's.
	c.Advance(ahead - time.Hour)
	got := states(t, k)
	if len(got) != 3 || !strings.HasSuffix(got[0], "=retired") || !strings.HasSuffix(got[1], "=signing") ||
		!strings.HasSuffix(got[2], "=published") {
		t.Errorf("states = %v, want retired, signing, published", got)
	}
}

// Sign refuses claims that would outlive their key's place in the JWKS.
func TestSignChecksExpiry(t *testing.T) {
	ctx := context.Background()
	c := newClock()
	k := newKeys(t, sqliteStore(t), c, testConfig(ES256))
	if err := k.EnsureKeys(ctx); err != nil {
		t.Fatal(err)
	}
	now := c.Now()
	for name, tc := range map[string]struct {
		payload string
		want    error
	}{
		"exp at the limit":  {string(claims(now, lifetime)), nil},
		"exp past it":       {string(claims(now, lifetime+2*time.Second)), ErrLifetime},
		"no exp":            {`{"sub":"p1"}`, ErrNoExpiry},
		"fractional exp":    {fmt.Sprintf(`{"exp":%d.5}`, now.Unix()+60), nil},
		"exp not a number":  {`{"exp":"soon"}`, errAny},
		"not a JSON object": {`[1,2]`, errAny},
	} {
		_, err := k.Sign(ctx, []byte(tc.payload), "")
		switch {
		case tc.want == nil && err != nil:
			t.Errorf("%s: %v, want a token", name, err)
		case tc.want == errAny && err == nil, tc.want != nil && tc.want != errAny && !errors.Is(err, tc.want):
			t.Errorf("%s: %v, want %v", name, err, tc.want)
		}
	}
	// The go-jose signer checks the same.
	s, err := k.Signer(ctx, "at+jwt")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Sign([]byte(`{"sub":"p1"}`)); !errors.Is(err, ErrNoExpiry) {
		t.Errorf("Signer().Sign without exp: %v, want ErrNoExpiry", err)
	}
	jws, err := s.Sign(claims(now, time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	compact, err := jws.CompactSerialize()
	if err != nil {
		t.Fatal(err)
	}
	if jws, err = jose.ParseSignedCompact(compact, []jose.SignatureAlgorithm{jose.ES256}); err != nil {
		t.Fatal(err)
	}
	if typ := jws.Signatures[0].Protected.ExtraHeaders[jose.HeaderType]; typ != "at+jwt" {
		t.Errorf("typ header = %v, want at+jwt", typ)
	}
}

var errAny = errors.New("any error")

// Verify accepts only tokens of a published key, with the algorithm of
// that key and the typ asked for.
func TestVerify(t *testing.T) {
	ctx := context.Background()
	c := newClock()
	st := sqliteStore(t)
	k := newKeys(t, st, c, testConfig(ES256))
	if err := k.EnsureKeys(ctx); err != nil {
		t.Fatal(err)
	}
	good, kid := sign(t, k, c.Now())
	payload, err := k.Verify(ctx, good, "JWT")
	if err != nil || !bytes.Contains(payload, []byte(`"sub":"p1"`)) {
		t.Fatalf("Verify = %s, %v", payload, err)
	}
	// The same claims signed by a key that is not published (another
	// store's) with the same kid header.
	stranger := newKeys(t, sqliteStore(t), c, testConfig(ES256))
	if err := stranger.EnsureKeys(ctx); err != nil {
		t.Fatal(err)
	}
	m := stranger.snap.keys[0].material
	forger, err := jose.NewSigner(jose.SigningKey{Algorithm: jose.ES256, Key: jose.JSONWebKey{Key: m.private, KeyID: kid}},
		(&jose.SignerOptions{}).WithType("JWT"))
	if err != nil {
		t.Fatal(err)
	}
	forged, err := forger.Sign(claims(c.Now(), time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	forgedTok, _ := forged.CompactSerialize()
	parts := strings.Split(good, ".")
	tampered := parts[0] + "." + strings.TrimSuffix(parts[1], "Q") + "R." + parts[2]
	alone, _ := sign(t, stranger, c.Now())
	for name, tc := range map[string]struct{ tok, typ string }{
		"another typ":             {good, "at+jwt"},
		"a forged signature":      {forgedTok, "JWT"},
		"a tampered payload":      {tampered, "JWT"},
		"an unknown kid":          {alone, "JWT"},
		"alg none":                {"eyJhbGciOiJub25lIn0." + parts[1] + ".", ""},
		"not a JWS":               {"hello", ""},
		"a JWS with no signature": {parts[0] + "." + parts[1] + ".", ""},
	} {
		if _, err := k.Verify(ctx, tc.tok, tc.typ); !errors.Is(err, ErrInvalid) {
			t.Errorf("%s: Verify = %v, want ErrInvalid", name, err)
		}
	}
}

// A sealed private key is neither in the clear in the store, nor opens
// under another server key, nor in another row.
func TestPrivateKeysAreSealed(t *testing.T) {
	ctx := context.Background()
	c := newClock()
	st := sqliteStore(t)
	k := newKeys(t, st, c, testConfig(RS256))
	if err := k.EnsureKeys(ctx); err != nil {
		t.Fatal(err)
	}
	stored, err := st.ListSigningKeys(ctx)
	if err != nil || len(stored) != 1 {
		t.Fatalf("ListSigningKeys = %d keys, %v", len(stored), err)
	}
	sk := stored[0]
	if bytes.Contains(sk.SealedPrivate, []byte{0x30, 0x82}) && bytes.Contains(sk.SealedPrivate, []byte{0x2a, 0x86, 0x48, 0x86, 0xf7}) {
		t.Error("the stored private key looks like clear DER")
	}
	if bytes.Contains(sk.PublicJWK, []byte(`"d"`)) {
		t.Errorf("the stored public JWK holds private members: %s", sk.PublicJWK)
	}
	otherSealer, _ := seal.New(bytes.Repeat([]byte{7}, 32), SealPurpose)
	other, _ := New(st, otherSealer, testConfig(RS256), c.Now)
	if _, err := other.open(sk); !errors.Is(err, seal.ErrOpen) {
		t.Errorf("opened under another server key: %v", err)
	}
	moved := sk
	moved.KID = "another-row"
	if _, err := k.open(moved); !errors.Is(err, seal.ErrOpen) {
		t.Errorf("opened in another row: %v", err)
	}
}

// A change of signing_algorithm rotates to a key of the new algorithm,
// published ahead like any rotation.
func TestAlgorithmChange(t *testing.T) {
	ctx := context.Background()
	c := newClock()
	st := sqliteStore(t)
	if err := newKeys(t, st, c, testConfig(ES256)).EnsureKeys(ctx); err != nil {
		t.Fatal(err)
	}
	k := newKeys(t, st, c, testConfig(EdDSA))
	if err := k.EnsureKeys(ctx); err != nil {
		t.Fatal(err)
	}
	infos, err := k.List(ctx)
	if err != nil || len(infos) != 2 {
		t.Fatalf("List = %v, %v; want the old key and a new one", infos, err)
	}
	if infos[0].Algorithm != ES256 || infos[0].State != StateSigning || infos[1].Algorithm != EdDSA || infos[1].State != StatePublished {
		t.Errorf("keys = %+v, want the ES256 key signing and an EdDSA key published", infos)
	}
	if err := k.EnsureKeys(ctx); err != nil { // the new key is on its way: no second one
		t.Fatal(err)
	}
	if infos, _ := k.List(ctx); len(infos) != 2 {
		t.Errorf("%d keys after another EnsureKeys, want 2", len(infos))
	}
}

func TestConfigChecks(t *testing.T) {
	sealer, _ := seal.New(serverKey, SealPurpose)
	for name, cfg := range map[string]Config{
		"unknown algorithm":      {Algorithm: "HS256", RotationPeriod: period, PublishAhead: ahead, MaxSignedLifetime: lifetime},
		"publish ahead too long": {Algorithm: RS256, RotationPeriod: ahead, PublishAhead: ahead, MaxSignedLifetime: lifetime},
		"no lifetime":            {Algorithm: RS256, RotationPeriod: period, PublishAhead: ahead},
		"refresh too slow":       {Algorithm: RS256, RotationPeriod: period, PublishAhead: ahead, MaxSignedLifetime: lifetime, Refresh: ahead},
		"negative rotation":      {Algorithm: RS256, RotationPeriod: -period, PublishAhead: ahead, MaxSignedLifetime: lifetime},
		"negative publish ahead": {Algorithm: RS256, RotationPeriod: period, PublishAhead: -ahead, MaxSignedLifetime: lifetime},
	} {
		if _, err := New(nil, sealer, cfg, nil); err == nil {
			t.Errorf("%s: New accepted %+v", name, cfg)
		}
	}
}

// Instances that start together on an empty store, or rotate together,
// add one key between them: on SQLite (one process, several Keys) and on
// PostgreSQL (two store handles, as two processes have).
func TestConcurrentInstances(t *testing.T) {
	for _, backend := range []string{"sqlite", "postgres"} {
		t.Run(backend, func(t *testing.T) {
			ctx := context.Background()
			c := newClock()
			var stores []store.Store
			if backend == "sqlite" {
				stores = []store.Store{sqliteStore(t)}
			} else {
				dsn := pgtest.NewDatabase(t)
				for range 2 {
					st, err := postgres.Open(ctx, dsn)
					if err != nil {
						t.Fatal(err)
					}
					t.Cleanup(func() { st.Close() })
					stores = append(stores, st)
				}
			}
			const n = 6
			instances := make([]*Keys, n)
			for i := range instances {
				instances[i] = newKeys(t, stores[i%len(stores)], c, testConfig(ES256))
			}
			race := func(what string, fn func(*Keys) error) {
				t.Helper()
				var wg sync.WaitGroup
				start := make(chan struct{})
				for i, k := range instances {
					wg.Add(1)
					go func() {
						defer wg.Done()
						<-start
						if err := fn(k); err != nil {
							t.Errorf("%s, instance %d: %v", what, i, err)
						}
					}()
				}
				close(start)
				wg.Wait()
			}
			race("first start", func(k *Keys) error { return k.EnsureKeys(ctx) })
			first, err := instances[0].List(ctx)
			if err != nil || len(first) != 1 {
				t.Fatalf("after a first start together: %d keys, %v; want 1", len(first), err)
			}
			// Every instance signs with the one key.
			for i, k := range instances {
				if _, kid := sign(t, k, c.Now()); kid != first[0].KID {
					t.Errorf("instance %d signs with %s, want %s", i, kid, first[0].KID)
				}
			}
			c.Advance(period - ahead)
			race("scheduled rotation", func(k *Keys) error { return k.EnsureKeys(ctx) })
			c.Advance(time.Second)
			race("forced rotation", func(k *Keys) error { _, err := k.Rotate(ctx); return err })
			got, err := instances[n-1].List(ctx)
			if err != nil {
				t.Fatal(err)
			}
			// The scheduled rotation adds one key; the forced rotations, racing
			// each other, one more.
			if len(got) != 3 {
				t.Errorf("after racing rotations: %d keys, want 3: %+v", len(got), got)
			}
		})
	}
}

// The emergency rotation: RotateNow's key signs at once; Retire takes the
// old key out of the JWKS and out of Verify at once, and refuses the key
// that signs (and a key published to sign later), so a key always signs.
func TestRotateNowAndRetire(t *testing.T) {
	ctx := context.Background()
	c := newClock()
	k := newKeys(t, sqliteStore(t), c, testConfig(ES256))
	if err := k.EnsureKeys(ctx); err != nil {
		t.Fatal(err)
	}
	oldTok, oldKID := sign(t, k, c.Now())
	if err := k.Retire(ctx, oldKID); !errors.Is(err, ErrSigningKeyInUse) {
		t.Fatalf("Retire of the only key: %v, want ErrSigningKeyInUse", err)
	}
	c.Advance(time.Second)
	scheduled, err := k.Rotate(ctx) // published ahead: signs a day later
	if err != nil {
		t.Fatal(err)
	}
	for _, kid := range []string{oldKID, scheduled.KID} {
		if err := k.Retire(ctx, kid); !errors.Is(err, ErrSigningKeyInUse) {
			t.Errorf("Retire(%s) while no newer key signs: %v, want ErrSigningKeyInUse", kid, err)
		}
	}

	c.Advance(time.Second)
	now, err := k.RotateNow(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if now.State != StateSigning || !now.SignFrom.Equal(c.Now().Truncate(time.Microsecond)) {
		t.Fatalf("RotateNow: %+v, want a key that signs from now", now)
	}
	if _, kid := sign(t, k, c.Now()); kid != now.KID {
		t.Errorf("after RotateNow Sign used %s, want %s", kid, now.KID)
	}
	// Until it is retired, the old key still verifies what it signed.
	if _, err := k.Verify(ctx, oldTok, "JWT"); err != nil {
		t.Errorf("the replaced key's token before Retire: %v", err)
	}
	for _, kid := range []string{oldKID, scheduled.KID} {
		if err := k.Retire(ctx, kid); err != nil {
			t.Fatalf("Retire(%s): %v", kid, err)
		}
	}
	if set, _ := servedJWKS(t, k); !cmp.Equal(kids(set), []string{now.KID}) {
		t.Errorf("JWKS after Retire: %v, want only %s", kids(set), now.KID)
	}
	if _, err := k.Verify(ctx, oldTok, "JWT"); !errors.Is(err, ErrInvalid) {
		t.Errorf("the retired key's token: %v, want ErrInvalid", err)
	}
	if err := k.Retire(ctx, now.KID); !errors.Is(err, ErrSigningKeyInUse) {
		t.Errorf("Retire of the newest signing key: %v, want ErrSigningKeyInUse", err)
	}
	if err := k.Retire(ctx, oldKID); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("Retire of a retired key: %v, want store.ErrNotFound", err)
	}
	// Past the day the scheduled key was to sign, the emergency key signs on.
	c.Advance(ahead + time.Hour)
	if _, kid := sign(t, k, c.Now()); kid != now.KID {
		t.Errorf("after the retired key's SignFrom Sign used %s, want %s", kid, now.KID)
	}
}

// With no publish-ahead time (oidc.key_publish_ahead: 0s), a scheduled
// rotation's key signs at once, and verifiers are told not to cache.
func TestZeroPublishAhead(t *testing.T) {
	ctx := context.Background()
	c := newClock()
	cfg := testConfig(RS256)
	cfg.PublishAhead, cfg.Refresh = 0, 0
	k := newKeys(t, sqliteStore(t), c, cfg)
	if err := k.EnsureKeys(ctx); err != nil {
		t.Fatal(err)
	}
	_, first := sign(t, k, c.Now())
	c.Advance(period)
	if err := k.EnsureKeys(ctx); err != nil {
		t.Fatal(err)
	}
	if _, kid := sign(t, k, c.Now()); kid == first {
		t.Errorf("the rotation's key does not sign at once with no publish-ahead time")
	}
	if _, h := servedJWKS(t, k); h.Get("Cache-Control") != "public, max-age=0" {
		t.Errorf("JWKS Cache-Control %q, want max-age=0", h.Get("Cache-Control"))
	}
	if k.cfg.Refresh != zeroAheadRefresh {
		t.Errorf("Refresh %v, want %v", k.cfg.Refresh, zeroAheadRefresh)
	}
}

// A rotation that meets a key added since it was called adds nothing more,
// unless it must sign at once and that key signs later: RotateNow after a
// scheduled rotation still adds a key that signs now.
func TestRotateMeetsAConcurrentKey(t *testing.T) {
	ctx := context.Background()
	c := newClock()
	k := newKeys(t, sqliteStore(t), c, testConfig(ES256))
	if err := k.EnsureKeys(ctx); err != nil {
		t.Fatal(err)
	}
	c.Advance(time.Second)
	// The same instant: what a concurrent caller's key looks like.
	a, err := k.Rotate(ctx)
	if err != nil {
		t.Fatal(err)
	}
	b, err := k.Rotate(ctx)
	if err != nil || b.KID != a.KID {
		t.Errorf("a second Rotate at once: %s, %v; want the first one's key %s", b.KID, err, a.KID)
	}
	now, err := k.RotateNow(ctx)
	if err != nil || now.KID == a.KID || now.State != StateSigning {
		t.Errorf("RotateNow after a scheduled key: %+v, %v; want a new key that signs", now, err)
	}
	again, err := k.RotateNow(ctx)
	if err != nil || again.KID != now.KID {
		t.Errorf("a second RotateNow at once: %s, %v; want %s", again.KID, err, now.KID)
	}
}
