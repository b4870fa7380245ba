package store

import (
	"context"
	"fmt"
	"time"
)

// Person is a person account (the customer-identity side). Email is the
// primary email address; it is unique within the person's partition,
// compared case-insensitively.
type Person struct {
	ID           string // UUID
	Partition    string // persons partition; "" is the default partition
	Email        string
	PasswordHash string // PHC string; "" when the person has no password
	FirstName    string
	LastName     string
	Status       string            // CREATED | INVITED | ACTIVATED | BLOCKED | INACTIVE (identity.Status*)
	Custom       map[string]string // custom attributes (name -> value); nil for none
	Profile      PersonProfile
	TOTPSecret   []byte // sealed with the server key; nil when none
	CreatedAt    time.Time
	UpdatedAt    time.Time
}

// PersonProfile is the rest of a person's profile. The JSON names are the
// backends' storage encoding.
type PersonProfile struct {
	Gender          string          `json:"gender,omitempty"`
	DateOfBirth     string          `json:"date_of_birth,omitempty"` // YYYY-MM-DD
	Initials        string          `json:"initials,omitempty"`
	DisplayName     string          `json:"display_name,omitempty"`
	Emails          []ContactPoint  `json:"email_addresses,omitempty"`
	Phones          []ContactPoint  `json:"phone_numbers,omitempty"`
	Addresses       []PostalAddress `json:"addresses,omitempty"`
	PreferredLocale string          `json:"preferred_locale,omitempty"`
}

// ContactPoint is an email address or a phone number.
type ContactPoint struct {
	Value    string `json:"value"`
	Primary  bool   `json:"primary,omitempty"`
	Verified bool   `json:"verified,omitempty"`
}

// PostalAddress is a postal address.
type PostalAddress struct {
	HouseNumber         int    `json:"house_number,omitempty"`
	HouseNumberAddition string `json:"house_number_addition,omitempty"`
	StreetName          string `json:"street_name,omitempty"`
	City                string `json:"city,omitempty"`
	PostalCode          string `json:"postal_code,omitempty"`
	Region              string `json:"region,omitempty"`
	CountryCode         string `json:"country_code,omitempty"`
	CompanyName         string `json:"company_name,omitempty"`
	Attention           string `json:"attention,omitempty"`
	Primary             bool   `json:"primary,omitempty"`
}

// The statuses that take a person's access away for the operator's
// reasons. UpdatePerson ends a person's mailed links when it writes one.
const (
	PersonBlocked  = "BLOCKED"
	PersonInactive = "INACTIVE"
)

// ExternalIdentity links a person to an account at an identity provider;
// (Partition, IdPID, ExternalID) is unique.
type ExternalIdentity struct {
	Partition  string
	IdPID      string
	ExternalID string
	PersonID   string
	// Attributes are what the identity provider said that no mapping of
	// its login method took (name -> value; nil for none): kept apart from
	// the person, whose profile and custom attributes are all that is
	// released, so that an upstream can never stand in for either.
	Attributes map[string]string
	// Unproven: the sign-in that made the link (a new account from an
	// upstream that did not vouch for its email) proved nothing about the
	// account's address, so the address's proof ends it
	// (EndUnprovenIdentities): whoever registered someone else's address
	// upstream cannot keep the account its owner then takes back.
	Unproven  bool
	CreatedAt time.Time
}

