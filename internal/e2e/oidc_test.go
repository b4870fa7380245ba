package e2e

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/coreos/go-oidc/v3/oidc"
	"github.com/go-jose/go-jose/v4"
	"golang.org/x/oauth2"
	"golang.org/x/oauth2/clientcredentials"

	"github.com/latchkey/latchkey/internal/client"
	"github.com/latchkey/latchkey/internal/config"
	"github.com/latchkey/latchkey/internal/openapicheck"
	"github.com/latchkey/latchkey/internal/server/servertest"
)

// The OpenID Connect provider, end to end, with a relying-party library we
// did not write (coreos/go-oidc with golang.org/x/oauth2) on both stores.
// The flows go through the hosted pages without a browser
// (servertest.Authorize); the logout confirmation page is also driven in
// Chromium (TestEndSessionConfirmInBrowser).

const (
	rpSecret  = "rp-secret-0123456789abcdef"
	apiSecret = "api-secret-0123456789abcdef"
)

func oidcTestConfig(redirect, alg string) *config.Config {
	return &config.Config{
		OIDC: config.OIDC{SigningAlgorithm: alg},
		Clients: []config.Client{
			{ClientID: "rp", Name: "Relying Party", ClientSecret: rpSecret,
				TokenEndpointAuthMethod: client.AuthClientSecretBasic, RedirectURIs: []string{redirect},
				PostLogoutRedirectURIs: []string{redirect + "?bye=1"},
				GrantTypes:             []string{client.GrantAuthorizationCode, client.GrantRefreshToken},
				Scopes:                 []string{"read"}, ConsentRequired: boolPtr(false)},
			{ClientID: "consenting", Name: "Asks Consent", ClientSecret: rpSecret,
				TokenEndpointAuthMethod: client.AuthClientSecretBasic, RedirectURIs: []string{redirect},
				GrantTypes: []string{client.GrantAuthorizationCode}, Scopes: []string{"read"}, ConsentRequired: boolPtr(true)},
			{ClientID: "api", Name: "API client", ClientSecret: apiSecret, AccessTokenFormat: client.FormatJWT,
				TokenEndpointAuthMethod: client.AuthClientSecretBasic, GrantTypes: []string{client.GrantClientCredentials},
				Scopes: []string{"read", "vendor_api_config"}, IntrospectAnyToken: true},
		},
		Persons: []config.Person{{Email: personEmail, Password: personPass, FirstName: "Jane", LastName: "Doe"}},
	}
}

type oidcEnv struct {
	s        *servertest.Server
	app      *clientApp
	ctx      context.Context // carries the test server's HTTP client for oauth2 and go-oidc
	provider *oidc.Provider
	verifier *oidc.IDTokenVerifier
	rp       *oauth2.Config
}

// forEachOIDCBackend runs fn on every store with a server whose keys sign
// with alg, and a relying party that discovered it.
func forEachOIDCBackend(t *testing.T, alg string, fn func(t *testing.T, e *oidcEnv)) {
	for _, backend := range servertest.Backends {
		t.Run(backend, func(t *testing.T) {
			fn(t, newOIDCEnv(t, backend, alg))
		})
	}
}

func newOIDCEnv(t *testing.T, backend, alg string) *oidcEnv {
	t.Helper()
	app := newClientApp(t)
	clock := servertest.NewClock()
	s := servertest.Start(t, oidcTestConfig(app.callbackURL(), alg), servertest.Options{Backend: backend, Clock: clock})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	t.Cleanup(cancel)
	ctx = oidc.ClientContext(ctx, s.Client())
	provider, err := oidc.NewProvider(ctx, s.URL)
	if err != nil {
		t.Fatalf("discovery: %v", err)
	}
	return &oidcEnv{s: s, app: app, ctx: ctx, provider: provider,
		verifier: provider.Verifier(&oidc.Config{ClientID: "rp", SupportedSigningAlgs: []string{alg}}),
		rp: &oauth2.Config{ClientID: "rp", ClientSecret: rpSecret, RedirectURL: app.callbackURL(),
			Endpoint: provider.Endpoint(), Scopes: []string{oidc.ScopeOpenID, "profile", "email"}}}
}

