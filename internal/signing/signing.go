// Package signing owns the keys that sign latchkey's JWTs (ID tokens, JWT
// access tokens) and the JWKS that publishes them (OpenID Connect, issue 20).
//
// The keys live in the store, sealed with the server key, so every instance
// signs with the same keys. Rotation is publish-then-sign: a new key is in
// the JWKS PublishAhead before it signs, so verifiers that cache the JWKS
// know it by then; a retired key stays in the JWKS until everything it
// signed has expired (MaxSignedLifetime after it stopped signing). An
// instance keeps the keys in memory for a short while (Refresh), but picks
// the signing key by the stored dates alone: the newest key whose SignFrom
// has passed. The one exception is the first key of an empty database: it
// signs at once, since nothing was published before it that a verifier
// could have cached.
package signing

import (
	"context"
	"crypto"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"slices"
	"sync"
	"time"

	"github.com/go-jose/go-jose/v4"

	"github.com/latchkey/latchkey/internal/seal"
	"github.com/latchkey/latchkey/internal/store"
)

// Signing algorithms (RFC 7518 section 3.1; EdDSA: RFC 8037).
const (
	RS256 = "RS256" // RSA 2048, PKCS #1 v1.5 with SHA-256: what every OpenID Connect client supports
	ES256 = "ES256" // ECDSA P-256 with SHA-256
	EdDSA = "EdDSA" // Ed25519
)

// Algorithms are the algorithms latchkey signs with.
var Algorithms = []string{RS256, ES256, EdDSA}

// SealPurpose is the seal purpose of the private keys (seal.New).
const SealPurpose = "signing-keys"

// Errors of signing and verifying.
var (
	ErrNoKey       = errors.New("signing: no signing key (EnsureKeys has not run)")
	ErrNoExpiry    = errors.New("signing: the claims have no exp: a token must expire before its key leaves the JWKS")
	ErrLifetime    = errors.New("signing: the token outlives max_signed_lifetime, after which its key may leave the JWKS")
	ErrInvalid     = errors.New("signing: invalid token")
	ErrUnknownAlgo = errors.New("signing: unknown signing algorithm")
)

// Config is the rotation policy (config's oidc block).
type Config struct {
	Algorithm string // RS256 | ES256 | EdDSA: new keys get it
	// RotationPeriod is how long a key signs before its successor does.
	RotationPeriod time.Duration
	// PublishAhead is how long a new key is in the JWKS before it signs.
	PublishAhead time.Duration
	// MaxSignedLifetime bounds the lifetime of everything signed (ID
	// tokens, JWT access tokens): a retired key leaves the JWKS that long
	// after it stopped signing, and Sign refuses a longer-lived token.
	MaxSignedLifetime time.Duration
	// Refresh is how long an instance uses the keys it read before it reads
	// them again (default: 30 s, at most PublishAhead/4; 5 s with no
	// publish-ahead). It must stay well below PublishAhead, so that every
	// instance knows a new key before it signs. It is also how long a
	// running instance may still use a key retired beside it (Retire).
	Refresh time.Duration
}

// zeroAheadRefresh is Refresh when new keys sign at once (PublishAhead 0):
// for that long another instance may still sign with the key a rotation
// replaced (it stays published), and its JWKS may lack the new key.
const zeroAheadRefresh = 5 * time.Second

func (c *Config) check() error {
	if !slices.Contains(Algorithms, c.Algorithm) {
		return fmt.Errorf("%w %q (want RS256, ES256 or EdDSA)", ErrUnknownAlgo, c.Algorithm)
	}
	if c.RotationPeriod <= 0 || c.PublishAhead < 0 || c.MaxSignedLifetime <= 0 {
		return errors.New("signing: rotation period and max signed lifetime must be positive, the publish-ahead time not negative")
	}
	if c.PublishAhead >= c.RotationPeriod {
		return errors.New("signing: the publish-ahead time must be shorter than the rotation period")
	}
	if c.Refresh <= 0 && c.PublishAhead == 0 {
		c.Refresh = zeroAheadRefresh
	}
	if c.Refresh <= 0 {
		c.Refresh = min(30*time.Second, c.PublishAhead/4)
	}
	if c.PublishAhead > 0 && c.Refresh > c.PublishAhead/2 {
		return errors.New("signing: refresh must be at most half the publish-ahead time")
	}
	return nil
}

