package oauth_test

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/oauth2"
	"golang.org/x/oauth2/clientcredentials"

	"github.com/latchkey/latchkey/internal/config"
	"github.com/latchkey/latchkey/internal/openapicheck"
	"github.com/latchkey/latchkey/internal/server/servertest"
	"github.com/latchkey/latchkey/internal/store"
	"github.com/latchkey/latchkey/internal/store/sqlstore"
)

const (
	webSecret   = "web-secret-web-secret"
	m2mSecret   = "m2m-secret-m2m-secret"
	redirect    = "https://app.example/cb"
	personEmail = "jane@example.com"
	personPass  = "correct horse battery staple"
)

func testConfig() *config.Config {
	no := false
	return &config.Config{
		Clients: []config.Client{
			{ClientID: "web", ClientSecret: webSecret, RedirectURIs: []string{redirect},
				GrantTypes: []string{"authorization_code", "refresh_token"}, Scopes: []string{"read", "write"}, ConsentRequired: &no},
			{ClientID: "spa", TokenEndpointAuthMethod: "none", RedirectURIs: []string{redirect},
				GrantTypes: []string{"authorization_code", "refresh_token"}, Scopes: []string{"read", "write"}, ConsentRequired: &no},
			{ClientID: "m2m", ClientSecret: m2mSecret, TokenEndpointAuthMethod: "client_secret_post",
				GrantTypes: []string{"client_credentials"}, Scopes: []string{"read", "write"}},
			{ClientID: "other", ClientSecret: "other-secret-other-secret", RedirectURIs: []string{"https://other.example/cb"},
				GrantTypes: []string{"authorization_code", "refresh_token", "client_credentials"}, Scopes: []string{"read"}, ConsentRequired: &no},
		},
		Persons: []config.Person{{Email: personEmail, Password: personPass, FirstName: "Jane", LastName: "Doe"}},
	}
}

func browser(t *testing.T, s *servertest.Server) *http.Client { return s.Browser() }

var csrfRE = servertest.CSRFRE

// authorize runs the authorization request through the hosted pages
// (browserless), allowing consent, and returns the redirect to the client.
func authorize(t *testing.T, s *servertest.Server, b *http.Client, authURL string) *url.URL {
	t.Helper()
	return s.Authorize(t, b, authURL, personEmail, personPass, "allow").Back
}

func get(t *testing.T, c *http.Client, u string) string { t.Helper(); return servertest.Get(t, c, u) }

func oauthConfig(s *servertest.Server, id, secret string, style oauth2.AuthStyle) *oauth2.Config {
	return &oauth2.Config{ClientID: id, ClientSecret: secret, RedirectURL: redirect, Scopes: []string{"read"},
		Endpoint: oauth2.Endpoint{AuthURL: s.URL + "/oauth/authorize", TokenURL: s.URL + "/oauth/token", AuthStyle: style}}
}

func clientCtx(s *servertest.Server) context.Context {
	return context.WithValue(context.Background(), oauth2.HTTPClient, s.Client())
}

// codeFor gets an authorization code for cfg with PKCE and returns it with its verifier.
func codeFor(t *testing.T, s *servertest.Server, b *http.Client, cfg *oauth2.Config) (string, string) {
	t.Helper()
	verifier := oauth2.GenerateVerifier()
	back := authorize(t, s, b, cfg.AuthCodeURL("st-1", oauth2.S256ChallengeOption(verifier)))
	q := back.Query()
	if q.Get("state") != "st-1" || q.Get("code") == "" || q.Get("iss") != s.URL {
		t.Fatalf("redirect back %s: want code, state st-1 and iss", back)
	}
	return q.Get("code"), verifier
}

func forEachBackend(t *testing.T, fn func(t *testing.T, s *servertest.Server)) {
	for _, backend := range servertest.Backends {
		t.Run(backend, func(t *testing.T) {
			fn(t, servertest.Start(t, testConfig(), servertest.Options{Backend: backend}))
		})
	}
}

