package admin

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/latchkey/latchkey/internal/client"
	"github.com/latchkey/latchkey/internal/events"
	"github.com/latchkey/latchkey/internal/request"
	"github.com/latchkey/latchkey/internal/store"
	"github.com/latchkey/latchkey/internal/throttle"
	"github.com/latchkey/latchkey/internal/token"
)

// Registration configures dynamic client registration (config
// dynamic_registration; RFC 7591, RFC 7592).
type Registration struct {
	Enabled bool
	// InitialAccessToken, when set, is the bearer token a registration
	// must carry (RFC 7591 section 3); "" is open registration.
	InitialAccessToken string
}

// PathRegister is the registration endpoint; a client's configuration
// endpoint (registration_client_uri) is PathRegister + "/" + client_id.
const PathRegister = "/oauth/register"

// RegistrationToken is the kind of the registration access tokens (RFC
// 7592 section 1.2): the store keeps their keyed hash only.
var RegistrationToken = token.Kind{Prefix: "lk_rat_", Label: "registration_access_token"}

// Throttle of registrations: each attempt counts, a success too, so that
// open registration cannot fill the store (docs/THROTTLES.md).
const (
	MaxRegistrationsPerIP = 20
	RegistrationWindow    = time.Hour
)

// Throttle of RFC 7592 updates: each re-aims the URLs latchkey fetches
// (jwks_uri), so a registrant cannot turn the server into a scanner by
// updating in a loop. Every attempt from an address counts; an
// authenticated attempt also counts against its client (docs/THROTTLES.md).
const (
	MaxUpdatesPerIP     = 30
	MaxUpdatesPerClient = 10
	UpdateWindow        = time.Hour
)

// Keys of the throttles' counters.
const (
	keyRegisterIP   = "register:ip:"
	keyUpdateIP     = "register:update-ip:"
	keyUpdateClient = "register:update-client:"
)

// Errors of registration (RFC 7591 section 3.2.2, RFC 7592 section 3).
var (
	// ErrRegistrationOff: dynamic registration is not enabled (404).
	ErrRegistrationOff = errors.New("admin: dynamic registration is off")
	// ErrBadToken: a missing or wrong initial access or registration
	// access token, or an unknown client (401 invalid_token).
	ErrBadToken = errors.New("admin: invalid token")
)

// MetadataError is an RFC 7591 error: invalid_redirect_uri or
// invalid_client_metadata, with a description naming the member.
type MetadataError struct {
	Code string
	Msg  string
}

func (e *MetadataError) Error() string { return e.Code + ": " + e.Msg }

// Metadata is the client metadata of a registration request (RFC 7591
// section 2) and of its answers. Members latchkey does not keep (client_uri,
// logo_uri, contacts, ...) are ignored, as section 2 asks.
type Metadata struct {
	RedirectURIs            []string        `json:"redirect_uris,omitempty"`
	TokenEndpointAuthMethod string          `json:"token_endpoint_auth_method,omitempty"`
	GrantTypes              []string        `json:"grant_types,omitempty"`
	ResponseTypes           []string        `json:"response_types,omitempty"`
	ClientName              string          `json:"client_name,omitempty"`
	Scope                   string          `json:"scope,omitempty"`
	JWKSURI                 string          `json:"jwks_uri,omitempty"`
	JWKS                    json.RawMessage `json:"jwks,omitempty"`
	PostLogoutRedirectURIs  []string        `json:"post_logout_redirect_uris,omitempty"`

	// Of an update (RFC 7592 section 2.2): client_id must name the
	// client, client_secret (when sent) must be its secret, and the
	// members the server assigns must not be sent.
	ClientID                string `json:"client_id,omitempty"`
	ClientSecret            string `json:"client_secret,omitempty"`
	RegistrationAccessToken string `json:"registration_access_token,omitempty"`
	RegistrationClientURI   string `json:"registration_client_uri,omitempty"`
	ClientIDIssuedAt        *int64 `json:"client_id_issued_at,omitempty"`
	ClientSecretExpiresAt   *int64 `json:"client_secret_expires_at,omitempty"`
}

// Registered is a registered client (RFC 7591 section 3.2.1, RFC 7592
// section 3): the metadata, what the server assigned, and the secrets
// when they are new (the store keeps their hashes only).
type Registered struct {
	Metadata
	Client     store.Client
	Secret     string // only in the registration's answer
	Token      string // the registration access token
	ConfigPath string // registration_client_uri, relative to the issuer
}

