// Package federation signs persons in at identity providers other than
// latchkey's own password: OpenID Connect providers (latchkey is then the
// relying party, oidcrp.go) and LDAP directories (ldap.go). Each is a
// login method of the identity-management configuration (cimconfig
// login_methods). A successful upstream sign-in ends in account.go: the
// upstream identity signs in as the person it is linked to, couples to an
// existing account by a verified email, or creates a person. The hosted
// pages (internal/login) call these rules and then let authflow decide
// what comes next, as after a password login.
package federation

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/latchkey/latchkey/internal/cimconfig"
	"github.com/latchkey/latchkey/internal/events"
	"github.com/latchkey/latchkey/internal/identity"
	"github.com/latchkey/latchkey/internal/outbound"
	"github.com/latchkey/latchkey/internal/request"
	"github.com/latchkey/latchkey/internal/seal"
	"github.com/latchkey/latchkey/internal/store"
	"github.com/latchkey/latchkey/internal/token"
)

// Login method types this package signs in with.
const (
	TypeOIDC = "OPEN_ID_CONNECT"
	TypeLDAP = "LDAP"
)

// Authentication methods a federated session records (store.Session.AMR);
// oauth.AMR maps them to RFC 8176 values.
const (
	// AMRFederated: the person signed in at an upstream OpenID Provider.
	AMRFederated = "FEDERATED"
	// AMRLDAP: the person's password was checked by an LDAP directory.
	AMRLDAP = "LDAP"
)

// StateLifetime bounds a round trip to the upstream: a person who takes
// longer starts again from the client.
const StateLifetime = 10 * time.Minute

// Service runs the federated sign-ins.
type Service struct {
	Store    store.Store
	Config   *cimconfig.Service
	Identity *identity.Service // login throttles (LDAP)
	Hasher   *token.Hasher
	Events   *events.Recorder
	// Tokens seals the upstream ID tokens that sessions keep for logout.
	Tokens *seal.Sealer
	// Issuer is latchkey's base URL: the callback and logout return
	// addresses registered at the upstreams start with it.
	Issuer string
	// HTTP reaches the upstreams (discovery, token, UserInfo and JWKS
	// endpoints); its timeout bounds each call. Login methods come from
	// the configuration API, so their URLs are a caller's: the server
	// passes the outbound guard's client (Outbound.HTTPClient).
	HTTP *http.Client
	// Outbound guards the connections to LDAP directories (server_urls,
	// from the configuration API too): no internal address but
	// outbound.allow's. nil: the guard without exceptions.
	Outbound *outbound.Client
	// LDAPTimeout bounds connecting to a directory and each request.
	LDAPTimeout time.Duration
	// PasswordLevel is the authentication level of a login method that
	// sets none (the level a password reaches).
	PasswordLevel int
	Now           func() time.Time
	Log           *slog.Logger

	mu        sync.Mutex
	providers map[string]*provider // discovery cache, by login method id
}

// Method is an enabled login method of a type this package serves.
type Method struct {
	cimconfig.LoginMethod
	ID   string // as configured
	Name string
	Type string
}

// IdPID is the identity provider id of linked identities: the method's
// id in lower case, as the import API stores it.
func (m Method) IdPID() string { return strings.ToLower(m.ID) }

// Level is the authentication level the method reaches.
func (m Method) Level(passwordLevel int) int {
	if m.AuthenticationLevel != nil {
		return int(*m.AuthenticationLevel)
	}
	return passwordLevel
}

func on(b *bool) bool { return b != nil && *b }

// ErrUnknownMethod: no enabled login method of that id and a served type.
var ErrUnknownMethod = errors.New("federation: no such login method")

// Methods lists the enabled login methods this package serves, in the
// configured order (the login page's buttons).
func (s *Service) Methods(ctx context.Context) ([]Method, error) {
	snap, err := s.Config.Snapshot(ctx)
	if err != nil {
		return nil, err
	}
	var out []Method
	if snap.LoginMethods == nil {
		return nil, nil
	}
	for _, m := range snap.LoginMethods.LoginMethods {
		if mm, ok := served(m); ok {
			out = append(out, mm)
		}
	}
	return out, nil
}

func served(m cimconfig.LoginMethod) (Method, bool) {
	if m.ID == nil || m.Type == nil || (m.Enabled != nil && !*m.Enabled) {
		return Method{}, false
	}
	switch {
	case *m.Type == TypeOIDC && m.OpenIDConnectAttributes != nil, *m.Type == TypeLDAP && m.LDAPAttributes != nil:
	default:
		return Method{}, false
	}
	mm := Method{LoginMethod: m, ID: *m.ID, Name: *m.ID, Type: *m.Type}
	if m.Name != nil && *m.Name != "" {
		mm.Name = *m.Name
	}
	return mm, true
}

// Method returns the enabled login method with id (case-insensitive).
func (s *Service) Method(ctx context.Context, id string) (Method, error) {
	snap, err := s.Config.Snapshot(ctx)
	if err != nil {
		return Method{}, err
	}
	m, ok := snap.LoginMethod(id)
	if !ok {
		return Method{}, ErrUnknownMethod
	}
	mm, ok := served(m)
	if !ok {
		return Method{}, ErrUnknownMethod
	}
	return mm, nil
}

// Error is a failed upstream sign-in: what the client hears — an RFC 6749
// section 4.1.2.1 error code with vendor_error_cause (the spec's
// authorization error extension) — what the person sees, and what is
// recorded and logged. Err, the cause, is never shown.
type Error struct {
	Code        string // access_denied, temporarily_unavailable, server_error, ...
	Cause       string // vendor_error_cause
	Description string
	Event       string // the OAuth event recorded
	Err         error
}

func (e *Error) Error() string {
	if e.Err != nil {
		return "federation: " + e.Cause + ": " + e.Err.Error()
	}
	return "federation: " + e.Cause
}

func (e *Error) Unwrap() error { return e.Err }

// record writes an OAuth event outside any transaction (a refusal or an
// outcome of a login attempt, events/catalogue.go).
func (s *Service) record(ctx context.Context, f request.Facts, typ, clientID, personID string) {
	s.Events.ObserveOAuth(ctx, s.Store.EventSink(), f, events.OAuth{Type: typ, ClientID: clientID, UserID: personID})
}

func (s *Service) log() *slog.Logger {
	if s.Log != nil {
		return s.Log
	}
	return slog.Default()
}