func TestAuthorizationCodeFlowWithRealClient(t *testing.T) {
	forEachBackend(t, func(t *testing.T, s *servertest.Server) {
		ctx := clientCtx(s)
		b := browser(t, s)
		cfg := oauthConfig(s, "web", webSecret, oauth2.AuthStyleInHeader)
		code, verifier := codeFor(t, s, b, cfg)
		tok, err := cfg.Exchange(ctx, code, oauth2.VerifierOption(verifier))
		if err != nil {
			t.Fatal(err)
		}
		if !strings.HasPrefix(tok.AccessToken, "lk_at_") || !strings.HasPrefix(tok.RefreshToken, "lk_rt_") ||
			!tok.Expiry.After(time.Now()) || tok.Extra("profile_id") != "static" || tok.TokenType != "bearer" {
			t.Errorf("token %+v profile_id=%v", tok, tok.Extra("profile_id"))
		}
		// Refresh (confidential client: the refresh token stays the same).
		tok.Expiry = time.Now().Add(-time.Minute)
		fresh, err := cfg.TokenSource(ctx, tok).Token()
		if err != nil {
			t.Fatal(err)
		}
		if fresh.AccessToken == tok.AccessToken || fresh.RefreshToken != tok.RefreshToken {
			t.Errorf("refresh gave access %q refresh %q", fresh.AccessToken, fresh.RefreshToken)
		}
		// Revoke the refresh token: the grant is gone, refresh fails.
		resp := post(t, s, "/oauth/revoke", url.Values{"token": {tok.RefreshToken}, "token_type_hint": {"refresh_token"}}, "web", webSecret)
		if resp.status != 200 || resp.body != "" {
			t.Errorf("revoke: %d %q", resp.status, resp.body)
		}
		fresh.Expiry = time.Now().Add(-time.Minute)
		_, err = cfg.TokenSource(ctx, fresh).Token()
		if re, ok := err.(*oauth2.RetrieveError); !ok || re.ErrorCode != "invalid_grant" {
			t.Errorf("refresh after revocation: %v, want invalid_grant", err)
		}
		// The logout sent again: answered alike, its event recorded, and
		// nothing written that would move PostgreSQL's token generation
		// (which empties every instance's token cache).
		type generations interface {
			Generations(context.Context) (sqlstore.Generations, error)
		}
		var gens generations
		if strings.HasSuffix(t.Name(), "/postgres") {
			gens = s.Store.(generations)
		}
		var before sqlstore.Generations
		if gens != nil {
			if before, err = gens.Generations(ctx); err != nil {
				t.Fatal(err)
			}
		}
		for range 2 {
			if resp := post(t, s, "/oauth/revoke", url.Values{"token": {tok.RefreshToken}}, "web", webSecret); resp.status != 200 || resp.body != "" {
				t.Errorf("a repeated revocation: %d %q", resp.status, resp.body)
			}
		}
		if gens != nil {
			if after, err := gens.Generations(ctx); err != nil || after.Token != before.Token {
				t.Errorf("repeated revocations moved the token generation %d → %d (%v)", before.Token, after.Token, err)
			}
		}
		n, err := s.Store.CountEvents(ctx, store.EventFilter{Kind: store.EventOAuth, Types: []string{"TOKEN_REVOKE_REFRESH_TOKEN_SUCCESS"}}, 10)
		if err != nil || n != 3 {
			t.Errorf("%d refresh token revocation events, %v; want 3", n, err)
		}
	})
}

