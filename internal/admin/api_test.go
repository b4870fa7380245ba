package admin_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
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
	"github.com/latchkey/latchkey/internal/token"
)

const (
	opsPassword  = "ops-password-ops-password"
	robotSecret  = "robot-secret-robot-secret"
	readerSecret = "reader-secret-reader-secret"
	rsSecret     = "resource-server-secret-123"
)

// testConfig has an API user, a client allowed the admin API, one that is
// not, and a resource server that introspects every client's tokens.
func testConfig() *config.Config {
	cc := []string{"client_credentials"}
	return &config.Config{
		APIUsers: []config.APIUser{{Username: "ops", Password: opsPassword}},
		Clients: []config.Client{
			{ClientID: "robot", ClientSecret: robotSecret, GrantTypes: cc, Scopes: []string{"vendor_api_admin"}},
			{ClientID: "reader", ClientSecret: readerSecret, GrantTypes: cc, Scopes: []string{"read"}},
			{ClientID: "rs", ClientSecret: rsSecret, GrantTypes: cc, IntrospectAnyToken: true},
		},
	}
}

type result struct {
	status int
	header http.Header
	body   []byte
	json   map[string]any
}

type auth func(*http.Request)

func basic(user, pass string) auth {
	return func(r *http.Request) { r.SetBasicAuth(user, pass) }
}

func bearer(tok string) auth {
	return func(r *http.Request) { r.Header.Set("Authorization", "Bearer "+tok) }
}

var ops = basic("ops", opsPassword)

// call sends a request with a JSON body (when body is not "") and checks
// the answer against api/openapi.yaml.
func call(t testing.TB, s *servertest.Server, method, path, body string, a auth, header ...string) result {
	t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, s.URL+path, rd)
	if err != nil {
		t.Fatal(err)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	if a != nil {
		a(req)
	}
	resp, b := openapicheck.Do(t, s.Client(), req)
	r := result{status: resp.StatusCode, header: resp.Header, body: b}
	_ = json.Unmarshal(b, &r.json)
	return r
}

// clientToken gets a client-credentials access token with x/oauth2.
func clientToken(s *servertest.Server, id, secret string, scopes ...string) (string, error) {
	cfg := clientcredentials.Config{ClientID: id, ClientSecret: secret, TokenURL: s.URL + "/oauth/token", Scopes: scopes,
		AuthStyle: oauth2.AuthStyleInHeader}
	ctx := context.WithValue(context.Background(), oauth2.HTTPClient, s.Client())
	tok, err := cfg.Token(ctx)
	if err != nil {
		return "", err
	}
	return tok.AccessToken, nil
}

