package oauth_test

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"golang.org/x/oauth2"

	"github.com/latchkey/latchkey/internal/config"
	"github.com/latchkey/latchkey/internal/events"
	"github.com/latchkey/latchkey/internal/server/servertest"
	"github.com/latchkey/latchkey/internal/store"
	"github.com/latchkey/latchkey/internal/store/postgres/pgtest"
	"github.com/latchkey/latchkey/internal/webhook"
)

const rsSecret = "rs-secret-rs-secret-rs"

// introspectConfig adds a resource server (the introspecting client), a
// mobile app client and scopes with a usage limit to testConfig.
func introspectConfig() *config.Config {
	cfg := testConfig()
	no := false
	cfg.Clients = append(cfg.Clients,
		config.Client{ClientID: "rs", ClientSecret: rsSecret, GrantTypes: []string{"client_credentials"}, Scopes: []string{"introspect"},
			IntrospectAnyToken: true},
		config.Client{ClientID: "mobile", TokenEndpointAuthMethod: "none", RedirectURIs: []string{redirect},
			GrantTypes: []string{"authorization_code", "refresh_token"}, Scopes: []string{"read"}, ConsentRequired: &no,
			AppIdentifier: "com.example.app", AppPlatform: "ios", AppVersion: "4.2.0"})
	return cfg
}

func introspect(t *testing.T, s *servertest.Server, tok string, extra url.Values) answer {
	t.Helper()
	form := url.Values{"token": {tok}}
	for k, v := range extra {
		form[k] = v
	}
	return post(t, s, "/oauth/api/v2/token/introspect", form, "rs", rsSecret)
}