func TestPublicClientRefreshRotationAndReuse(t *testing.T) {
	forEachBackend(t, func(t *testing.T, s *servertest.Server) {
		ctx := clientCtx(s)
		b := browser(t, s)
		cfg := oauthConfig(s, "spa", "", oauth2.AuthStyleInParams)
		code, verifier := codeFor(t, s, b, cfg)
		tok, err := cfg.Exchange(ctx, code, oauth2.VerifierOption(verifier))
		if err != nil {
			t.Fatal(err)
		}
		old := *tok
		tok.Expiry = time.Now().Add(-time.Minute)
		rotated, err := cfg.TokenSource(ctx, tok).Token()
		if err != nil {
			t.Fatal(err)
		}
		if rotated.RefreshToken == old.RefreshToken {
			t.Fatal("a public client's refresh token must rotate")
		}
		// Reusing the old refresh token revokes the whole family.
		r := post(t, s, "/oauth/token", url.Values{"grant_type": {"refresh_token"}, "refresh_token": {old.RefreshToken}, "client_id": {"spa"}}, "", "")
		if r.status != 400 || r.json["error"] != "invalid_grant" {
			t.Errorf("reuse: %d %v", r.status, r.json)
		}
		r = post(t, s, "/oauth/token", url.Values{"grant_type": {"refresh_token"}, "refresh_token": {rotated.RefreshToken}, "client_id": {"spa"}}, "", "")
		if r.status != 400 || r.json["error"] != "invalid_grant" {
			t.Errorf("the newest refresh token must die with its family: %d %v", r.status, r.json)
		}
	})
}

func TestClientCredentialsWithRealClient(t *testing.T) {
	forEachBackend(t, func(t *testing.T, s *servertest.Server) {
		for _, cc := range []clientcredentials.Config{
			{ClientID: "m2m", ClientSecret: m2mSecret, TokenURL: s.URL + "/oauth/token", Scopes: []string{"write"}, AuthStyle: oauth2.AuthStyleInParams},
			{ClientID: "other", ClientSecret: "other-secret-other-secret", TokenURL: s.URL + "/oauth/token", Scopes: []string{"read"}, AuthStyle: oauth2.AuthStyleInHeader},
		} {
			tok, err := cc.Token(clientCtx(s))
			if err != nil {
				t.Fatalf("%s: %v", cc.ClientID, err)
			}
			if !strings.HasPrefix(tok.AccessToken, "lk_at_") || tok.RefreshToken != "" {
				t.Errorf("%s: token %+v: want an access token and no refresh token", cc.ClientID, tok)
			}
		}
	})
}

type answer struct {
	status int
	header http.Header
	body   string
	json   map[string]any
}

