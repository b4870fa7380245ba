package oauth_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/latchkey/latchkey/internal/authflow"
	"github.com/latchkey/latchkey/internal/events"
	"github.com/latchkey/latchkey/internal/identity"
	"github.com/latchkey/latchkey/internal/oauth"
	"github.com/latchkey/latchkey/internal/request"
	"github.com/latchkey/latchkey/internal/store"
	"github.com/latchkey/latchkey/internal/store/sqlite"
	"github.com/latchkey/latchkey/internal/token"
)

// The grants' rules, tested on the service alone: no HTTP, no client
// authentication (the request's client is taken as authenticated), a real
// SQLite store.

// rules is a Service on a fresh store, with a clock the test moves.
type rules struct {
	svc    *oauth.Service
	st     store.Store
	tokens token.Strategy
	now    time.Time
	person store.Person
	// login is what the password checker answers.
	login error
}

func newRules(t *testing.T) *rules {
	t.Helper()
	ctx := context.Background()
	st, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "rules.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	h, err := token.NewHasher(bytes.Repeat([]byte{9}, 32))
	if err != nil {
		t.Fatal(err)
	}
	r := &rules{st: st, tokens: token.Opaque{Hasher: h}, now: time.Now().UTC().Truncate(time.Millisecond)}
	rec := events.NewRecorder()
	rec.Now = func() time.Time { return r.now }
	r.svc = &oauth.Service{Store: st, Hasher: h, Events: rec, Now: func() time.Time { return r.now },
		Passwords: r, Flow: authflow.Policy{PasswordLevel: 10}}
	for _, c := range []store.Client{
		{ID: "machine", Name: "Machine", TokenEndpointAuthMethod: "client_secret_basic",
			GrantTypes: []string{"client_credentials"}, Scopes: []string{"read", "write"},
			AccessTokenLifetime: time.Hour, RefreshTokenLifetime: 24 * time.Hour},
		{ID: "app", Name: "App", TokenEndpointAuthMethod: "none",
			GrantTypes:   []string{"authorization_code", "refresh_token", "urn:ietf:params:oauth:grant-type:device_code"},
			RedirectURIs: []string{"https://app.example/cb"}, Scopes: []string{"read", "write"},
			AccessTokenLifetime: time.Hour, RefreshTokenLifetime: 24 * time.Hour},
		{ID: "web", Name: "Web", TokenEndpointAuthMethod: "client_secret_basic",
			GrantTypes:   []string{"authorization_code", "refresh_token", "password"},
			RedirectURIs: []string{"https://web.example/cb"}, Scopes: []string{"read", "write"},
			AccessTokenLifetime: time.Hour, RefreshTokenLifetime: 24 * time.Hour},
	} {
		if err := st.UpsertClient(ctx, c); err != nil {
			t.Fatal(err)
		}
	}
	r.person = store.Person{ID: "p1", Email: "jane@example.com", Status: identity.StatusActivated, CreatedAt: r.now, UpdatedAt: r.now}
	if err := st.CreatePerson(ctx, r.person); err != nil {
		t.Fatal(err)
	}
	return r
}

// CheckPassword is the password checker of the password grant.
func (r *rules) CheckPassword(context.Context, request.Facts, string, string) (store.Person, error) {
	if r.login != nil {
		return store.Person{}, r.login
	}
	return r.person, nil
}