func randomString(t *testing.T) string {
	b := make([]byte, 16)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return base64.RawURLEncoding.EncodeToString(b)
}

// codeFlow runs an authorization request with nonce and PKCE through the
// hosted pages (signing in when they ask) and returns where the browser
// was sent back to, with the PKCE verifier.
func (e *oidcEnv) codeFlow(t *testing.T, b *http.Client, cfg *oauth2.Config, extra ...oauth2.AuthCodeOption) (servertest.Flow, string) {
	t.Helper()
	verifier := oauth2.GenerateVerifier()
	opts := append([]oauth2.AuthCodeOption{oauth2.S256ChallengeOption(verifier)}, extra...)
	f := e.s.Authorize(t, b, cfg.AuthCodeURL("st-1", opts...), personEmail, personPass, "allow")
	if f.Back == nil {
		t.Fatal("the flow never went back to the client")
	}
	return f, verifier
}

// signIn runs the code flow with nonce and returns the token and its
// verified ID token.
func (e *oidcEnv) signIn(t *testing.T, b *http.Client, nonce string, extra ...oauth2.AuthCodeOption) (*oauth2.Token, *oidc.IDToken, string) {
	t.Helper()
	f, verifier := e.codeFlow(t, b, e.rp, append([]oauth2.AuthCodeOption{oidc.Nonce(nonce)}, extra...)...)
	q := f.Back.Query()
	if q.Get("code") == "" || q.Get("state") != "st-1" {
		t.Fatalf("callback %v: want a code and the state", q)
	}
	tok, err := e.rp.Exchange(e.ctx, q.Get("code"), oauth2.VerifierOption(verifier))
	if err != nil {
		t.Fatalf("exchange: %v", err)
	}
	raw, _ := tok.Extra("id_token").(string)
	if raw == "" {
		t.Fatal("the token response has no id_token")
	}
	idt, err := e.verifier.Verify(e.ctx, raw)
	if err != nil {
		t.Fatalf("verify the ID token: %v", err)
	}
	return tok, idt, raw
}

func (e *oidcEnv) personID(t *testing.T) string {
	p, err := e.s.Store.GetPersonByEmail(context.Background(), "", personEmail)
	if err != nil {
		t.Fatal(err)
	}
	return p.ID
}

// introspect answers the introspection of token as the api client (a resource server).
func (e *oidcEnv) introspect(t *testing.T, token string) map[string]any {
	t.Helper()
	var got map[string]any
	introspectAs(t, e.s, "api", apiSecret, token, &got)
	return got
}