// active introspects tok as the resource server.
func active(t testing.TB, s *servertest.Server, tok string) bool {
	t.Helper()
	req, _ := http.NewRequest("POST", s.URL+"/oauth/api/v2/token/introspect", strings.NewReader(url.Values{"token": {tok}}.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.SetBasicAuth("rs", rsSecret)
	resp, err := s.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out struct {
		Active bool `json:"active"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil || resp.StatusCode != 200 {
		t.Fatalf("introspection: %d %v", resp.StatusCode, err)
	}
	return out.Active
}

// oauthStatus is the HTTP status of a failed token request (0: no answer).
func oauthStatus(err error) int {
	var re *oauth2.RetrieveError
	if errors.As(err, &re) {
		return re.Response.StatusCode
	}
	return 0
}

func eventTypes(t testing.TB, st store.Store, kind, agent string) []string {
	t.Helper()
	evs, err := st.SearchEvents(context.Background(), store.EventFilter{Kind: kind, AgentUser: agent}, 0, 100)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range evs {
		out = append(out, e.Type)
	}
	return out
}

func TestAdminAuthentication(t *testing.T) {
	for _, backend := range servertest.Backends {
		t.Run(backend, func(t *testing.T) {
			s := servertest.Start(t, testConfig(), servertest.Options{Backend: backend})
			r := call(t, s, "GET", "/api/v1/clients", "", nil)
			if r.status != 401 || !strings.Contains(r.header.Get("WWW-Authenticate"), "Basic") ||
				!strings.Contains(r.header.Get("WWW-Authenticate"), "Bearer") {
				t.Errorf("no credentials: %d %q", r.status, r.header.Get("WWW-Authenticate"))
			}
			if r := call(t, s, "GET", "/api/v1/clients", "", basic("ops", "wrong-password")); r.status != 401 {
				t.Errorf("a wrong password: %d", r.status)
			}
			if r := call(t, s, "GET", "/api/v1/clients", "", basic("robot", robotSecret)); r.status != 401 {
				t.Errorf("a client's secret as basic credentials (api_users only): %d", r.status)
			}
			if r := call(t, s, "GET", "/api/v1/clients", "", bearer("lk_at_not-a-token")); r.status != 401 {
				t.Errorf("an unknown bearer token: %d", r.status)
			}
			readerTok, err := clientToken(s, "reader", readerSecret, "read")
			if err != nil {
				t.Fatal(err)
			}
			if r := call(t, s, "GET", "/api/v1/clients", "", bearer(readerTok)); r.status != 403 || r.json["error"] != "forbidden" {
				t.Errorf("a token without vendor_api_admin: %d %s", r.status, r.body)
			}
			robotTok, err := clientToken(s, "robot", robotSecret, "vendor_api_admin")
			if err != nil {
				t.Fatal(err)
			}
			for name, a := range map[string]auth{"api user": ops, "admin token": bearer(robotTok)} {
				if r := call(t, s, "GET", "/api/v1/clients", "", a); r.status != 200 {
					t.Errorf("%s: %d %s", name, r.status, r.body)
				}
			}
			// The person events API is the basic APIs' neighbour: the same throttle.
			var last result
			for range 25 {
				last = call(t, s, "GET", "/api/v1/clients", "", basic("ops", "guessing-guessing"))
			}
			if last.status != 429 || last.header.Get("Retry-After") == "" {
				t.Errorf("guessing API user passwords: %d %v, want 429 with Retry-After", last.status, last.header)
			}
		})
	}
}

func TestClientLifecycle(t *testing.T) {
	for _, backend := range servertest.Backends {
		t.Run(backend, func(t *testing.T) {
			s := servertest.Start(t, testConfig(), servertest.Options{Backend: backend})
			r := call(t, s, "POST", "/api/v1/clients", `{"client_id":"svc","name":"Service","token_endpoint_auth_method":"client_secret_basic",
				"grant_types":["client_credentials"],"scopes":["read","write"],"access_token_lifetime":"10m"}`, ops)
			secret, _ := r.json["client_secret"].(string)
			if r.status != 201 || r.header.Get("Location") != "/api/v1/clients/svc" || len(secret) < 40 ||
				r.header.Get("ETag") != `"1"` || r.json["source"] != "api" {
				t.Fatalf("create: %d %v %s", r.status, r.header, r.body)
			}
			// A client created through the API gets tokens at once.
			tok, err := clientToken(s, "svc", secret, "read")
			if err != nil {
				t.Fatalf("token of the new client: %v", err)
			}
			if !active(t, s, tok) {
				t.Error("the new client's token is not active")
			}
			r = call(t, s, "GET", "/api/v1/clients/svc", "", ops)
			if r.status != 200 || strings.Contains(string(r.body), secret) || r.json["client_secret"] != nil ||
				r.json["access_token_lifetime"] != "10m" || r.header.Get("ETag") != `"1"` {
				t.Errorf("read: %d %s", r.status, r.body)
			}
			r = call(t, s, "GET", "/api/v1/clients?limit=2&offset=1", "", ops)
			cs, _ := r.json["clients"].([]any)
			if r.status != 200 || r.json["total"] != float64(4) || len(cs) != 2 {
				t.Fatalf("list: %d %s", r.status, r.body)
			}
			if c := cs[0].(map[string]any); c["client_id"] != "robot" || c["source"] != "config" {
				t.Errorf("a config file client: %v", c)
			}
			if r := call(t, s, "GET", "/api/v1/clients?limit=0", "", ops); r.status != 400 || r.json["details"].([]any)[0] != "limit" {
				t.Errorf("limit=0: %d %s", r.status, r.body)
			}

			// PUT replaces every member and keeps the secret; If-Match refuses a stale write.
			body := `{"name":"Renamed","token_endpoint_auth_method":"client_secret_basic","grant_types":["client_credentials"],"scopes":["read"]}`
			r = call(t, s, "PUT", "/api/v1/clients/svc", body, ops, "If-Match", `"1"`)
			if r.status != 200 || r.json["name"] != "Renamed" || r.header.Get("ETag") != `"2"` || r.json["client_secret"] != nil ||
				r.json["access_token_lifetime"] != "1h" {
				t.Fatalf("put: %d %s", r.status, r.body)
			}
			if r := call(t, s, "PUT", "/api/v1/clients/svc", body, ops, "If-Match", `"1"`); r.status != 412 {
				t.Errorf("a stale If-Match: %d %s", r.status, r.body)
			}
			if _, err := clientToken(s, "svc", secret, "write"); oauthStatus(err) != 400 {
				t.Errorf("a scope the update took away: %v", err)
			}
			if _, err := clientToken(s, "svc", secret, "read"); err != nil {
				t.Errorf("the secret after an update: %v", err)
			}

			// Rotation: the new secret works and the old one fails at once.
			r = call(t, s, "POST", "/api/v1/clients/svc/secret", "", ops)
			fresh, _ := r.json["client_secret"].(string)
			if r.status != 200 || len(fresh) < 40 || fresh == secret {
				t.Fatalf("rotate: %d %s", r.status, r.body)
			}
			if _, err := clientToken(s, "svc", secret, "read"); oauthStatus(err) != 401 {
				t.Errorf("the old secret after the rotation: %v", err)
			}
			if _, err := clientToken(s, "svc", fresh, "read"); err != nil {
				t.Errorf("the new secret: %v", err)
			}

			// The config file's clients are read-only here.
			for _, c := range [][2]string{{"PUT", "/api/v1/clients/robot"}, {"DELETE", "/api/v1/clients/robot"},
				{"POST", "/api/v1/clients/robot/secret"}} {
				b := ""
				if c[0] == "PUT" {
					b = `{"grant_types":["client_credentials"],"token_endpoint_auth_method":"client_secret_basic"}`
				}
				if r := call(t, s, c[0], c[1], b, ops); r.status != 409 || r.json["error"] != "read_only" {
					t.Errorf("%s %s: %d %s", c[0], c[1], r.status, r.body)
				}
			}

			// Delete: its tokens are revoked with it.
			r = call(t, s, "DELETE", "/api/v1/clients/svc", "", ops)
			if r.status != 200 || r.json["grants_revoked"].(float64) < 2 {
				t.Errorf("delete: %d %s", r.status, r.body)
			}
			if active(t, s, tok) {
				t.Error("a token of the deleted client is active")
			}
			if _, err := clientToken(s, "svc", fresh, "read"); oauthStatus(err) != 401 {
				t.Errorf("a token request of the deleted client: %v", err)
			}
			if r := call(t, s, "GET", "/api/v1/clients/svc", "", ops); r.status != 404 {
				t.Errorf("read after delete: %d", r.status)
			}
			if r := call(t, s, "DELETE", "/api/v1/clients/svc", "", ops); r.status != 404 {
				t.Errorf("delete again: %d", r.status)
			}
			// A public client with a generated id.
			r = call(t, s, "POST", "/api/v1/clients", `{"redirect_uris":["https://app.example/cb"]}`, ops)
			if r.status != 201 || len(r.json["client_id"].(string)) != 36 || r.json["client_secret"] != nil ||
				r.json["token_endpoint_auth_method"] != "none" {
				t.Errorf("a public client: %d %s", r.status, r.body)
			}
			got := strings.Join(eventTypes(t, s.Store, store.EventOAuth, "ops"), " ")
			for _, typ := range []string{"ADMIN_CLIENT_CREATED", "ADMIN_CLIENT_UPDATED", "ADMIN_CLIENT_DELETED"} {
				if !strings.Contains(got, typ) {
					t.Errorf("events of the admin: %s, want %s", got, typ)
				}
			}
		})
	}
}

// TestClientBadInput: every member invalid in turn answers 400 naming
// it; and the body's own failures.
func TestClientBadInput(t *testing.T) {
	long := strings.Repeat("x", 3000)
	for _, backend := range servertest.Backends {
		t.Run(backend, func(t *testing.T) {
			s := servertest.Start(t, testConfig(), servertest.Options{Backend: backend})
			const ok = `"token_endpoint_auth_method":"client_secret_basic","grant_types":["client_credentials"]`
			for _, tc := range []struct{ body, field string }{
				{`{"client_id":"a:b",` + ok + `}`, "client_id"},
				{`{"client_id":"",` + ok + `,"client_secret":"short"}`, "client_secret"},
				{`{` + ok + `,"client_secret_hash":"plain"}`, "client_secret_hash"},
				{`{` + ok + `,"name":"` + long + `"}`, "name"},
				{`{"token_endpoint_auth_method":"magic","grant_types":["client_credentials"]}`, "token_endpoint_auth_method"},
				{`{"token_endpoint_auth_method":"private_key_jwt","grant_types":["client_credentials"],"jwks":{"keys":[]}}`, "jwks"},
				{`{"token_endpoint_auth_method":"private_key_jwt","grant_types":["client_credentials"],"jwks":[1]}`, "jwks"},
				{`{"token_endpoint_auth_method":"private_key_jwt","grant_types":["client_credentials"],"jwks_uri":"ftp://keys"}`, "jwks_uri"},
				{`{` + ok + `,"redirect_uris":["/relative"]}`, "redirect_uris"},
				{`{"token_endpoint_auth_method":"client_secret_basic"}`, "redirect_uris"},
				{`{"token_endpoint_auth_method":"client_secret_basic","grant_types":["magic"]}`, "grant_types"},
				{`{` + ok + `,"scopes":["a b"]}`, "scopes"},
				{`{` + ok + `,"consent_required":"yes"}`, "consent_required"},
				{`{` + ok + `,"allow_plain_pkce":1}`, "allow_plain_pkce"},
				{`{` + ok + `,"access_token_lifetime":"forever"}`, "access_token_lifetime"},
				{`{` + ok + `,"refresh_token_lifetime":"0s"}`, "refresh_token_lifetime"},
				{`{` + ok + `,"app_identifier":"` + long + `"}`, "app_identifier"},
				{`{` + ok + `,"app_platform":"windows"}`, "app_platform"},
				{`{` + ok + `,"app_version":"` + long + `"}`, "app_version"},
				{`{"token_endpoint_auth_method":"none","redirect_uris":["https://a.example/cb"],"introspect_any_token":true}`, "introspect_any_token"},
				{`{` + ok + `,"device_approval_clients":[""]}`, "device_approval_clients"},
				{`{` + ok + `,"post_logout_redirect_uris":["/bye"]}`, "post_logout_redirect_uris"},
				{`{` + ok + `,"access_token_format":"paseto"}`, "access_token_format"},
				{`{` + ok + `,"colour":"blue"}`, "colour"},
				{`{` + ok + `,"scopes":"read"}`, "scopes"},
			} {
				r := call(t, s, "POST", "/api/v1/clients", tc.body, ops)
				details, _ := r.json["details"].([]any)
				if r.status != 400 || r.json["error"] != "invalid_client_metadata" || len(details) != 1 || details[0] != tc.field {
					t.Errorf("%.80s: %d %s, want 400 naming %s", tc.body, r.status, r.body, tc.field)
				}
			}
			if r := call(t, s, "POST", "/api/v1/clients", `{"client_id":"dup",`+ok+`}`, ops); r.status != 201 {
				t.Fatalf("create: %d %s", r.status, r.body)
			}
			for _, id := range []string{"dup", "robot"} { // a taken id, and a config file client's
				if r := call(t, s, "POST", "/api/v1/clients", `{"client_id":"`+id+`",`+ok+`}`, ops); r.status != 409 || r.json["error"] != "conflict" {
					t.Errorf("duplicate id %s: %d %s", id, r.status, r.body)
				}
			}
			big := `{` + ok + `,"redirect_uris":["https://a.example/` + strings.Repeat("x", 70<<10) + `"]}`
			if r := call(t, s, "POST", "/api/v1/clients", big, ops); r.status != 413 {
				t.Errorf("an oversized body: %d %s", r.status, r.body)
			}
			if r := call(t, s, "POST", "/api/v1/clients", `{`+ok+`} {}`, ops); r.status != 400 {
				t.Errorf("data after the body: %d %s", r.status, r.body)
			}
			r := call(t, s, "POST", "/api/v1/clients", "", ops, "Content-Type", "text/plain")
			if r.status != 415 {
				t.Errorf("not JSON: %d %s", r.status, r.body)
			}
			if r := call(t, s, "PUT", "/api/v1/clients/dup", `{"client_id":"other",`+ok+`}`, ops); r.status != 400 {
				t.Errorf("a PUT naming another client: %d %s", r.status, r.body)
			}
			if r := call(t, s, "PUT", "/api/v1/clients/dup", `{`+ok+`,"client_secret":"a-new-secret-of-mine"}`, ops); r.status != 400 {
				t.Errorf("a PUT setting the secret: %d %s", r.status, r.body)
			}
			if r := call(t, s, "PUT", "/api/v1/clients/dup", `{`+ok+`}`, ops, "If-Match", "garbage"); r.status != 412 {
				t.Errorf("an If-Match that names no revision: %d %s", r.status, r.body)
			}
			if r := call(t, s, "PUT", "/api/v1/clients/nope", `{`+ok+`}`, ops); r.status != 404 {
				t.Errorf("PUT of an unknown client: %d %s", r.status, r.body)
			}
		})
	}
}

// TestConcurrentClientUpdates: writers that read, change and write back
// with If-Match each keep their change: a stale write is refused (412)
// and retried, never lost.
func TestConcurrentClientUpdates(t *testing.T) {
	for _, backend := range servertest.Backends {
		t.Run(backend, func(t *testing.T) {
			s := servertest.Start(t, testConfig(), servertest.Options{Backend: backend})
			if r := call(t, s, "POST", "/api/v1/clients", `{"client_id":"shared","redirect_uris":["https://a.example/0"]}`, ops); r.status != 201 {
				t.Fatalf("create: %d %s", r.status, r.body)
			}
			const writers = 8
			var wg sync.WaitGroup
			var mu sync.Mutex
			conflicts := 0
			for i := 1; i <= writers; i++ {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for attempt := 0; attempt < 100; attempt++ {
						r := call(t, s, "GET", "/api/v1/clients/shared", "", ops)
						var in map[string]any
						_ = json.Unmarshal(r.body, &in)
						uris := append(in["redirect_uris"].([]any), fmt.Sprintf("https://a.example/%d", i))
						body, _ := json.Marshal(map[string]any{"redirect_uris": uris, "token_endpoint_auth_method": "none"})
						w := call(t, s, "PUT", "/api/v1/clients/shared", string(body), ops, "If-Match", r.header.Get("ETag"))
						if w.status == 200 {
							return
						}
						if w.status != 412 {
							t.Errorf("writer %d: %d %s", i, w.status, w.body)
							return
						}
						mu.Lock()
						conflicts++
						mu.Unlock()
					}
					t.Errorf("writer %d never got its write in", i)
				}()
			}
			wg.Wait()
			r := call(t, s, "GET", "/api/v1/clients/shared", "", ops)
			uris := r.json["redirect_uris"].([]any)
			if len(uris) != writers+1 || r.header.Get("ETag") != fmt.Sprintf(`"%d"`, writers+1) {
				t.Errorf("after %d writers (%d refused stale writes): %v at %s, want %d URIs", writers, conflicts, uris,
					r.header.Get("ETag"), writers+1)
			}
		})
	}
}

// TestDeleteDuringIssuance: token requests racing the client's deletion
// leave no active token: each was issued before the delete (and revoked
// by it) or refused.
func TestDeleteDuringIssuance(t *testing.T) {
	for _, backend := range servertest.Backends {
		t.Run(backend, func(t *testing.T) {
			s := servertest.Start(t, testConfig(), servertest.Options{Backend: backend})
			r := call(t, s, "POST", "/api/v1/clients", `{"client_id":"busy","token_endpoint_auth_method":"client_secret_basic",
				"grant_types":["client_credentials"]}`, ops)
			secret, _ := r.json["client_secret"].(string)
			if r.status != 201 {
				t.Fatalf("create: %d %s", r.status, r.body)
			}
			var (
				wg     sync.WaitGroup
				mu     sync.Mutex
				tokens []string
				ready  = make(chan struct{})
				once   sync.Once
			)
			for range 6 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for {
						tok, err := clientToken(s, "busy", secret)
						if err != nil {
							if st := oauthStatus(err); st != 401 {
								t.Errorf("a token request during the delete: %v", err)
							}
							return
						}
						mu.Lock()
						tokens = append(tokens, tok)
						if len(tokens) == 20 {
							once.Do(func() { close(ready) })
						}
						mu.Unlock()
					}
				}()
			}
			<-ready
			if r := call(t, s, "DELETE", "/api/v1/clients/busy", "", ops); r.status != 200 {
				t.Errorf("delete: %d %s", r.status, r.body)
			}
			wg.Wait()
			for _, tok := range tokens {
				if active(t, s, tok) {
					t.Errorf("a token of the deleted client is active (%d issued)", len(tokens))
					break
				}
			}
			// Not only the answers: the stored rows agree.
			h, err := token.NewHasher(servertest.Key)
			if err != nil {
				t.Fatal(err)
			}
			for _, tok := range tokens {
				tk, g, err := s.Store.GetTokenGrant(context.Background(), h.HashOf(token.AccessToken, tok))
				if err != nil {
					t.Fatal(err)
				}
				if tk.Active(g, time.Now()) {
					t.Errorf("a stored token of the deleted client is active")
					break
				}
			}
		})
	}
}