// Persons stores person accounts.
type Persons interface {
	// CreatePerson returns ErrConflict when the ID, or the email
	// (case-insensitively) within the partition, is taken.
	CreatePerson(ctx context.Context, p Person) error
	GetPerson(ctx context.Context, id string) (Person, error)
	// GetPersonByEmail matches the email case-insensitively within partition.
	GetPersonByEmail(ctx context.Context, partition, email string) (Person, error)
	// UpdatePerson reads the person, applies fn and writes the result in one
	// transaction. ErrNotFound for an unknown ID; ErrConflict when the new
	// email is taken. ID, Partition and CreatedAt cannot change. A write
	// that leaves the person PersonBlocked or PersonInactive also deletes
	// every unused mailed token of the person (PersonTokens, every kind) in
	// the same transaction — whichever path blocks (admin API, CLI,
	// import, a future one), a link or code mailed before the block never
	// works after an unblock. Blocking again sweeps again.
	UpdatePerson(ctx context.Context, id string, fn func(Person) (Person, error)) error
	// LinkIdentity records e. Linking the same identity to the same person
	// again is a no-op (its attributes stay); ErrConflict when it is linked
	// to another person.
	LinkIdentity(ctx context.Context, e ExternalIdentity) error
	// ListIdentities returns the identities linked to a person.
	ListIdentities(ctx context.Context, personID string) ([]ExternalIdentity, error)
	// EndUnprovenIdentities removes the person's identities linked while
	// its email was unproven (ExternalIdentity.Unproven) and returns how
	// many; the others stay. Called where a mailed link proves the address.
	EndUnprovenIdentities(ctx context.Context, personID string) (int, error)
	// LockPerson reads a person for an issuance: inside a transaction the
	// row stays locked against writers until the transaction ends, so a
	// status change (UpdatePerson) or DeletePerson waits for the issuance,
	// and an issuance that waits sees the person as the writer left it.
	// ErrNotFound for an unknown ID.
	LockPerson(ctx context.Context, id string) (Person, error)
	// SharePerson is LockPerson for an issuance, which only reads the
	// person: writers still wait for it, but concurrent issuances for one
	// person do not wait for each other (PostgreSQL FOR SHARE). A caller
	// that may write the person's row later in its transaction takes
	// LockPerson instead.
	SharePerson(ctx context.Context, id string) (Person, error)
	// FindPersons returns the persons whose email matches email
	// case-insensitively, in every partition, by partition.
	FindPersons(ctx context.Context, email string) ([]Person, error)
	// DeletePerson removes a person with their linked identities,
	// remembered consents and mailed tokens (an ID may come back through an
	// import, and must not inherit them). It does not revoke: see
	// Store.RevokePerson.
	// ErrNotFound for an unknown ID.
	DeletePerson(ctx context.Context, id string) error
}

// Grant is one authorization: what a client may do for a subject. Every token
// a grant issued links back to it, so revoking the grant revokes the family.
type Grant struct {
	ID        string
	ClientID  string
	Subject   string // person ID; "" for client credentials
	Scopes    []string
	AuthLevel int
	AMR       []string
	Data      []byte    // JSON: flow data kept for later use (hook params, language, user details cache)
	CreatedAt time.Time // also the start of the maximum refresh validity
	ExpiresAt time.Time // no token of the grant outlives this
	RevokedAt time.Time // zero while active
	// StoredClient: the grant's client is the store's, not the config
	// file's, so CreateGrant holds it against DeleteClient. Never stored;
	// reads leave it false.
	StoredClient bool
}

// Token kinds.
const (
	KindAccess  = "access"
	KindRefresh = "refresh"
)

// Token is an access or refresh token, stored under the keyed hash of its value.
type Token struct {
	Hash       []byte
	Kind       string // KindAccess | KindRefresh
	GrantID    string
	ClientID   string
	Subject    string
	Scopes     []string
	IssuedAt   time.Time
	ExpiresAt  time.Time
	UsageLimit int // 0 = unlimited
	UsageCount int
	UsedAt     time.Time // refresh tokens: when rotated; zero while unused
	RevokedAt  time.Time // zero while active
}

// Active reports whether t, a token of grant g, may be used at now: neither
// it nor its grant is revoked or expired, and a refresh token was not spent
// by rotation. Every place that accepts a presented token asks this.
func (t Token) Active(g Grant, now time.Time) bool {
	return t.RevokedAt.IsZero() && now.Before(t.ExpiresAt) && g.RevokedAt.IsZero() && now.Before(g.ExpiresAt) &&
		(t.Kind != KindRefresh || t.UsedAt.IsZero())
}

// AuthCode is a one-time authorization code (RFC 6749 section 4.1.2),
// stored under the keyed hash of its value.
type AuthCode struct {
	Hash                []byte
	ClientID            string
	Subject             string
	RedirectURI         string // as sent in the authorization request ("" when omitted)
	Scopes              []string
	CodeChallenge       string
	CodeChallengeMethod string
	AuthLevel           int
	AMR                 []string
	Data                []byte // JSON flow data handed on to the grant
	IssuedAt            time.Time
	ExpiresAt           time.Time
	UsedAt              time.Time // zero until exchanged
	GrantID             string    // the grant the exchange created ("" before)
}

