package login_test

import (
	"net/http"
	"net/url"
	"testing"
	"time"

	"github.com/latchkey/latchkey/internal/config"
	"github.com/latchkey/latchkey/internal/login"
	"github.com/latchkey/latchkey/internal/server/servertest"
)

// The session cookie's lifetime is relative (Max-Age): a server clock two
// days behind the browser's (an injected test clock, or a skewed host) must
// not make the browser drop the cookie at once, as an Expires computed from
// the server's clock did.
func TestSessionCookieLifetimeIsRelative(t *testing.T) {
	no := false
	clock := servertest.NewClock()
	clock.Advance(-48 * time.Hour)
	s := servertest.Start(t, &config.Config{
		Clients: []config.Client{{ClientID: "web", ClientSecret: "web-secret-web-secret", RedirectURIs: []string{cb},
			Scopes: []string{"profile"}, ConsentRequired: &no}},
		Persons: []config.Person{{Email: email, Password: pass}},
	}, servertest.Options{Clock: clock})
	b := s.Browser()
	authURL := s.URL + "/oauth/authorize?" + url.Values{"client_id": {"web"}, "response_type": {"code"},
		"redirect_uri": {cb}, "scope": {"profile"}, "state": {"st"}}.Encode()
	if f := s.Authorize(t, b, authURL, email, pass, "allow"); f.LoginPages != 1 || f.Back.Query().Get("code") == "" {
		t.Fatalf("first authorization: %+v", f)
	}

	resp, err := b.Get(authURL)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if loc, _ := resp.Location(); loc == nil || loc.Query().Get("code") == "" {
		t.Fatalf("second authorization went to %v: the browser dropped its session cookie", loc)
	}
	u, _ := url.Parse(s.URL)
	for _, c := range b.Jar.Cookies(u) {
		if c.Name == login.SessionCookie {
			return
		}
	}
	t.Fatal("no session cookie in the jar")
}

// The cookie itself says Max-Age and no Expires.
func TestSessionCookieHasMaxAge(t *testing.T) {
	no := false
	s := servertest.Start(t, &config.Config{
		Clients: []config.Client{{ClientID: "web", ClientSecret: "web-secret-web-secret", RedirectURIs: []string{cb},
			Scopes: []string{"profile"}, ConsentRequired: &no}},
		Persons: []config.Person{{Email: email, Password: pass}},
	}, servertest.Options{})
	b := s.Browser()
	var setCookie []*http.Cookie
	b.Transport = roundTripFunc(func(r *http.Request) (*http.Response, error) {
		resp, err := s.Client().Transport.RoundTrip(r)
		if err == nil && r.URL.Path == "/login" && r.Method == http.MethodPost {
			setCookie = resp.Cookies()
		}
		return resp, err
	})
	s.Authorize(t, b, s.URL+"/oauth/authorize?"+url.Values{"client_id": {"web"}, "response_type": {"code"},
		"redirect_uri": {cb}, "scope": {"profile"}}.Encode(), email, pass, "allow")
	for _, c := range setCookie {
		if c.Name != login.SessionCookie {
			continue
		}
		if c.MaxAge <= 0 || !c.Expires.IsZero() || c.RawExpires != "" {
			t.Fatalf("session cookie: Max-Age %d, Expires %q; want a positive Max-Age and no Expires", c.MaxAge, c.RawExpires)
		}
		return
	}
	t.Fatal("POST /login set no session cookie")
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }
