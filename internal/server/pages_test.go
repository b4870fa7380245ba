package server_test

import (
	"html"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/latchkey/latchkey/internal/client"
	"github.com/latchkey/latchkey/internal/config"
	"github.com/latchkey/latchkey/internal/server/servertest"
)

// TestConsentDescribesEveryScope: a scope that the scope configuration
// leaves undescribed gets a readable fallback on the consent page; the
// standard ones keep their built-in texts.
func TestConsentDescribesEveryScope(t *testing.T) {
	yes := true
	cfg := &config.Config{
		Clients: []config.Client{{ClientID: "app", Name: "Example App", TokenEndpointAuthMethod: client.AuthNone,
			RedirectURIs: []string{"http://127.0.0.1:9/cb"}, GrantTypes: []string{client.GrantAuthorizationCode},
			Scopes: []string{"read", "vendor_api_admin", "https://api.example/orders"}, ConsentRequired: &yes}},
		Persons: []config.Person{{Email: "jane@example.com", Password: "correct horse battery staple"}},
	}
	s := servertest.Start(t, cfg, servertest.Options{})
	q := url.Values{"response_type": {"code"}, "client_id": {"app"}, "redirect_uri": {"http://127.0.0.1:9/cb"},
		"scope": {"openid read vendor_api_admin https://api.example/orders"}, "state": {"s"},
		"code_challenge": {"E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM"}, "code_challenge_method": {"S256"}}
	f := s.Authorize(t, s.Browser(), s.URL+"/oauth/authorize?"+q.Encode(), "jane@example.com", "correct horse battery staple", "allow")
	if len(f.ConsentPages) != 1 {
		t.Fatalf("%d consent pages, want 1", len(f.ConsentPages))
	}
	page := html.UnescapeString(f.ConsentPages[0])
	for _, want := range []string{
		`<span class="scope-name">openid</span><span class="scope-desc">Sign you in with your account</span>`,
		`<span class="scope-name">read</span><span class="scope-desc">Access called “read”</span>`,
		`<span class="scope-name">vendor_api_admin</span><span class="scope-desc">Access called “vendor api admin”</span>`,
		`<span class="scope-name">https://api.example/orders</span><span class="scope-desc">Access called “https://api.example/orders”</span>`,
	} {
		if !strings.Contains(page, want) {
			t.Errorf("the consent page lacks %s:\n%s", want, page)
		}
	}
}

// TestFavicon: every page names the icon, which is served; /favicon.ico,
// asked for where no page names one, leads to it.
func TestFavicon(t *testing.T) {
	s := servertest.Start(t, &config.Config{}, servertest.Options{})
	b := s.Browser()
	if home := servertest.Get(t, b, s.URL+"/"); !strings.Contains(home, `<link rel="icon" href="/static/favicon.svg" type="image/svg+xml">`) {
		t.Errorf("the home page names no icon:\n%s", home)
	}
	resp, err := b.Get(s.URL + "/favicon.ico")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if loc := resp.Header.Get("Location"); resp.StatusCode != http.StatusMovedPermanently || loc != "/static/favicon.svg" {
		t.Errorf("/favicon.ico: %d to %q", resp.StatusCode, loc)
	}
	resp, err = b.Get(s.URL + "/static/favicon.svg")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "image/svg+xml" {
		t.Errorf("the icon: %d %s", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
}