// Tokens stores grants, tokens and authorization codes.
type Tokens interface {
	// CreateGrant inserts g. With g.StoredClient (a client of the store,
	// not one of the config file) it inserts g only while the client
	// g.ClientID exists, and holds the client until the transaction ends
	// so that DeleteClient waits for it and then revokes g (PostgreSQL: a
	// KEY SHARE row lock, which concurrent issuance and UpdateClient do not
	// wait for); ErrNotFound when the client is gone.
	CreateGrant(ctx context.Context, g Grant) error
	// ListPersonGrants returns the grants whose subject is personID that
	// are neither revoked nor expired at now, newest first.
	ListPersonGrants(ctx context.Context, personID string, now time.Time) ([]Grant, error)
	GetGrant(ctx context.Context, id string) (Grant, error)
	// SetGrantData replaces the flow data of a grant (the user details cache);
	// ErrNotFound for an unknown ID.
	SetGrantData(ctx context.Context, id string, data []byte) error
	// RevokeGrant marks the grant and every token of it revoked at now.
	// Revoking a revoked grant is not an error; ErrNotFound for an unknown ID.
	RevokeGrant(ctx context.Context, id string, now time.Time) error

	CreateToken(ctx context.Context, t Token) error
	GetToken(ctx context.Context, hash []byte) (Token, error)
	// GetTokenGrant returns a token and its grant; ErrNotFound when the
	// token is unknown. The answer may be shared with other callers (a
	// store may cache it): its slices must not be modified.
	GetTokenGrant(ctx context.Context, hash []byte) (Token, Grant, error)
	// GetTokenGrantToChange is GetTokenGrant for a caller about to change
	// the token (a revocation): a store that caches keeps only the answer
	// of a token revoked already, which its caller's change leaves as it is.
	GetTokenGrantToChange(ctx context.Context, hash []byte) (Token, Grant, error)
	// GetTokenGrantSharePerson is GetTokenGrant with the token's person
	// read as SharePerson does, in one statement (a refresh's first step
	// in its transaction). ErrNotFound when the token, its grant or its
	// person is missing, a token without a subject included: the caller
	// then reads them one by one.
	GetTokenGrantSharePerson(ctx context.Context, hash []byte) (Token, Grant, Person, error)
	// GetTokenGrantPerson answers as GetTokenGrantSharePerson without a
	// lock (a read before a refresh's transaction).
	GetTokenGrantPerson(ctx context.Context, hash []byte) (Token, Grant, Person, error)
	// GetTokenGrantGuardPerson answers as GetTokenGrantSharePerson, for a
	// transaction that issues from what it read. A store may read without
	// the lock and commit the transaction's writes only if the person, the
	// token and the grant are unchanged at the commit, under the person's
	// share lock; if they changed, Tx runs the function again (so it must
	// be one that may run twice) with the locking read. It may answer what
	// an earlier such read found, when the commit checks it the same way;
	// a run that then commits no write (it refused) runs again on a read.
	GetTokenGrantGuardPerson(ctx context.Context, hash []byte) (Token, Grant, Person, error)
	// RevokeToken marks one token revoked at now, if there is such a token
	// (idempotent; nothing for an unknown one). Its caller reads the token
	// first: reporting none would cost PostgreSQL's transaction a round trip.
	RevokeToken(ctx context.Context, hash []byte, now time.Time) error
	// RevokeLiveToken revokes clientID's live token hash of kind (KindAccess
	// or KindRefresh) at now, and a refresh token's whole grant with it, and
	// appends ev with its TransactionID and UserID set to the token's grant
	// and subject, without reading the token first. It reports false,
	// having written nothing, when it revoked nothing: no such token,
	// another client's, one of the other kind, one revoked already (or a
	// case the store leaves to the read-first path); the caller then reads
	// the token to say why.
	RevokeLiveToken(ctx context.Context, kind string, hash []byte, clientID string, now time.Time, ev Event) (bool, error)
	// UseRefreshToken marks an unused refresh token used at now and returns it.
	// It returns the token with ErrConflict when it was used before — so that
	// the caller can revoke the grant (reuse detection) — and ErrNotFound when unknown.
	// Exactly one of many concurrent calls succeeds.
	UseRefreshToken(ctx context.Context, hash []byte, now time.Time) (Token, error)
	// SpendTokenUse spends one use of a token whose UsageLimit is above 0
	// and returns the token after the use. ErrConflict when UsageCount
	// already reached UsageLimit (exactly UsageLimit calls succeed, also
	// concurrently). With ev (the event of the answer the use allows), ev
	// is appended with the use: both commit or neither, and nothing is
	// appended when no use is spent.
	SpendTokenUse(ctx context.Context, hash []byte, ev *Event) (Token, error)

	CreateAuthCode(ctx context.Context, c AuthCode) error
	// GetAuthCodePerson reads a code, used or not, and its person, without
	// a lock (a read before the exchange's transaction): one round trip.
	// ErrNotFound when the code or its person is missing.
	GetAuthCodePerson(ctx context.Context, hash []byte) (AuthCode, Person, error)
	// UseAuthCode marks an unused code used at now and returns it. It returns
	// the code with ErrConflict when it was used before (the caller revokes
	// c.GrantID), ErrNotFound when unknown. Exactly one of many concurrent
	// calls succeeds.
	UseAuthCode(ctx context.Context, hash []byte, now time.Time) (AuthCode, error)
	// UseAuthCodeGuardPerson is UseAuthCode after a read of the code's
	// person as SharePerson does (the person is zero when gone), for a
	// transaction that issues from what it read. A store may read both
	// without a lock and commit the transaction's writes only if its use
	// of the code is the first and the person is unchanged at the commit,
	// under the person's share lock; otherwise Tx runs the function again
	// (so it must be one that may run twice) with locking reads.
	UseAuthCodeGuardPerson(ctx context.Context, hash []byte, now time.Time) (AuthCode, Person, error)
	// SetAuthCodeGrant records the grant an exchanged code created
	// (ErrNotFound: no such code). Inside a transaction that has used the
	// code, PostgreSQL sends it with the transaction's next statement, and
	// reports no ErrNotFound.
	SetAuthCodeGrant(ctx context.Context, hash []byte, grantID string) error
}