func (r *rules) client(t *testing.T, id string) store.Client {
	t.Helper()
	c, err := r.st.GetClient(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func (r *rules) exchange(t *testing.T, client string, form map[string]string) (*oauth.TokenResponse, error) {
	t.Helper()
	return r.svc.Exchange(context.Background(), oauth.TokenRequest{Facts: request.Facts{Addr: "192.0.2.1", Time: r.now},
		Client: r.client(t, client), Form: form})
}

// code stores an authorization code for client and returns its value.
func (r *rules) code(t *testing.T, client string, edit func(*store.AuthCode)) string {
	t.Helper()
	value, key, err := r.tokens.Mint(token.AuthCode, token.Claims{})
	if err != nil {
		t.Fatal(err)
	}
	c := store.AuthCode{Hash: key, ClientID: client, Subject: r.person.ID, Scopes: []string{"read"}, AuthLevel: 10,
		AMR: []string{"DEFAULT"}, IssuedAt: r.now, ExpiresAt: r.now.Add(time.Minute)}
	if edit != nil {
		edit(&c)
	}
	if err := r.st.CreateAuthCode(context.Background(), c); err != nil {
		t.Fatal(err)
	}
	return value
}

// device stores a device authorization of the app client and returns its device code.
func (r *rules) device(t *testing.T, edit func(*store.DeviceCode)) string {
	t.Helper()
	value, key, err := r.tokens.Mint(token.DeviceCode, token.Claims{})
	if err != nil {
		t.Fatal(err)
	}
	d := store.DeviceCode{Hash: key, UserCode: "BCDFGHJK", ClientID: "app", Scopes: []string{"read"}, Interval: 5,
		Status: store.DevicePending, CreatedAt: r.now, ExpiresAt: r.now.Add(10 * time.Minute)}
	if edit != nil {
		edit(&d)
	}
	if err := r.st.CreateDeviceCode(context.Background(), d); err != nil {
		t.Fatal(err)
	}
	return value
}

// recorded lists the OAuth event types recorded so far.
func (r *rules) recorded(t *testing.T) []string {
	t.Helper()
	es, err := r.st.SearchEvents(context.Background(), store.EventFilter{Kind: store.EventOAuth}, 0, 1000)
	if err != nil {
		t.Fatal(err)
	}
	var types []string
	for _, e := range es {
		types = append(types, e.Type)
	}
	return types
}

// oauthCode is the OAuth error code of err, "" for nil; an error that is
// not an *oauth.Error is a failure of the test.
func oauthCode(t *testing.T, err error) string {
	t.Helper()
	if err == nil {
		return ""
	}
	var oe *oauth.Error
	if !errors.As(err, &oe) {
		t.Fatalf("error %v is not an *oauth.Error", err)
	}
	return oe.Code
}

func pkce(verifier string) string {
	sum := sha256.Sum256([]byte(verifier))
	return base64.RawURLEncoding.EncodeToString(sum[:])
}

const verifier = "a-verifier-of-forty-three-or-more-characters-0123456789"

// grantCase is one token request and what the rules answer to it.
type grantCase struct {
	name   string
	client string
	form   func(t *testing.T, r *rules) map[string]string
	// code is the OAuth error code expected; "" for tokens.
	code string
	// refresh: a refresh token is expected (when tokens are issued).
	refresh bool
	// event is a type the request must record; noEvent one it must not.
	event, noEvent string
}

func runGrantCases(t *testing.T, cases []grantCase) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := newRules(t)
			resp, err := r.exchange(t, tc.client, tc.form(t, r))
			if got := oauthCode(t, err); got != tc.code {
				t.Fatalf("error code %q (%v), want %q", got, err, tc.code)
			}
			if tc.code == "" {
				if resp.AccessToken == "" || resp.TokenType != "bearer" {
					t.Errorf("response %+v: want a bearer access token", resp)
				}
				if (resp.RefreshToken != "") != tc.refresh {
					t.Errorf("refresh token %q, want one: %v", resp.RefreshToken, tc.refresh)
				}
			}
			types := r.recorded(t)
			if tc.event != "" && !slices.Contains(types, tc.event) {
				t.Errorf("events %v, want %s", types, tc.event)
			}
			if tc.noEvent != "" && slices.Contains(types, tc.noEvent) {
				t.Errorf("events %v, want no %s", types, tc.noEvent)
			}
		})
	}
}

func form(kv ...string) map[string]string {
	m := map[string]string{}
	for i := 0; i+1 < len(kv); i += 2 {
		m[kv[i]] = kv[i+1]
	}
	return m
}