// Keys signs with the current key and publishes every key in use. It is
// safe for concurrent use, and any number of instances may share a store.
type Keys struct {
	store  store.SigningKeys
	sealer *seal.Sealer
	cfg    Config
	now    func() time.Time
	// Log receives rotations (kid and dates, never key material); nil: none.
	Log *slog.Logger

	mu     sync.Mutex // guards snap and opened; held while reading the store
	snap   *snapshot
	opened map[string]*material // kid -> opened key, kept across reads of the store
}

// snapshot is the store's keys as one instance last read them.
type snapshot struct {
	loaded time.Time
	keys   []*key // oldest generation first
}

// key is one stored key as last read: its dates, and its opened material.
type key struct {
	store.SigningKey // SealedPrivate dropped once opened
	*material
}

// material is what opening a key gives; it never changes, so every read
// of the store shares it.
type material struct {
	kid, alg string
	public   jose.JSONWebKey
	private  crypto.Signer
	signers  sync.Map // typ -> jose.Signer
}

// New returns the Keys of st. sealer must have been made for SealPurpose;
// now is the clock (time.Now when nil). New reads nothing: call EnsureKeys.
func New(st store.SigningKeys, sealer *seal.Sealer, cfg Config, now func() time.Time) (*Keys, error) {
	if err := cfg.check(); err != nil {
		return nil, err
	}
	if now == nil {
		now = time.Now
	}
	return &Keys{store: st, sealer: sealer, cfg: cfg, now: now, opened: map[string]*material{}}, nil
}

// MaxSignedLifetime is the longest lifetime Sign accepts.
func (k *Keys) MaxSignedLifetime() time.Duration { return k.cfg.MaxSignedLifetime }

// CacheMaxAge is how long verifiers may cache the JWKS: short beside
// PublishAhead, so a cached JWKS knows every key that signs.
func (k *Keys) CacheMaxAge() time.Duration { return min(time.Hour, k.cfg.PublishAhead/4) }

// EnsureKeys reads the keys, creates the first one on an empty store and
// rotates when the newest key is due (RotationPeriod after it began to
// sign, minus PublishAhead; or at once when it is of another algorithm
// than the configured one and already signs). Servers run it at start and
// then every minute or so; concurrent calls of any number of instances add
// one key between them.
func (k *Keys) EnsureKeys(ctx context.Context) error {
	k.mu.Lock()
	defer k.mu.Unlock()
	snap, err := k.loadLocked(ctx)
	if err != nil {
		return err
	}
	now := k.now()
	if len(snap.keys) > 0 {
		newest := snap.keys[len(snap.keys)-1]
		due := !now.Before(newest.SignFrom.Add(k.cfg.RotationPeriod - k.cfg.PublishAhead))
		algChanged := newest.Algorithm != k.cfg.Algorithm && !now.Before(newest.SignFrom)
		if !due && !algChanged {
			return nil
		}
	}
	_, err = k.addLocked(ctx, snap, now, k.cfg.PublishAhead)
	return err
}

// Rotate adds a key now, whatever the schedule: it is published at once
// and signs PublishAhead later (at once only as the first key of an empty
// store). A rotation that meets a concurrent one (another instance, or
// the schedule: a key added since Rotate was called) adds nothing more:
// that key is the new one. It returns the new key.
func (k *Keys) Rotate(ctx context.Context) (Info, error) {
	return k.rotate(ctx, k.cfg.PublishAhead)
}

// RotateNow is the emergency rotation (latchkey keys rotate --now): the
// new key is published and signs at once, without the publish-ahead time,
// so a verifier with a cached JWKS fails on it until it fetches the JWKS
// again. The key it replaces stops signing now and stays published until
// what it signed has expired, unless it is retired (Retire).
func (k *Keys) RotateNow(ctx context.Context) (Info, error) {
	return k.rotate(ctx, 0)
}

func (k *Keys) rotate(ctx context.Context, ahead time.Duration) (Info, error) {
	start := k.now().Truncate(time.Microsecond)
	k.mu.Lock()
	defer k.mu.Unlock()
	snap, err := k.loadLocked(ctx)
	if err != nil {
		return Info{}, err
	}
	// A key added meanwhile is this rotation's, unless it signs later than
	// this one must (a scheduled key met by RotateNow).
	now := k.now()
	if n := len(snap.keys); n > 0 && !snap.keys[n-1].PublishAt.Before(start) &&
		!snap.keys[n-1].SignFrom.After(now.Add(ahead)) {
		return snap.keys[n-1].info(now, snap.active(now)), nil
	}
	return k.addLocked(ctx, snap, now, ahead)
}

// ErrSigningKeyInUse refuses to retire the key that signs (or one newer
// than it): nothing would sign then. Rotate with RotateNow first.
var ErrSigningKeyInUse = errors.New("signing: a key that signs now or later cannot be retired")

// Retire ends the key kid at once: it leaves the JWKS, no longer verifies
// and never signs (latchkey keys retire, for a compromised key). Only a
// key older than the one that signs now may be retired (ErrSigningKeyInUse
// otherwise); an unknown kid, or one already out of the JWKS, is
// store.ErrNotFound. This instance forgets the key at once; other running
// instances within their Refresh, and verifiers when their cached JWKS
// expires (CacheMaxAge).
func (k *Keys) Retire(ctx context.Context, kid string) error {
	k.mu.Lock()
	defer k.mu.Unlock()
	err := k.store.RetireSigningKey(ctx, kid, k.now().Truncate(time.Microsecond))
	if errors.Is(err, store.ErrConflict) {
		return fmt.Errorf("%w: %s", ErrSigningKeyInUse, kid)
	}
	if err != nil {
		return err
	}
	if _, err := k.loadLocked(ctx); err != nil {
		return err
	}
	if k.Log != nil {
		k.Log.Warn("signing key retired", "kid", kid)
	}
	return nil
}

// addLocked adds the successor of snap's newest key (or the first key) and
// reads the keys again.
func (k *Keys) addLocked(ctx context.Context, snap *snapshot, now time.Time, ahead time.Duration) (Info, error) {
	now = now.Truncate(time.Microsecond) // what the store keeps
	gen, signFrom := int64(1), now
	if len(snap.keys) > 0 {
		gen = snap.keys[len(snap.keys)-1].Generation + 1
		signFrom = now.Add(ahead)
	}
	priv, err := generate(k.cfg.Algorithm)
	if err != nil {
		return Info{}, err
	}
	sk, err := k.seal(priv, k.cfg.Algorithm)
	if err != nil {
		return Info{}, err
	}
	sk.Generation, sk.CreatedAt, sk.PublishAt, sk.SignFrom = gen, now, now, signFrom
	err = k.store.AddSigningKey(ctx, sk, k.cfg.MaxSignedLifetime)
	lost := errors.Is(err, store.ErrConflict)
	if err != nil && !lost {
		return Info{}, fmt.Errorf("signing: add key: %w", err)
	}
	snap, rerr := k.loadLocked(ctx)
	if rerr != nil {
		return Info{}, rerr
	}
	newest := snap.keys[len(snap.keys)-1]
	if !lost && k.Log != nil {
		k.Log.Info("signing key added", "kid", newest.KID, "alg", newest.Algorithm, "generation", newest.Generation,
			"signs_from", newest.SignFrom)
	}
	return newest.info(now, snap.active(now)), nil
}

// Sign signs payload (JSON claims) with the current key as a compact JWS
// whose header names the key (kid) and carries typ when it is not "" ("JWT"
// for ID tokens, "at+jwt" for access tokens, RFC 9068). The claims must
// hold an exp at most MaxSignedLifetime ahead.
func (k *Keys) Sign(ctx context.Context, payload []byte, typ string) (string, error) {
	s, err := k.Signer(ctx, typ)
	if err != nil {
		return "", err
	}
	jws, err := s.Sign(payload)
	if err != nil {
		return "", err
	}
	return jws.CompactSerialize()
}

// SignClaims signs the claims build makes for the algorithm of the current
// key: one key is picked for both, so a claim that depends on the
// algorithm (the at_hash of an ID token) always matches the signature,
// even while a key of another algorithm takes over.
func (k *Keys) SignClaims(ctx context.Context, typ string, build func(alg string) ([]byte, error)) (string, error) {
	snap, err := k.current(ctx)
	if err != nil {
		return "", err
	}
	active := snap.active(k.now())
	if active == nil {
		return "", ErrNoKey
	}
	payload, err := build(active.alg)
	if err != nil {
		return "", err
	}
	s, err := active.signer(typ)
	if err != nil {
		return "", err
	}
	jws, err := (&checkedSigner{Signer: s, keys: k}).Sign(payload)
	if err != nil {
		return "", err
	}
	return jws.CompactSerialize()
}

// PublishedAlgorithms are the algorithms of the keys in the JWKS, the
// signing key's first (discovery's id_token_signing_alg_values_supported).
func (k *Keys) PublishedAlgorithms(ctx context.Context) ([]string, error) {
	set, err := k.JWKS(ctx)
	if err != nil {
		return nil, err
	}
	var algs []string
	for _, j := range set.Keys {
		if !slices.Contains(algs, j.Algorithm) {
			algs = append(algs, j.Algorithm)
		}
	}
	if len(algs) == 0 {
		algs = append(algs, k.cfg.Algorithm)
	}
	return algs, nil
}

// Signer returns a jose.Signer of the current key, for go-jose's jwt
// builders (jwt.Signed(s).Claims(...).Serialize()). It is bound to the key
// current now: get one per token, not one per process. It refuses claims
// as Sign does.
func (k *Keys) Signer(ctx context.Context, typ string) (jose.Signer, error) {
	snap, err := k.current(ctx)
	if err != nil {
		return nil, err
	}
	active := snap.active(k.now())
	if active == nil {
		return nil, ErrNoKey
	}
	s, err := active.signer(typ)
	if err != nil {
		return nil, err
	}
	return &checkedSigner{Signer: s, keys: k}, nil
}

// checkedSigner refuses claims that would outlive their key's publication.
type checkedSigner struct {
	jose.Signer
	keys *Keys
}

func (s *checkedSigner) Sign(payload []byte) (*jose.JSONWebSignature, error) {
	var claims struct {
		Exp *json.Number `json:"exp"`
	}
	if err := json.Unmarshal(payload, &claims); err != nil {
		return nil, fmt.Errorf("signing: the payload is not a JSON object of claims: %w", err)
	}
	if claims.Exp == nil {
		return nil, ErrNoExpiry
	}
	exp, err := claims.Exp.Float64()
	if err != nil || math.IsNaN(exp) {
		return nil, fmt.Errorf("signing: exp %q is not a number", claims.Exp.String())
	}
	limit := s.keys.now().Add(s.keys.cfg.MaxSignedLifetime)
	if exp > float64(limit.Unix())+1 { // +1: exp is often rounded up to the second
		return nil, ErrLifetime
	}
	return s.Signer.Sign(payload)
}

func (m *material) signer(typ string) (jose.Signer, error) {
	if s, ok := m.signers.Load(typ); ok {
		return s.(jose.Signer), nil
	}
	opts := &jose.SignerOptions{}
	if typ != "" {
		opts = opts.WithType(jose.ContentType(typ))
	}
	s, err := jose.NewSigner(jose.SigningKey{Algorithm: jose.SignatureAlgorithm(m.alg),
		Key: jose.JSONWebKey{Key: m.private, KeyID: m.kid, Algorithm: m.alg}}, opts)
	if err != nil {
		return nil, fmt.Errorf("signing: signer of %s: %w", m.kid, err)
	}
	actual, _ := m.signers.LoadOrStore(typ, s)
	return actual.(jose.Signer), nil
}

