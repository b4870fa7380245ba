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
	// ErrRunAgain: a request decided on generations it did not read
	// (client.Optimistic) and they moved before its write; nothing of the
	// write was made, and the request runs again (client.Optimistically).
	ErrRunAgain = errors.New("store: decided on generations that moved")
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
	// SeedFingerprint returns what SetSeedFingerprint recorded for a person
	// the configuration file seeds; ErrNotFound when none. ErasePerson
	// removes it.
	SeedFingerprint(ctx context.Context, personID string) ([]byte, error)
	SetSeedFingerprint(ctx context.Context, personID string, fingerprint []byte) error
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
	// AllowInsecureHTTPRedirectURIs lets cleartext http redirect URIs on
	// any host through (the config file's development switch). It is never
	// stored: only the config file's clients, which live in memory
	// (client.Static), can have it, so no API can set it.
	AllowInsecureHTTPRedirectURIs bool
	// RegistrationHash is the keyed hash of the registration_access_token
	// of a dynamically registered client (RFC 7591); nil for the others.
	RegistrationHash []byte
	CreatedAt        time.Time // set by the backend on insert
	UpdatedAt        time.Time // set by the backend on every write
	// Revision is 1 on insert and one more at every write (set by the
	// backend): the admin API's ETag.
	Revision int64
}

// ClientRevocation counts what DeleteClient ended.
type ClientRevocation struct {
	Grants int64 // grants revoked (grants revoked before are not counted)
	Tokens int64 // access and refresh tokens revoked
}

// Clients stores OAuth clients. A client read is at least as new as every
// client write that committed, on any instance, before the request that
// reads it began (the backends' caches follow a client generation that
// every write moves).
type Clients interface {
	// UpsertClient creates the client or replaces every field of an existing
	// one with the same ID (CreatedAt is kept).
	UpsertClient(ctx context.Context, c Client) error
	// CreateClient inserts c; ErrConflict when the ID is taken.
	CreateClient(ctx context.Context, c Client) error
	// UpdateClient reads the client, applies fn and writes what fn returns
	// (every field but ID and CreatedAt), in one transaction that holds the
	// row: concurrent updates of one client run one after the other, each
	// seeing the one before, so none is lost. An update does not wait for
	// issuance (CreateGrant of a StoredClient grant) nor block it. It returns the
	// client as written; ErrNotFound for an unknown ID; fn's error writes
	// nothing and is returned.
	UpdateClient(ctx context.Context, id string, fn func(Client) (Client, error)) (Client, error)
	// GetClient returns ErrNotFound for an unknown ID.
	GetClient(ctx context.Context, id string) (Client, error)
	// ListClients returns all clients ordered by ID.
	ListClients(ctx context.Context) ([]Client, error)
	// DeleteClient removes the client and, in the same transaction, revokes
	// at now every grant of it and every token of those grants, and
	// forgets the consents persons gave it (an ID may come back, and must
	// not inherit them). It waits for issuance that holds the client
	// (CreateGrant of a StoredClient grant) to commit, so what that issued is
	// revoked too. ErrNotFound for an unknown ID.
	DeleteClient(ctx context.Context, id string, now time.Time) (ClientRevocation, error)
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
	// ErasePerson erases a person (the right to erasure, GDPR article 17),
	// in one transaction: the person's row is locked first (as issuance
	// and status changes take it), everything the person holds is revoked
	// as RevokePerson does, the person is deleted as DeletePerson does,
	// with their mailed tokens and outbox mails, the flow data of their
	// grants and codes and the throttle counters named by their email
	// addresses; and every stored event about the person (user_id,
	// person_id or event_agent_user the person's ID or email address)
	// keeps its person ID but loses every other personal datum: client_ip,
	// user_agent, flow context, an email address as user_id or agent. Then
	// fn runs in the same transaction with the person as read (to record
	// the erasure's own event; a notification). Events that the backend
	// holds outside its tables (SQLite's event log) are scrubbed as well.
	// ErrNotFound for an unknown ID.
	ErasePerson(ctx context.Context, personID string, now time.Time, fn func(tx Store, p Person) error) (PersonRevocation, error)
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
