package scopes_test

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"
	"github.com/google/go-cmp/cmp"

	"github.com/latchkey/latchkey/internal/config"
	"github.com/latchkey/latchkey/internal/openapicheck"
	"github.com/latchkey/latchkey/internal/server/servertest"
)

const (
	adminSecret = "admin-secret-admin-secret"
	plainSecret = "plain-secret-plain-secret"
)

func testConfig() *config.Config {
	return &config.Config{Clients: []config.Client{
		{ClientID: "admin", ClientSecret: adminSecret, GrantTypes: []string{"client_credentials"}, Scopes: []string{"vendor_api_config", "read"}},
		{ClientID: "plain", ClientSecret: plainSecret, GrantTypes: []string{"client_credentials"}, Scopes: []string{"read"}},
	}}
}

type call struct {
	method, path, body string
	auth               func(*http.Request)
}

type result struct {
	status int
	header http.Header
	body   []byte
	json   map[string]any
}

func basic(id, secret string) func(*http.Request) {
	return func(r *http.Request) { r.SetBasicAuth(id, secret) }
}

func bearer(tok string) func(*http.Request) {
	return func(r *http.Request) { r.Header.Set("Authorization", "Bearer "+tok) }
}

func do(t *testing.T, s *servertest.Server, c call) result {
	t.Helper()
	var body io.Reader
	if c.body != "" {
		body = strings.NewReader(c.body)
	}
	req, _ := http.NewRequest(c.method, s.URL+c.path, body)
	if c.body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	if c.auth != nil {
		c.auth(req)
	}
	resp, b := openapicheck.Do(t, s.Client(), req)
	r := result{status: resp.StatusCode, header: resp.Header, body: b}
	_ = json.Unmarshal(b, &r.json)
	return r
}

var admin = basic("admin", adminSecret)

const path = "/api/v1/configuration/scopes"

func TestScopeLifecycle(t *testing.T) {
	for _, backend := range servertest.Backends {
		t.Run(backend, func(t *testing.T) {
			s := servertest.Start(t, testConfig(), servertest.Options{Backend: backend})
			r := do(t, s, call{"POST", path, `{"scope_id":"read_all","authentication_level":2,"usage_limit":5,
				"service_endpoint":"https://svc.example/a","persistent_consent":true,"descriptions":{"en":"Read all","nl":"Alles lezen"}}`, admin})
			if r.status != 201 || len(r.body) != 0 || r.header.Get("Location") != path+"/read_all" {
				t.Fatalf("create: %d %q Location=%q", r.status, r.body, r.header.Get("Location"))
			}
			r = do(t, s, call{"GET", path + "/read_all", "", admin})
			want := map[string]any{"scope_id": "read_all", "authentication_level": float64(2), "usage_limit": float64(5),
				"service_endpoint": "https://svc.example/a", "persistent_consent": true,
				"descriptions": map[string]any{"en": "Read all", "nl": "Alles lezen"}}
			if r.status != 200 || !cmp.Equal(want, r.json) {
				t.Errorf("get: %d %s", r.status, cmp.Diff(want, r.json))
			}
			if r.header.Get("Cache-Control") != "no-store" || r.header.Get("Pragma") != "no-cache" {
				t.Errorf("get headers: %v", r.header)
			}
			// PATCH: fields sent change, fields not sent go back to their defaults.
			r = do(t, s, call{"PATCH", path + "/read_all", `{"scope_id":"read_all","usage_limit":7}`, admin})
			if r.status != 204 || len(r.body) != 0 {
				t.Fatalf("patch: %d %s", r.status, r.body)
			}
			r = do(t, s, call{"GET", path + "/read_all", "", admin})
			want = map[string]any{"scope_id": "read_all", "authentication_level": float64(0), "usage_limit": float64(7),
				"service_endpoint": nil, "persistent_consent": false, "descriptions": map[string]any{}}
			if !cmp.Equal(want, r.json) {
				t.Errorf("after patch: %s", cmp.Diff(want, r.json))
			}
			r = do(t, s, call{"GET", path, "", admin})
			if r.status != 200 || !strings.Contains(string(r.body), `"read_all"`) {
				t.Errorf("list: %d %s", r.status, r.body)
			}
			if r = do(t, s, call{"DELETE", path + "/read_all", "", admin}); r.status != 204 {
				t.Errorf("delete: %d %s", r.status, r.body)
			}
			if r = do(t, s, call{"GET", path + "/read_all", "", admin}); r.status != 404 || r.json["error"] != "not_found" {
				t.Errorf("get after delete: %d %s", r.status, r.body)
			}
		})
	}
}