// personToken runs the code flow for client id and returns its tokens.
func personToken(t *testing.T, s *servertest.Server, id, secret, authQuery string) *oauth2.Token {
	t.Helper()
	style := oauth2.AuthStyleInHeader
	if secret == "" {
		style = oauth2.AuthStyleInParams
	}
	cfg := oauthConfig(s, id, secret, style)
	verifier := oauth2.GenerateVerifier()
	u := cfg.AuthCodeURL("st", oauth2.S256ChallengeOption(verifier)) + authQuery
	back := authorize(t, s, browser(t, s), u)
	tok, err := cfg.Exchange(clientCtx(s), back.Query().Get("code"), oauth2.VerifierOption(verifier))
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

func TestIntrospectionMembers(t *testing.T) {
	forEachBackendWith(t, introspectConfig, func(t *testing.T, s *servertest.Server) {
		person, _ := s.Store.GetPersonByEmail(t.Context(), "", personEmail)
		t.Run("person token", func(t *testing.T) {
			tok := personToken(t, s, "web", webSecret, "")
			r := introspect(t, s, tok.AccessToken, nil)
			exp := r.json["exp"].(float64)
			iat := r.json["iat"].(float64)
			want := map[string]any{"active": true, "scope": "read", "client_id": "web", "token_type": "bearer",
				"exp": exp, "iat": iat, "nbf": iat, "sub": person.ID, "usage_limit": float64(0),
				"user_details": map[string]any{"email": personEmail, "first_name": "Jane", "last_name": "Doe", "display_name": "Jane Doe"},
				"amr":          []any{"DEFAULT"}, "app_identifier": "", "app_platform": "", "app_version": ""}
			if d := cmp.Diff(want, r.json); d != "" {
				t.Errorf("introspection (-want +got):\n%s", d)
			}
			if exp-iat != 3600 || time.Unix(int64(iat), 0).After(time.Now().Add(time.Second)) {
				t.Errorf("exp %v iat %v: want integer seconds, one hour apart", exp, iat)
			}
			if r.header.Get("Cache-Control") != "no-store" {
				t.Error("introspection answers must not be cached")
			}
		})
		t.Run("client credentials token", func(t *testing.T) {
			tok := post(t, s, "/oauth/token", url.Values{"grant_type": {"client_credentials"}, "scope": {"read"}}, "other", "other-secret-other-secret")
			r := introspect(t, s, tok.json["access_token"].(string), nil)
			if r.json["active"] != true || r.json["sub"] != "other" || r.json["client_id"] != "other" ||
				!cmp.Equal(r.json["user_details"], map[string]any{}) || !cmp.Equal(r.json["amr"], []any{}) {
				t.Errorf("client credentials introspection: %v", r.json)
			}
		})
		t.Run("mobile app token", func(t *testing.T) {
			tok := personToken(t, s, "mobile", "", "")
			if p := tok.Extra("profile_id").(string); len(p) != 6 || p == "static" {
				t.Errorf("profile_id of a mobile app instance = %q, want 6 characters", p)
			}
			r := introspect(t, s, tok.AccessToken, nil)
			if r.json["app_identifier"] != "com.example.app" || r.json["app_platform"] != "ios" || r.json["app_version"] != "4.2.0" {
				t.Errorf("mobile members: %v", r.json)
			}
		})
	})
}

func forEachBackendWith(t *testing.T, cfg func() *config.Config, fn func(t *testing.T, s *servertest.Server)) {
	for _, backend := range servertest.Backends {
		t.Run(backend, func(t *testing.T) {
			fn(t, servertest.Start(t, cfg(), servertest.Options{Backend: backend}))
		})
	}
}

func TestIntrospectionInactive(t *testing.T) {
	clock := servertest.NewClock()
	s := servertest.Start(t, introspectConfig(), servertest.Options{Clock: clock})
	ccToken := func() string {
		return post(t, s, "/oauth/token", url.Values{"grant_type": {"client_credentials"}}, "other", "other-secret-other-secret").json["access_token"].(string)
	}
	revoked := ccToken()
	post(t, s, "/oauth/revoke", url.Values{"token": {revoked}}, "other", "other-secret-other-secret")
	family := personToken(t, s, "web", webSecret, "")
	post(t, s, "/oauth/revoke", url.Values{"token": {family.RefreshToken}}, "web", webSecret)
	expired := ccToken()
	tests := map[string]func() string{
		"unknown token":                     func() string { return "lk_at_unknown" },
		"not a token at all":                func() string { return "x" },
		"revoked token":                     func() string { return revoked },
		"access token of a revoked refresh": func() string { return family.AccessToken },
	}
	for name, tok := range tests {
		t.Run(name, func(t *testing.T) {
			r := introspect(t, s, tok(), nil)
			if r.status != 200 || r.body != `{"active":false}` {
				t.Errorf("got %d %s, want exactly {\"active\":false}", r.status, r.body)
			}
		})
	}
	t.Run("expired token", func(t *testing.T) {
		clock.Advance(time.Hour + time.Second)
		if r := introspect(t, s, expired, nil); r.body != `{"active":false}` {
			t.Errorf("got %s", r.body)
		}
	})
}

func TestIntrospectionCallerAndRequestErrors(t *testing.T) {
	s := servertest.Start(t, introspectConfig(), servertest.Options{})
	for name, tc := range map[string]struct {
		form       url.Values
		user, pass string
		status     int
		code       string
	}{
		"no client credentials": {url.Values{"token": {"x"}}, "", "", 401, "invalid_client"},
		"wrong secret":          {url.Values{"token": {"x"}}, "rs", "wrong", 401, "invalid_client"},
		"public client":         {url.Values{"token": {"x"}, "client_id": {"spa"}}, "", "", 401, "invalid_client"},
		"missing token":         {url.Values{}, "rs", rsSecret, 400, "invalid_request"},
		"bad refresh flag":      {url.Values{"token": {"x"}, "refresh_user_details": {"maybe"}}, "rs", rsSecret, 400, "invalid_request"},
		"repeated token":        {url.Values{"token": {"x", "y"}}, "rs", rsSecret, 400, "invalid_request"},
	} {
		t.Run(name, func(t *testing.T) {
			r := post(t, s, "/oauth/api/v2/token/introspect", tc.form, tc.user, tc.pass)
			if r.status != tc.status || (tc.code != "" && r.json["error"] != tc.code) {
				t.Errorf("got %d %s, want %d %s", r.status, r.body, tc.status, tc.code)
			}
		})
	}
}

// limitedToken creates a scope with a usage limit and returns a client
// credentials token for it.
func limitedToken(t *testing.T, s *servertest.Server, limit int) string {
	t.Helper()
	if err := s.Store.CreateScope(t.Context(), store.Scope{ID: "metered", UsageLimit: limit}); err != nil && !strings.Contains(err.Error(), "conflict") {
		t.Fatal(err)
	}
	r := post(t, s, "/oauth/token", url.Values{"grant_type": {"client_credentials"}, "scope": {"metered"}}, "metered", "metered-secret-metered")
	if r.status != 200 {
		t.Fatalf("token: %d %s", r.status, r.body)
	}
	return r.json["access_token"].(string)
}

func meteredConfig() *config.Config {
	cfg := introspectConfig()
	cfg.Clients = append(cfg.Clients, config.Client{ClientID: "metered", ClientSecret: "metered-secret-metered",
		GrantTypes: []string{"client_credentials"}, Scopes: []string{"metered"}})
	return cfg
}

func TestUsageLimitCountsIntrospections(t *testing.T) {
	s := servertest.Start(t, meteredConfig(), servertest.Options{})
	tok := limitedToken(t, s, 2)
	for i := 1; i <= 2; i++ {
		r := introspect(t, s, tok, nil)
		if r.json["active"] != true || r.json["usage_count"] != float64(i) || r.json["usage_limit"] != float64(2) {
			t.Fatalf("use %d: %s", i, r.body)
		}
	}
	if r := introspect(t, s, tok, nil); r.body != `{"active":false}` {
		t.Errorf("past the limit: %s", r.body)
	}
}

// Exactly usage_limit of many concurrent introspections are active: on each
// store, and on PostgreSQL with two server instances sharing the database.
func TestUsageLimitRace(t *testing.T) {
	run := func(t *testing.T, servers []*servertest.Server, tok string) {
		var mu sync.Mutex
		active := 0
		var wg sync.WaitGroup
		start := make(chan struct{})
		for i := range 50 {
			s := servers[i%len(servers)]
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				req, _ := http.NewRequest("POST", s.URL+"/oauth/api/v2/token/introspect", strings.NewReader(url.Values{"token": {tok}}.Encode()))
				req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
				req.SetBasicAuth("rs", rsSecret)
				resp, err := s.Client().Do(req)
				if err != nil {
					t.Error(err)
					return
				}
				defer resp.Body.Close()
				var body map[string]any
				if err := json.NewDecoder(resp.Body).Decode(&body); err != nil || resp.StatusCode != 200 {
					t.Errorf("status %d: %v", resp.StatusCode, err)
					return
				}
				if body["active"] == true {
					mu.Lock()
					active++
					mu.Unlock()
				}
			}()
		}
		close(start)
		wg.Wait()
		if active != 5 {
			t.Errorf("%d of 50 concurrent introspections were active, want exactly the limit 5", active)
		}
		// Each answer's event, the active ones' written with their uses.
		for typ, want := range map[string]int{events.IntrospectionSuccess: 5, events.IntrospectionExhausted: 45} {
			n, err := servers[0].Store.CountEvents(t.Context(), store.EventFilter{Kind: store.EventOAuth, Types: []string{typ}}, 1000)
			if err != nil || n != want {
				t.Errorf("%d %s events, %v; want %d", n, typ, err, want)
			}
		}
	}
	for _, backend := range servertest.Backends {
		t.Run(backend, func(t *testing.T) {
			s := servertest.Start(t, meteredConfig(), servertest.Options{Backend: backend})
			run(t, []*servertest.Server{s}, limitedToken(t, s, 5))
		})
	}
	t.Run("postgres, two instances", func(t *testing.T) {
		dsn := pgtest.NewDatabase(t)
		a := servertest.Start(t, meteredConfig(), servertest.Options{Backend: "postgres", PostgresURL: dsn})
		b := servertest.Start(t, meteredConfig(), servertest.Options{Backend: "postgres", PostgresURL: dsn})
		run(t, []*servertest.Server{a, b}, limitedToken(t, a, 5))
	})
}

