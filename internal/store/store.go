// Package store defines the storage contract of latchkey: the domain's value
// types, sentinel errors, and the Store interface that each backend
// (sqlite, postgres) implements and that storetest checks.
package store

import (
	"context"
	"errors"
	"time"
)

// Sentinel errors. Backends translate driver errors into these so that callers
// never inspect driver-specific codes.
var (
	// ErrNotFound: the requested record does not exist.
	ErrNotFound = errors.New("store: not found")
	// ErrConflict: a unique key is already taken, or a single-use value was already used.
	ErrConflict = errors.New("store: conflict")
	// ErrServerKeyMismatch: the database records another server key's
	// fingerprint than the one claimed.
	ErrServerKeyMismatch = errors.New("store: the database belongs to a different server key")
)

// ServerKeys records which server key a database belongs to. Everything
// keyed or sealed with the server key (client secret and token hashes,
// sealed TOTP secrets and key pairs) is useless under another key, so an
// instance with another key must not serve from the database, nor write
// hashes of its own into it.
type ServerKeys interface {
	// ClaimServerKey records fingerprint (a one-way fingerprint of the
	// server key, never the key) when none is recorded, and returns nil
	// when the recorded one equals it. It returns ErrServerKeyMismatch when
	// another fingerprint is recorded. Of concurrent first claims with
	// different fingerprints exactly one is recorded; the others get
	// ErrServerKeyMismatch.
	ClaimServerKey(ctx context.Context, fingerprint []byte) error
}

// Client is an OAuth client (RFC 6749 section 2). Secrets are never stored in
// the clear: SecretHash is a keyed hash of a machine-generated secret, and
// SecretPHC holds an operator-supplied PHC string (argon2id, bcrypt, pbkdf2).
type Client struct {
	ID                      string
	SecretHash              []byte // keyed HMAC-SHA-256 of the secret; nil when none
	SecretPHC               string // PHC-format hash; "" when none
	Name                    string
	TokenEndpointAuthMethod string // client_secret_basic | client_secret_post | private_key_jwt | none
	JWKS                    []byte // JSON Web Key Set (public keys) for private_key_jwt; nil when none
	JWKSURI                 string
	RedirectURIs            []string
	GrantTypes              []string
	Scopes                  []string
	ConsentRequired         bool
	AllowPlainPKCE          bool
	AccessTokenLifetime     time.Duration
	RefreshTokenLifetime    time.Duration
	AppIdentifier           string
	AppPlatform             string
	AppVersion              string
	// IntrospectAnyToken lets a confidential client introspect tokens issued
	// to other clients (a resource server); without it a client sees only
	// its own tokens as active.
	IntrospectAnyToken bool
	// DeviceApprovalClients are the other clients whose device flows this
	// client's access tokens may approve in-app (its own always).
	DeviceApprovalClients []string
	// PostLogoutRedirectURIs are where RP-initiated logout may send the
	// browser back to (exact match, OpenID Connect RP-Initiated Logout 1.0).
	PostLogoutRedirectURIs []string
	// AccessTokenFormat is "jwt" for RFC 9068 access tokens; "" or
	// "opaque" for latchkey's opaque ones.
	AccessTokenFormat string
	CreatedAt         time.Time // set by the backend on insert
	UpdatedAt         time.Time // set by the backend on every write
}

// Clients stores OAuth clients.
type Clients interface {
	// UpsertClient creates the client or replaces every field of an existing
	// one with the same ID (CreatedAt is kept).
	UpsertClient(ctx context.Context, c Client) error
	// GetClient returns ErrNotFound for an unknown ID.
	GetClient(ctx context.Context, id string) (Client, error)
	// ListClients returns all clients ordered by ID.
	ListClients(ctx context.Context) ([]Client, error)
	// DeleteClient returns ErrNotFound for an unknown ID.
	DeleteClient(ctx context.Context, id string) error
}

// AssertionIDs remembers the jti of client assertions (RFC 7523 section 3,
// item 7) so that a replayed assertion is refused by every instance.
type AssertionIDs interface {
	// UseAssertionID records (clientID, jti) until expiresAt. It returns
	// ErrConflict when the pair is already recorded and has not expired at now.
	// An expired record with the same key is replaced.
	UseAssertionID(ctx context.Context, clientID, jti string, expiresAt, now time.Time) error
}

// Store is every aggregate of latchkey joined in one handle.
type Store interface {
	Clients
	AssertionIDs
	Persons
	Tokens
	Sessions
	Consents
	Throttle
	Events
	Scopes
	DeviceCodes
	ConfigUnits
	ServerKeys
	SigningKeys
	Outbox
	PersonTokens
	Federation

	// Tx runs fn inside one transaction: fn's Store sees and writes only
	// through that transaction. fn's error (or a panic) rolls back; nil commits.
	// Nested Tx calls on the transaction's Store run inside the same transaction.
	Tx(ctx context.Context, fn func(Store) error) error
	// BulkTx is Tx for a large transaction (a bulk import): a backend that
	// shares commits between concurrent transactions (SQLite's group
	// commit) runs it in a transaction of its own, where its writes need no
	// savepoint. Inside a transaction it joins that transaction.
	BulkTx(ctx context.Context, fn func(Store) error) error
	// Savepoint runs fn so that an error of fn undoes fn's writes only and
	// the enclosing transaction goes on (a bulk import keeps the persons that
	// succeeded). Outside a transaction it is Tx.
	Savepoint(ctx context.Context, fn func(Store) error) error
	// RevokePerson ends everything a person holds, in one transaction:
	// every grant whose subject is personID and every token of those
	// grants is revoked at now, and the person's login sessions are
	// deleted. Once it has returned, no instance answers any of those
	// tokens as active. Revoking again is not an error. It does not stop
	// new issuance: issuance checks the person's status under LockPerson,
	// and the caller changes the status in the same transaction.
	RevokePerson(ctx context.Context, personID string, now time.Time) (PersonRevocation, error)
	// DeleteExpired removes what expired before now (tokens past their
	// grant's end, codes, pending requests, sessions, assertion ids) and
	// reports how many records it removed. Grants and tokens are kept until
	// their expiry so that revocation and replay checks still find them.
	// Signing keys go once their ExpireAt has passed.
	DeleteExpired(ctx context.Context, now time.Time) (int64, error)
	// EventSink is where an event recorded through this handle goes: a
	// transaction's handle answers the transaction (the event commits with
	// the action it records); outside a transaction the backend answers
	// its cheapest durable path (a group commit, SQLite's event log). An
	// event is durable once AppendEvents on the sink returned. Callers
	// never choose between paths: batching and logs are the backend's.
	EventSink() EventAppender
	// Ping checks that the backend is reachable (readiness).
	Ping(ctx context.Context) error
	// Backend names the backend: "sqlite" or "postgres".
	Backend() string
	// Close releases the backend's resources.
	Close() error
}