func fixed(kv ...string) func(*testing.T, *rules) map[string]string {
	return func(*testing.T, *rules) map[string]string { return form(kv...) }
}

func TestExchangeChecksTheGrantType(t *testing.T) {
	runGrantCases(t, []grantCase{
		{name: "a missing grant_type is invalid_request", client: "machine", form: fixed(),
			code: oauth.ErrInvalidRequest, event: events.TokenRequestInvalid},
		{name: "an unknown grant_type is unsupported", client: "machine", form: fixed("grant_type", "magic"),
			code: oauth.ErrUnsupportedGrantType, event: events.TokenRequestUnsupportedGrant},
		{name: "a grant the client does not list is unauthorized_client", client: "machine",
			form: fixed("grant_type", "password", "username", "jane@example.com", "password", "x"),
			code: oauth.ErrUnauthorizedClient, event: events.TokenRequestDisabledGrant},
	})
}

func TestClientCredentialsGrant(t *testing.T) {
	runGrantCases(t, []grantCase{
		{name: "allowed scopes get an access token and no refresh token", client: "machine",
			form: fixed("grant_type", "client_credentials", "scope", "read"), event: events.TokenRequestAccessTokenCreated},
		{name: "no scope asks for every allowed scope", client: "machine", form: fixed("grant_type", "client_credentials")},
		{name: "a scope the client may not have is invalid_scope", client: "machine",
			form: fixed("grant_type", "client_credentials", "scope", "admin"), code: oauth.ErrInvalidScope,
			event: events.TokenRequestScopeInvalid},
	})
}

func TestAuthorizationCodeGrant(t *testing.T) {
	withChallenge := func(c *store.AuthCode) { c.CodeChallenge, c.CodeChallengeMethod = pkce(verifier), "S256" }
	runGrantCases(t, []grantCase{
		{name: "a valid code with its verifier gets access and refresh tokens", client: "app",
			form: func(t *testing.T, r *rules) map[string]string {
				return form("grant_type", "authorization_code", "code", r.code(t, "app", withChallenge), "code_verifier", verifier)
			}, refresh: true, event: events.TokenRequestAccessTokenCreated},
		{name: "a wrong verifier is refused", client: "app",
			form: func(t *testing.T, r *rules) map[string]string {
				return form("grant_type", "authorization_code", "code", r.code(t, "app", withChallenge),
					"code_verifier", verifier+"x")
			}, code: oauth.ErrInvalidGrant, event: events.TokenRequestInvalidPKCEVerifier},
		{name: "a verifier for a code without a challenge is refused (downgrade)", client: "web",
			form: func(t *testing.T, r *rules) map[string]string {
				return form("grant_type", "authorization_code", "code", r.code(t, "web", nil), "code_verifier", verifier)
			}, code: oauth.ErrInvalidGrant, event: events.TokenRequestInvalidPKCEVerifier},
		{name: "a code of another client is refused", client: "web",
			form: func(t *testing.T, r *rules) map[string]string {
				return form("grant_type", "authorization_code", "code", r.code(t, "app", nil))
			}, code: oauth.ErrInvalidGrant, event: events.TokenRequestInvalidGrant},
		{name: "an expired code is refused", client: "web",
			form: func(t *testing.T, r *rules) map[string]string {
				return form("grant_type", "authorization_code", "code",
					r.code(t, "web", func(c *store.AuthCode) { c.ExpiresAt = r.now }))
			}, code: oauth.ErrInvalidGrant, event: events.TokenRequestInvalidGrant},
		{name: "a redirect_uri other than the authorization request's is refused", client: "web",
			form: func(t *testing.T, r *rules) map[string]string {
				return form("grant_type", "authorization_code", "redirect_uri", "https://evil.example/cb", "code",
					r.code(t, "web", func(c *store.AuthCode) { c.RedirectURI = "https://web.example/cb" }))
			}, code: oauth.ErrInvalidGrant, event: events.TokenRequestInvalidRedirectURI},
		{name: "an unknown code is refused", client: "web", form: fixed("grant_type", "authorization_code", "code", "lk_ac_nope"),
			code: oauth.ErrInvalidGrant},
		{name: "a missing code is invalid_request", client: "web", form: fixed("grant_type", "authorization_code"),
			code: oauth.ErrInvalidRequest},
	})
}

