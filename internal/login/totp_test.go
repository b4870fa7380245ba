package login_test

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/latchkey/latchkey/internal/config"
	"github.com/latchkey/latchkey/internal/seal"
	"github.com/latchkey/latchkey/internal/server/servertest"
	"github.com/latchkey/latchkey/internal/store"
	"github.com/latchkey/latchkey/internal/totp"
)

const (
	email = "jane@example.com"
	pass  = "correct horse battery staple"
	cb    = "https://app.example/cb"
)

var secret = []byte("12345678901234567890")

func totpServer(t *testing.T, backend string, withSecret bool) *servertest.Server {
	t.Helper()
	no := false
	clock := servertest.NewClock()
	s := servertest.Start(t, &config.Config{
		Clients: []config.Client{{ClientID: "web", ClientSecret: "web-secret-web-secret", RedirectURIs: []string{cb},
			Scopes: []string{"vault", "profile"}, ConsentRequired: &no}},
		Persons: []config.Person{{Email: email, Password: pass}},
	}, servertest.Options{Backend: backend, Clock: clock})
	ctx := context.Background()
	if err := s.Store.CreateScope(ctx, store.Scope{ID: "vault", AuthenticationLevel: 2, VerificationFailedEndpoint: "https://svc.example/failed"}); err != nil {
		t.Fatal(err)
	}
	if withSecret {
		setTOTPSecret(t, s)
	}
	return s
}