func TestCustomAttributeMapping(t *testing.T) {
	cfg := introspectConfig()
	cfg.Introspection.UserDetails = map[string]string{"email": "mail", "custom.loyalty": "loyalty_level"}
	s := servertest.Start(t, cfg, servertest.Options{})
	p, _ := s.Store.GetPersonByEmail(t.Context(), "", personEmail)
	if err := s.Store.UpdatePerson(t.Context(), p.ID, func(p store.Person) (store.Person, error) {
		p.Custom = map[string]string{"loyalty": "gold", "hidden": "x"}
		return p, nil
	}); err != nil {
		t.Fatal(err)
	}
	tok := personToken(t, s, "web", webSecret, "")
	r := introspect(t, s, tok.AccessToken, nil)
	if d := cmp.Diff(map[string]any{"mail": personEmail, "loyalty_level": "gold"}, r.json["user_details"]); d != "" {
		t.Errorf("user_details under the configured mappings (-want +got):\n%s", d)
	}
}

func TestRefreshUserDetails(t *testing.T) {
	s := servertest.Start(t, introspectConfig(), servertest.Options{})
	tok := personToken(t, s, "web", webSecret, "")
	if r := introspect(t, s, tok.AccessToken, nil); r.json["user_details"].(map[string]any)["first_name"] != "Jane" {
		t.Fatalf("first: %s", r.body)
	}
	p, _ := s.Store.GetPersonByEmail(t.Context(), "", personEmail)
	if err := s.Store.UpdatePerson(t.Context(), p.ID, func(p store.Person) (store.Person, error) { p.FirstName = "Janet"; return p, nil }); err != nil {
		t.Fatal(err)
	}
	if r := introspect(t, s, tok.AccessToken, nil); r.json["user_details"].(map[string]any)["first_name"] != "Jane" {
		t.Errorf("details are cached with the grant: %s", r.body)
	}
	if r := introspect(t, s, tok.AccessToken, url.Values{"refresh_user_details": {"true"}}); r.json["user_details"].(map[string]any)["first_name"] != "Janet" {
		t.Errorf("refresh_user_details=true reloads: %s", r.body)
	}
	if r := introspect(t, s, tok.AccessToken, nil); r.json["user_details"].(map[string]any)["display_name"] != "Janet Doe" {
		t.Errorf("the reloaded details are the new cache: %s", r.body)
	}
}