// JWKS is the public keys of every published key: the signing key first,
// then the others newest first.
func (k *Keys) JWKS(ctx context.Context) (jose.JSONWebKeySet, error) {
	snap, err := k.current(ctx)
	if err != nil {
		return jose.JSONWebKeySet{}, err
	}
	now := k.now()
	active := snap.active(now)
	set := jose.JSONWebKeySet{Keys: []jose.JSONWebKey{}}
	if active != nil {
		set.Keys = append(set.Keys, active.public)
	}
	for _, ky := range slices.Backward(snap.keys) {
		if ky != active && ky.published(now) {
			set.Keys = append(set.Keys, ky.public)
		}
	}
	return set, nil
}

// Verify checks token (a compact JWS) against the published keys and
// returns its payload. The header must name a published key (kid) and its
// algorithm, and, when typ is not "", carry that typ. Verify checks no
// claims: the caller checks exp, iss, aud and the rest.
func (k *Keys) Verify(ctx context.Context, token, typ string) ([]byte, error) {
	jws, err := jose.ParseSignedCompact(token, []jose.SignatureAlgorithm{jose.RS256, jose.ES256, jose.EdDSA})
	if err != nil || len(jws.Signatures) != 1 {
		return nil, ErrInvalid
	}
	h := jws.Signatures[0].Protected
	if typ != "" {
		if got, _ := h.ExtraHeaders[jose.HeaderType].(string); got != typ {
			return nil, fmt.Errorf("%w: typ %q, want %q", ErrInvalid, got, typ)
		}
	}
	snap, err := k.current(ctx)
	if err != nil {
		return nil, err
	}
	now := k.now()
	for _, ky := range snap.keys {
		if ky.KID == h.KeyID && ky.published(now) && ky.Algorithm == h.Algorithm {
			payload, err := jws.Verify(ky.public)
			if err != nil {
				return nil, ErrInvalid
			}
			return payload, nil
		}
	}
	return nil, fmt.Errorf("%w: no published key %q of algorithm %s", ErrInvalid, h.KeyID, h.Algorithm)
}

// current returns the keys read at most Refresh ago, reading them again
// when older. A store that cannot be read fails the call: an instance never
// signs from keys older than Refresh.
func (k *Keys) current(ctx context.Context) (*snapshot, error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if s := k.snap; s != nil {
		age := k.now().Sub(s.loaded)
		if age >= 0 && age < k.cfg.Refresh {
			return s, nil
		}
	}
	return k.loadLocked(ctx)
}

// loadLocked reads every stored key, opening the keys it has not opened
// before.
func (k *Keys) loadLocked(ctx context.Context) (*snapshot, error) {
	stored, err := k.store.ListSigningKeys(ctx)
	if err != nil {
		return nil, fmt.Errorf("signing: read keys: %w", err)
	}
	snap := &snapshot{loaded: k.now(), keys: make([]*key, 0, len(stored))}
	opened := make(map[string]*material, len(stored))
	for _, sk := range stored {
		m := k.opened[sk.KID]
		if m == nil {
			if m, err = k.open(sk); err != nil {
				return nil, err
			}
		}
		opened[sk.KID] = m
		sk.SealedPrivate = nil
		snap.keys = append(snap.keys, &key{SigningKey: sk, material: m})
	}
	k.opened, k.snap = opened, snap
	return snap, nil
}

// active is the signing key at now: the newest key whose SignFrom has
// passed, unless it has expired.
func (s *snapshot) active(now time.Time) *key {
	for _, ky := range slices.Backward(s.keys) {
		if !now.Before(ky.SignFrom) {
			if ky.ExpireAt.IsZero() || now.Before(ky.ExpireAt) {
				return ky
			}
			return nil
		}
	}
	return nil
}

// published: in the JWKS at now.
func (ky *key) published(now time.Time) bool {
	return !now.Before(ky.PublishAt) && (ky.ExpireAt.IsZero() || now.Before(ky.ExpireAt))
}