// AuthRequest is a pending authorization request between /oauth/authorize and
// the code: the hosted pages carry only its ID.
type AuthRequest struct {
	ID        string
	ClientID  string
	Data      []byte // JSON of the validated request (owned by the oauth package)
	CreatedAt time.Time
	ExpiresAt time.Time
}

// Session is a logged-in browser session, stored under the keyed hash of the
// cookie value.
type Session struct {
	Hash      []byte
	PersonID  string
	AuthLevel int
	AMR       []string
	AuthTime  time.Time
	ExpiresAt time.Time
	// IdPID is the login method the person signed in with at an upstream
	// identity provider ("" for latchkey's own password), and
	// UpstreamIDToken the upstream's ID token, sealed (the id_token_hint
	// of its end-session endpoint); nil when none.
	IdPID           string
	UpstreamIDToken []byte
	// Person is the session's person as GetSession read it; nil from
	// the other reads (ListSessions, UpdateSession's function), and when
	// the person is gone.
	Person *Person
}

// PersonRevocation counts what RevokePerson ended.
type PersonRevocation struct {
	Grants   int64 // grants revoked (grants revoked before are not counted)
	Tokens   int64 // access and refresh tokens revoked
	Sessions int64 // login sessions deleted
}

// Sessions stores pending authorization requests and login sessions.
type Sessions interface {
	CreateAuthRequest(ctx context.Context, r AuthRequest) error
	GetAuthRequest(ctx context.Context, id string) (AuthRequest, error)
	DeleteAuthRequest(ctx context.Context, id string) error

	CreateSession(ctx context.Context, s Session) error
	// GetSession returns the session with Session.Person, its person
	// (nil when the person is gone); ErrNotFound for an unknown hash.
	GetSession(ctx context.Context, hash []byte) (Session, error)
	DeleteSession(ctx context.Context, hash []byte) error
	UpdateSession(ctx context.Context, hash []byte, fn func(Session) (Session, error)) error
	// ListSessions returns a person's sessions that have not expired at
	// now, newest first.
	ListSessions(ctx context.Context, personID string, now time.Time) ([]Session, error)
}