// hookServer is a local web hook receiver that checks signatures and
// records what it got.
type hookServer struct {
	*httptest.Server
	mu       sync.Mutex
	requests []map[string]any
	headers  []http.Header
	answer   string
	delay    time.Duration
	status   int // answered instead of 200 when set
}

func newHook(t *testing.T, secret, answer string) *hookServer {
	h := &hookServer{answer: answer}
	h.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		sig := r.Header.Get(webhook.SignatureHeader)
		ts, mac, _ := strings.Cut(strings.TrimPrefix(sig, "t="), ",v1=")
		m := hmac.New(sha256.New, []byte(secret))
		m.Write([]byte(ts + "." + string(body)))
		if !hmac.Equal([]byte(hex.EncodeToString(m.Sum(nil))), []byte(mac)) {
			t.Errorf("bad signature %q", sig)
			http.Error(w, "bad signature", http.StatusUnauthorized)
			return
		}
		var req map[string]any
		_ = json.Unmarshal(body, &req)
		h.mu.Lock()
		h.requests = append(h.requests, req)
		h.headers = append(h.headers, r.Header.Clone())
		delay, status := h.delay, h.status
		h.mu.Unlock()
		time.Sleep(delay)
		if status != 0 {
			http.Error(w, "failing on purpose", status)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, h.answer)
	}))
	t.Cleanup(h.Close)
	return h
}

const hookSecret = "hook-secret-hook-secret"

func TestAccessTokenWebHook(t *testing.T) {
	hook := newHook(t, hookSecret, `{"removeScopes":["write","unknown"],"additionalClaims":{"tier":"gold","active":false}}`)
	cfg := introspectConfig()
	cfg.Webhooks.AccessToken = config.Webhook{URL: hook.URL, Secret: hookSecret}
	s := servertest.Start(t, cfg, servertest.Options{})
	person, _ := s.Store.GetPersonByEmail(t.Context(), "", personEmail)
	oc := oauthConfig(s, "web", webSecret, oauth2.AuthStyleInHeader)
	oc.Scopes = []string{"read", "write"}
	verifier := oauth2.GenerateVerifier()
	back := authorize(t, s, browser(t, s), oc.AuthCodeURL("st", oauth2.S256ChallengeOption(verifier))+
		"&hook_context_custom_param.key2=val2&hook_context_custom_param.key2=val3&hook_context_custom_param.key1=v1")
	tok, err := oc.Exchange(clientCtx(s), back.Query().Get("code"), oauth2.VerifierOption(verifier))
	if err != nil {
		t.Fatal(err)
	}
	if len(hook.requests) != 1 {
		t.Fatalf("hook called %d times, want once", len(hook.requests))
	}
	want := map[string]any{"user": map[string]any{"id": person.ID}, "client": map[string]any{"id": "web"},
		"scopes": []any{"read", "write"}, "userClaims": map[string]any{"email": personEmail, "first_name": "Jane", "last_name": "Doe", "display_name": "Jane Doe"},
		"contextCustomParams": map[string]any{"key2": []any{"val2", "val3"}, "key1": []any{"v1"}}}
	if d := cmp.Diff(want, hook.requests[0]); d != "" {
		t.Errorf("hook payload (-want +got):\n%s", d)
	}
	if hook.headers[0].Get("X-Latchkey-Hook") != "access_token" {
		t.Errorf("hook name header: %v", hook.headers[0])
	}
	if tok.Extra("scope") != "read" {
		t.Errorf("the hook removed write: scope %v", tok.Extra("scope"))
	}
	r := introspect(t, s, tok.AccessToken, nil)
	if r.json["tier"] != "gold" || r.json["active"] != true || r.json["scope"] != "read" {
		t.Errorf("additional claims (never overriding ours): %s", r.body)
	}
}

