// Package oauth implements the OAuth 2.0 endpoints: authorization (code with
// PKCE), token (authorization code, client credentials, refresh, password),
// revocation (RFC 7009) and metadata (RFC 8414). Handlers parse and write;
// the rules live in methods that tests call without HTTP.
package oauth

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"slices"
	"time"

	"github.com/latchkey/latchkey/internal/authflow"
	"github.com/latchkey/latchkey/internal/clientauth"
	"github.com/latchkey/latchkey/internal/config"
	"github.com/latchkey/latchkey/internal/events"
	"github.com/latchkey/latchkey/internal/httpx"
	"github.com/latchkey/latchkey/internal/identity"
	"github.com/latchkey/latchkey/internal/scopes"
	"github.com/latchkey/latchkey/internal/store"
	"github.com/latchkey/latchkey/internal/token"
)

// ClientAuthenticator authenticates the client of a token, revocation or
// introspection request.
type ClientAuthenticator interface {
	Authenticate(r *http.Request, endpoint string) (store.Client, clientauth.Method, error)
}

// PasswordChecker checks a person's credentials (the deprecated password grant).
type PasswordChecker interface {
	CheckPassword(ctx context.Context, r *http.Request, email, password string) (store.Person, error)
}

// Service holds the OAuth rules and their dependencies.
type Service struct {
	Store     store.Store
	Hasher    *token.Hasher
	Clients   ClientAuthenticator
	Passwords PasswordChecker // nil: the password grant is refused
	Pages     Pages           // the hosted pages: sessions, consent, error page
	Details   Details         // introspection members and web hooks
	Events    *events.Recorder
	// ClientCache serves client reads of the hot paths (introspection);
	// nil: Store.
	ClientCache clientauth.ClientSource
	// EventLog takes the events recorded outside a transaction (a
	// GroupCommit shares commits between concurrent requests); nil: Store.
	EventLog events.Appender
	Issuer   string
	Now      func() time.Time
	Log      *slog.Logger
	// Flow is the authentication levels authflow decides with.
	Flow authflow.Policy

	CodeLifetime        time.Duration // default 60 s
	DeviceCodeLifetime  time.Duration // default 10 min
	AuthRequestLifetime time.Duration // how long a person has to log in and consent; default 30 min
}

func (s *Service) codeLifetime() time.Duration {
	if s.CodeLifetime > 0 {
		return s.CodeLifetime
	}
	return 60 * time.Second
}

func (s *Service) authRequestLifetime() time.Duration {
	if s.AuthRequestLifetime > 0 {
		return s.AuthRequestLifetime
	}
	return 30 * time.Minute
}

// Endpoint paths, relative to the issuer.
const (
	PathAuthorize  = "/oauth/authorize"
	PathToken      = "/oauth/token"
	PathRevoke     = "/oauth/revoke"
	PathIntrospect = "/oauth/api/v2/token/introspect"
	PathDevice     = "/oauth/device_authorization"
	PathLogin      = "/login"
)

// oauthError is an RFC 6749 section 5.2 error; event is the type recorded for it.
func oauthError(status int, code, desc string) *httpx.Error {
	return &httpx.Error{Status: status, Code: code, Description: desc}
}

func badRequest(code, desc string) *httpx.Error { return oauthError(http.StatusBadRequest, code, desc) }

// clientError turns a client authentication failure into the RFC 6749
// answer: 401 invalid_client (with a Basic challenge when Basic was tried)
// or 400 invalid_request; 429 with Retry-After for a throttled caller.
func clientError(err error) error {
	var ce *clientauth.Error
	if !errors.As(err, &ce) {
		return err // store trouble: a 500, logged
	}
	if ce.RetryAfter > 0 {
		he := httpx.TooManyRequests(ce.Code, ce.Description, ce.RetryAfter)
		he.Cause = ce.Cause
		return he
	}
	he := &httpx.Error{Status: ce.Status(), Code: ce.Code, Description: ce.Description, Cause: ce.Cause}
	if ce.Basic || ce.Status() == http.StatusUnauthorized {
		he.Header = map[string]string{"WWW-Authenticate": `Basic realm="latchkey"`}
	}
	return he
}

// TokenResponse is the spec's token response (RFC 6749 section 5.1).
type TokenResponse struct {
	TokenType    string `json:"token_type"`
	AccessToken  string `json:"access_token"`
	RefreshToken string `json:"refresh_token,omitempty"`
	ExpiresIn    int64  `json:"expires_in"`
	ProfileID    string `json:"profile_id"`
	Scope        string `json:"scope,omitempty"`

	limited bool // the access token has a usage limit
}