// setTOTPSecret gives the test person the TOTP secret secret.
func setTOTPSecret(t *testing.T, s *servertest.Server) {
	t.Helper()
	ctx := context.Background()
	sealer, _ := seal.New(servertest.Key, "totp")
	p, _ := s.Store.GetPersonByEmail(ctx, "", email)
	err := s.Store.UpdatePerson(ctx, p.ID, func(p store.Person) (store.Person, error) {
		p.TOTPSecret = sealer.Seal(secret, []byte(p.ID))
		return p, nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// toTOTP logs in for scope and returns the browser at the TOTP page, with
// the request id and the page's CSRF token.
func toTOTP(t *testing.T, s *servertest.Server, b *http.Client, scope string) (request, csrf string) {
	t.Helper()
	q := url.Values{"client_id": {"web"}, "response_type": {"code"}, "redirect_uri": {cb}, "scope": {scope}, "state": {"st"}}
	resp, err := b.Get(s.URL + "/oauth/authorize?" + q.Encode())
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	loc, _ := resp.Location()
	request = loc.Query().Get("request")
	page := servertest.Get(t, b, loc.String())
	resp, err = b.PostForm(s.URL+"/login", url.Values{"csrf_token": {servertest.CSRFRE.FindStringSubmatch(page)[1]},
		"request": {request}, "email": {email}, "password": {pass}})
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("after login: %d", resp.StatusCode)
	}
	loc, _ = resp.Location()
	if loc.Path != "/login/totp" {
		t.Fatalf("after login the browser goes to %s, want /login/totp", loc)
	}
	page = servertest.Get(t, b, resp.Request.URL.ResolveReference(loc).String())
	if !strings.Contains(page, `id="code"`) {
		t.Fatalf("no code field:\n%s", page)
	}
	return request, servertest.CSRFRE.FindStringSubmatch(page)[1]
}

func postCode(t *testing.T, s *servertest.Server, b *http.Client, request, csrf, code string) *http.Response {
	t.Helper()
	resp, err := b.PostForm(s.URL+"/login/totp", url.Values{"csrf_token": {csrf}, "request": {request}, "code": {code}})
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp
}

func TestTOTPStepUp(t *testing.T) {
	for _, backend := range servertest.Backends {
		t.Run(backend, func(t *testing.T) {
			s := totpServer(t, backend, true)
			b := s.Browser()
			request, csrf := toTOTP(t, s, b, "vault")
			now := s.Clock.Now()
			for name, code := range map[string]string{"wrong": "000000", "two steps old": totp.Code(secret, totp.Counter(now)-2), "empty": ""} {
				if resp := postCode(t, s, b, request, csrf, code); resp.StatusCode != http.StatusUnauthorized {
					t.Errorf("%s code: %d, want 401 and the form again", name, resp.StatusCode)
				}
			}
			good := totp.Code(secret, totp.Counter(now))
			resp := postCode(t, s, b, request, csrf, good)
			loc, _ := resp.Location()
			if resp.StatusCode != http.StatusSeeOther || loc == nil || loc.Query().Get("code") == "" || !strings.HasPrefix(loc.String(), cb) {
				t.Fatalf("right code: %d %v, want a redirect to the client with a code", resp.StatusCode, loc)
			}
			// The same code again, in a new flow of another browser: refused (single use).
			b2 := s.Browser()
			request2, csrf2 := toTOTP(t, s, b2, "vault")
			if resp := postCode(t, s, b2, request2, csrf2, good); resp.StatusCode != http.StatusUnauthorized {
				t.Errorf("replayed code: %d, want 401", resp.StatusCode)
			}
			// The session of the first browser is at the TOTP level now: no code asked.
			q := url.Values{"client_id": {"web"}, "response_type": {"code"}, "redirect_uri": {cb}, "scope": {"vault"}, "state": {"st"}}
			r2, err := b.Get(s.URL + "/oauth/authorize?" + q.Encode())
			if err != nil {
				t.Fatal(err)
			}
			r2.Body.Close()
			if l, _ := r2.Location(); l == nil || l.Query().Get("code") == "" {
				t.Errorf("stepped-up session asked again: %v", l)
			}
			evs, _ := s.Store.SearchEvents(context.Background(), store.EventFilter{Kind: store.EventOAuth,
				Types: []string{"STEP_UP_TOTP_SUCCEEDED", "OTP_AUTH_NOT_AUTHENTICATED_INVALID_OTP"}}, 0, 20)
			counts := map[string]int{}
			for _, e := range evs {
				counts[e.Type]++
			}
			if counts["STEP_UP_TOTP_SUCCEEDED"] != 1 || counts["OTP_AUTH_NOT_AUTHENTICATED_INVALID_OTP"] != 4 {
				t.Errorf("events: %v", counts)
			}
		})
	}
}

func TestTOTPThrottled(t *testing.T) {
	s := totpServer(t, "sqlite", true)
	b := s.Browser()
	request, csrf := toTOTP(t, s, b, "vault")
	for range 5 {
		postCode(t, s, b, request, csrf, "000000")
	}
	good := totp.Code(secret, totp.Counter(s.Clock.Now()))
	if resp := postCode(t, s, b, request, csrf, good); resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("right code after 5 wrong ones: %d, want 401 (throttled)", resp.StatusCode)
	}
	s.Clock.Advance(16 * time.Minute)
	good = totp.Code(secret, totp.Counter(s.Clock.Now()))
	if resp := postCode(t, s, b, request, csrf, good); resp.StatusCode != http.StatusSeeOther {
		t.Errorf("right code after the window: %d, want 303", resp.StatusCode)
	}
}

// Without a TOTP secret the level cannot be reached: the failure endpoint.
func TestNoTOTPSecretGoesToTheFailureEndpoint(t *testing.T) {
	s := totpServer(t, "sqlite", false)
	f := s.Authorize(t, s.Browser(), s.URL+"/oauth/authorize?"+url.Values{"client_id": {"web"}, "response_type": {"code"},
		"redirect_uri": {cb}, "scope": {"vault"}, "state": {"st"}}.Encode(), email, pass, "allow")
	if f.Back.String() != "https://svc.example/failed" {
		t.Errorf("sent to %s", f.Back)
	}
	// The refusal on the login pages is logged, as the endpoint's are.
	if !strings.Contains(s.Log.String(), `msg="authorization request refused"`) ||
		!strings.Contains(s.Log.String(), `client_id=web code=access_denied why="The authentication level the scope requires cannot be reached." answered="the scope's failure endpoint"`) {
		t.Errorf("the refusal is not logged:\n%s", s.Log.String())
	}
}
