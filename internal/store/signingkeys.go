package store

import (
	"context"
	"time"
)

// SigningKey is a key that signs ID tokens and JWT access tokens
// (internal/signing). Every instance signs with the keys of the store.
type SigningKey struct {
	KID string // the JWK thumbprint (RFC 7638)
	// Generation numbers the rotations: 1 for the first key, one more for
	// each later one. Unique: it decides which of two racing rotations wins.
	Generation    int64
	Algorithm     string // RS256 | ES256 | EdDSA
	SealedPrivate []byte // PKCS #8, sealed with the server key; never leaves the signing package opened
	PublicJWK     []byte // the public JWK, JSON
	CreatedAt     time.Time
	PublishAt     time.Time // in the JWKS from here on
	SignFrom      time.Time // signs from here on (until a newer key signs)
	RetireAt      time.Time // stops signing: its successor's SignFrom; zero while it is the newest key
	ExpireAt      time.Time // leaves the JWKS: all it signed has expired; zero while it is the newest key
}

// SigningKeys stores the signing keys.
type SigningKeys interface {
	// AddSigningKey stores k as the newest key. When a key of k.Generation
	// or a later one is stored (another instance rotated first), it stores
	// nothing and returns ErrConflict; of concurrent adds of one generation,
	// from any number of instances, exactly one succeeds. In the same
	// transaction every older key that is not retired yet is retired at
	// k.SignFrom and expires signedLifetime after that.
	AddSigningKey(ctx context.Context, k SigningKey, signedLifetime time.Duration) error
	// ListSigningKeys returns every stored key, oldest generation first.
	// DeleteExpired removes the keys whose ExpireAt has passed.
	ListSigningKeys(ctx context.Context) ([]SigningKey, error)
	// RetireSigningKey ends the key kid at at: it stops signing (RetireAt
	// at the latest at) and leaves the JWKS (ExpireAt at). It refuses with
	// ErrConflict, changing nothing, unless a newer key signs by at and is
	// not retired: so a key that signs now, or one published to sign
	// later, is never retired, and a key always signs (the newest key that
	// signs has no such successor, so no mix of concurrent calls ends it).
	// An unknown kid, or one whose ExpireAt has passed, is ErrNotFound.
	RetireSigningKey(ctx context.Context, kid string, at time.Time) error
}