func TestOpenIDConnectProvider(t *testing.T) {
	forEachOIDCBackend(t, "RS256", func(t *testing.T, e *oidcEnv) {
		// Discovery: the endpoints both documents share are identical.
		var disc, meta map[string]any
		for path, into := range map[string]*map[string]any{"/.well-known/openid-configuration": &disc,
			"/.well-known/oauth-authorization-server": &meta} {
			req, _ := http.NewRequest("GET", e.s.URL+path, nil)
			_, body := openapicheck.Do(t, e.s.Client(), req) // checked against api/openapi.yaml
			if err := json.Unmarshal(body, into); err != nil {
				t.Fatal(err)
			}
		}
		for _, k := range []string{"issuer", "authorization_endpoint", "token_endpoint", "jwks_uri", "userinfo_endpoint",
			"end_session_endpoint", "revocation_endpoint", "introspection_endpoint", "device_authorization_endpoint"} {
			if disc[k] == nil || disc[k] != meta[k] {
				t.Errorf("%s: discovery %v, RFC 8414 metadata %v", k, disc[k], meta[k])
			}
		}
		var algs struct {
			Algs     []string `json:"id_token_signing_alg_values_supported"`
			Subjects []string `json:"subject_types_supported"`
			Scopes   []string `json:"scopes_supported"`
		}
		if err := e.provider.Claims(&algs); err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(algs.Algs, []string{"RS256"}) || !slices.Equal(algs.Subjects, []string{"public"}) || !slices.Contains(algs.Scopes, "openid") {
			t.Errorf("discovery: %+v", algs)
		}

		b := e.s.Browser()
		nonce := randomString(t)
		tok, idt, _ := e.signIn(t, b, nonce)
		if idt.Nonce != nonce {
			t.Errorf("nonce %q, want %q", idt.Nonce, nonce)
		}
		if err := idt.VerifyAccessToken(tok.AccessToken); err != nil {
			t.Errorf("at_hash: %v", err)
		}
		sub := e.personID(t)
		if idt.Subject != sub {
			t.Errorf("sub %q, want the person %q", idt.Subject, sub)
		}
		if got := e.introspect(t, tok.AccessToken); got["sub"] != sub {
			t.Errorf("introspection answers sub %v, the ID token %q", got["sub"], idt.Subject)
		}
		var claims struct {
			Email         string   `json:"email"`
			EmailVerified *bool    `json:"email_verified"`
			Name          string   `json:"name"`
			GivenName     string   `json:"given_name"`
			AMR           []string `json:"amr"`
			ACR           string   `json:"acr"`
			AuthTime      int64    `json:"auth_time"`
			AZP           string   `json:"azp"`
		}
		if err := idt.Claims(&claims); err != nil {
			t.Fatal(err)
		}
		if claims.Email != personEmail || claims.EmailVerified == nil || claims.Name != "Jane Doe" || claims.GivenName != "Jane" ||
			!slices.Equal(claims.AMR, []string{"pwd"}) || claims.ACR == "" || claims.AZP != "rp" {
			t.Errorf("ID token claims %+v", claims)
		}
		if d := time.Since(time.Unix(claims.AuthTime, 0)); d < -time.Minute || d > time.Minute {
			t.Errorf("auth_time %d is not the login just done", claims.AuthTime)
		}

		// UserInfo with the access token.
		info, err := e.provider.UserInfo(e.ctx, oauth2.StaticTokenSource(tok))
		if err != nil {
			t.Fatalf("userinfo: %v", err)
		}
		var infoClaims map[string]any
		if err := info.Claims(&infoClaims); err != nil {
			t.Fatal(err)
		}
		if info.Subject != sub || info.Email != personEmail || infoClaims["family_name"] != "Doe" {
			t.Errorf("userinfo %+v %v", info, infoClaims)
		}

		// Refresh: a new ID token for the same authentication, without the nonce.
		stale := *tok
		stale.Expiry = time.Now().Add(-time.Minute)
		fresh, err := e.rp.TokenSource(e.ctx, &stale).Token()
		if err != nil {
			t.Fatalf("refresh: %v", err)
		}
		raw, _ := fresh.Extra("id_token").(string)
		if raw == "" {
			t.Fatal("the refresh answer has no id_token")
		}
		again, err := e.verifier.Verify(e.ctx, raw)
		if err != nil {
			t.Fatalf("verify the refreshed ID token: %v", err)
		}
		var againClaims struct {
			AuthTime int64 `json:"auth_time"`
		}
		if err := again.Claims(&againClaims); err != nil {
			t.Fatal(err)
		}
		if again.Subject != sub || again.Nonce != "" || againClaims.AuthTime != claims.AuthTime {
			t.Errorf("refreshed ID token: sub %q nonce %q auth_time %d; want %q, no nonce, %d",
				again.Subject, again.Nonce, againClaims.AuthTime, sub, claims.AuthTime)
		}
		if err := again.VerifyAccessToken(fresh.AccessToken); err != nil {
			t.Errorf("refreshed at_hash: %v", err)
		}

		// Without openid the answer has no ID token, and UserInfo refuses the token.
		plain := *e.rp
		plain.Scopes = []string{"read"}
		f, verifier := e.codeFlow(t, b, &plain)
		tok2, err := plain.Exchange(e.ctx, f.Back.Query().Get("code"), oauth2.VerifierOption(verifier))
		if err != nil {
			t.Fatal(err)
		}
		if tok2.Extra("id_token") != nil {
			t.Error("an answer without scope openid carries an id_token")
		}
		if _, err := e.provider.UserInfo(e.ctx, oauth2.StaticTokenSource(tok2)); err == nil || !strings.Contains(err.Error(), "403") {
			t.Errorf("userinfo with a token without openid: %v, want 403", err)
		}
	})
}