func TestAuthorizationCodeReuseRevokesWhatItIssued(t *testing.T) {
	r := newRules(t)
	code := r.code(t, "web", nil)
	first, err := r.exchange(t, "web", form("grant_type", "authorization_code", "code", code))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.exchange(t, "web", form("grant_type", "authorization_code", "code", code)); oauthCode(t, err) != oauth.ErrInvalidGrant {
		t.Fatalf("second use: %v, want invalid_grant", err)
	}
	if _, err := token.Active(context.Background(), r.tokens, r.st, token.AccessToken, first.AccessToken, r.now); !errors.Is(err, token.ErrInactive) {
		t.Errorf("the first use's access token after a replay: %v, want inactive", err)
	}
	if !slices.Contains(r.recorded(t), events.TokenRequestCodeReplayDetected) {
		t.Errorf("events %v, want %s", r.recorded(t), events.TokenRequestCodeReplayDetected)
	}
}

func TestRefreshTokenGrant(t *testing.T) {
	// issued runs the code flow for client and returns its refresh token.
	issued := func(t *testing.T, r *rules, client string) string {
		t.Helper()
		resp, err := r.exchange(t, client, form("grant_type", "authorization_code", "code", r.code(t, client, nil)))
		if err != nil {
			t.Fatal(err)
		}
		return resp.RefreshToken
	}
	runGrantCases(t, []grantCase{
		{name: "a public client gets a new refresh token", client: "app",
			form: func(t *testing.T, r *rules) map[string]string {
				return form("grant_type", "refresh_token", "refresh_token", issued(t, r, "app"))
			}, refresh: true, event: events.TokenRequestAccessTokenRefresh},
		{name: "a confidential client keeps its refresh token", client: "web",
			form: func(t *testing.T, r *rules) map[string]string {
				return form("grant_type", "refresh_token", "refresh_token", issued(t, r, "web"))
			}, refresh: true, event: events.TokenRequestAccessTokenRefresh},
		{name: "a narrower scope is allowed", client: "web",
			form: func(t *testing.T, r *rules) map[string]string {
				return form("grant_type", "refresh_token", "refresh_token", issued(t, r, "web"), "scope", "read")
			}, refresh: true},
		{name: "a scope the grant does not hold is invalid_scope", client: "web",
			form: func(t *testing.T, r *rules) map[string]string {
				return form("grant_type", "refresh_token", "refresh_token", issued(t, r, "web"), "scope", "write")
			}, code: oauth.ErrInvalidScope, event: events.TokenRequestScopeInvalid},
		{name: "another client's refresh token is refused", client: "web",
			form: func(t *testing.T, r *rules) map[string]string {
				return form("grant_type", "refresh_token", "refresh_token", issued(t, r, "app"))
			}, code: oauth.ErrInvalidGrant, event: events.TokenRequestInvalidRefreshToken},
		{name: "a refresh token past the grant's end is refused", client: "web",
			form: func(t *testing.T, r *rules) map[string]string {
				rt := issued(t, r, "web")
				r.now = r.now.Add(25 * time.Hour)
				return form("grant_type", "refresh_token", "refresh_token", rt)
			}, code: oauth.ErrInvalidGrant},
		{name: "a missing refresh_token is invalid_request", client: "web", form: fixed("grant_type", "refresh_token"),
			code: oauth.ErrInvalidRequest},
	})
}