func post(t testing.TB, s *servertest.Server, path string, form url.Values, user, pass string) answer {
	t.Helper()
	req, _ := http.NewRequest("POST", s.URL+path, strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	if user != "" {
		req.SetBasicAuth(url.QueryEscape(user), url.QueryEscape(pass))
	}
	resp, body := openapicheck.Do(t, s.Client(), req)
	a := answer{status: resp.StatusCode, header: resp.Header, body: string(body)}
	_ = json.Unmarshal(body, &a.json)
	return a
}

func s256(v string) string {
	sum := sha256.Sum256([]byte(v))
	return base64.RawURLEncoding.EncodeToString(sum[:])
}

func TestTokenEndpointRefusals(t *testing.T) {
	forEachBackend(t, func(t *testing.T, s *servertest.Server) {
		b := browser(t, s)
		web := oauthConfig(s, "web", webSecret, oauth2.AuthStyleInHeader)
		freshCode := func() (string, string) { return codeFor(t, s, b, web) }
		code1, ver1 := freshCode()
		code2, _ := freshCode()
		code3, ver3 := freshCode()
		code4, ver4 := freshCode()
		tests := []struct {
			name       string
			form       url.Values
			user, pass string
			status     int
			code       string
		}{
			{"unknown client", url.Values{"grant_type": {"client_credentials"}}, "nobody", "x", 401, "invalid_client"},
			{"wrong secret", url.Values{"grant_type": {"client_credentials"}}, "other", "wrong", 401, "invalid_client"},
			{"no credentials", url.Values{"grant_type": {"client_credentials"}}, "", "", 401, "invalid_client"},
			{"missing grant type", url.Values{}, "other", "other-secret-other-secret", 400, "invalid_request"},
			{"unsupported grant type", url.Values{"grant_type": {"urn:magic"}}, "other", "other-secret-other-secret", 400, "unsupported_grant_type"},
			{"grant type not allowed for the client", url.Values{"grant_type": {"client_credentials"}}, "web", webSecret, 400, "unauthorized_client"},
			{"scope not allowed", url.Values{"grant_type": {"client_credentials"}, "scope": {"admin"}}, "other", "other-secret-other-secret", 400, "invalid_scope"},
			{"repeated parameter", url.Values{"grant_type": {"client_credentials", "client_credentials"}}, "other", "other-secret-other-secret", 400, "invalid_request"},
			{"code missing", url.Values{"grant_type": {"authorization_code"}}, "web", webSecret, 400, "invalid_request"},
			{"unknown code", url.Values{"grant_type": {"authorization_code"}, "code": {"lk_ac_nope"}, "redirect_uri": {redirect}}, "web", webSecret, 400, "invalid_grant"},
			{"verifier missing", url.Values{"grant_type": {"authorization_code"}, "code": {code1}, "redirect_uri": {redirect}}, "web", webSecret, 400, "invalid_grant"},
			{"verifier wrong", url.Values{"grant_type": {"authorization_code"}, "code": {code2}, "redirect_uri": {redirect}, "code_verifier": {ver1}}, "web", webSecret, 400, "invalid_grant"},
			{"redirect uri differs", url.Values{"grant_type": {"authorization_code"}, "code": {code3}, "redirect_uri": {"https://app.example/other"}, "code_verifier": {ver3}}, "web", webSecret, 400, "invalid_grant"},
			{"code of another client", url.Values{"grant_type": {"authorization_code"}, "code": {code4}, "redirect_uri": {redirect}, "code_verifier": {ver4}}, "other", "other-secret-other-secret", 400, "invalid_grant"},
			{"unknown refresh token", url.Values{"grant_type": {"refresh_token"}, "refresh_token": {"lk_rt_nope"}}, "web", webSecret, 400, "invalid_grant"},
		}
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				r := post(t, s, "/oauth/token", tt.form, tt.user, tt.pass)
				if r.status != tt.status || r.json["error"] != tt.code {
					t.Errorf("got %d %v, want %d %s", r.status, r.json, tt.status, tt.code)
				}
				if r.header.Get("Cache-Control") != "no-store" {
					t.Error("an error answer must not be cached")
				}
				if tt.status == 401 && r.header.Get("WWW-Authenticate") == "" {
					t.Error("a 401 needs a WWW-Authenticate challenge")
				}
			})
		}
		// A burnt code stays burnt: even the right verifier fails afterwards.
		r := post(t, s, "/oauth/token", url.Values{"grant_type": {"authorization_code"}, "code": {code1}, "redirect_uri": {redirect}, "code_verifier": {ver1}}, "web", webSecret)
		if r.status != 400 || r.json["error"] != "invalid_grant" {
			t.Errorf("a code that failed once must not work again: %d %v", r.status, r.json)
		}
	})
}

func TestTokenResponseShape(t *testing.T) {
	s := servertest.Start(t, testConfig(), servertest.Options{})
	r := post(t, s, "/oauth/token", url.Values{"grant_type": {"client_credentials"}, "client_id": {"m2m"}, "client_secret": {m2mSecret}, "scope": {"read"}}, "", "")
	if r.status != 200 {
		t.Fatalf("%d %s", r.status, r.body)
	}
	for h, want := range map[string]string{"Content-Type": "application/json;charset=UTF-8", "Cache-Control": "no-store", "Pragma": "no-cache"} {
		if got := r.header.Get(h); got != want {
			t.Errorf("%s = %q, want %q", h, got, want)
		}
	}
	if r.json["token_type"] != "bearer" || r.json["expires_in"] != float64(3600) || r.json["profile_id"] != "static" {
		t.Errorf("body %v", r.json)
	}
	if _, ok := r.json["scope"]; ok {
		t.Error("scope is echoed only when it differs from the request")
	}
	r = post(t, s, "/oauth/token", url.Values{"grant_type": {"client_credentials"}, "client_id": {"m2m"}, "client_secret": {m2mSecret}}, "", "")
	if r.json["scope"] != "read write" {
		t.Errorf("a default scope must be echoed: %v", r.json)
	}
	resp, err := s.Client().Post(s.URL+"/oauth/token?grant_type=client_credentials", "application/x-www-form-urlencoded", strings.NewReader("client_id=m2m&client_secret="+m2mSecret))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 400 {
		t.Errorf("parameters in the URI query: %d, want 400", resp.StatusCode)
	}
}