// grantData is the flow data a grant keeps (store.Grant.Data).
type grantData struct {
	HookParams       map[string][]string `json:"hook_context_custom_params,omitempty"`
	Language         string              `json:"language,omitempty"`
	IDP              string              `json:"idp,omitempty"`
	UserDetails      map[string]any      `json:"user_details,omitempty"`      // cache for introspection
	AdditionalClaims map[string]any      `json:"additional_claims,omitempty"` // from the access token hook
}

// issue is one issuance: a new grant (when grant is nil) or a new token pair
// of an existing grant.
type issue struct {
	client    store.Client
	subject   string
	scopes    []string
	authLevel int
	amr       []string
	data      []byte
	refresh   bool // issue a refresh token
	grant     *store.Grant
	requested []string // scopes the request named, to decide whether to echo scope
	// configured is the scope configuration of scopes when scopesRead: read
	// before the transaction, so that the group commit's single writer does
	// not wait for that read.
	configured []store.Scope
	scopesRead bool
}

// errPersonInactive: the person an issuance is for may no longer sign in
// (blocked, inactive, invited) or was deleted.
var errPersonInactive = errors.New("oauth: the person may not sign in")

// lockPerson locks the person of an issuance inside its transaction and
// returns errPersonInactive for one who may not sign in. It is the
// authority over the person's status: authflow decided on a read made
// before the transaction, and a block may have committed since. Holding
// the row until the issuance commits makes a concurrent block wait, and
// its RevokePerson then finds what was issued. Every transaction that
// issues for a person takes this lock before it writes anything, and
// before it locks a token row (the refresh grant), in the order a block
// takes them (person, then grants and tokens): no deadlock between them.
func lockPerson(ctx context.Context, tx store.Store, subject string) error {
	if subject == "" {
		return nil // client credentials: no person
	}
	p, err := tx.LockPerson(ctx, subject)
	if errors.Is(err, store.ErrNotFound) || err == nil && !identity.MaySignIn(p.Status) {
		return errPersonInactive
	}
	return err
}

// mint writes the grant and tokens of is through st (a transaction) and
// returns the response. It returns errPersonInactive, having written
// nothing, when the person may no longer sign in.
func (s *Service) mint(ctx context.Context, st store.Store, is issue) (*TokenResponse, store.Grant, error) {
	now := s.Now().UTC()
	subject := is.subject
	if is.grant != nil {
		subject = is.grant.Subject
	}
	if err := lockPerson(ctx, st, subject); err != nil {
		return nil, store.Grant{}, err
	}
	var data grantData
	switch {
	case is.grant != nil && len(is.grant.Data) > 0:
		if err := json.Unmarshal(is.grant.Data, &data); err != nil {
			return nil, store.Grant{}, err
		}
	case len(is.data) > 0:
		if err := json.Unmarshal(is.data, &data); err != nil {
			return nil, store.Grant{}, err
		}
	}
	if s.Details.AccessHook.Enabled() {
		// The hook runs inside the transaction so that a code or refresh
		// token stays single use; its bounded timeout bounds the hold.
		narrowed, claims, err := s.accessTokenHook(ctx, st, is.client, subject, is.scopes, data.HookParams)
		if err != nil {
			return nil, store.Grant{}, err
		}
		is.scopes, data.AdditionalClaims = narrowed, claims
		b, err := json.Marshal(data)
		if err != nil {
			return nil, store.Grant{}, err
		}
		is.data = b
		if is.grant != nil {
			if err := st.SetGrantData(ctx, is.grant.ID, b); err != nil {
				return nil, store.Grant{}, err
			}
		}
	}
	g := store.Grant{}
	if is.grant != nil {
		g = *is.grant
	} else {
		g = store.Grant{
			ID:        token.OrderedID(now),
			ClientID:  is.client.ID,
			Subject:   is.subject,
			Scopes:    is.scopes,
			AuthLevel: is.authLevel,
			AMR:       is.amr,
			Data:      is.data,
			CreatedAt: now,
		}
		// The grant (and so every refresh token of it) ends at the maximum
		// refresh validity, counted from the first token: rotation never
		// extends a grant.
		if is.refresh {
			g.ExpiresAt = now.Add(is.client.RefreshTokenLifetime)
		} else {
			g.ExpiresAt = now.Add(is.client.AccessTokenLifetime)
		}
		if err := st.CreateGrant(ctx, g); err != nil {
			return nil, g, err
		}
	}
	configured := is.configured
	if !is.scopesRead || s.Details.AccessHook.Enabled() { // the hook may have narrowed the scopes
		var err error
		if configured, err = st.GetScopes(ctx, is.scopes); err != nil {
			return nil, g, err
		}
	}
	limit := scopes.UsageLimit(configured)
	access, accessHash := s.Hasher.Mint(token.AccessToken)
	exp := now.Add(is.client.AccessTokenLifetime)
	if err := st.CreateToken(ctx, store.Token{
		Hash: accessHash, Kind: store.KindAccess, GrantID: g.ID, ClientID: is.client.ID,
		Subject: g.Subject, Scopes: is.scopes, IssuedAt: now, ExpiresAt: exp, UsageLimit: limit,
	}); err != nil {
		return nil, g, err
	}
	resp := &TokenResponse{
		TokenType:   "bearer",
		AccessToken: access,
		ExpiresIn:   int64(is.client.AccessTokenLifetime / time.Second),
		ProfileID:   s.profileID(is.client, g.Subject),
		limited:     limit > 0,
	}
	// A token whose uses are counted gets no refresh token (shared/spec/NOTES.md):
	// a refresh would hand out fresh uses.
	if is.refresh && limit == 0 {
		refresh, refreshHash := s.Hasher.Mint(token.RefreshToken)
		rexp := now.Add(is.client.RefreshTokenLifetime)
		if rexp.After(g.ExpiresAt) {
			rexp = g.ExpiresAt
		}
		if err := st.CreateToken(ctx, store.Token{
			Hash: refreshHash, Kind: store.KindRefresh, GrantID: g.ID, ClientID: is.client.ID,
			Subject: g.Subject, Scopes: is.scopes, IssuedAt: now, ExpiresAt: rexp,
		}); err != nil {
			return nil, g, err
		}
		resp.RefreshToken = refresh
	}
	// RFC 6749 section 5.1: scope is required in the answer when it differs from the request.
	if !slices.Equal(is.requested, is.scopes) {
		resp.Scope = joinScopes(is.scopes)
	}
	return resp, g, nil
}