// TestOpenIDConnectAlgorithms: ES256 and EdDSA keys sign ID tokens (at_hash
// with SHA-256 and SHA-512) and JWT access tokens a resource server
// verifies through the JWKS; revocation turns introspection off at once.
func TestOpenIDConnectAlgorithms(t *testing.T) {
	for _, alg := range []string{"ES256", "EdDSA"} {
		t.Run(alg, func(t *testing.T) {
			forEachOIDCBackend(t, alg, func(t *testing.T, e *oidcEnv) {
				tok, idt, _ := e.signIn(t, e.s.Browser(), randomString(t))
				if err := idt.VerifyAccessToken(tok.AccessToken); err != nil {
					t.Errorf("at_hash: %v", err)
				}
				cc := clientcredentials.Config{ClientID: "api", ClientSecret: apiSecret, TokenURL: e.provider.Endpoint().TokenURL,
					Scopes: []string{"read"}, AuthStyle: oauth2.AuthStyleInHeader}
				at, err := cc.Token(e.ctx)
				if err != nil {
					t.Fatal(err)
				}
				keys := oidc.NewRemoteKeySet(e.ctx, e.s.URL+"/.well-known/jwks.json")
				payload, err := keys.VerifySignature(e.ctx, at.AccessToken)
				if err != nil {
					t.Fatalf("the JWT access token does not verify with the JWKS: %v", err)
				}
				jws, err := jose.ParseSignedCompact(at.AccessToken, []jose.SignatureAlgorithm{jose.SignatureAlgorithm(alg)})
				if err != nil {
					t.Fatal(err)
				}
				if typ, _ := jws.Signatures[0].Protected.ExtraHeaders[jose.HeaderType].(string); typ != "at+jwt" {
					t.Errorf("typ %q, want at+jwt (RFC 9068)", typ)
				}
				var c map[string]any
				if err := json.Unmarshal(payload, &c); err != nil {
					t.Fatal(err)
				}
				for _, k := range []string{"iss", "exp", "aud", "sub", "client_id", "iat", "jti", "scope"} {
					if c[k] == nil {
						t.Errorf("JWT access token lacks %s: %v", k, c)
					}
				}
				if c["client_id"] != "api" || c["sub"] != "api" || c["scope"] != "read" || c["iss"] != e.s.URL {
					t.Errorf("JWT access token claims %v", c)
				}
				if got := e.introspect(t, at.AccessToken); got["active"] != true {
					t.Fatalf("introspection of the JWT access token: %v", got)
				}
				// A JWT access token is a bearer credential of the client APIs too.
				cc.Scopes = []string{"vendor_api_config"}
				apiTok, err := cc.Token(e.ctx)
				if err != nil {
					t.Fatal(err)
				}
				scopesAPI := func() int {
					req, _ := http.NewRequest("GET", e.s.URL+"/api/v1/configuration/scopes", nil)
					req.Header.Set("Authorization", "Bearer "+apiTok.AccessToken)
					resp, err := e.s.Client().Do(req)
					if err != nil {
						t.Fatal(err)
					}
					resp.Body.Close()
					return resp.StatusCode
				}
				if got := scopesAPI(); got != http.StatusOK {
					t.Errorf("the scopes API with a JWT access token: %d, want 200", got)
				}
				revokeReq, _ := http.NewRequest("POST", e.s.URL+"/oauth/revoke", strings.NewReader(url.Values{"token": {apiTok.AccessToken}}.Encode()))
				revokeReq.Header.Set("Content-Type", "application/x-www-form-urlencoded")
				revokeReq.SetBasicAuth("api", apiSecret)
				if resp, err := e.s.Client().Do(revokeReq); err != nil {
					t.Fatal(err)
				} else {
					resp.Body.Close()
				}
				if got := scopesAPI(); got != http.StatusUnauthorized {
					t.Errorf("the scopes API with a revoked JWT access token: %d, want 401", got)
				}
				form := url.Values{"token": {at.AccessToken}}
				req, _ := http.NewRequest("POST", e.s.URL+"/oauth/revoke", strings.NewReader(form.Encode()))
				req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
				req.SetBasicAuth("api", apiSecret)
				resp, err := e.s.Client().Do(req)
				if err != nil {
					t.Fatal(err)
				}
				resp.Body.Close()
				if resp.StatusCode != http.StatusOK {
					t.Fatalf("revoke: %d", resp.StatusCode)
				}
				if got := e.introspect(t, at.AccessToken); got["active"] != false {
					t.Errorf("a revoked JWT access token introspects %v", got)
				}
			})
		})
	}
}