func TestCodeReuseRevokesWhatItIssued(t *testing.T) {
	forEachBackend(t, func(t *testing.T, s *servertest.Server) {
		b := browser(t, s)
		code, verifier := codeFor(t, s, b, oauthConfig(s, "web", webSecret, oauth2.AuthStyleInHeader))
		form := url.Values{"grant_type": {"authorization_code"}, "code": {code}, "redirect_uri": {redirect}, "code_verifier": {verifier}}
		first := post(t, s, "/oauth/token", form, "web", webSecret)
		if first.status != 200 {
			t.Fatalf("first exchange: %d %s", first.status, first.body)
		}
		second := post(t, s, "/oauth/token", form, "web", webSecret)
		if second.status != 400 || second.json["error"] != "invalid_grant" {
			t.Errorf("second exchange: %d %v", second.status, second.json)
		}
		refresh := post(t, s, "/oauth/token", url.Values{"grant_type": {"refresh_token"}, "refresh_token": {first.json["refresh_token"].(string)}}, "web", webSecret)
		if refresh.status != 400 || refresh.json["error"] != "invalid_grant" {
			t.Errorf("the refresh token of a replayed code must be revoked: %d %v", refresh.status, refresh.json)
		}
	})
}

func TestCodeExpires(t *testing.T) {
	clock := servertest.NewClock()
	s := servertest.Start(t, testConfig(), servertest.Options{Clock: clock})
	b := browser(t, s)
	code, verifier := codeFor(t, s, b, oauthConfig(s, "web", webSecret, oauth2.AuthStyleInHeader))
	clock.Advance(61 * time.Second)
	r := post(t, s, "/oauth/token", url.Values{"grant_type": {"authorization_code"}, "code": {code}, "redirect_uri": {redirect}, "code_verifier": {verifier}}, "web", webSecret)
	if r.status != 400 || r.json["error"] != "invalid_grant" || !strings.Contains(r.json["error_description"].(string), "expired") {
		t.Errorf("expired code: %d %v", r.status, r.json)
	}
}

func TestRefreshScopeCanOnlyNarrow(t *testing.T) {
	s := servertest.Start(t, testConfig(), servertest.Options{})
	b := browser(t, s)
	code, verifier := codeFor(t, s, b, oauthConfig(s, "web", webSecret, oauth2.AuthStyleInHeader))
	tok := post(t, s, "/oauth/token", url.Values{"grant_type": {"authorization_code"}, "code": {code}, "redirect_uri": {redirect}, "code_verifier": {verifier}}, "web", webSecret)
	rt := tok.json["refresh_token"].(string)
	wide := post(t, s, "/oauth/token", url.Values{"grant_type": {"refresh_token"}, "refresh_token": {rt}, "scope": {"read write"}}, "web", webSecret)
	if wide.status != 400 || wide.json["error"] != "invalid_scope" {
		t.Errorf("wider scope: %d %v", wide.status, wide.json)
	}
	same := post(t, s, "/oauth/token", url.Values{"grant_type": {"refresh_token"}, "refresh_token": {rt}, "scope": {"read"}}, "web", webSecret)
	if same.status != 200 {
		t.Errorf("same scope: %d %v", same.status, same.json)
	}
}

