package login_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/latchkey/latchkey/internal/config"
	"github.com/latchkey/latchkey/internal/openapicheck"
	"github.com/latchkey/latchkey/internal/server/servertest"
	"github.com/latchkey/latchkey/internal/store"
	"github.com/latchkey/latchkey/internal/totp"
)

// stepUpServer serves a client that asks for consent, a device client, an
// app that may approve devices, and a password-grant client; scope "vault"
// needs level 2 (password + TOTP), and the person has a TOTP secret.
func stepUpServer(t *testing.T, backend string) *servertest.Server {
	t.Helper()
	yes, no := true, false
	cfg := &config.Config{
		Clients: []config.Client{
			{ClientID: "web", ClientSecret: "web-secret-web-secret", RedirectURIs: []string{cb},
				GrantTypes: []string{"authorization_code", "refresh_token"}, Scopes: []string{"vault", "profile"}, ConsentRequired: &yes},
			{ClientID: "tv", TokenEndpointAuthMethod: "none", GrantTypes: []string{"urn:ietf:params:oauth:grant-type:device_code"},
				Scopes: []string{"vault", "profile"}, ConsentRequired: &yes},
			{ClientID: "app", ClientSecret: "app-secret-app-secret", RedirectURIs: []string{cb},
				GrantTypes: []string{"authorization_code", "password"}, Scopes: []string{"vault", "profile", "access:device-authorization:approve"},
				ConsentRequired: &no, DeviceApprovalClients: []string{"tv"}},
		},
		Persons: []config.Person{{Email: email, Password: pass}},
	}
	s := servertest.Start(t, cfg, servertest.Options{Backend: backend, Clock: servertest.NewClock()})
	ctx := context.Background()
	if err := s.Store.CreateScope(ctx, store.Scope{ID: "vault", AuthenticationLevel: 2}); err != nil {
		t.Fatal(err)
	}
	setTOTPSecret(t, s)
	return s
}

// form posts v to u and checks the answer against api/openapi.yaml.
func form(t *testing.T, b *http.Client, u string, v url.Values) *http.Response {
	t.Helper()
	resp, err := b.PostForm(u, v)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	openapicheck.Response(t, resp.Request, resp, body)
	return resp
}

func location(t *testing.T, resp *http.Response) *url.URL {
	t.Helper()
	loc, err := resp.Location()
	if err != nil {
		t.Fatalf("status %d, no redirect", resp.StatusCode)
	}
	return loc
}