func TestScopeAPIErrors(t *testing.T) {
	s := servertest.Start(t, testConfig(), servertest.Options{})
	do(t, s, call{"POST", path, `{"scope_id":"exists"}`, admin})
	long := strings.Repeat("a", 21)
	tests := []struct {
		name   string
		c      call
		status int
		code   string
		detail string // a substring of one detail
	}{
		{"no credentials", call{"GET", path + "/exists", "", nil}, 401, "unauthorized", ""},
		{"wrong secret", call{"GET", path + "/exists", "", basic("admin", "wrong")}, 401, "unauthorized", ""},
		{"unknown bearer token", call{"GET", path + "/exists", "", bearer("lk_at_nope")}, 401, "unauthorized", ""},
		{"garbage bearer assertion", call{"GET", path + "/exists", "", bearer("not-a-jwt")}, 401, "unauthorized", ""},
		{"client without vendor_api_config", call{"GET", path + "/exists", "", basic("plain", plainSecret)}, 403, "forbidden", ""},
		{"unknown scope", call{"GET", path + "/nope", "", admin}, 404, "not_found", ""},
		{"patch unknown scope", call{"PATCH", path + "/nope", `{"scope_id":"nope"}`, admin}, 404, "not_found", ""},
		{"delete unknown scope", call{"DELETE", path + "/nope", "", admin}, 404, "not_found", ""},
		{"create existing scope", call{"POST", path, `{"scope_id":"exists"}`, admin}, 409, "conflict", ""},
		{"scope_id of 21 characters", call{"POST", path, `{"scope_id":"` + long + `"}`, admin}, 400, "invalid_request", "scope_id"},
		{"scope_id with a bad character", call{"POST", path, `{"scope_id":"a.b"}`, admin}, 400, "invalid_request", "scope_id"},
		{"scope_id missing", call{"POST", path, `{"usage_limit":1}`, admin}, 400, "invalid_request", "scope_id"},
		{"negative usage limit", call{"POST", path, `{"scope_id":"x","usage_limit":-1}`, admin}, 400, "invalid_request", "usage_limit"},
		{"negative level", call{"POST", path, `{"scope_id":"x","authentication_level":-2}`, admin}, 400, "invalid_request", "authentication_level"},
		{"huge level", call{"POST", path, `{"scope_id":"x","authentication_level":99999999999}`, admin}, 400, "invalid_request", "authentication_level"},
		{"fractional limit", call{"POST", path, `{"scope_id":"x","usage_limit":1.5}`, admin}, 400, "invalid_request", "usage_limit"},
		{"bad locale", call{"POST", path, `{"scope_id":"x","descriptions":{"english":"x"}}`, admin}, 400, "invalid_request", "descriptions"},
		{"relative endpoint", call{"POST", path, `{"scope_id":"x","service_endpoint":"/x"}`, admin}, 400, "invalid_request", "service_endpoint"},
		{"script failure endpoint", call{"POST", path, `{"scope_id":"x","verification_failed_endpoint":"JAVASCRIPT://x/%0aalert(1)"}`, admin}, 400, "invalid_request", "verification_failed_endpoint"},
		{"cleartext failure endpoint", call{"POST", path, `{"scope_id":"x","verification_failed_endpoint":"http://svc.example/failed"}`, admin}, 400, "invalid_request", "verification_failed_endpoint"},
		{"unknown member", call{"POST", path, `{"scope_id":"x","colour":"red"}`, admin}, 400, "invalid_request", "colour"},
		{"malformed json", call{"POST", path, `{"scope_id":`, admin}, 400, "invalid_request", ""},
		{"trailing data", call{"POST", path, `{"scope_id":"x"}{}`, admin}, 400, "invalid_request", ""},
		{"oversized body", call{"POST", path, `{"scope_id":"x","descriptions":{"en":"` + strings.Repeat("a", 70000) + `"}}`, admin}, 413, "invalid_request", ""},
		{"patch id differs from path", call{"PATCH", path + "/exists", `{"scope_id":"other"}`, admin}, 400, "invalid_request", "scope_id"},
		{"patch without scope_id", call{"PATCH", path + "/exists", `{"usage_limit":1}`, admin}, 400, "invalid_request", "scope_id"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := do(t, s, tt.c)
			if r.status != tt.status || r.json["error"] != tt.code {
				t.Fatalf("got %d %s, want %d %s", r.status, r.body, tt.status, tt.code)
			}
			if _, ok := r.json["error_description"].(string); !ok {
				t.Errorf("no error_description: %s", r.body)
			}
			if tt.detail != "" && !strings.Contains(string(r.body), tt.detail) {
				t.Errorf("details do not name %s: %s", tt.detail, r.body)
			}
		})
	}
	// Several bad fields are all listed.
	r := do(t, s, call{"POST", path, `{"scope_id":"bad id","usage_limit":-1,"authentication_level":-1}`, admin})
	if d, _ := r.json["details"].([]any); len(d) != 3 {
		t.Errorf("details %v: want one per bad field", r.json["details"])
	}
}