func TestRevocationRules(t *testing.T) {
	forEachBackend(t, func(t *testing.T, s *servertest.Server) {
		tok := post(t, s, "/oauth/token", url.Values{"grant_type": {"client_credentials"}}, "other", "other-secret-other-secret")
		at := tok.json["access_token"].(string)
		if r := post(t, s, "/oauth/revoke", url.Values{"token": {at}}, "m2m", m2mSecret); r.status != 401 {
			t.Errorf("m2m uses client_secret_post; Basic must fail: %d", r.status)
		}
		r := post(t, s, "/oauth/revoke", url.Values{"token": {at}, "client_id": {"m2m"}, "client_secret": {m2mSecret}}, "", "")
		if r.status != 400 || r.json["error"] != "unauthorized_client" {
			t.Errorf("revoking another client's token: %d %v", r.status, r.json)
		}
		if r := post(t, s, "/oauth/revoke", url.Values{"token": {"lk_at_unknown"}}, "other", "other-secret-other-secret"); r.status != 200 || r.body != "" {
			t.Errorf("unknown token: %d %q, want 200 and an empty body (RFC 7009 section 2.2)", r.status, r.body)
		}
		if r := post(t, s, "/oauth/revoke", url.Values{}, "other", "other-secret-other-secret"); r.status != 400 || r.json["error"] != "invalid_request" {
			t.Errorf("missing token: %d %v", r.status, r.json)
		}
		if r := post(t, s, "/oauth/revoke", url.Values{"token": {at}, "token_type_hint": {"refresh_token"}}, "other", "other-secret-other-secret"); r.status != 200 {
			t.Errorf("own token with a wrong hint: %d %v", r.status, r.json)
		}
		if r := post(t, s, "/oauth/revoke", url.Values{"token": {at}}, "nobody", "x"); r.status != 401 {
			t.Errorf("unknown client: %d", r.status)
		}
	})
}

func TestConcurrentCodeExchangeIssuesOnce(t *testing.T) {
	forEachBackend(t, func(t *testing.T, s *servertest.Server) {
		b := browser(t, s)
		code, verifier := codeFor(t, s, b, oauthConfig(s, "web", webSecret, oauth2.AuthStyleInHeader))
		form := url.Values{"grant_type": {"authorization_code"}, "code": {code}, "redirect_uri": {redirect}, "code_verifier": {verifier}}
		var wg sync.WaitGroup
		var mu sync.Mutex
		statuses := map[int]int{}
		var won []byte
		start := make(chan struct{})
		for range 20 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				req, _ := http.NewRequest("POST", s.URL+"/oauth/token", strings.NewReader(form.Encode()))
				req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
				req.SetBasicAuth("web", webSecret)
				resp, err := s.Client().Do(req)
				if err != nil {
					t.Error(err)
					return
				}
				body, err := io.ReadAll(resp.Body)
				resp.Body.Close()
				if err != nil {
					t.Error(err)
				}
				mu.Lock()
				statuses[resp.StatusCode]++
				if resp.StatusCode == 200 {
					won = body
				}
				mu.Unlock()
			}()
		}
		close(start)
		wg.Wait()
		if statuses[200] != 1 || statuses[400] != 19 {
			t.Fatalf("statuses %v: want exactly one 200 and 19 400s", statuses)
		}
		// Each loser saw the code used by the winner's commit, so found
		// its grant and revoked it (RFC 9700 section 4.5).
		var tok struct {
			RefreshToken string `json:"refresh_token"`
		}
		if err := json.Unmarshal(won, &tok); err != nil || tok.RefreshToken == "" {
			t.Fatalf("the winner's answer %s: %v", won, err)
		}
		r := post(t, s, "/oauth/token", url.Values{"grant_type": {"refresh_token"}, "refresh_token": {tok.RefreshToken}}, "web", webSecret)
		if r.status != 400 || r.json["error"] != "invalid_grant" {
			t.Errorf("the winner's refresh token after the replays: %d %v, want invalid_grant", r.status, r.json)
		}
	})
}

