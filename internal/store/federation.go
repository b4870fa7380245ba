package store

import (
	"context"
	"time"
)

// Federation state kinds.
const (
	// FederationLogin: a browser was sent to an upstream identity
	// provider to sign in for a pending authorization request.
	FederationLogin = "login"
	// FederationLogout: a browser was sent to an upstream's end-session
	// endpoint and comes back to continue a logout.
	FederationLogout = "logout"
)

// FederationState is the single-use, expiring state of one round trip to
// an upstream identity provider (the state parameter of RFC 6749 section
// 10.12), stored under the keyed hash of the value sent upstream. Browser
// is the keyed hash of the binding cookie of the browser that left, so
// that a state carried to another browser is refused.
type FederationState struct {
	Hash      []byte
	Kind      string // FederationLogin | FederationLogout
	RequestID string // login: the pending authorization request
	MethodID  string // the login method (identity provider)
	Browser   []byte
	Target    string // logout: where the browser goes afterwards ("" for the signed-out page)
	CreatedAt time.Time
	ExpiresAt time.Time
}

// Federation stores the round trips to upstream identity providers and
// finds persons by their linked identities.
type Federation interface {
	// CreateFederationState stores s; ErrConflict for a taken hash.
	CreateFederationState(ctx context.Context, s FederationState) error
	// TakeFederationState removes and returns the state of hash when it
	// has not expired at now. Of concurrent takes exactly one succeeds;
	// the others, and a take of an unknown or expired state, get
	// ErrNotFound.
	TakeFederationState(ctx context.Context, hash []byte, now time.Time) (FederationState, error)
	// FindIdentity returns the identity (partition, idpID, externalID)
	// links to a person; ErrNotFound when none.
	FindIdentity(ctx context.Context, partition, idpID, externalID string) (ExternalIdentity, error)
	// SetIdentityAttributes replaces the attributes of the identity
	// (partition, idpID, externalID); ErrNotFound when none is linked.
	SetIdentityAttributes(ctx context.Context, partition, idpID, externalID string, attrs map[string]string) error
}