func TestAccessTokenWebHookRemovingEveryScopeRefusesTheFlow(t *testing.T) {
	hook := newHook(t, hookSecret, `{"removeScopes":["read"]}`)
	cfg := introspectConfig()
	cfg.Webhooks.AccessToken = config.Webhook{URL: hook.URL, Secret: hookSecret}
	s := servertest.Start(t, cfg, servertest.Options{})
	r := post(t, s, "/oauth/token", url.Values{"grant_type": {"client_credentials"}, "scope": {"read"}}, "other", "other-secret-other-secret")
	if r.status != 400 || r.json["error"] != "invalid_scope" {
		t.Errorf("every scope removed: %d %s", r.status, r.body)
	}
	if u := hook.requests[0]["user"]; u != nil {
		t.Errorf("client credentials: user must be null, got %v", u)
	}
}

func TestWebHookTimeout(t *testing.T) {
	for _, failClosed := range []bool{false, true} {
		t.Run(map[bool]string{false: "fail open", true: "fail closed"}[failClosed], func(t *testing.T) {
			hook := newHook(t, hookSecret, `{"removeScopes":["read"]}`)
			hook.delay = 500 * time.Millisecond
			cfg := introspectConfig()
			cfg.Webhooks.AccessToken = config.Webhook{URL: hook.URL, Secret: hookSecret, Timeout: config.Duration(50 * time.Millisecond), FailClosed: failClosed}
			s := servertest.Start(t, cfg, servertest.Options{})
			r := post(t, s, "/oauth/token", url.Values{"grant_type": {"client_credentials"}, "scope": {"read"}}, "other", "other-secret-other-secret")
			if failClosed && (r.status != 500 || strings.Contains(r.body, hook.URL)) {
				t.Errorf("fail closed: %d %s, want a 500 that does not name the hook", r.status, r.body)
			}
			if !failClosed && (r.status != 200 || r.json["scope"] != nil) {
				t.Errorf("fail open: %d %s, want the token as if no hook were configured", r.status, r.body)
			}
		})
	}
}

func TestUserDetailsWebHook(t *testing.T) {
	hook := newHook(t, hookSecret, `{"claims":{"loyalty":"gold","sub":"evil","urn:vendor.com:oidc:x":"evil","email":"hooked@example.com"}}`)
	cfg := introspectConfig()
	cfg.Webhooks.UserDetails = config.Webhook{URL: hook.URL, Secret: hookSecret}
	s := servertest.Start(t, cfg, servertest.Options{})
	tok := personToken(t, s, "web", webSecret, "&hook_context_custom_param.k=a&hook_context_custom_param.k=b")
	r := introspect(t, s, tok.AccessToken, nil)
	details := r.json["user_details"].(map[string]any)
	if details["loyalty"] != "gold" || details["email"] != "hooked@example.com" || details["sub"] != nil || details["urn:vendor.com:oidc:x"] != nil {
		t.Errorf("user details after the hook: %v (protected claims must not change)", details)
	}
	if got := hook.requests[0]["contextCustomParams"]; !cmp.Equal(got, map[string]any{"k": []any{"a", "b"}}) {
		t.Errorf("contextCustomParams %v", got)
	}
	if hook.requests[0]["user"].(map[string]any)["id"] == "" || hook.requests[0]["claims"].(map[string]any)["first_name"] != "Jane" {
		t.Errorf("user details hook payload %v", hook.requests[0])
	}
}

