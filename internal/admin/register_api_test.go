package admin_test

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/latchkey/latchkey/internal/config"
	"github.com/latchkey/latchkey/internal/server/servertest"
	"github.com/latchkey/latchkey/internal/store"
)

const initialToken = "initial-access-token-0123456789"

func registrationConfig(initial string) *config.Config {
	cfg := testConfig()
	cfg.DynamicRegistration = config.DynamicRegistration{Enabled: true, InitialAccessToken: initial}
	return cfg
}

// metadataHas reports whether the RFC 8414 metadata names the endpoint.
func metadataHas(t *testing.T, s *servertest.Server) string {
	t.Helper()
	r := call(t, s, "GET", "/.well-known/oauth-authorization-server", "", nil)
	v, _ := r.json["registration_endpoint"].(string)
	return v
}

func TestDynamicRegistrationIsOffByDefault(t *testing.T) {
	s := servertest.Start(t, testConfig(), servertest.Options{})
	if r := call(t, s, "POST", "/oauth/register", `{"redirect_uris":["https://app.example/cb"]}`, nil); r.status != 404 {
		t.Errorf("register while off: %d %s", r.status, r.body)
	}
	if r := call(t, s, "GET", "/oauth/register/robot", "", bearer("lk_rat_x")); r.status != 404 {
		t.Errorf("read while off: %d %s", r.status, r.body)
	}
	if ep := metadataHas(t, s); ep != "" {
		t.Errorf("registration_endpoint %q while off", ep)
	}
}