func TestAuthorizeRefusals(t *testing.T) {
	s := servertest.Start(t, testConfig(), servertest.Options{})
	b := browser(t, s)
	ch := s256(oauth2.GenerateVerifier())
	tests := []struct {
		name     string
		query    string
		redirect bool   // answered by a redirect to the client
		code     string // error in the redirect
	}{
		{"unknown client shows a page", "client_id=nobody&response_type=code&redirect_uri=" + url.QueryEscape(redirect), false, ""},
		{"missing client shows a page", "response_type=code", false, ""},
		{"wrong redirect uri shows a page, never redirects", "client_id=web&response_type=code&redirect_uri=" + url.QueryEscape("https://evil.example/cb"), false, ""},
		{"plain pkce is refused", "client_id=spa&response_type=code&code_challenge_method=plain&code_challenge=" + ch + "&state=s", true, "invalid_request"},
		{"public client without pkce", "client_id=spa&response_type=code&state=s", true, "invalid_request"},
		{"scope not allowed", "client_id=web&response_type=code&scope=admin&state=s", true, "invalid_scope"},
		{"unsupported response type", "client_id=web&response_type=id_token&state=s", true, "unsupported_response_type"},
		{"client without the code grant", "client_id=m2m&response_type=code&state=s", false, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp, err := b.Get(s.URL + "/oauth/authorize?" + tt.query)
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if !tt.redirect {
				if resp.StatusCode != 400 || !strings.Contains(resp.Header.Get("Content-Type"), "text/html") {
					t.Errorf("got %d %s, want an HTML error page", resp.StatusCode, resp.Header.Get("Content-Type"))
				}
				if loc := resp.Header.Get("Location"); loc != "" {
					t.Errorf("redirected to %s", loc)
				}
				if !strings.Contains(string(body), `id="error"`) {
					t.Errorf("no error message on the page:\n%s", body)
				}
				return
			}
			loc, err := resp.Location()
			if err != nil {
				t.Fatalf("status %d, no redirect", resp.StatusCode)
			}
			q := loc.Query()
			if loc.Host != "app.example" || q.Get("error") != tt.code || q.Get("state") != "s" || q.Get("error_description") == "" {
				t.Errorf("redirect %s, want error %s with state", loc, tt.code)
			}
		})
	}
}

func TestMetadata(t *testing.T) {
	s := servertest.Start(t, testConfig(), servertest.Options{})
	req, _ := http.NewRequest("GET", s.URL+"/.well-known/oauth-authorization-server", nil)
	resp, body := openapicheck.Do(t, s.Client(), req)
	var m map[string]any
	if err := json.Unmarshal(body, &m); err != nil || resp.StatusCode != 200 {
		t.Fatalf("%d %s", resp.StatusCode, body)
	}
	if m["issuer"] != s.URL || m["token_endpoint"] != s.URL+"/oauth/token" ||
		m["device_authorization_endpoint"] != s.URL+"/oauth/device_authorization" {
		t.Errorf("metadata %v", m)
	}
	list := func(name string) []string {
		var out []string
		for _, v := range m[name].([]any) {
			out = append(out, v.(string))
		}
		return out
	}
	// What is advertised is accepted: every grant type reaches its grant
	// (a client not allowed it hears unauthorized_client, never
	// unsupported_grant_type), and the device flow is discoverable.
	grants := list("grant_types_supported")
	if !slices.Contains(grants, "urn:ietf:params:oauth:grant-type:device_code") {
		t.Errorf("grant_types_supported %v lacks the device_code grant", grants)
	}
	for _, gt := range grants {
		if gt == "implicit" {
			continue // not a token endpoint grant (RFC 8414 section 2)
		}
		r := post(t, s, "/oauth/token", url.Values{"grant_type": {gt}}, "web", webSecret)
		if r.json["error"] == "unsupported_grant_type" {
			t.Errorf("advertised grant %s: %s", gt, r.body)
		}
	}
	if r := post(t, s, "/oauth/token", url.Values{"grant_type": {"urn:example:unknown"}}, "web", webSecret); r.json["error"] != "unsupported_grant_type" {
		t.Errorf("unknown grant: %s", r.body)
	}
	// plain is refused unless a client opts in: not advertised.
	if got := list("code_challenge_methods_supported"); !slices.Equal(got, []string{"S256"}) {
		t.Errorf("code_challenge_methods_supported = %v, want [S256]", got)
	}
	if got := list("introspection_endpoint_auth_methods_supported"); slices.Contains(got, "none") || len(got) == 0 {
		t.Errorf("introspection_endpoint_auth_methods_supported = %v: public clients may not introspect", got)
	}
}