func grantEvents(t *testing.T, s *servertest.Server, types ...string) int {
	t.Helper()
	n, err := s.Store.CountEvents(context.Background(), store.EventFilter{Kind: store.EventOAuth, Types: types}, 100)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// After a password login for a scope that needs TOTP, going straight to the
// consent page (GET or POST) issues nothing: authflow sends the browser to
// the step-up, and only after it is a code issued, with OTP in its amr.
func TestConsentCannotSkipTheStepUp(t *testing.T) {
	for _, backend := range servertest.Backends {
		t.Run(backend, func(t *testing.T) {
			s := stepUpServer(t, backend)
			b := s.Browser()
			q := url.Values{"client_id": {"web"}, "response_type": {"code"}, "redirect_uri": {cb}, "scope": {"vault"}, "state": {"st"}}
			request, csrf := toTOTPFor(t, s, b, q)

			page := servertest.Get(t, b, s.URL+"/consent?request="+request)
			if strings.Contains(page, `name="decision"`) {
				t.Fatal("GET /consent showed the consent form before the step-up")
			}
			resp, err := b.Get(s.URL + "/consent?request=" + request)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if loc := location(t, resp); loc.Path != "/login/totp" {
				t.Errorf("GET /consent went to %s, want /login/totp", loc)
			}
			resp = form(t, b, s.URL+"/consent", url.Values{"csrf_token": {csrf}, "request": {request}, "decision": {"allow"}})
			if loc := location(t, resp); loc.Path != "/login/totp" || loc.Query().Get("code") != "" {
				t.Fatalf("POST /consent allow went to %s, want /login/totp and no code", loc)
			}
			if n := grantEvents(t, s, "AUTHZ_REQUEST_GRANT_CREATED"); n != 0 {
				t.Fatalf("%d codes issued before the step-up", n)
			}

			// The step-up, then consent, then the code.
			resp = postCode(t, s, b, request, csrf, totp.Code(secret, totp.Counter(s.Clock.Now())))
			if loc := location(t, resp); loc.Path != "/consent" {
				t.Fatalf("after the step-up: %s, want the consent page", loc)
			}
			resp = form(t, b, s.URL+"/consent", url.Values{"csrf_token": {csrf}, "request": {request}, "decision": {"allow"}})
			loc := location(t, resp)
			code := loc.Query().Get("code")
			if code == "" {
				t.Fatalf("after consent: %s, want a code", loc)
			}
			tok := exchange(t, s, code)
			if got := introspectAMR(t, s, tok); got != `["DEFAULT","OTP"]` {
				t.Errorf("amr %s, want [DEFAULT OTP]", got)
			}
		})
	}
}

// The device verification flow has the same rule: consent posted before the
// step-up does not approve the device.
func TestDeviceConsentCannotSkipTheStepUp(t *testing.T) {
	for _, backend := range servertest.Backends {
		t.Run(backend, func(t *testing.T) {
			s := stepUpServer(t, backend)
			dev := deviceAuthorization(t, s, "tv", "vault")
			b := s.Browser()
			page := servertest.Get(t, b, s.URL+"/oauth/device_authorization/verification")
			resp := form(t, b, s.URL+"/oauth/device_authorization/verification", url.Values{
				"csrf_token": {servertest.CSRFRE.FindStringSubmatch(page)[1]}, "user_code": {dev["user_code"].(string)}})
			loc := location(t, resp)
			request := loc.Query().Get("request")
			page = servertest.Get(t, b, loc.String())
			csrf := servertest.CSRFRE.FindStringSubmatch(page)[1]
			resp = form(t, b, s.URL+"/login", url.Values{"csrf_token": {csrf}, "request": {request}, "email": {email}, "password": {pass}})
			if loc := location(t, resp); loc.Path != "/login/totp" {
				t.Fatalf("after login: %s, want /login/totp", loc)
			}
			resp = form(t, b, s.URL+"/consent", url.Values{"csrf_token": {csrf}, "request": {request}, "decision": {"allow"}})
			if loc := location(t, resp); loc.Path != "/login/totp" {
				t.Errorf("POST /consent allow before the step-up went to %s", loc)
			}
			if r := pollDevice(t, s, "tv", dev["device_code"].(string)); r["error"] != "authorization_pending" {
				t.Fatalf("poll after the skipped step-up: %v, want authorization_pending", r)
			}
		})
	}
}

// Flows without pages cannot step up: the password grant and in-app
// approval by a password-level sign-in are refused for a level-2 scope, and
// a refresh never yields a scope whose level was raised above the grant's.
func TestFlowsWithoutPagesKeepTheirLevel(t *testing.T) {
	for _, backend := range servertest.Backends {
		t.Run(backend, func(t *testing.T) {
			s := stepUpServer(t, backend)
			r := tokenRequest(t, s, url.Values{"grant_type": {"password"}, "username": {email}, "password": {pass}, "scope": {"vault"}})
			if r["error"] != "invalid_scope" {
				t.Errorf("password grant for a level-2 scope: %v, want invalid_scope", r)
			}
			app := tokenRequest(t, s, url.Values{"grant_type": {"password"}, "username": {email}, "password": {pass},
				"scope": {"vault access:device-authorization:approve"}})
			if app["error"] == nil {
				t.Fatalf("the app got a level-2 scope by password: %v", app)
			}
			// The app signed in by password while vault needed no level;
			// now it needs level 2.
			setLevel(t, s, "vault", 0)
			app = tokenRequest(t, s, url.Values{"grant_type": {"password"}, "username": {email}, "password": {pass},
				"scope": {"vault access:device-authorization:approve"}})
			if app["access_token"] == nil {
				t.Fatalf("password grant for level-0 scopes: %v", app)
			}
			setLevel(t, s, "vault", 2)
			dev := deviceAuthorization(t, s, "tv", "vault")
			req, _ := http.NewRequest("POST", s.URL+"/oauth/device_authorization/approve?user_code="+dev["user_code"].(string), nil)
			req.Header.Set("Authorization", "Bearer "+app["access_token"].(string))
			resp, err := s.Client().Do(req)
			if err != nil {
				t.Fatal(err)
			}
			var body map[string]any
			_ = json.NewDecoder(resp.Body).Decode(&body)
			resp.Body.Close()
			if resp.StatusCode != http.StatusForbidden || body["error"] != "insufficient_user_authentication" {
				t.Errorf("in-app approval of a level-2 device by a password sign-in: %d %v", resp.StatusCode, body)
			}
			if r := pollDevice(t, s, "tv", dev["device_code"].(string)); r["error"] != "authorization_pending" {
				t.Errorf("device after the refused approval: %v", r)
			}

			// A grant made at level 1 for "profile"; then "profile" needs level 2.
			b := s.Browser()
			f := s.Authorize(t, b, s.URL+"/oauth/authorize?"+url.Values{"client_id": {"web"}, "response_type": {"code"},
				"redirect_uri": {cb}, "scope": {"profile"}}.Encode(), email, pass, "allow")
			tok := exchangeFull(t, s, f.Back.Query().Get("code"))
			if r := webToken(t, s, url.Values{"grant_type": {"refresh_token"}, "refresh_token": {tok["refresh_token"].(string)}}); r["access_token"] == nil {
				t.Fatalf("refresh while profile needs no level: %v", r)
			}
			setLevel(t, s, "profile", 2)
			r = webToken(t, s, url.Values{"grant_type": {"refresh_token"}, "refresh_token": {tok["refresh_token"].(string)}})
			if r["error"] != "invalid_grant" {
				t.Errorf("refresh of a level-1 grant for a scope now at level 2: %v, want invalid_grant", r)
			}
		})
	}
}

// setLevel configures scope id with authentication_level level.
func setLevel(t *testing.T, s *servertest.Server, id string, level int) {
	t.Helper()
	ctx := context.Background()
	sc := store.Scope{ID: id, AuthenticationLevel: level}
	err := s.Store.ReplaceScope(ctx, sc)
	if errors.Is(err, store.ErrNotFound) {
		err = s.Store.CreateScope(ctx, sc)
	}
	if err != nil {
		t.Fatal(err)
	}
}

// logIn sends the browser b to the authorization request q and signs in
// with the password: the request id, the CSRF token, and where the browser
// was sent after the password.
func logIn(t *testing.T, s *servertest.Server, b *http.Client, q url.Values) (request, csrf string, next *url.URL) {
	t.Helper()
	resp, err := b.Get(s.URL + "/oauth/authorize?" + q.Encode())
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	loc := location(t, resp)
	request = loc.Query().Get("request")
	page := servertest.Get(t, b, loc.String())
	csrf = servertest.CSRFRE.FindStringSubmatch(page)[1]
	resp = form(t, b, s.URL+"/login", url.Values{"csrf_token": {csrf}, "request": {request}, "email": {email}, "password": {pass}})
	return request, csrf, location(t, resp)
}

func toTOTPFor(t *testing.T, s *servertest.Server, b *http.Client, q url.Values) (request, csrf string) {
	t.Helper()
	request, csrf, next := logIn(t, s, b, q)
	if next.Path != "/login/totp" {
		t.Fatalf("after login the browser goes to %s, want /login/totp", next)
	}
	return request, csrf
}

func post(t *testing.T, s *servertest.Server, path string, v url.Values, user, password string) map[string]any {
	t.Helper()
	req, _ := http.NewRequest("POST", s.URL+path, strings.NewReader(v.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	if user != "" {
		req.SetBasicAuth(user, password)
	}
	resp, err := s.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	var m map[string]any
	if err := json.Unmarshal(body, &m); err != nil {
		t.Fatalf("%s: %d %s", path, resp.StatusCode, body)
	}
	return m
}

func tokenRequest(t *testing.T, s *servertest.Server, v url.Values) map[string]any {
	return post(t, s, "/oauth/token", v, "app", "app-secret-app-secret")
}

func webToken(t *testing.T, s *servertest.Server, v url.Values) map[string]any {
	return post(t, s, "/oauth/token", v, "web", "web-secret-web-secret")
}

func exchangeFull(t *testing.T, s *servertest.Server, code string) map[string]any {
	t.Helper()
	r := webToken(t, s, url.Values{"grant_type": {"authorization_code"}, "code": {code}, "redirect_uri": {cb}})
	if r["access_token"] == nil {
		t.Fatalf("exchange: %v", r)
	}
	return r
}

func exchange(t *testing.T, s *servertest.Server, code string) string {
	return exchangeFull(t, s, code)["access_token"].(string)
}

func introspectAMR(t *testing.T, s *servertest.Server, tok string) string {
	t.Helper()
	r := post(t, s, "/oauth/api/v2/token/introspect", url.Values{"token": {tok}}, "web", "web-secret-web-secret")
	b, _ := json.Marshal(r["amr"])
	return string(b)
}

func deviceAuthorization(t *testing.T, s *servertest.Server, client, scope string) map[string]any {
	t.Helper()
	r := post(t, s, "/oauth/device_authorization", url.Values{"client_id": {client}, "scope": {scope}}, "", "")
	if r["device_code"] == nil {
		t.Fatalf("device authorization: %v", r)
	}
	return r
}

func pollDevice(t *testing.T, s *servertest.Server, client, deviceCode string) map[string]any {
	return post(t, s, "/oauth/token", url.Values{"grant_type": {"urn:ietf:params:oauth:grant-type:device_code"},
		"device_code": {deviceCode}, "client_id": {client}}, "", "")
}

// The ID token says what the person did: after the TOTP step-up its amr
// is pwd, otp and mfa and its acr the level reached; the step-up's page
// cannot be skipped for it either (TestConsentCannotSkipTheStepUp).
func TestIDTokenReflectsTheStepUp(t *testing.T) {
	for _, backend := range servertest.Backends {
		t.Run(backend, func(t *testing.T) {
			s := stepUpServer(t, backend)
			b := s.Browser()
			q := url.Values{"client_id": {"web"}, "response_type": {"code"}, "redirect_uri": {cb}, "scope": {"openid vault"},
				"state": {"st"}, "nonce": {"n-1"}}
			request, csrf := toTOTPFor(t, s, b, q)
			if loc := location(t, postCode(t, s, b, request, csrf, totp.Code(secret, totp.Counter(s.Clock.Now())))); loc.Path != "/consent" {
				t.Fatalf("after the step-up: %s", loc)
			}
			loc := location(t, form(t, b, s.URL+"/consent", url.Values{"csrf_token": {csrf}, "request": {request}, "decision": {"allow"}}))
			r := exchangeFull(t, s, loc.Query().Get("code"))
			raw, _ := r["id_token"].(string)
			parts := strings.Split(raw, ".")
			if len(parts) != 3 {
				t.Fatalf("no ID token: %v", r)
			}
			payload, err := base64.RawURLEncoding.DecodeString(parts[1])
			if err != nil {
				t.Fatal(err)
			}
			var c struct {
				AMR   []string `json:"amr"`
				ACR   string   `json:"acr"`
				Nonce string   `json:"nonce"`
			}
			if err := json.Unmarshal(payload, &c); err != nil {
				t.Fatal(err)
			}
			if strings.Join(c.AMR, " ") != "pwd otp mfa" || c.ACR != "2" || c.Nonce != "n-1" {
				t.Errorf("ID token amr %v acr %q nonce %q; want pwd otp mfa, 2, n-1", c.AMR, c.ACR, c.Nonce)
			}
		})
	}
}