// Consent is a person's remembered consent to one scope for one client.
type Consent struct {
	PersonID  string
	ClientID  string
	Scope     string
	GrantedAt time.Time
}

// Consents remembers persistent consent (scope persistent_consent=true).
type Consents interface {
	// SaveConsents records (or refreshes) each consent.
	SaveConsents(ctx context.Context, cs []Consent) error
	// ListConsents returns the person's consents for the client.
	ListConsents(ctx context.Context, personID, clientID string) ([]Consent, error)
}

// Throttle counts attempts per key, shared by every instance (failed logins,
// wrong user codes, failed client authentication). A key's window starts at
// its first counted attempt and lasts window; the next attempt after it
// starts a new window.
type Throttle interface {
	// Take counts one attempt for key and reports whether it is within
	// limit attempts of the key's window, in one atomic statement: however
	// many instances take at once, exactly limit takes of a window are
	// allowed. A refused take does not extend the window; retryAfter is then
	// the time until the window ends (0 when allowed).
	Take(ctx context.Context, key string, window time.Duration, limit int, now time.Time) (allowed bool, retryAfter time.Duration, err error)
	// Count returns the attempts counted in key's current window (0 when
	// its window ended), and the time until that window ends.
	Count(ctx context.Context, key string, window time.Duration, now time.Time) (n int, retryAfter time.Duration, err error)
	// Release gives back one allowed Take of key (an attempt that proved
	// right), never below zero.
	Release(ctx context.Context, key string) error
	// Reset forgets key.
	Reset(ctx context.Context, key string) error
}

// Event kinds.
const (
	EventOAuth  = "oauth"
	EventPerson = "person"
)

// CheckEventKinds refuses events of any other kind: retention finds events
// by kind, so none may escape it.
func CheckEventKinds(es []Event) error {
	for _, e := range es {
		if e.Kind != EventOAuth && e.Kind != EventPerson {
			return fmt.Errorf("store: event kind %q", e.Kind)
		}
	}
	return nil
}

// Event is one recorded event (OAuth event record or person event record).
type Event struct {
	ID            string // UUID
	Kind          string // EventOAuth | EventPerson
	Type          string // e.g. TOKEN_REQUEST_CLIENT_CREDENTIALS_ACCESS_TOKEN_CREATED, person.PersonCreatedEvent
	Name          string // display-friendly name
	ClientID      string
	AppName       string
	TransactionID string
	UserID        string
	PersonID      string
	ClientIP      string
	UserAgent     string
	AgentUser     string            // event_agent_user
	Partition     string            // persons partition of a person event
	Context       map[string]string // flow context parameters; nil for none
	Occurred      time.Time
}

// EventFilter selects events; empty members do not filter. Filters AND;
// values of Types OR.
type EventFilter struct {
	Kind          string // EventOAuth | EventPerson (required)
	UserID        string // matched case-insensitively
	ClientID      string
	Types         []string
	ExcludeTypes  []string
	TransactionID string
	AgentUser     string
	From, To      time.Time // occurred at or after From, at or before To (zero: open)
	ToExclusive   bool      // occurred before To
}

// EventAppender appends events durably.
type EventAppender interface {
	AppendEvents(ctx context.Context, es ...Event) error
}

// Events is the append-only event store.
type Events interface {
	EventAppender
	// SearchEvents returns events matching f, latest first (ties by ID,
	// descending), skipping offset and returning at most limit.
	SearchEvents(ctx context.Context, f EventFilter, offset, limit int) ([]Event, error)
	// CountEvents counts events matching f, stopping at max (it returns max
	// when there are more), so a count never scans a whole large table.
	CountEvents(ctx context.Context, f EventFilter, max int) (int, error)
	// EventPage is SearchEvents(f, offset, limit) and CountEvents(f, max)
	// together, in fewer round trips where the store can.
	EventPage(ctx context.Context, f EventFilter, offset, limit, max int) ([]Event, int, error)
	// DeleteEventsBefore removes at most limit events that occurred before t
	// and reports how many it removed (retention, in small batches).
	DeleteEventsBefore(ctx context.Context, t time.Time, limit int) (int64, error)
}