func TestScopeAPIWithClientCredentialsToken(t *testing.T) {
	s := servertest.Start(t, testConfig(), servertest.Options{})
	token := func(id, secret, scope string) string {
		req, _ := http.NewRequest("POST", s.URL+"/oauth/token", strings.NewReader(url.Values{"grant_type": {"client_credentials"}, "scope": {scope}}.Encode()))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		req.SetBasicAuth(id, secret)
		resp, err := s.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var body map[string]any
		json.NewDecoder(resp.Body).Decode(&body)
		return body["access_token"].(string)
	}
	if r := do(t, s, call{"POST", path, `{"scope_id":"via_token"}`, bearer(token("admin", adminSecret, "vendor_api_config"))}); r.status != 201 {
		t.Errorf("create with a client-credentials token: %d %s", r.status, r.body)
	}
	if r := do(t, s, call{"GET", path + "/via_token", "", bearer(token("admin", adminSecret, "read"))}); r.status != 403 {
		t.Errorf("a token without vendor_api_config: %d, want 403", r.status)
	}
}

func TestConcurrentCreatesOfOneScope(t *testing.T) {
	for _, backend := range servertest.Backends {
		t.Run(backend, func(t *testing.T) {
			s := servertest.Start(t, testConfig(), servertest.Options{Backend: backend})
			var mu sync.Mutex
			statuses := map[int]int{}
			var wg sync.WaitGroup
			start := make(chan struct{})
			for range 10 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					<-start
					req, _ := http.NewRequest("POST", s.URL+path, strings.NewReader(`{"scope_id":"race"}`))
					req.Header.Set("Content-Type", "application/json")
					req.SetBasicAuth("admin", adminSecret)
					resp, err := s.Client().Do(req)
					if err != nil {
						t.Error(err)
						return
					}
					resp.Body.Close()
					mu.Lock()
					statuses[resp.StatusCode]++
					mu.Unlock()
				}()
			}
			close(start)
			wg.Wait()
			if statuses[201] != 1 || statuses[409] != 9 {
				t.Errorf("statuses %v: want one 201 and nine 409", statuses)
			}
		})
	}
}

func TestScopeAPIWithPrivateKeyJWTAssertion(t *testing.T) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	jwk := jose.JSONWebKey{Key: key, KeyID: "k1", Algorithm: "ES256", Use: "sig"}
	pub, _ := json.Marshal(jose.JSONWebKeySet{Keys: []jose.JSONWebKey{jwk.Public()}})
	var jwks map[string]any
	_ = json.Unmarshal(pub, &jwks)
	cfg := testConfig()
	cfg.Clients = append(cfg.Clients, config.Client{ClientID: "signer", TokenEndpointAuthMethod: "private_key_jwt",
		JWKS: jwks, GrantTypes: []string{"client_credentials"}, Scopes: []string{"vendor_api_config"}})
	s := servertest.Start(t, cfg, servertest.Options{})
	signer, _ := jose.NewSigner(jose.SigningKey{Algorithm: jose.ES256, Key: jwk}, nil)
	assertion, err := jwt.Signed(signer).Claims(jwt.Claims{Issuer: "signer", Subject: "signer", ID: "a-1",
		Audience: jwt.Audience{s.URL + path}, Expiry: jwt.NewNumericDate(time.Now().Add(time.Minute))}).Serialize()
	if err != nil {
		t.Fatal(err)
	}
	if r := do(t, s, call{"POST", path, `{"scope_id":"signed"}`, bearer(assertion)}); r.status != 201 {
		t.Errorf("create with a client assertion: %d %s", r.status, r.body)
	}
	if r := do(t, s, call{"GET", path + "/signed", "", bearer(assertion)}); r.status != 401 {
		t.Errorf("a replayed assertion: %d, want 401", r.status)
	}
}