func TestLoginFormNeedsItsCSRFToken(t *testing.T) {
	s := servertest.Start(t, testConfig(), servertest.Options{})
	b := browser(t, s)
	cfg := oauthConfig(s, "web", webSecret, oauth2.AuthStyleInHeader)
	resp, err := b.Get(cfg.AuthCodeURL("s", oauth2.S256ChallengeOption(oauth2.GenerateVerifier())))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	loc, _ := resp.Location()
	page := get(t, b, loc.String()) // sets the CSRF cookie
	m := csrfRE.FindStringSubmatch(page)
	if m == nil {
		t.Fatal("no CSRF token on the login page")
	}
	request := loc.Query().Get("request")
	for name, token := range map[string]string{"missing": "", "forged": "AAAA" + m[1][4:]} {
		t.Run(name, func(t *testing.T) {
			resp, err := b.PostForm(s.URL+"/login", url.Values{"csrf_token": {token}, "request": {request},
				"email": {personEmail}, "password": {personPass}})
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != http.StatusForbidden {
				t.Errorf("status %d, want 403", resp.StatusCode)
			}
			for _, c := range resp.Cookies() {
				if c.Name == "lk_session" {
					t.Error("a session was started without a valid CSRF token")
				}
			}
		})
	}
	// A cross-site form post carries no lk_csrf cookie at all.
	plain := &http.Client{Transport: s.Client().Transport, CheckRedirect: b.CheckRedirect}
	resp, err = plain.PostForm(s.URL+"/login", url.Values{"csrf_token": {m[1]}, "request": {request},
		"email": {personEmail}, "password": {personPass}})
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusForbidden {
		t.Errorf("post without the CSRF cookie: %d, want 403", resp.StatusCode)
	}
}

func TestSessionCookieAttributes(t *testing.T) {
	s := servertest.Start(t, testConfig(), servertest.Options{})
	b := browser(t, s)
	resp, err := b.Get(s.URL + "/oauth/authorize?client_id=web&response_type=code&state=x")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	loc, _ := resp.Location()
	m := csrfRE.FindStringSubmatch(get(t, b, loc.String()))
	resp, err = b.PostForm(s.URL+"/login", url.Values{"csrf_token": {m[1]}, "request": {loc.Query().Get("request")},
		"email": {personEmail}, "password": {personPass}})
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	var session *http.Cookie
	for _, c := range resp.Cookies() {
		if c.Name == "lk_session" {
			session = c
		}
	}
	if session == nil {
		t.Fatal("no session cookie after login")
	}
	if !strings.HasPrefix(session.Value, "lk_se_") || !session.HttpOnly || session.SameSite != http.SameSiteLaxMode ||
		session.Secure || session.Path != "/" {
		t.Errorf("session cookie %+v: want HttpOnly, SameSite=Lax, not Secure on an http issuer", session)
	}
	// Logged in, and the client needs no consent: the next request gets its code at once.
	resp, err = b.Get(s.URL + "/oauth/authorize?client_id=web&response_type=code&state=y")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if loc, _ := resp.Location(); loc == nil || loc.Host != "app.example" || loc.Query().Get("code") == "" {
		t.Errorf("want a code at once, got %v", loc)
	}
}

func TestImplicitFlowOnlyForClientsThatListIt(t *testing.T) {
	cfg := testConfig()
	no := false
	cfg.Clients = append(cfg.Clients, config.Client{ClientID: "legacy-spa", TokenEndpointAuthMethod: "none",
		RedirectURIs: []string{redirect}, GrantTypes: []string{"implicit"}, Scopes: []string{"read"}, ConsentRequired: &no})
	s := servertest.Start(t, cfg, servertest.Options{})
	b := browser(t, s)
	back := authorize(t, s, b, s.URL+"/oauth/authorize?client_id=legacy-spa&response_type=token&state=imp")
	frag, _ := url.ParseQuery(back.Fragment)
	if !strings.HasPrefix(frag.Get("access_token"), "lk_at_") || frag.Get("state") != "imp" || back.RawQuery != "" {
		t.Errorf("implicit answer %s: want the token in the fragment", back)
	}
	resp, err := b.Get(s.URL + "/oauth/authorize?client_id=spa&response_type=token&state=imp")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	loc, _ := resp.Location()
	if frag, _ := url.ParseQuery(loc.Fragment); frag.Get("error") != "unauthorized_client" {
		t.Errorf("implicit for a client that does not list it: %s", loc)
	}
}