// profileID is "static" for clients that are not mobile app instances
// (shared/spec/NOTES.md); a mobile app instance gets a stable 6-character
// profile of the person on that app.
func (s *Service) profileID(c store.Client, subject string) string {
	if c.AppIdentifier == "" {
		return "static"
	}
	sum := s.Hasher.Hash("profile_id", c.ID+"\x00"+subject)
	const alphabet = "abcdefghijklmnopqrstuvwxyz0123456789"
	out := make([]byte, 6)
	for i := range out {
		out[i] = alphabet[int(sum[i])%len(alphabet)]
	}
	return string(out)
}

func joinScopes(s []string) string {
	b := make([]byte, 0, 64)
	for i, v := range s {
		if i > 0 {
			b = append(b, ' ')
		}
		b = append(b, v...)
	}
	return string(b)
}

func allowsGrant(c store.Client, g string) bool { return slices.Contains(c.GrantTypes, g) }

func isPublic(c store.Client) bool { return c.TokenEndpointAuthMethod == config.AuthNone }

// writeToken answers a token response with the headers the spec requires.
func writeToken(w http.ResponseWriter, resp *TokenResponse) error {
	b, err := json.Marshal(resp)
	if err != nil {
		return err
	}
	h := w.Header()
	h.Set("Content-Type", "application/json;charset=UTF-8")
	h.Set("Cache-Control", "no-store")
	h.Set("Pragma", "no-cache")
	w.WriteHeader(http.StatusOK)
	_, err = w.Write(b)
	return err
}

// client reads a client through the cache when there is one.
func (s *Service) client(ctx context.Context, id string) (store.Client, error) {
	if s.ClientCache != nil {
		return s.ClientCache.GetClient(ctx, id)
	}
	return s.Store.GetClient(ctx, id)
}

// EventSink is where events recorded outside a transaction go: the group
// commit when there is one, else the store.
func (s *Service) EventSink() events.Appender {
	if s.EventLog != nil {
		return s.EventLog
	}
	return s.Store
}

// record observes an OAuth event outside a transaction (events.ObserveOAuth:
// a failed write is logged); the events of an action are written in its
// transaction instead.
func (s *Service) record(ctx context.Context, st events.Appender, r *http.Request, e events.OAuth) {
	s.Events.ObserveOAuth(ctx, st, r, e)
}