// dynamicGrants are the grant types a registered client may use: no
// deprecated ones (password, implicit).
var dynamicGrants = []string{client.GrantAuthorizationCode, client.GrantRefreshToken, client.GrantClientCredentials,
	client.GrantDeviceCode}

// adminScopes may never be registered: they open the admin, scopes,
// configuration and events APIs.
func adminScope(s string) bool { return strings.HasPrefix(s, "vendor_api_") }

func metaErr(code, format string, args ...any) error {
	return &MetadataError{Code: code, Msg: fmt.Sprintf(format, args...)}
}

// metadataError turns a broken client rule into its RFC 7591 error.
func metadataError(err error) error {
	var ie *InvalidError
	if !errors.As(err, &ie) {
		return err
	}
	code := "invalid_client_metadata"
	if ie.Field == "redirect_uris" {
		code = "invalid_redirect_uri"
	}
	return &MetadataError{Code: code, Msg: ie.Msg}
}

// registration checks m (RFC 7591 section 2, and latchkey's client rules)
// and returns the client it registers as id.
func (s *Service) registrationOf(ctx context.Context, m Metadata, id string) (client.Registration, error) {
	var r client.Registration
	method := m.TokenEndpointAuthMethod
	if method == "" {
		method = client.AuthClientSecretBasic // RFC 7591 section 2
	}
	grants := m.GrantTypes
	if len(grants) == 0 {
		grants = []string{client.GrantAuthorizationCode}
	}
	for _, g := range grants {
		if !slices.Contains(dynamicGrants, g) {
			return r, metaErr("invalid_client_metadata", "grant_types: %q cannot be registered (one of %s)", clip(g),
				strings.Join(dynamicGrants, ", "))
		}
	}
	// RFC 7591 section 2.1: response type code goes with the
	// authorization_code grant; no other response type is registered.
	code := slices.Contains(grants, client.GrantAuthorizationCode)
	for _, rt := range m.ResponseTypes {
		if rt != "code" {
			return r, metaErr("invalid_client_metadata", "response_types: %q cannot be registered (code)", clip(rt))
		}
	}
	if len(m.ResponseTypes) > 0 && !code {
		return r, metaErr("invalid_client_metadata", "response_types code needs grant_types authorization_code")
	}
	scopes := strings.Fields(m.Scope)
	if len(scopes) > 0 {
		allowed, err := s.registrableScopes(ctx)
		if err != nil {
			return r, err
		}
		for _, sc := range scopes {
			if !slices.Contains(allowed, sc) {
				return r, metaErr("invalid_client_metadata", "scope: %q cannot be registered: a scope of the scope configuration (not vendor_api_*)", clip(sc))
			}
		}
	}
	// redirect_uris and post_logout_redirect_uris: client.ValidateRedirectURI,
	// in validate, under the zero policy (a registrant never gets cleartext
	// http off loopback); redirect_uris answers invalid_redirect_uri.
	in := ClientInput{Name: m.ClientName, TokenEndpointAuthMethod: method, JWKS: m.JWKS, JWKSURI: m.JWKSURI,
		RedirectURIs: m.RedirectURIs, GrantTypes: grants, Scopes: scopes, PostLogoutRedirectURIs: m.PostLogoutRedirectURIs}
	r, err := s.registration(in, id)
	return r, metadataError(err)
}

// registrableScopes are the configured scopes, but the admin ones.
func (s *Service) registrableScopes(ctx context.Context) ([]string, error) {
	all, err := s.Store.ListScopes(ctx)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, sc := range all {
		if !adminScope(sc.ID) {
			out = append(out, sc.ID)
		}
	}
	return out, nil
}

// CheckInitialToken checks the bearer token of a registration against
// the configured initial access token (constant time).
func (s *Service) CheckInitialToken(presented string) error {
	want := s.Registration.InitialAccessToken
	if want == "" {
		return nil
	}
	a, b := sha256.Sum256([]byte(presented)), sha256.Sum256([]byte(want))
	if presented == "" || !hmac.Equal(a[:], b[:]) {
		return ErrBadToken
	}
	return nil
}