func TestDynamicRegistration(t *testing.T) {
	for _, backend := range servertest.Backends {
		t.Run(backend, func(t *testing.T) {
			s := servertest.Start(t, registrationConfig(initialToken), servertest.Options{Backend: backend})
			if ep := metadataHas(t, s); ep != s.URL+"/oauth/register" {
				t.Errorf("registration_endpoint = %q", ep)
			}
			// Scopes a registration may ask for are the configured ones, never vendor_api_*.
			if r := call(t, s, "POST", "/api/v1/configuration/scopes", `{"scope_id":"read"}`, basic("robot", robotSecret)); r.status == 201 {
				t.Fatalf("the robot created a scope without vendor_api_config")
			}
			if err := s.Store.CreateScope(context.Background(), store.Scope{ID: "read"}); err != nil {
				t.Fatal(err)
			}
			if err := s.Store.CreateScope(context.Background(), store.Scope{ID: "vendor_api_admin"}); err != nil {
				t.Fatal(err)
			}
			const body = `{"client_name":"Robot Two","grant_types":["client_credentials"],"scope":"read",
				"logo_uri":"https://app.example/logo.png","software_id":"ignored"}`
			for name, a := range map[string]auth{"none": nil, "wrong": bearer("not-the-initial-token")} {
				r := call(t, s, "POST", "/oauth/register", body, a)
				if r.status != 401 || r.json["error"] != "invalid_token" || !strings.Contains(r.header.Get("WWW-Authenticate"), "invalid_token") {
					t.Errorf("%s initial access token: %d %s", name, r.status, r.body)
				}
			}
			for _, tc := range []struct{ body, code string }{
				{`{"grant_types":["client_credentials"],"scope":"vendor_api_admin"}`, "invalid_client_metadata"},
				{`{"grant_types":["client_credentials"],"scope":"unconfigured"}`, "invalid_client_metadata"},
				{`{"grant_types":["password"]}`, "invalid_client_metadata"},
				{`{"grant_types":["implicit"],"response_types":["token"]}`, "invalid_client_metadata"},
				{`{"redirect_uris":["/relative"]}`, "invalid_redirect_uri"},
				{`{"redirect_uris":["https://app.example/cb#frag"]}`, "invalid_redirect_uri"},
				{`{}`, "invalid_redirect_uri"}, // authorization_code by default: a redirect URI is needed
				{`{"grant_types":["client_credentials"],"token_endpoint_auth_method":"none"}`, "invalid_client_metadata"},
				{`{"grant_types":["client_credentials"],"response_types":["code"]}`, "invalid_client_metadata"},
				{`{"grant_types":["client_credentials"],"client_id":"mine"}`, "invalid_client_metadata"},
				{`{"redirect_uris":"https://app.example/cb"}`, "invalid_client_metadata"},
				{`not json`, "invalid_client_metadata"},
			} {
				r := call(t, s, "POST", "/oauth/register", tc.body, bearer(initialToken))
				if r.status != 400 || r.json["error"] != tc.code {
					t.Errorf("%s: %d %s, want 400 %s", tc.body, r.status, r.body, tc.code)
				}
			}

			r := call(t, s, "POST", "/oauth/register", body, bearer(initialToken))
			if r.status != 201 {
				t.Fatalf("register: %d %s", r.status, r.body)
			}
			id, _ := r.json["client_id"].(string)
			secret, _ := r.json["client_secret"].(string)
			rat, _ := r.json["registration_access_token"].(string)
			uri, _ := r.json["registration_client_uri"].(string)
			if id == "" || len(secret) < 40 || !strings.HasPrefix(rat, "lk_rat_") || uri != s.URL+"/oauth/register/"+id ||
				r.json["client_secret_expires_at"] != float64(0) || r.json["token_endpoint_auth_method"] != "client_secret_basic" ||
				r.json["scope"] != "read" || r.json["client_name"] != "Robot Two" || r.json["logo_uri"] != nil {
				t.Fatalf("registration answer: %s", r.body)
			}
			// The registered client gets tokens at once, as the admin API lists it.
			tok, err := clientToken(s, id, secret, "read")
			if err != nil {
				t.Fatalf("token of the registered client: %v", err)
			}
			if r := call(t, s, "GET", "/api/v1/clients/"+id, "", ops); r.status != 200 || r.json["source"] != "dynamic" ||
				r.json["consent_required"] != true {
				t.Errorf("the registered client in the admin API: %d %s", r.status, r.body)
			}

			// RFC 7592: read, update and delete with the registration access token.
			rpath := "/oauth/register/" + id
			for name, a := range map[string]auth{"none": nil, "wrong": bearer("lk_rat_wrong"), "client secret": bearer(secret)} {
				if r := call(t, s, "GET", rpath, "", a); r.status != 401 {
					t.Errorf("read with %s token: %d", name, r.status)
				}
			}
			if r := call(t, s, "GET", "/oauth/register/robot", "", bearer(rat)); r.status != 401 {
				t.Errorf("another client's configuration with this token: %d", r.status)
			}
			r = call(t, s, "GET", rpath, "", bearer(rat))
			if r.status != 200 || r.json["client_id"] != id || r.json["client_secret"] != nil || r.json["registration_access_token"] != rat {
				t.Errorf("read: %d %s", r.status, r.body)
			}
			for _, tc := range []string{
				`{"grant_types":["client_credentials"]}`, // no client_id
				`{"client_id":"` + id + `","grant_types":["client_credentials"],"registration_access_token":"` + rat + `"}`,
				`{"client_id":"` + id + `","grant_types":["client_credentials"],"client_secret":"not-the-secret"}`,
				`{"client_id":"` + id + `","grant_types":["client_credentials"],"scope":"vendor_api_admin"}`,
			} {
				if r := call(t, s, "PUT", rpath, tc, bearer(rat)); r.status != 400 {
					t.Errorf("update %s: %d %s", tc, r.status, r.body)
				}
			}
			r = call(t, s, "PUT", rpath, `{"client_id":"`+id+`","client_secret":"`+secret+`","client_name":"Renamed",
				"grant_types":["client_credentials"]}`, bearer(rat))
			if r.status != 200 || r.json["client_name"] != "Renamed" || r.json["scope"] != nil || r.json["client_secret"] != nil {
				t.Errorf("update: %d %s", r.status, r.body)
			}
			if _, err := clientToken(s, id, secret, "read"); oauthStatus(err) != 400 {
				t.Errorf("a scope the update left out: %v", err)
			}
			if _, err := clientToken(s, id, secret); err != nil {
				t.Errorf("the secret after the update: %v", err)
			}
			req, _ := http.NewRequest("DELETE", s.URL+rpath, nil)
			req.Header.Set("Authorization", "Bearer "+rat)
			if resp, err := s.Client().Do(req); err != nil || resp.StatusCode != 204 {
				t.Fatalf("delete: %v %v", resp, err)
			}
			if active(t, s, tok) {
				t.Error("a token of the deleted registration is active")
			}
			if r := call(t, s, "GET", rpath, "", bearer(rat)); r.status != 401 {
				t.Errorf("read after delete: %d", r.status)
			}
			got := strings.Join(eventTypes(t, s.Store, store.EventOAuth, id), " ")
			for _, typ := range []string{"DYNAMIC_REG_SUCCESS", "DYNAMIC_UP_SUCCESS", "ADMIN_CLIENT_DELETED"} {
				if !strings.Contains(got, typ) {
					t.Errorf("events of the registration: %s, want %s", got, typ)
				}
			}
		})
	}
}

// TestOpenRegistrationIsThrottled: without an initial access token anyone
// may register, MaxRegistrationsPerIP an hour from one address.
func TestOpenRegistrationIsThrottled(t *testing.T) {
	s := servertest.Start(t, registrationConfig(""), servertest.Options{})
	var last result
	for i := 0; i < 21; i++ {
		last = call(t, s, "POST", "/oauth/register", `{"redirect_uris":["https://app.example/cb"],"token_endpoint_auth_method":"none"}`, nil)
		if i < 20 && last.status != 201 {
			t.Fatalf("registration %d: %d %s", i+1, last.status, last.body)
		}
	}
	if last.status != 429 || last.header.Get("Retry-After") == "" {
		t.Errorf("registration 21 from one address: %d %v", last.status, last.header)
	}
}
