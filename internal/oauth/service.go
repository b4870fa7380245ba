// Package oauth implements the OAuth 2.0 endpoints: authorization (code with
// PKCE), token (authorization code, client credentials, refresh, password),
// revocation (RFC 7009) and metadata (RFC 8414). Handlers parse and write;
// the rules live in methods that tests call without HTTP.
package oauth

import (
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"time"

	"github.com/latchkey/latchkey/internal/authflow"
	"github.com/latchkey/latchkey/internal/client"
	"github.com/latchkey/latchkey/internal/clientauth"
	"github.com/latchkey/latchkey/internal/events"
	"github.com/latchkey/latchkey/internal/request"
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
	CheckPassword(ctx context.Context, f request.Facts, email, password string) (store.Person, error)
}

// Service holds the OAuth rules and their dependencies.
type Service struct {
	Store  store.Store
	Hasher *token.Hasher
	// Tokens mints access and refresh tokens, codes and device codes and
	// finds them again; nil: opaque tokens under Hasher.
	Tokens    token.Strategy
	Clients   ClientAuthenticator
	Passwords PasswordChecker // nil: the password grant is refused
	Pages     Pages           // the hosted pages: sessions, consent, error page
	Details   Details         // introspection members and web hooks
	Events    *events.Recorder
	// ClientCache serves client reads of the hot paths (introspection);
	// nil: Store.
	ClientCache clientauth.ClientSource
	Issuer      string
	Now         func() time.Time
	Log         *slog.Logger
	// Flow is the operator file's authentication levels.
	Flow authflow.Policy
	// Keys sign ID tokens and JWT access tokens (OpenID Connect); nil:
	// neither is issued.
	Keys            Keys
	IDTokenLifetime time.Duration // default 1h
	// PageLanguages are the language codes the hosted pages speak
	// (ui_locales picks the first of them it names).
	PageLanguages []string
	// Settings completes Flow with the identity configuration (the mailed
	// code's level, the step-up strategy, whether activation is required);
	// nil: Flow alone. Policy calls it.
	Settings func(ctx context.Context, base authflow.Policy) (authflow.Policy, error)
	// RegistrationEndpoint is the metadata's registration_endpoint (RFC
	// 7591) while dynamic registration is on; "" leaves it out.
	RegistrationEndpoint string

	CodeLifetime        time.Duration // default 60 s
	DeviceCodeLifetime  time.Duration // default 10 min
	AuthRequestLifetime time.Duration // how long a person has to log in and consent; default 30 min
}

// Policy is what authflow decides with now: Flow and the identity
// configuration. Every caller of authflow.Decide takes it from here.
func (s *Service) Policy(ctx context.Context) (authflow.Policy, error) {
	if s.Settings == nil {
		return s.Flow, nil
	}
	return s.Settings(ctx, s.Flow)
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

// TokenResponse is the spec's token response (RFC 6749 section 5.1).
type TokenResponse struct {
	TokenType    string `json:"token_type"`
	AccessToken  string `json:"access_token"`
	RefreshToken string `json:"refresh_token,omitempty"`
	ExpiresIn    int64  `json:"expires_in"`
	ProfileID    string `json:"profile_id"`
	Scope        string `json:"scope,omitempty"`
	IDToken      string `json:"id_token,omitempty"` // OpenID Connect, with scope openid

	limited  bool           // the access token has a usage limit
	idClaims map[string]any // the ID token's claims, signed by Service.finish
}

// grantData is the flow data a grant keeps (store.Grant.Data).
type grantData struct {
	HookParams       map[string][]string `json:"hook_context_custom_params,omitempty"`
	Language         string              `json:"language,omitempty"`
	IDP              string              `json:"idp,omitempty"`
	UserDetails      map[string]any      `json:"user_details,omitempty"`      // cache for introspection
	AdditionalClaims map[string]any      `json:"additional_claims,omitempty"` // from the access token hook
	// OpenID Connect: the nonce of the authorization request (echoed in
	// the first ID token only) and when the person authenticated (Unix
	// seconds; 0: when the grant was made).
	Nonce    string `json:"nonce,omitempty"`
	AuthTime int64  `json:"auth_time,omitempty"`
}

// decodeGrantData reads a grant's data; none is the zero grantData.
func decodeGrantData(b []byte, data *grantData) error {
	if len(b) == 0 {
		return nil
	}
	return json.Unmarshal(b, data)
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

// The client rules the flows ask, under names that the flows' own client
// variables do not shadow.
func allowsGrant(c store.Client, g string) bool { return client.AllowsGrant(c, g) }

// issuesRefresh: a flow issues a refresh token when the client lists the
// refresh_token grant.
func issuesRefresh(c store.Client) bool { return client.AllowsGrant(c, client.GrantRefreshToken) }

// mayUseDeviceFlow: the client lists the device_code grant.
func mayUseDeviceFlow(c store.Client) bool { return client.AllowsGrant(c, client.GrantDeviceCode) }

func isPublic(c store.Client) bool { return client.IsPublic(c) }

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

// record observes an OAuth event outside a transaction (events.ObserveOAuth:
// a failed write is logged); the events of an action are written in its
// transaction instead.
func (s *Service) record(ctx context.Context, f request.Facts, e events.OAuth) {
	s.Events.ObserveOAuth(ctx, s.Store.EventSink(), f, e)
}

// facts are the request facts the rules take, answered now.
func (s *Service) facts(r *http.Request) request.Facts { return request.Of(r).At(s.Now()) }