func TestGroupPolicies(t *testing.T) {
	report := `{"groups":[{"id":"g1","name":"Admins","policies":[{"id":"p1","name":"all"}],"attributes":[],"resources":[]}]}`
	var fail bool
	var calls int
	var mu sync.Mutex
	api := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		calls++
		if fail || !strings.HasSuffix(r.URL.Path, "/report") {
			http.Error(w, "down", http.StatusServiceUnavailable)
			return
		}
		io.WriteString(w, report)
	}))
	defer api.Close()
	cfg := introspectConfig()
	cfg.Introspection.GroupPermissionsAPI = api.URL
	cfg.Introspection.GroupPermissionsLegacy = true
	clock := servertest.NewClock()
	s := servertest.Start(t, cfg, servertest.Options{Clock: clock})
	tok := personToken(t, s, "web", webSecret, "")
	r := introspect(t, s, tok.AccessToken, nil)
	var want map[string]any
	_ = json.Unmarshal([]byte(report), &want)
	var legacy map[string]any
	_ = json.Unmarshal([]byte(r.json["group_permissions"].(string)), &legacy)
	if !cmp.Equal(r.json["urn:vendor.com:oidc:group_policies"], want) || !cmp.Equal(legacy, want) {
		t.Errorf("group members: %s", r.body)
	}
	introspect(t, s, tok.AccessToken, nil)
	if calls != 1 {
		t.Errorf("the report is cached for a short time: %d calls", calls)
	}
	mu.Lock()
	fail = true
	mu.Unlock()
	clock.Advance(2 * time.Minute)
	r = introspect(t, s, tok.AccessToken, nil)
	if r.json["active"] != true || r.json["urn:vendor.com:oidc:group_policies"] != nil {
		t.Errorf("a failing group API leaves the member out and nothing else: %s", r.body)
	}
	resp, _ := s.Client().Get(s.URL + "/metrics")
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !strings.Contains(string(b), "latchkey_group_permissions_api_failures_total 1") {
		t.Error("the failure is not counted in the metrics")
	}
}

// BenchmarkIntrospection measures POST /oauth/api/v2/token/introspect over
// loopback HTTP on SQLite: client authentication, one token read, the grant
// and client reads, and the JSON answer.
func BenchmarkIntrospection(b *testing.B) {
	s := servertest.Start(b, introspectConfig(), servertest.Options{})
	tok := post(b, s, "/oauth/token", url.Values{"grant_type": {"client_credentials"}}, "other", "other-secret-other-secret").json["access_token"].(string)
	body := url.Values{"token": {tok}}.Encode()
	client := s.Client()
	b.SetParallelism(16) // 32 concurrent clients on 2 cores, as latchkey bench runs
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			req, _ := http.NewRequest("POST", s.URL+"/oauth/api/v2/token/introspect", strings.NewReader(body))
			req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
			req.SetBasicAuth("rs", rsSecret)
			resp, err := client.Do(req)
			if err != nil {
				b.Fatal(err)
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode != 200 {
				b.Fatalf("status %d", resp.StatusCode)
			}
		}
	})
}

// BenchmarkClientCredentials issues access tokens to 32 concurrent clients
// (a grant, a token and an event written per request).
func BenchmarkClientCredentials(b *testing.B) {
	s := servertest.Start(b, introspectConfig(), servertest.Options{})
	body := url.Values{"grant_type": {"client_credentials"}}.Encode()
	client := s.Client()
	b.SetParallelism(16)
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			req, _ := http.NewRequest("POST", s.URL+"/oauth/token", strings.NewReader(body))
			req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
			req.SetBasicAuth("other", "other-secret-other-secret")
			resp, err := client.Do(req)
			if err != nil {
				b.Fatal(err)
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode != 200 {
				b.Fatalf("status %d", resp.StatusCode)
			}
		}
	})
}

// A refresh token spent by rotation is inactive (RFC 7662 section 2.2): it
// can no longer be used, so introspection must not call it active.
func TestRotatedRefreshTokenIsInactive(t *testing.T) {
	for _, backend := range servertest.Backends {
		t.Run(backend, func(t *testing.T) {
			s := servertest.Start(t, introspectConfig(), servertest.Options{Backend: backend})
			tok := personToken(t, s, "mobile", "", "")
			if r := introspect(t, s, tok.RefreshToken, nil); r.json["active"] != true {
				t.Fatalf("fresh refresh token: %s", r.body)
			}
			r := post(t, s, "/oauth/token", url.Values{"grant_type": {"refresh_token"}, "refresh_token": {tok.RefreshToken},
				"client_id": {"mobile"}}, "", "")
			if r.status != 200 || r.json["refresh_token"] == nil || r.json["refresh_token"] == tok.RefreshToken {
				t.Fatalf("rotation: %d %s", r.status, r.body)
			}
			if r := introspect(t, s, tok.RefreshToken, nil); r.body != `{"active":false}` {
				t.Errorf("spent refresh token: %s, want {\"active\":false}", r.body)
			}
			if r2 := introspect(t, s, r.json["refresh_token"].(string), nil); r2.json["active"] != true {
				t.Errorf("its successor: %s, want active", r2.body)
			}
		})
	}
}