func TestPublicRefreshTokenReuseRevokesTheGrant(t *testing.T) {
	r := newRules(t)
	first, err := r.exchange(t, "app", form("grant_type", "authorization_code", "code", r.code(t, "app", nil)))
	if err != nil {
		t.Fatal(err)
	}
	second, err := r.exchange(t, "app", form("grant_type", "refresh_token", "refresh_token", first.RefreshToken))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.exchange(t, "app", form("grant_type", "refresh_token", "refresh_token", first.RefreshToken)); oauthCode(t, err) != oauth.ErrInvalidGrant {
		t.Fatalf("reuse: %v, want invalid_grant", err)
	}
	if _, err := token.Active(context.Background(), r.tokens, r.st, token.AccessToken, second.AccessToken, r.now); !errors.Is(err, token.ErrInactive) {
		t.Errorf("the rotated pair after a reuse: %v, want inactive", err)
	}
}

func TestPasswordGrant(t *testing.T) {
	pw := func(login error) func(*testing.T, *rules) map[string]string {
		return func(_ *testing.T, r *rules) map[string]string {
			r.login = login
			return form("grant_type", "password", "username", "jane@example.com", "password", "secret", "scope", "read")
		}
	}
	runGrantCases(t, []grantCase{
		{name: "right credentials get tokens", client: "web", form: pw(nil), refresh: true,
			event: events.TokenRequestPasswordCreated},
		{name: "bad credentials are invalid_grant and recorded as such", client: "web",
			form: pw(identity.ErrBadCredentials), code: oauth.ErrInvalidGrant, event: events.TokenRequestPasswordInvalid},
		{name: "a throttled attempt is answered alike but not recorded as bad credentials", client: "web",
			form: pw(&identity.ThrottledError{RetryAfter: time.Minute}), code: oauth.ErrInvalidGrant,
			noEvent: events.TokenRequestPasswordInvalid},
		{name: "missing credentials are invalid_request", client: "web", form: fixed("grant_type", "password"),
			code: oauth.ErrInvalidRequest},
		{name: "a scope the client may not have is invalid_scope", client: "web",
			form: fixed("grant_type", "password", "username", "jane@example.com", "password", "secret", "scope", "admin"),
			code: oauth.ErrInvalidScope},
	})
}

func TestDeviceCodeGrant(t *testing.T) {
	const grant = "urn:ietf:params:oauth:grant-type:device_code"
	poll := func(edit func(*store.DeviceCode)) func(*testing.T, *rules) map[string]string {
		return func(t *testing.T, r *rules) map[string]string {
			return form("grant_type", grant, "device_code", r.device(t, edit))
		}
	}
	runGrantCases(t, []grantCase{
		{name: "a pending authorization is authorization_pending", client: "app", form: poll(nil),
			code: "authorization_pending"},
		{name: "a poll before the interval is slow_down", client: "app",
			form: poll(func(d *store.DeviceCode) { d.LastPolledAt = d.CreatedAt }), code: "slow_down"},
		{name: "an approved authorization gets tokens", client: "app",
			form: poll(func(d *store.DeviceCode) {
				d.Status, d.Subject, d.AuthLevel, d.AMR = store.DeviceApproved, "p1", 10, []string{"DEFAULT"}
			}), refresh: true, event: events.DeviceTokenCreated},
		{name: "a denied authorization is access_denied", client: "app",
			form: poll(func(d *store.DeviceCode) { d.Status = store.DeviceDenied }), code: oauth.ErrAccessDenied},
		{name: "an expired device code is expired_token", client: "app",
			form: poll(func(d *store.DeviceCode) { d.ExpiresAt = d.CreatedAt }), code: "expired_token",
			event: events.DeviceExpired},
		{name: "a used device code is invalid_grant", client: "app",
			form: poll(func(d *store.DeviceCode) { d.Status = store.DeviceUsed }), code: oauth.ErrInvalidGrant},
		{name: "an unknown device code is invalid_grant", client: "app",
			form: fixed("grant_type", grant, "device_code", "lk_dc_nope"), code: oauth.ErrInvalidGrant},
	})
}
