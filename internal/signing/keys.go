package signing

import (
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"time"

	"github.com/go-jose/go-jose/v4"

	"github.com/latchkey/latchkey/internal/store"
)

// rsaBits is the RSA key size: 2048 is what RS256 verifiers expect and
// NIST deems sound until 2030; rotation keeps each key's life short.
const rsaBits = 2048

// generate makes a private key for alg.
func generate(alg string) (crypto.Signer, error) {
	switch alg {
	case RS256:
		return rsa.GenerateKey(rand.Reader, rsaBits)
	case ES256:
		return ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	case EdDSA:
		_, priv, err := ed25519.GenerateKey(rand.Reader)
		return priv, err
	}
	return nil, fmt.Errorf("%w %q", ErrUnknownAlgo, alg)
}

// thumbprint is the key's RFC 7638 SHA-256 thumbprint, base64url: its kid.
func thumbprint(pub crypto.PublicKey) (string, error) {
	jwk := jose.JSONWebKey{Key: pub}
	tp, err := jwk.Thumbprint(crypto.SHA256)
	if err != nil {
		return "", fmt.Errorf("signing: thumbprint: %w", err)
	}
	return base64.RawURLEncoding.EncodeToString(tp), nil
}

// seal makes the stored form of priv: the kid, the public JWK and the
// private key as PKCS #8, sealed with the kid as associated data (a sealed
// key copied to another row does not open).
func (k *Keys) seal(priv crypto.Signer, alg string) (store.SigningKey, error) {
	kid, err := thumbprint(priv.Public())
	if err != nil {
		return store.SigningKey{}, err
	}
	pub, err := json.Marshal(jose.JSONWebKey{Key: priv.Public(), KeyID: kid, Algorithm: alg, Use: "sig"})
	if err != nil {
		return store.SigningKey{}, fmt.Errorf("signing: public JWK: %w", err)
	}
	der, err := x509.MarshalPKCS8PrivateKey(priv)
	if err != nil {
		return store.SigningKey{}, fmt.Errorf("signing: encode private key: %w", err)
	}
	return store.SigningKey{KID: kid, Algorithm: alg, SealedPrivate: k.sealer.Seal(der, []byte(kid)), PublicJWK: pub}, nil
}

// open unseals a stored key and checks that its private key, its public
// JWK and its kid belong together.
func (k *Keys) open(sk store.SigningKey) (*material, error) {
	der, err := k.sealer.Open(sk.SealedPrivate, []byte(sk.KID))
	if err != nil {
		return nil, fmt.Errorf("signing: key %s: %w", sk.KID, err)
	}
	parsed, err := x509.ParsePKCS8PrivateKey(der)
	if err != nil {
		return nil, fmt.Errorf("signing: key %s: %w", sk.KID, err)
	}
	priv, ok := parsed.(crypto.Signer)
	if !ok || !algFits(sk.Algorithm, priv) {
		return nil, fmt.Errorf("signing: key %s: a %T is not a key for %s", sk.KID, parsed, sk.Algorithm)
	}
	var pub jose.JSONWebKey
	if err := json.Unmarshal(sk.PublicJWK, &pub); err != nil {
		return nil, fmt.Errorf("signing: key %s: public JWK: %w", sk.KID, err)
	}
	fromPriv, err := thumbprint(priv.Public())
	if err != nil {
		return nil, err
	}
	fromPub, err := thumbprint(pub.Key)
	if err != nil {
		return nil, err
	}
	if fromPriv != sk.KID || fromPub != sk.KID || pub.KeyID != sk.KID || pub.Algorithm != sk.Algorithm || !pub.IsPublic() {
		return nil, fmt.Errorf("signing: key %s: the stored public key, private key and kid do not match", sk.KID)
	}
	return &material{kid: sk.KID, alg: sk.Algorithm, public: pub, private: priv}, nil
}

func algFits(alg string, priv crypto.Signer) bool {
	switch p := priv.(type) {
	case *rsa.PrivateKey:
		return alg == RS256 && p.N.BitLen() >= rsaBits
	case *ecdsa.PrivateKey:
		return alg == ES256 && p.Curve == elliptic.P256()
	case ed25519.PrivateKey:
		return alg == EdDSA
	}
	return false
}

// Key states, as List reports them.
const (
	StatePublished = "published" // in the JWKS, signs from SignFrom
	StateSigning   = "signing"   // the key Sign uses
	StateRetired   = "retired"   // no longer signs; in the JWKS until ExpireAt
	StateExpired   = "expired"   // out of the JWKS; the next maintenance sweep deletes it
)

// Info is what an operator sees of a key: no private material.
type Info struct {
	KID        string
	Algorithm  string
	Generation int64
	State      string
	CreatedAt  time.Time
	PublishAt  time.Time
	SignFrom   time.Time
	RetireAt   time.Time // zero while no successor is published
	ExpireAt   time.Time // zero while no successor is published
}

func (ky *key) info(now time.Time, active *key) Info {
	state := StateRetired
	switch {
	case ky == active:
		state = StateSigning
	case now.Before(ky.SignFrom):
		state = StatePublished
	case !ky.ExpireAt.IsZero() && !now.Before(ky.ExpireAt):
		state = StateExpired
	}
	return Info{KID: ky.KID, Algorithm: ky.Algorithm, Generation: ky.Generation, State: state,
		CreatedAt: ky.CreatedAt, PublishAt: ky.PublishAt, SignFrom: ky.SignFrom, RetireAt: ky.RetireAt, ExpireAt: ky.ExpireAt}
}

// List reads the stored keys (not the cache) and reports each, oldest first.
func (k *Keys) List(ctx context.Context) ([]Info, error) {
	return ListKeys(ctx, k.store, k.now())
}

// ListKeys reports every stored key of st at now, oldest first. It opens
// no private key, so it needs no server key (latchkey keys list).
func ListKeys(ctx context.Context, st store.SigningKeys, now time.Time) ([]Info, error) {
	stored, err := st.ListSigningKeys(ctx)
	if err != nil {
		return nil, fmt.Errorf("signing: read keys: %w", err)
	}
	snap := &snapshot{keys: make([]*key, len(stored))}
	for i, sk := range stored {
		sk.SealedPrivate = nil
		snap.keys[i] = &key{SigningKey: sk}
	}
	active := snap.active(now)
	out := make([]Info, len(snap.keys))
	for i, ky := range snap.keys {
		out[i] = ky.info(now, active)
	}
	return out, nil
}

// KID returns the kid of the current signing key ("" when there is none).
func (k *Keys) KID(ctx context.Context) (string, error) {
	snap, err := k.current(ctx)
	if err != nil {
		return "", err
	}
	if a := snap.active(k.now()); a != nil {
		return a.KID, nil
	}
	return "", nil
}
