package oauth_test

import (
	"encoding/json"
	"net/http"
	"net/url"
	"testing"

	"golang.org/x/oauth2"

	"github.com/latchkey/latchkey/internal/config"
	"github.com/latchkey/latchkey/internal/events"
	"github.com/latchkey/latchkey/internal/oauth"
	"github.com/latchkey/latchkey/internal/openapicheck"
	"github.com/latchkey/latchkey/internal/server/servertest"
	"github.com/latchkey/latchkey/internal/store"
)

// usageConfig adds to deviceConfig an app whose person tokens may carry the
// limited scope "metered" with openid and the in-app approval scope, and an
// API client whose own tokens may carry it with the events API's scope.
func usageConfig() *config.Config {
	cfg := deviceConfig()
	no := false
	cfg.Clients = append(cfg.Clients,
		config.Client{ClientID: "meter-app", ClientSecret: "meter-app-secret-meter", RedirectURIs: []string{redirect},
			GrantTypes: []string{"authorization_code"}, Scopes: []string{"openid", "read", "metered", oauth.DeviceApproveScope},
			ConsentRequired: &no, DeviceApprovalClients: []string{"tv2"}},
		config.Client{ClientID: "meter-api", ClientSecret: "meter-api-secret-meter", GrantTypes: []string{"client_credentials"},
			Scopes: []string{events.APIScope, "metered"}})
	return cfg
}

func meter(t *testing.T, s *servertest.Server, limit int) {
	t.Helper()
	if err := s.Store.CreateScope(t.Context(), store.Scope{ID: "metered", UsageLimit: limit}); err != nil {
		t.Fatal(err)
	}
}

func bearerGet(t *testing.T, s *servertest.Server, path, bearer string) answer {
	t.Helper()
	req, _ := http.NewRequest("GET", s.URL+path, nil)
	req.Header.Set("Authorization", "Bearer "+bearer)
	resp, body := openapicheck.Do(t, s.Client(), req)
	a := answer{status: resp.StatusCode, header: resp.Header, body: string(body)}
	_ = json.Unmarshal(body, &a.json)
	return a
}

// A usage limit counts every use of the token that the service acts on,
// wherever it is presented: introspection, userinfo, in-app approval and
// an API's bearer credential share one count, each refuses the token once
// the limit is spent, and a token refused for itself (here: without the
// API's scope) spends nothing.
func TestUsageLimitCountsEveryAcceptedUse(t *testing.T) {
	forEachBackendWith(t, usageConfig, func(t *testing.T, s *servertest.Server) {
		meter(t, s, 4)
		t.Run("person token", func(t *testing.T) {
			cfg := oauthConfig(s, "meter-app", "meter-app-secret-meter", oauth2.AuthStyleInHeader)
			cfg.Scopes = []string{"openid", "read", "metered", oauth.DeviceApproveScope}
			verifier := oauth2.GenerateVerifier()
			back := authorize(t, s, browser(t, s), cfg.AuthCodeURL("st", oauth2.S256ChallengeOption(verifier)))
			tok, err := cfg.Exchange(clientCtx(s), back.Query().Get("code"), oauth2.VerifierOption(verifier))
			if err != nil {
				t.Fatal(err)
			}
			at := tok.AccessToken
			// The token is accepted and the user code refused: a use is spent,
			// so guessing codes with one token burns its uses.
			if r := approveInApp(t, s, at, "BBBB-BBBB"); r.status != 400 || r.json["error"] != "invalid_grant" { // use 1
				t.Fatalf("unknown user code: %d %v", r.status, r.json)
			}
			if r := bearerGet(t, s, "/oauth/userinfo", at); r.status != 200 { // use 2
				t.Fatalf("userinfo: %d %v", r.status, r.json)
			}
			if r := approveInApp(t, s, at, deviceAuth(t, s, "tv2", "read").UserCode); r.status != 204 { // use 3
				t.Fatalf("in-app approval: %d %v", r.status, r.json)
			}
			if r := introspect(t, s, at, nil); r.json["active"] != true || r.json["usage_count"] != float64(4) {
				t.Fatalf("introspection, the last use: %s", r.body)
			}
			if r := bearerGet(t, s, "/oauth/userinfo", at); r.status != 401 || r.json["error"] != "invalid_token" {
				t.Errorf("userinfo past the limit: %d %v", r.status, r.json)
			}
			if r := approveInApp(t, s, at, deviceAuth(t, s, "tv2", "read").UserCode); r.status != 401 || r.json["error"] != "invalid_token" {
				t.Errorf("in-app approval past the limit: %d %v", r.status, r.json)
			}
			if r := introspect(t, s, at, nil); r.body != `{"active":false}` {
				t.Errorf("introspection past the limit: %s", r.body)
			}
		})
		t.Run("API bearer", func(t *testing.T) {
			r := post(t, s, "/oauth/token", url.Values{"grant_type": {"client_credentials"}, "scope": {"metered"}}, "meter-api", "meter-api-secret-meter")
			if r.status != 200 {
				t.Fatalf("token: %d %s", r.status, r.body)
			}
			narrow := r.json["access_token"].(string)
			// A token without the API's scope is refused (403) and spends nothing.
			for range 2 {
				if r := bearerGet(t, s, "/oauth/api/v1/events", narrow); r.status != 403 {
					t.Fatalf("a token without the API scope: %d %v", r.status, r.json)
				}
			}
			if r := introspect(t, s, narrow, nil); r.json["usage_count"] != float64(1) {
				t.Errorf("refused API calls spent uses: %s", r.body)
			}
			r = post(t, s, "/oauth/token", url.Values{"grant_type": {"client_credentials"}, "scope": {events.APIScope + " metered"}}, "meter-api", "meter-api-secret-meter")
			if r.status != 200 {
				t.Fatalf("token: %d %s", r.status, r.body)
			}
			at := r.json["access_token"].(string)
			for i := range 4 {
				if r := bearerGet(t, s, "/oauth/api/v1/events", at); r.status != 200 {
					t.Fatalf("API call %d within the limit: %d %v", i+1, r.status, r.json)
				}
			}
			if r := bearerGet(t, s, "/oauth/api/v1/events", at); r.status != 401 {
				t.Errorf("API call past the limit: %d %v", r.status, r.json)
			}
			if r := introspect(t, s, at, nil); r.body != `{"active":false}` {
				t.Errorf("introspection past the limit: %s", r.body)
			}
		})
	})
}
