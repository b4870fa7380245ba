package scopes_test

import (
	"context"
	"net/url"
	"strings"
	"testing"

	"golang.org/x/oauth2"

	"github.com/latchkey/latchkey/internal/config"
	"github.com/latchkey/latchkey/internal/server/servertest"
	"github.com/latchkey/latchkey/internal/token"
)

const (
	email = "jane@example.com"
	pass  = "correct horse battery staple"
	cb    = "https://app.example/cb"
)

func flowConfig() *config.Config {
	cfg := testConfig()
	yes := true
	cfg.Clients = append(cfg.Clients, config.Client{ClientID: "web", ClientSecret: "web-secret-web-secret",
		RedirectURIs: []string{cb}, GrantTypes: []string{"authorization_code", "refresh_token", "client_credentials"},
		Scopes: []string{"profile", "orders", "vault", "metered"}, ConsentRequired: &yes})
	cfg.Persons = []config.Person{{Email: email, Password: pass}}
	return cfg
}

func authURL(s *servertest.Server, scope, language string) string {
	q := url.Values{"client_id": {"web"}, "response_type": {"code"}, "redirect_uri": {cb}, "scope": {scope}, "state": {"st"}}
	if language != "" {
		q.Set("language", language)
	}
	return s.URL + "/oauth/authorize?" + q.Encode()
}

func TestPersistentConsentIsAskedOnce(t *testing.T) {
	for _, backend := range servertest.Backends {
		t.Run(backend, func(t *testing.T) {
			s := servertest.Start(t, flowConfig(), servertest.Options{Backend: backend})
			do(t, s, call{"POST", path, `{"scope_id":"profile","persistent_consent":true,
				"descriptions":{"en":"See your profile","nl":"Uw profiel bekijken"}}`, admin})
			do(t, s, call{"POST", path, `{"scope_id":"orders","persistent_consent":false,"descriptions":{"en":"See your orders"}}`, admin})
			b := s.Browser()

			f := s.Authorize(t, b, authURL(s, "profile", "nl_NL"), email, pass, "allow")
			if len(f.ConsentPages) != 1 || f.Back.Query().Get("code") == "" {
				t.Fatalf("first authorization: %d consent pages, back %s", len(f.ConsentPages), f.Back)
			}
			if !strings.Contains(f.ConsentPages[0], "Uw profiel bekijken") || !strings.Contains(f.ConsentPages[0], `lang="nl"`) {
				t.Errorf("the consent page must show the Dutch description:\n%s", f.ConsentPages[0])
			}
			f = s.Authorize(t, b, authURL(s, "profile", ""), email, pass, "allow")
			if len(f.ConsentPages) != 0 || f.Back.Query().Get("code") == "" {
				t.Errorf("persistent consent: asked again (%d pages)", len(f.ConsentPages))
			}
			for i := range 2 {
				f = s.Authorize(t, b, authURL(s, "orders", "en"), email, pass, "allow")
				if len(f.ConsentPages) != 1 || !strings.Contains(f.ConsentPages[0], "See your orders") {
					t.Errorf("non-persistent consent, round %d: %d consent pages", i+1, len(f.ConsentPages))
				}
			}
			// A request that adds a non-persistent scope asks again.
			f = s.Authorize(t, b, authURL(s, "profile orders", ""), email, pass, "allow")
			if len(f.ConsentPages) != 1 {
				t.Errorf("profile+orders: %d consent pages, want 1", len(f.ConsentPages))
			}
		})
	}
}

func TestUnreachableLevelGoesToTheFailureEndpoint(t *testing.T) {
	s := servertest.Start(t, flowConfig(), servertest.Options{})
	do(t, s, call{"POST", path, `{"scope_id":"vault","authentication_level":3,"service_endpoint":"https://svc.example/vault",
		"verification_failed_endpoint":"https://svc.example/failed"}`, admin})
	do(t, s, call{"POST", path, `{"scope_id":"profile","authentication_level":1}`, admin})
	b := s.Browser()
	f := s.Authorize(t, b, authURL(s, "vault", ""), email, pass, "allow")
	if f.Back.String() != "https://svc.example/failed" {
		t.Errorf("level 3 with password login (level 1): sent to %s, want the verification_failed_endpoint", f.Back)
	}
	f = s.Authorize(t, b, authURL(s, "profile", ""), email, pass, "allow")
	if f.Back.Query().Get("code") == "" {
		t.Errorf("level 1 is met by the password login: %s", f.Back)
	}
}

func TestUsageLimitFlowsIntoTokens(t *testing.T) {
	s := servertest.Start(t, flowConfig(), servertest.Options{})
	do(t, s, call{"POST", path, `{"scope_id":"metered","usage_limit":3}`, admin})
	do(t, s, call{"POST", path, `{"scope_id":"orders","usage_limit":5}`, admin})
	cfg := &oauth2.Config{ClientID: "web", ClientSecret: "web-secret-web-secret", RedirectURL: cb,
		Endpoint: oauth2.Endpoint{AuthURL: s.URL + "/oauth/authorize", TokenURL: s.URL + "/oauth/token", AuthStyle: oauth2.AuthStyleInHeader}}
	ctx := context.WithValue(context.Background(), oauth2.HTTPClient, s.Client())
	cfg.Scopes = []string{"metered", "orders", "profile"}
	f := s.Authorize(t, s.Browser(), cfg.AuthCodeURL("st"), email, pass, "allow")
	tok, err := cfg.Exchange(ctx, f.Back.Query().Get("code"))
	if err != nil {
		t.Fatal(err)
	}
	if tok.RefreshToken != "" {
		t.Error("a token with a usage limit gets no refresh token")
	}
	hasher, _ := token.NewHasher(servertest.Key)
	st, err := s.Store.GetToken(ctx, hasher.HashOf(token.AccessToken, tok.AccessToken))
	if err != nil {
		t.Fatal(err)
	}
	if st.UsageLimit != 3 {
		t.Errorf("usage limit %d, want 3 (the smallest non-zero of 3 and 5)", st.UsageLimit)
	}
}