// callbackError is the error of a flow that went back to the client.
func callbackError(t *testing.T, f servertest.Flow) string {
	t.Helper()
	if f.Back == nil {
		t.Fatal("no redirect to the client")
	}
	return f.Back.Query().Get("error")
}

func TestOpenIDConnectPrompt(t *testing.T) {
	forEachOIDCBackend(t, "RS256", func(t *testing.T, e *oidcEnv) {
		b := e.s.Browser()
		none := oauth2.SetAuthURLParam("prompt", "none")
		// No session: prompt=none answers login_required, no page is shown.
		f, _ := e.codeFlow(t, b, e.rp, none)
		if got := callbackError(t, f); got != "login_required" || f.LoginPages != 0 {
			t.Errorf("prompt=none without a session: error %q after %d login pages", got, f.LoginPages)
		}
		_, first, _ := e.signIn(t, b, randomString(t))
		// A session: prompt=none issues at once.
		f, _ = e.codeFlow(t, b, e.rp, none)
		if f.Back.Query().Get("code") == "" || f.LoginPages != 0 {
			t.Errorf("prompt=none with a session: %v after %d login pages", f.Back.Query(), f.LoginPages)
		}
		// A client that needs consent: consent_required.
		consenting := *e.rp
		consenting.ClientID = "consenting"
		f, _ = e.codeFlow(t, b, &consenting, none)
		if got := callbackError(t, f); got != "consent_required" || len(f.ConsentPages) != 0 {
			t.Errorf("prompt=none needing consent: %q", got)
		}
		// prompt=consent asks a client that never does.
		f, _ = e.codeFlow(t, b, e.rp, oauth2.SetAuthURLParam("prompt", "consent"))
		if len(f.ConsentPages) != 1 || f.Back.Query().Get("code") == "" {
			t.Fatalf("prompt=consent: %d consent pages, callback %v", len(f.ConsentPages), f.Back.Query())
		}
		if page := f.ConsentPages[0]; !strings.Contains(page, "Sign you in with your account") || !strings.Contains(page, "Your email address") {
			t.Errorf("the consent page does not describe the OpenID Connect scopes:\n%s", page)
		}
		// prompt=login signs in again, once, and auth_time moves.
		e.s.Clock.Advance(2 * time.Second)
		_, relogged, _ := e.signIn(t, b, randomString(t), oauth2.SetAuthURLParam("prompt", "login"))
		var a, c struct {
			AuthTime int64 `json:"auth_time"`
		}
		if err := first.Claims(&a); err != nil {
			t.Fatal(err)
		}
		if err := relogged.Claims(&c); err != nil {
			t.Fatal(err)
		}
		if c.AuthTime <= a.AuthTime {
			t.Errorf("prompt=login: auth_time %d did not move past %d", c.AuthTime, a.AuthTime)
		}
		// max_age: a session older than it signs in again; a younger one does not.
		e.s.Clock.Advance(10 * time.Minute)
		f, _ = e.codeFlow(t, b, e.rp, oauth2.SetAuthURLParam("max_age", "3600"))
		if f.LoginPages != 0 || f.Back.Query().Get("code") == "" {
			t.Errorf("max_age=3600 on a 10-minute session: %d login pages", f.LoginPages)
		}
		f, _ = e.codeFlow(t, b, e.rp, oauth2.SetAuthURLParam("max_age", "60"), none)
		if got := callbackError(t, f); got != "login_required" {
			t.Errorf("prompt=none, max_age=60 on a 10-minute session: %q, want login_required", got)
		}
		f, _ = e.codeFlow(t, b, e.rp, oauth2.SetAuthURLParam("max_age", "60"))
		if f.LoginPages != 1 || f.Back.Query().Get("code") == "" {
			t.Errorf("max_age=60 on a 10-minute session: %d login pages, callback %v", f.LoginPages, f.Back.Query())
		}
	})
}