// The ID token and UserInfo carry the user details as introspection
// answers them: the mapping and the web hook's claims (never over the
// protected ones), loaded once per grant.
func TestIDTokenAndUserInfoCarryUserDetails(t *testing.T) {
	hook := newHook(t, hookSecret, `{"claims":{"loyalty":"gold","sub":"evil"}}`)
	cfg := introspectConfig()
	cfg.Webhooks.UserDetails = config.Webhook{URL: hook.URL, Secret: hookSecret}
	s := servertest.Start(t, cfg, servertest.Options{})
	oc := oauthConfig(s, "web", webSecret, oauth2.AuthStyleInHeader)
	oc.Scopes = []string{"openid", "read"}
	verifier := oauth2.GenerateVerifier()
	back := authorize(t, s, browser(t, s), oc.AuthCodeURL("st", oauth2.S256ChallengeOption(verifier)))
	tok, err := oc.Exchange(clientCtx(s), back.Query().Get("code"), oauth2.VerifierOption(verifier))
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := tok.Extra("id_token").(string)
	idt := jwtClaims(t, raw)
	person, _ := s.Store.GetPersonByEmail(t.Context(), "", personEmail)
	if idt["loyalty"] != "gold" || idt["first_name"] != "Jane" || idt["sub"] != person.ID {
		t.Errorf("ID token claims %v", idt)
	}
	if info := bearerGet(t, s, "/oauth/userinfo", tok.AccessToken); info.status != 200 || info.json["loyalty"] != "gold" || info.json["sub"] != person.ID {
		t.Errorf("userinfo %d %s", info.status, info.body)
	}
	if r := introspect(t, s, tok.AccessToken, nil); r.json["user_details"].(map[string]any)["loyalty"] != "gold" {
		t.Errorf("introspection: %s", r.body)
	}
	if len(hook.requests) != 1 {
		t.Errorf("the user details hook was called %d times for one grant, want once", len(hook.requests))
	}
}

// A repeated revocation (a client's retries, racing each other) answers 200
// each time, records each, and leaves the token revoked; another client
// still may not revoke it.
func TestRepeatedRevocation(t *testing.T) {
	for _, backend := range servertest.Backends {
		t.Run(backend, func(t *testing.T) {
			s := servertest.Start(t, introspectConfig(), servertest.Options{Backend: backend})
			at := post(t, s, "/oauth/token", url.Values{"grant_type": {"client_credentials"}}, "other", "other-secret-other-secret").json["access_token"].(string)
			revoke := func() answer {
				return post(t, s, "/oauth/revoke", url.Values{"token": {at}}, "other", "other-secret-other-secret")
			}
			if r := revoke(); r.status != 200 {
				t.Fatalf("revoke: %d %s", r.status, r.body)
			}
			var wg sync.WaitGroup
			statuses := make(chan int, 10)
			for range 10 {
				wg.Add(1)
				go func() { defer wg.Done(); statuses <- revoke().status }()
			}
			wg.Wait()
			close(statuses)
			for st := range statuses {
				if st != 200 {
					t.Errorf("a repeated revocation answered %d", st)
				}
			}
			if r := introspect(t, s, at, nil); r.json["active"] != false {
				t.Errorf("after repeated revocations: %s", r.body)
			}
			if r := post(t, s, "/oauth/revoke", url.Values{"token": {at}, "client_id": {"m2m"}, "client_secret": {m2mSecret}}, "", ""); r.json["error"] != "unauthorized_client" {
				t.Errorf("another client revoking the revoked token: %d %v", r.status, r.json)
			}
			n, err := s.Store.CountEvents(t.Context(), store.EventFilter{Kind: store.EventOAuth, Types: []string{"TOKEN_REVOKE_ACCESS_TOKEN_SUCCESS"}}, 100)
			if err != nil || n != 11 {
				t.Errorf("%d revocation events, %v; want 11", n, err)
			}
		})
	}
}