// Scope is a configured scope (the scopes API). Scopes that a client may
// request but that are not configured behave as a Scope with its defaults.
type Scope struct {
	ID                         string
	AuthenticationLevel        int
	UsageLimit                 int
	ServiceEndpoint            string // "" for none (answered as null)
	VerificationFailedEndpoint string // "" for none
	PersistentConsent          bool
	Descriptions               map[string]string // locale -> text; nil for none
	CreatedAt                  time.Time
	UpdatedAt                  time.Time
}

// Scopes stores the scope configuration.
type Scopes interface {
	// CreateScope returns ErrConflict when the ID exists.
	CreateScope(ctx context.Context, s Scope) error
	// GetScopes returns the configured scopes among ids, by ID (unknown
	// ids are left out): one scope or all of an issuance's in one read.
	GetScopes(ctx context.Context, ids []string) ([]Scope, error)
	ListScopes(ctx context.Context) ([]Scope, error)
	// ReplaceScope replaces every field but CreatedAt; ErrNotFound when absent.
	ReplaceScope(ctx context.Context, s Scope) error
	DeleteScope(ctx context.Context, id string) error
}

// ConfigUnits stores the identity-management configuration: one JSON
// document per unit (features, attributes, ...), the same for every instance.
type ConfigUnits interface {
	// GetConfigUnits returns every unit's body ("" for a unit never set).
	GetConfigUnits(ctx context.Context) (map[string]string, error)
	// UpdateConfigUnits locks the named units, hands their bodies to fn and
	// writes the bodies fn returns (units fn leaves out are unchanged), in
	// one transaction: concurrent updates of a unit never lose each other's
	// writes. An unknown unit is ErrNotFound; fn's error writes nothing.
	UpdateConfigUnits(ctx context.Context, names []string, fn func(map[string]string) (map[string]string, error)) error
}

// Device code statuses.
const (
	DevicePending  = "pending"
	DeviceApproved = "approved"
	DeviceDenied   = "denied"
	DeviceUsed     = "used"
)

// DeviceCode is a device authorization (RFC 8628), stored under the keyed
// hash of the device code; the user code is unique among stored codes.
type DeviceCode struct {
	Hash         []byte
	UserCode     string // 8 characters of BCDFGHJKLMNPQRSTVWXZ, no dash
	ClientID     string
	Scopes       []string
	IDP          string
	Interval     int // seconds between polls; grows by 5 at every slow_down
	LastPolledAt time.Time
	Status       string // DevicePending | DeviceApproved | DeviceDenied | DeviceUsed
	Subject      string // the person who approved
	AuthLevel    int
	AMR          []string
	ApprovedBy   string // "browser" | "app"
	CreatedAt    time.Time
	ExpiresAt    time.Time
}

// DeviceCodes stores device authorizations.
type DeviceCodes interface {
	// CreateDeviceCode returns ErrConflict when the user code (or hash) is taken.
	CreateDeviceCode(ctx context.Context, d DeviceCode) error
	GetDeviceCode(ctx context.Context, hash []byte) (DeviceCode, error)
	GetDeviceCodeByUserCode(ctx context.Context, userCode string) (DeviceCode, error)
	// UpdateDeviceCode reads the code, applies fn and writes the result in one
	// transaction that holds the row, so concurrent polls and approvals
	// serialise. fn's error is returned after a rollback.
	UpdateDeviceCode(ctx context.Context, hash []byte, fn func(DeviceCode) (DeviceCode, error)) (DeviceCode, error)
	// SetDevicePoll writes d's poll state (interval and last poll) when the
	// code is still pending with old's poll state, in one statement, and
	// reports whether it wrote: false when another poll or a decision came
	// between old's read and this write.
	SetDevicePoll(ctx context.Context, hash []byte, old, d DeviceCode) (bool, error)
}