func TestOpenIDConnectHints(t *testing.T) {
	e := newOIDCEnv(t, "sqlite", "RS256")
	b := e.s.Browser()
	// login_hint fills in the address; ui_locales picks the page language.
	resp, err := b.Get(e.rp.AuthCodeURL("st", oauth2.S256ChallengeOption(oauth2.GenerateVerifier()),
		oauth2.SetAuthURLParam("login_hint", "hint@example.com"), oauth2.SetAuthURLParam("ui_locales", "fr-FR nl-NL en")))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	loc, _ := resp.Location()
	page := servertest.Get(t, b, loc.String())
	if !strings.Contains(page, `value="hint@example.com"`) || !strings.Contains(page, `lang="nl"`) {
		t.Errorf("login page without the hinted address or in the wrong language:\n%s", page)
	}
	// id_token_hint of the signed-in person: prompt=none goes on; tampered: invalid_request.
	_, _, raw := e.signIn(t, b, randomString(t))
	none := oauth2.SetAuthURLParam("prompt", "none")
	f, _ := e.codeFlow(t, b, e.rp, none, oauth2.SetAuthURLParam("id_token_hint", raw))
	if f.Back.Query().Get("code") == "" {
		t.Errorf("id_token_hint of the signed-in person with prompt=none: %v", f.Back.Query())
	}
	parts := strings.Split(raw, ".")
	tampered := parts[0] + "." + base64.RawURLEncoding.EncodeToString([]byte(`{"iss":"`+e.s.URL+`","sub":"someone-else","aud":"rp"}`)) + "." + parts[2]
	f, _ = e.codeFlow(t, b, e.rp, none, oauth2.SetAuthURLParam("id_token_hint", tampered))
	if got := callbackError(t, f); got != "invalid_request" {
		t.Errorf("a tampered id_token_hint: %q, want invalid_request", got)
	}
}