// Register registers a client (RFC 7591 section 3): a generated
// client_id, a generated secret for a confidential client, and a
// registration access token; DYNAMIC_REG_SUCCESS in the same transaction.
// Each attempt from an address counts against MaxRegistrationsPerIP.
func (s *Service) Register(ctx context.Context, f request.Facts, bearer string, m Metadata) (Registered, error) {
	if !s.Registration.Enabled {
		s.observe(ctx, f, events.DynamicRegDisabled, "")
		return Registered{}, ErrRegistrationOff
	}
	if err := throttle.Reserve(ctx, s.Store, s.now(), throttle.Limit{Key: keyRegisterIP + f.AddrKey(),
		Max: MaxRegistrationsPerIP, Window: RegistrationWindow}); err != nil {
		return Registered{}, err
	}
	if err := s.CheckInitialToken(bearer); err != nil {
		s.observe(ctx, f, events.DynamicRegInvalidHeader, "")
		return Registered{}, err
	}
	if m.ClientID != "" || m.RegistrationAccessToken != "" || m.RegistrationClientURI != "" {
		s.observe(ctx, f, events.DynamicRegInvalidMetadata, "")
		return Registered{}, &MetadataError{Code: "invalid_client_metadata",
			Msg: "client_id, registration_access_token and registration_client_uri are assigned by the server"}
	}
	id := uuid.NewString()
	r, err := s.registrationOf(ctx, m, id)
	if err != nil {
		s.observe(ctx, f, events.DynamicRegInvalidMetadata, "")
		return Registered{}, err
	}
	var secret string
	if usesSecret(r.TokenEndpointAuthMethod) {
		secret = newSecret()
		r.Secret = secret
	}
	if err := metadataError(validate(r)); err != nil {
		s.observe(ctx, f, events.DynamicRegInvalidMetadata, "")
		return Registered{}, err
	}
	tok, tokHash := s.Secrets.Mint(RegistrationToken)
	stored := r.Stored(s.hashSecret)
	stored.RegistrationHash = tokHash
	err = s.Store.Tx(ctx, func(tx store.Store) error {
		if err := tx.CreateClient(ctx, stored); err != nil {
			return err
		}
		return s.Events.RecordOAuth(ctx, tx, f, events.OAuth{Type: events.DynamicRegSuccess, ClientID: id, AppName: stored.Name,
			AgentUser: id})
	})
	if err != nil {
		return Registered{}, err
	}
	c, err := s.Store.GetClient(ctx, id)
	if err != nil {
		return Registered{}, err
	}
	return s.registered(c, secret, tok), nil
}

func (s *Service) observe(ctx context.Context, f request.Facts, typ, clientID string) {
	s.Events.ObserveOAuth(ctx, s.Store.EventSink(), f, events.OAuth{Type: typ, ClientID: clientID})
}

// registered is the answer of a registered client.
func (s *Service) registered(c store.Client, secret, tok string) Registered {
	m := Metadata{RedirectURIs: c.RedirectURIs, TokenEndpointAuthMethod: c.TokenEndpointAuthMethod,
		GrantTypes: c.GrantTypes, ClientName: c.Name, Scope: strings.Join(c.Scopes, " "), JWKSURI: c.JWKSURI,
		JWKS: c.JWKS, PostLogoutRedirectURIs: c.PostLogoutRedirectURIs, ClientID: c.ID, ClientSecret: secret,
		RegistrationAccessToken: tok, RegistrationClientURI: PathRegister + "/" + c.ID}
	if slices.Contains(c.GrantTypes, client.GrantAuthorizationCode) {
		m.ResponseTypes = []string{"code"}
	} else {
		m.ResponseTypes = []string{}
	}
	issued := c.CreatedAt.Unix()
	m.ClientIDIssuedAt = &issued
	if usesSecret(c.TokenEndpointAuthMethod) {
		never := int64(0) // secrets do not expire (RFC 7591 section 3.2.1: 0)
		m.ClientSecretExpiresAt = &never
	}
	return Registered{Metadata: m, Client: c, Secret: secret, Token: tok, ConfigPath: m.RegistrationClientURI}
}

// registeredClient returns the dynamically registered client id whose
// registration access token is tok; ErrBadToken for an unknown client, a
// client not registered dynamically or a wrong token (one answer for all,
// RFC 7592 section 3).
func (s *Service) registeredClient(ctx context.Context, id, tok string) (store.Client, error) {
	if !s.Registration.Enabled {
		return store.Client{}, ErrRegistrationOff
	}
	c, err := s.Store.GetClient(ctx, id)
	if errors.Is(err, store.ErrNotFound) {
		return c, ErrBadToken
	}
	if err != nil {
		return c, err
	}
	if len(c.RegistrationHash) == 0 || !hmac.Equal(c.RegistrationHash, s.Secrets.HashOf(RegistrationToken, tok)) {
		return store.Client{}, ErrBadToken
	}
	return c, nil
}

// ReadRegistration is RFC 7592's read: the client's current metadata, with
// the registration access token presented (it stays valid).
func (s *Service) ReadRegistration(ctx context.Context, id, tok string) (Registered, error) {
	c, err := s.registeredClient(ctx, id, tok)
	if err != nil {
		return Registered{}, err
	}
	return s.registered(c, "", tok), nil
}