func TestOpenIDConnectBadInput(t *testing.T) {
	e := newOIDCEnv(t, "sqlite", "RS256")
	b := e.s.Browser()
	for _, tc := range []struct{ name, key, value string }{
		{"unknown prompt value", "prompt", "sideways"},
		{"prompt=none with login", "prompt", "none login"},
		{"negative max_age", "max_age", "-1"},
		{"max_age not a number", "max_age", "soon"},
		{"id_token_hint not a JWT", "id_token_hint", "not-a-jwt"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f, _ := e.codeFlow(t, b, e.rp, oauth2.SetAuthURLParam(tc.key, tc.value))
			if got := callbackError(t, f); got != "invalid_request" || f.LoginPages != 0 {
				t.Errorf("%s=%q: error %q after %d login pages, want invalid_request", tc.key, tc.value, got, f.LoginPages)
			}
		})
	}
	// UserInfo: RFC 6750 answers.
	for _, tc := range []struct {
		name, auth string
		status     int
		challenge  string
	}{
		{"no token", "", http.StatusUnauthorized, `Bearer realm="latchkey"`},
		{"unknown token", "Bearer lk_at_unknown", http.StatusUnauthorized, `error="invalid_token"`},
	} {
		for _, method := range []string{"GET", "POST"} {
			req, _ := http.NewRequest(method, e.s.URL+"/oauth/userinfo", nil)
			if tc.auth != "" {
				req.Header.Set("Authorization", tc.auth)
			}
			resp, body := openapicheck.Do(t, e.s.Client(), req)
			if resp.StatusCode != tc.status || !strings.Contains(resp.Header.Get("WWW-Authenticate"), tc.challenge) {
				t.Errorf("userinfo %s %s: %d %q %s", method, tc.name, resp.StatusCode, resp.Header.Get("WWW-Authenticate"), body)
			}
		}
	}
	// A client without a person's grant cannot ask for openid.
	cc := clientcredentials.Config{ClientID: "api", ClientSecret: apiSecret, TokenURL: e.provider.Endpoint().TokenURL,
		Scopes: []string{"openid"}, AuthStyle: oauth2.AuthStyleInHeader}
	if _, err := cc.Token(e.ctx); err == nil || !strings.Contains(err.Error(), "invalid_scope") {
		t.Errorf("client credentials with openid: %v, want invalid_scope", err)
	}
	// The token in the header and the form at once is refused.
	tok, _, _ := e.signIn(t, b, randomString(t))
	req, _ := http.NewRequest("POST", e.s.URL+"/oauth/userinfo", strings.NewReader(url.Values{"access_token": {tok.AccessToken}}.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Authorization", "Bearer "+tok.AccessToken)
	resp, err := e.s.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusBadRequest {
		t.Errorf("userinfo with two tokens: %d, want 400", resp.StatusCode)
	}
	// The form token alone works (RFC 6750 section 2.2).
	req, _ = http.NewRequest("POST", e.s.URL+"/oauth/userinfo", strings.NewReader(url.Values{"access_token": {tok.AccessToken}}.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	if resp, _ := openapicheck.Do(t, e.s.Client(), req); resp.StatusCode != http.StatusOK {
		t.Errorf("userinfo with a form token: %d", resp.StatusCode)
	}
}

// endSession calls the end-session endpoint with the browser b.
func (e *oidcEnv) endSession(t *testing.T, b *http.Client, q url.Values) (*http.Response, string) {
	t.Helper()
	resp, err := b.Get(e.s.URL + "/oauth/end_session?" + q.Encode())
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp, string(body)
}

func TestOpenIDConnectLogout(t *testing.T) {
	forEachOIDCBackend(t, "RS256", func(t *testing.T, e *oidcEnv) {
		b := e.s.Browser()
		_, _, raw := e.signIn(t, b, randomString(t))
		back := e.app.callbackURL() + "?bye=1"
		// Refused before anything ends: a URI the client did not register, a tampered hint.
		parts := strings.Split(raw, ".")
		for name, q := range map[string]url.Values{
			"unregistered uri":   {"id_token_hint": {raw}, "post_logout_redirect_uri": {"https://evil.example/"}},
			"uri without client": {"post_logout_redirect_uri": {back}},
			"tampered hint":      {"id_token_hint": {parts[0] + "." + parts[1] + "." + parts[2][:len(parts[2])-4] + "AAAA"}},
			"other client":       {"id_token_hint": {raw}, "client_id": {"consenting"}},
		} {
			resp, body := e.endSession(t, b, q)
			if resp.StatusCode != http.StatusBadRequest || resp.Header.Get("Location") != "" {
				t.Errorf("%s: %d %q\n%s", name, resp.StatusCode, resp.Header.Get("Location"), body)
			}
		}
		f, _ := e.codeFlow(t, b, e.rp, oauth2.SetAuthURLParam("prompt", "none"))
		if f.Back.Query().Get("code") == "" {
			t.Fatal("a refused logout ended the session")
		}
		// Without a hint, a signed-in person confirms first.
		resp, body := e.endSession(t, b, url.Values{"client_id": {"rp"}, "post_logout_redirect_uri": {back}, "state": {"s1"}})
		if resp.StatusCode != http.StatusOK || !strings.Contains(body, `id="confirm"`) {
			t.Fatalf("logout without a hint: %d, want the confirmation page\n%s", resp.StatusCode, body)
		}
		// The hint of the signed-in person ends the session at once.
		resp, _ = e.endSession(t, b, url.Values{"id_token_hint": {raw}, "post_logout_redirect_uri": {back}, "state": {"s2"}})
		loc, _ := resp.Location()
		if resp.StatusCode != http.StatusSeeOther || loc == nil || loc.Query().Get("state") != "s2" || loc.Query().Get("bye") != "1" {
			t.Fatalf("logout with a hint: %d to %v", resp.StatusCode, loc)
		}
		f, _ = e.codeFlow(t, b, e.rp, oauth2.SetAuthURLParam("prompt", "none"))
		if got := callbackError(t, f); got != "login_required" {
			t.Errorf("after logout prompt=none answers %q, want login_required", got)
		}
		// GET /logout keeps working.
		if resp, _ := e.endSession(t, b, url.Values{}); resp.StatusCode != http.StatusOK {
			t.Errorf("end_session without parameters and session: %d", resp.StatusCode)
		}
		if body := servertest.Get(t, b, e.s.URL+"/logout"); !strings.Contains(body, "signed-out") {
			t.Errorf("/logout: %s", body)
		}
	})
}

// TestKeyRotationKeepsOldTokensVerifiable: after a rotation the new key
// signs, and an ID token the old key signed still verifies through the
// JWKS a relying party fetches.
func TestKeyRotationKeepsOldTokensVerifiable(t *testing.T) {
	forEachOIDCBackend(t, "RS256", func(t *testing.T, e *oidcEnv) {
		b := e.s.Browser()
		_, old, oldRaw := e.signIn(t, b, randomString(t))
		e.s.Clock.Advance(time.Second) // Rotate takes a key published at this very instant for a concurrent rotation
		info, err := e.s.App.Keys().Rotate(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		e.s.Clock.Advance(24*time.Hour + time.Minute) // past key_publish_ahead (24h) and the keys' cache
		_, _, newRaw := e.signIn(t, b, randomString(t))
		kid := func(raw string) string {
			jws, err := jose.ParseSignedCompact(raw, []jose.SignatureAlgorithm{jose.RS256})
			if err != nil {
				t.Fatal(err)
			}
			return jws.Signatures[0].Protected.KeyID
		}
		if kid(newRaw) != info.KID || kid(oldRaw) == info.KID {
			t.Errorf("after the rotation the new ID token is signed by %s, the old by %s; the new key is %s", kid(newRaw), kid(oldRaw), info.KID)
		}
		// A fresh relying party (no cached keys) verifies both signatures,
		// and the old token, checked at a time it was valid, in full.
		keys := oidc.NewRemoteKeySet(e.ctx, e.s.URL+"/.well-known/jwks.json")
		for name, raw := range map[string]string{"old": oldRaw, "new": newRaw} {
			if _, err := keys.VerifySignature(e.ctx, raw); err != nil {
				t.Errorf("%s ID token does not verify through the JWKS: %v", name, err)
			}
		}
		then := oidc.NewVerifier(e.s.URL, keys, &oidc.Config{ClientID: "rp", Now: func() time.Time { return old.IssuedAt.Add(time.Minute) }})
		if _, err := then.Verify(e.ctx, oldRaw); err != nil {
			t.Errorf("the old ID token: %v", err)
		}
	})
}

// TestEndSessionConfirmInBrowser: a logout link without an id_token_hint
// asks the signed-in person first; confirming ends the session and goes
// back to the client's registered address with the state.
func TestEndSessionConfirmInBrowser(t *testing.T) {
	forEachBackend(t, func(t *testing.T, e *env) {
		cfg := e.oauthConfig("web", webSecret, oauth2.AuthStyleInHeader, "openid")
		navigate(t, e.ctx, cfg.AuthCodeURL("st", oauth2.S256ChallengeOption(oauth2.GenerateVerifier())))
		expectPage(t, login(t, e.ctx, personEmail, personPass), e.s.URL, "/consent", 200)
		click(t, e.ctx, "allow")
		e.expectCode(t, e.app.wait(t), "st")

		logout := e.s.URL + "/oauth/end_session?" + url.Values{"client_id": {"web"},
			"post_logout_redirect_uri": {e.app.callbackURL()}, "state": {"bye-1"}}.Encode()
		resp := navigate(t, e.ctx, logout)
		expectPage(t, resp, e.s.URL, "/oauth/end_session", 200)
		expectStyled(t, e.ctx)
		e.screenshot(t, "end_session.png")
		resp = click(t, e.ctx, "confirm")
		if !strings.HasPrefix(resp.URL, e.app.callbackURL()+"?") {
			t.Fatalf("after confirming the browser is at %s, want the client's post-logout address", resp.URL)
		}
		if q := e.app.wait(t); q.Get("state") != "bye-1" {
			t.Errorf("post-logout redirect %v, want state bye-1", q)
		}
		// The session is gone: the next authorization shows the login page.
		resp = navigate(t, e.ctx, cfg.AuthCodeURL("st2", oauth2.S256ChallengeOption(oauth2.GenerateVerifier())))
		expectPage(t, resp, e.s.URL, "/login", 200)
	})
}