// UpdateRegistration is RFC 7592's update: m replaces every member (left
// out: the default); the secret and the registration access token stay.
// Throttled per address (every attempt) and per client (every attempt
// with the client's token): MaxUpdatesPerIP, MaxUpdatesPerClient. body
// reads the metadata, once the caller is authenticated and counted: an
// unauthenticated caller gets ErrBadToken (401), not a body error.
func (s *Service) UpdateRegistration(ctx context.Context, f request.Facts, id, tok string, body func() (Metadata, error)) (Registered, error) {
	if !s.Registration.Enabled {
		return Registered{}, ErrRegistrationOff
	}
	if err := throttle.Reserve(ctx, s.Store, s.now(), throttle.Limit{Key: keyUpdateIP + f.AddrKey(),
		Max: MaxUpdatesPerIP, Window: UpdateWindow}); err != nil {
		return Registered{}, err
	}
	c, err := s.registeredClient(ctx, id, tok)
	if err != nil {
		return Registered{}, err
	}
	// Counted after the token is checked: a caller without it cannot
	// use up the client's own updates.
	if err := throttle.Reserve(ctx, s.Store, s.now(), throttle.Limit{Key: keyUpdateClient + id,
		Max: MaxUpdatesPerClient, Window: UpdateWindow}); err != nil {
		return Registered{}, err
	}
	m, err := body()
	if err != nil {
		return Registered{}, err
	}
	fail := func(err error) (Registered, error) {
		s.observe(ctx, f, events.DynamicUpdateFailed, id)
		return Registered{}, err
	}
	switch {
	case m.ClientID != id:
		return fail(&MetadataError{Code: "invalid_request", Msg: "client_id must be the client's id"})
	case m.RegistrationAccessToken != "" || m.RegistrationClientURI != "" || m.ClientIDIssuedAt != nil || m.ClientSecretExpiresAt != nil:
		// RFC 7592 section 2.2: these are the server's.
		return fail(&MetadataError{Code: "invalid_request",
			Msg: "registration_access_token, registration_client_uri, client_id_issued_at and client_secret_expires_at must not be sent"})
	case m.ClientSecret != "" && !s.Secrets.Verify(token.LabelClientSecret, m.ClientSecret, c.SecretHash):
		return fail(&MetadataError{Code: "invalid_request", Msg: "client_secret is not the client's secret"})
	}
	r, err := s.registrationOf(ctx, m, id)
	if err != nil {
		return fail(err)
	}
	var secret string
	var out store.Client
	err = s.Store.Tx(ctx, func(tx store.Store) error {
		var err error
		out, err = tx.UpdateClient(ctx, id, func(old store.Client) (store.Client, error) {
			r := r
			secret = ""
			switch {
			case !usesSecret(r.TokenEndpointAuthMethod):
			case len(old.SecretHash) > 0:
				r.SecretHash = old.SecretHash
			default: // newly confidential
				secret = newSecret()
				r.Secret = secret
			}
			r.RegistrationHash = old.RegistrationHash
			if err := metadataError(validate(r)); err != nil {
				return old, err
			}
			return r.Stored(s.hashSecret), nil
		})
		if err != nil {
			return err
		}
		return s.Events.RecordOAuth(ctx, tx, f, events.OAuth{Type: events.DynamicUpdateSuccess, ClientID: id, AppName: out.Name,
			AgentUser: id})
	})
	var me *MetadataError
	switch {
	case errors.Is(err, store.ErrNotFound):
		return fail(ErrBadToken) // deleted meanwhile
	case errors.As(err, &me):
		return fail(err)
	case err != nil:
		return Registered{}, err
	}
	return s.registered(out, secret, tok), nil
}

// DeleteRegistration is RFC 7592's delete: the client is gone and its
// tokens revoked, as the admin API's delete does.
func (s *Service) DeleteRegistration(ctx context.Context, f request.Facts, id, tok string) error {
	c, err := s.registeredClient(ctx, id, tok)
	if err != nil {
		return err
	}
	err = s.Store.Tx(ctx, func(tx store.Store) error {
		if _, err := tx.DeleteClient(ctx, id, s.now()); err != nil {
			return err
		}
		return s.clientEvent(ctx, tx, Actor{Name: id, Facts: f}, events.AdminClientDeleted, c)
	})
	if errors.Is(err, store.ErrNotFound) {
		return ErrBadToken
	}
	return err
}
