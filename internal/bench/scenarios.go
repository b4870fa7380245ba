package bench

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"regexp"
	"strings"
)

// Config is the latchkey configuration the benchmark's server runs with:
// `latchkey bench --print-config` prints it for an external server.
const Config = `
clients:
  - client_id: bench-cc
    client_secret: "bench-cc-secret-bench-cc-secret"
    grant_types: [client_credentials]
    scopes: [read, bench_metered]
  - client_id: bench-rs
    client_secret: "bench-rs-secret-bench-rs-secret"
    grant_types: [client_credentials]
    scopes: [introspect]
    introspect_any_token: true
  - client_id: bench-admin
    client_secret: "bench-admin-secret-bench-admin"
    grant_types: [client_credentials]
    scopes: [vendor_api_config, vendor_api_events]
  - client_id: bench-web
    client_secret: "bench-web-secret-bench-web-secret"
    redirect_uris: [http://127.0.0.1/bench/callback]
    grant_types: [authorization_code, refresh_token]
    scopes: [read]
    consent_required: false
  - client_id: bench-jwt
    client_secret: "bench-jwt-secret-bench-jwt-secret"
    grant_types: [client_credentials]
    scopes: [read]
    access_token_format: jwt
  - client_id: bench-web-jwt
    client_secret: "bench-web-jwt-secret-bench-web-jwt"
    redirect_uris: [http://127.0.0.1/bench/callback]
    grant_types: [authorization_code, refresh_token]
    scopes: [read]
    consent_required: false
    access_token_format: jwt
  - client_id: bench-tv
    token_endpoint_auth_method: none
    grant_types: ["urn:ietf:params:oauth:grant-type:device_code"]
    scopes: [read]
persons:
  - email: bench@example.com
    password: "bench-password-bench"
`

const (
	ccSecret     = "bench-cc-secret-bench-cc-secret"
	rsSecret     = "bench-rs-secret-bench-rs-secret"
	adminSecret  = "bench-admin-secret-bench-admin"
	webSecret    = "bench-web-secret-bench-web-secret"
	jwtSecret    = "bench-jwt-secret-bench-jwt-secret"
	webJWTSecret = "bench-web-jwt-secret-bench-web-jwt"
	redirect     = "http://127.0.0.1/bench/callback"
	verifier     = "dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk"
)

// webApp is a bench client of the code flow.
type webApp struct {
	id, secret string
	jwt        bool // its access tokens are JWTs (access_token_format jwt)
}

var (
	webClient    = webApp{id: "bench-web", secret: webSecret}
	webJWTClient = webApp{id: "bench-web-jwt", secret: webJWTSecret, jwt: true}
)

// checkToken checks a token answer of app: 200, and a JWT access token
// when app's are (a scenario named for JWTs that got opaque tokens would
// measure another path).
func (app webApp) checkToken(resp *http.Response) error {
	if !app.jwt {
		return expect(resp, 200)
	}
	b, err := drain(resp)
	if err != nil {
		return err
	}
	if resp.StatusCode != 200 || !strings.Contains(string(b), `"access_token":"eyJ`) {
		return fmt.Errorf("token: %d without a JWT access token: %.200s", resp.StatusCode, b)
	}
	return nil
}

// Scenario is a named load with its set-up.
type Scenario struct {
	Name        string
	Description string
	// Setup prepares the server and returns the step to repeat and the
	// size of a typical answer (for the ceiling).
	Setup func(ctx context.Context, base string, c *http.Client) (Step, int, error)
}

func form(ctx context.Context, c *http.Client, url string, v url.Values, user, pass string) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, "POST", url, strings.NewReader(v.Encode()))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	if user != "" {
		req.SetBasicAuth(user, pass)
	}
	return c.Do(req)
}

func tokenOf(ctx context.Context, c *http.Client, base string, v url.Values, user, pass string) (map[string]any, int, error) {
	resp, err := form(ctx, c, base+"/oauth/token", v, user, pass)
	if err != nil {
		return nil, 0, err
	}
	b, err := drain(resp)
	if err != nil {
		return nil, 0, err
	}
	if resp.StatusCode != 200 {
		return nil, 0, fmt.Errorf("token: status %d: %.200s", resp.StatusCode, b)
	}
	var m map[string]any
	return m, len(b), json.Unmarshal(b, &m)
}

// Scenarios are the hot paths of the load-benchmark issue, in its order.
var Scenarios = []Scenario{
	{Name: "client_credentials", Description: "POST /oauth/token, client_secret_basic, a new access token each time",
		Setup: func(ctx context.Context, base string, c *http.Client) (Step, int, error) {
			_, size, err := tokenOf(ctx, c, base, url.Values{"grant_type": {"client_credentials"}, "scope": {"read"}}, "bench-cc", ccSecret)
			step := func(ctx context.Context, c *http.Client) (int, error) {
				resp, err := form(ctx, c, base+"/oauth/token", url.Values{"grant_type": {"client_credentials"}, "scope": {"read"}}, "bench-cc", ccSecret)
				if err != nil {
					return 1, err
				}
				return 1, expect(resp, 200)
			}
			return step, size, err
		}},
	{Name: "introspect", Description: "POST /oauth/api/v2/token/introspect of an active token",
		Setup: func(ctx context.Context, base string, c *http.Client) (Step, int, error) {
			return introspectSetup(ctx, base, c, "read")
		}},
	{Name: "introspect_usage_limit", Description: "introspection of a token with a usage limit (an atomic count per request)",
		Setup: func(ctx context.Context, base string, c *http.Client) (Step, int, error) {
			req, _ := http.NewRequestWithContext(ctx, "POST", base+"/api/v1/configuration/scopes",
				strings.NewReader(`{"scope_id":"bench_metered","usage_limit":2147483647}`))
			req.Header.Set("Content-Type", "application/json")
			req.SetBasicAuth("bench-admin", adminSecret)
			resp, err := c.Do(req)
			if err != nil {
				return nil, 0, err
			}
			if _, err := drain(resp); err != nil || resp.StatusCode != 201 && resp.StatusCode != 409 {
				return nil, 0, fmt.Errorf("create scope: status %d", resp.StatusCode)
			}
			return introspectSetup(ctx, base, c, "bench_metered")
		}},
	{Name: "revoke", Description: "POST /oauth/revoke of the client's own access token, the same one each time (revoked by the first)",
		Setup: func(ctx context.Context, base string, c *http.Client) (Step, int, error) {
			tok, _, err := tokenOf(ctx, c, base, url.Values{"grant_type": {"client_credentials"}}, "bench-cc", ccSecret)
			if err != nil {
				return nil, 0, err
			}
			at := tok["access_token"].(string)
			step := func(ctx context.Context, c *http.Client) (int, error) {
				resp, err := form(ctx, c, base+"/oauth/revoke", url.Values{"token": {at}}, "bench-cc", ccSecret)
				if err != nil {
					return 1, err
				}
				return 1, expect(resp, 200)
			}
			return step, 2, nil
		}},
	{Name: "issue_revoke", Description: "POST /oauth/token (client_credentials), then POST /oauth/revoke of the new token (2 requests)",
		Setup: func(ctx context.Context, base string, c *http.Client) (Step, int, error) {
			_, size, err := tokenOf(ctx, c, base, url.Values{"grant_type": {"client_credentials"}}, "bench-cc", ccSecret)
			step := func(ctx context.Context, c *http.Client) (int, error) {
				tok, _, err := tokenOf(ctx, c, base, url.Values{"grant_type": {"client_credentials"}}, "bench-cc", ccSecret)
				if err != nil {
					return 1, err
				}
				resp, err := form(ctx, c, base+"/oauth/revoke", url.Values{"token": {tok["access_token"].(string)}}, "bench-cc", ccSecret)
				if err != nil {
					return 2, err
				}
				return 2, expect(resp, 200)
			}
			return step, size, err
		}},
	{Name: "authorization_code", Description: "GET /oauth/authorize with a session cookie → 302 with code → POST /oauth/token (2 requests)",
		Setup: func(ctx context.Context, base string, c *http.Client) (Step, int, error) {
			return codeFlowSetup(ctx, base, c, "read", webClient)
		}},
	{Name: "authorization_code_openid", Description: "the code flow with scope openid and a nonce: the answer carries a signed ID token (RS256 by default)",
		Setup: func(ctx context.Context, base string, c *http.Client) (Step, int, error) {
			return codeFlowSetup(ctx, base, c, "openid read", webClient)
		}},
	{Name: "authorization_code_jwt", Description: "the code flow for a client with access_token_format jwt: each exchange signs an RFC 9068 access token",
		Setup: func(ctx context.Context, base string, c *http.Client) (Step, int, error) {
			return codeFlowSetup(ctx, base, c, "read", webJWTClient)
		}},
	{Name: "client_credentials_jwt", Description: "POST /oauth/token for a client with access_token_format jwt: a signed RFC 9068 access token each time",
		Setup: func(ctx context.Context, base string, c *http.Client) (Step, int, error) {
			tok, size, err := tokenOf(ctx, c, base, url.Values{"grant_type": {"client_credentials"}}, "bench-jwt", jwtSecret)
			if err != nil {
				return nil, 0, err
			}
			if at, _ := tok["access_token"].(string); strings.Count(at, ".") != 2 {
				return nil, 0, errors.New("bench-jwt got no JWT access token")
			}
			step := func(ctx context.Context, c *http.Client) (int, error) {
				resp, err := form(ctx, c, base+"/oauth/token", url.Values{"grant_type": {"client_credentials"}}, "bench-jwt", jwtSecret)
				if err != nil {
					return 1, err
				}
				return 1, expect(resp, 200)
			}
			return step, size, nil
		}},
	{Name: "refresh", Description: "POST /oauth/token grant_type=refresh_token (confidential client, no rotation)",
		Setup: func(ctx context.Context, base string, c *http.Client) (Step, int, error) {
			return refreshSetup(ctx, base, c, webClient)
		}},
	{Name: "refresh_jwt", Description: "the refresh for a client with access_token_format jwt: each signs an RFC 9068 access token",
		Setup: func(ctx context.Context, base string, c *http.Client) (Step, int, error) {
			return refreshSetup(ctx, base, c, webJWTClient)
		}},
	{Name: "logout", Description: "the code flow, then POST /oauth/revoke of its refresh token, which revokes the grant (3 requests)",
		Setup: func(ctx context.Context, base string, c *http.Client) (Step, int, error) {
			return logoutSetup(ctx, base, c)
		}},
	{Name: "device_polling", Description: "POST /oauth/token with a pending device code (answers 400 authorization_pending or slow_down)",
		Setup: func(ctx context.Context, base string, c *http.Client) (Step, int, error) {
			resp, err := form(ctx, c, base+"/oauth/device_authorization", url.Values{"client_id": {"bench-tv"}}, "", "")
			if err != nil {
				return nil, 0, err
			}
			b, err := drain(resp)
			if err != nil || resp.StatusCode != 200 {
				return nil, 0, fmt.Errorf("device authorization: %d %v", resp.StatusCode, err)
			}
			var d struct {
				DeviceCode string `json:"device_code"`
			}
			if err := json.Unmarshal(b, &d); err != nil {
				return nil, 0, err
			}
			step := func(ctx context.Context, c *http.Client) (int, error) {
				resp, err := form(ctx, c, base+"/oauth/token", url.Values{"grant_type": {"urn:ietf:params:oauth:grant-type:device_code"},
					"device_code": {d.DeviceCode}, "client_id": {"bench-tv"}}, "", "")
				if err != nil {
					return 1, err
				}
				b, err := drain(resp)
				if err != nil {
					return 1, err
				}
				if resp.StatusCode != 400 || !strings.Contains(string(b), "authorization_pending") && !strings.Contains(string(b), "slow_down") {
					return 1, fmt.Errorf("poll: %d %.200s", resp.StatusCode, b)
				}
				return 1, nil
			}
			return step, 90, nil
		}},
	{Name: "events_search", Description: "GET /oauth/api/v1/events, the latest page of 20",
		Setup: func(ctx context.Context, base string, c *http.Client) (Step, int, error) {
			get := func(ctx context.Context, c *http.Client) (*http.Response, error) {
				req, _ := http.NewRequestWithContext(ctx, "GET", base+"/oauth/api/v1/events?size=20", nil)
				req.SetBasicAuth("bench-admin", adminSecret)
				return c.Do(req)
			}
			resp, err := get(ctx, c)
			if err != nil {
				return nil, 0, err
			}
			b, err := drain(resp)
			if err != nil || resp.StatusCode != 200 {
				return nil, 0, fmt.Errorf("events: %d %v", resp.StatusCode, err)
			}
			step := func(ctx context.Context, c *http.Client) (int, error) {
				resp, err := get(ctx, c)
				if err != nil {
					return 1, err
				}
				return 1, expect(resp, 200)
			}
			return step, len(b), nil
		}},
}

// refreshSetup signs the bench person in and gets a refresh token for app;
// each step then refreshes with it (the bench's web clients do not rotate
// refresh tokens).
func refreshSetup(ctx context.Context, base string, c *http.Client, app webApp) (Step, int, error) {
	jar, err := login(ctx, base, c)
	if err != nil {
		return nil, 0, err
	}
	lc := &http.Client{Transport: c.Transport, Jar: jar, CheckRedirect: c.CheckRedirect}
	resp, err := lc.Get(base + "/oauth/authorize?" + url.Values{"client_id": {app.id}, "response_type": {"code"},
		"redirect_uri": {redirect}, "state": {"s"}}.Encode())
	if err != nil {
		return nil, 0, err
	}
	drain(resp)
	loc, err := resp.Location()
	if err != nil {
		return nil, 0, err
	}
	tok, size, err := tokenOf(ctx, c, base, url.Values{"grant_type": {"authorization_code"}, "code": {loc.Query().Get("code")},
		"redirect_uri": {redirect}}, app.id, app.secret)
	if err != nil {
		return nil, 0, err
	}
	rt, _ := tok["refresh_token"].(string)
	if rt == "" {
		return nil, 0, fmt.Errorf("%s got no refresh token", app.id)
	}
	v := url.Values{"grant_type": {"refresh_token"}, "refresh_token": {rt}}
	step := func(ctx context.Context, c *http.Client) (int, error) {
		resp, err := form(ctx, c, base+"/oauth/token", v, app.id, app.secret)
		if err != nil {
			return 1, err
		}
		return 1, app.checkToken(resp)
	}
	return step, size, nil
}

// codeFlowSetup signs the bench person in once; each step then asks for a
// code for app with the session and exchanges it (2 requests), for scope.
func codeFlowSetup(ctx context.Context, base string, c *http.Client, scope string, app webApp) (Step, int, error) {
	exchange, err := codeExchange(ctx, base, c, scope, app)
	if err != nil {
		return nil, 0, err
	}
	openid := strings.Contains(scope, "openid")
	step := func(ctx context.Context, c *http.Client) (int, error) {
		resp, err := exchange(ctx, c)
		if err != nil {
			return 2, err
		}
		if !openid {
			return 2, app.checkToken(resp)
		}
		b, err := drain(resp)
		if err != nil {
			return 2, err
		}
		if resp.StatusCode != 200 || !strings.Contains(string(b), `"id_token":"`) {
			return 2, fmt.Errorf("token: %d without an ID token: %.200s", resp.StatusCode, b)
		}
		return 2, nil
	}
	return step, 200, nil
}

// logoutSetup: each step is the code flow of bench-web, then the
// revocation of its refresh token, as a client's logout does (RFC 7009
// section 1): 3 requests.
func logoutSetup(ctx context.Context, base string, c *http.Client) (Step, int, error) {
	exchange, err := codeExchange(ctx, base, c, "read", webClient)
	if err != nil {
		return nil, 0, err
	}
	step := func(ctx context.Context, c *http.Client) (int, error) {
		resp, err := exchange(ctx, c)
		if err != nil {
			return 2, err
		}
		b, err := drain(resp)
		if err != nil {
			return 2, err
		}
		var tok struct {
			RefreshToken string `json:"refresh_token"`
		}
		if resp.StatusCode != 200 || json.Unmarshal(b, &tok) != nil || tok.RefreshToken == "" {
			return 2, fmt.Errorf("token: %d without a refresh token: %.200s", resp.StatusCode, b)
		}
		resp, err = form(ctx, c, base+"/oauth/revoke", url.Values{"token": {tok.RefreshToken},
			"token_type_hint": {"refresh_token"}}, webClient.id, webClient.secret)
		if err != nil {
			return 3, err
		}
		return 3, expect(resp, 200)
	}
	return step, 200, nil
}

// codeExchange signs the bench person in once and returns a function that
// asks for a code for app with the session and exchanges it (2 requests),
// for scope, returning the token endpoint's answer.
func codeExchange(ctx context.Context, base string, c *http.Client, scope string, app webApp) (func(context.Context, *http.Client) (*http.Response, error), error) {
	jar, err := login(ctx, base, c)
	if err != nil {
		return nil, err
	}
	sum := sha256.Sum256([]byte(verifier))
	authURL := base + "/oauth/authorize?" + url.Values{"client_id": {app.id}, "response_type": {"code"},
		"redirect_uri": {redirect}, "state": {"s"}, "code_challenge_method": {"S256"}, "scope": {scope},
		"nonce": {"bench-nonce"}, "code_challenge": {base64.RawURLEncoding.EncodeToString(sum[:])}}.Encode()
	u, _ := url.Parse(base)
	cookies := jar.Cookies(u)
	return func(ctx context.Context, c *http.Client) (*http.Response, error) {
		req, _ := http.NewRequestWithContext(ctx, "GET", authURL, nil)
		for _, ck := range cookies {
			req.AddCookie(ck)
		}
		resp, err := c.Do(req)
		if err != nil {
			return nil, err
		}
		if _, err := drain(resp); err != nil {
			return nil, err
		}
		loc, err := resp.Location()
		if err != nil || loc.Query().Get("code") == "" {
			return nil, fmt.Errorf("authorize: status %d, no code", resp.StatusCode)
		}
		return form(ctx, c, base+"/oauth/token", url.Values{"grant_type": {"authorization_code"},
			"code": {loc.Query().Get("code")}, "redirect_uri": {redirect}, "code_verifier": {verifier}}, app.id, app.secret)
	}, nil
}

func introspectSetup(ctx context.Context, base string, c *http.Client, scope string) (Step, int, error) {
	tok, _, err := tokenOf(ctx, c, base, url.Values{"grant_type": {"client_credentials"}, "scope": {scope}}, "bench-cc", ccSecret)
	if err != nil {
		return nil, 0, err
	}
	at := tok["access_token"].(string)
	resp, err := form(ctx, c, base+"/oauth/api/v2/token/introspect", url.Values{"token": {at}}, "bench-rs", rsSecret)
	if err != nil {
		return nil, 0, err
	}
	b, err := drain(resp)
	if err != nil || resp.StatusCode != 200 || !strings.Contains(string(b), `"active":true`) {
		return nil, 0, fmt.Errorf("introspect: %d %.200s", resp.StatusCode, b)
	}
	step := func(ctx context.Context, c *http.Client) (int, error) {
		resp, err := form(ctx, c, base+"/oauth/api/v2/token/introspect", url.Values{"token": {at}}, "bench-rs", rsSecret)
		if err != nil {
			return 1, err
		}
		b, err := drain(resp)
		if err != nil {
			return 1, err
		}
		if resp.StatusCode != 200 || !strings.Contains(string(b), `"active":true`) {
			return 1, fmt.Errorf("introspect: %d %.200s", resp.StatusCode, b)
		}
		return 1, nil
	}
	return step, len(b), nil
}

var csrfRE = regexp.MustCompile(`name="csrf_token" value="([^"]+)"`)

// login signs the bench person in through the hosted login page and
// returns the cookie jar holding the session.
func login(ctx context.Context, base string, c *http.Client) (http.CookieJar, error) {
	jar, _ := cookiejar.New(nil)
	lc := &http.Client{Transport: c.Transport, Jar: jar, CheckRedirect: c.CheckRedirect}
	resp, err := lc.Get(base + "/oauth/authorize?" + url.Values{"client_id": {"bench-web"}, "response_type": {"code"},
		"redirect_uri": {redirect}, "state": {"s"}}.Encode())
	if err != nil {
		return nil, err
	}
	drain(resp)
	loc, err := resp.Location()
	if err != nil {
		return nil, err
	}
	resp, err = lc.Get(base + loc.RequestURI())
	if err != nil {
		return nil, err
	}
	page, err := drain(resp)
	if err != nil {
		return nil, err
	}
	m := csrfRE.FindSubmatch(page)
	if m == nil {
		return nil, errors.New("login page without a CSRF token")
	}
	resp, err = lc.PostForm(base+"/login", url.Values{"csrf_token": {string(m[1])}, "request": {loc.Query().Get("request")},
		"email": {"bench@example.com"}, "password": {"bench-password-bench"}})
	if err != nil {
		return nil, err
	}
	drain(resp)
	if resp.StatusCode != http.StatusSeeOther {
		return nil, fmt.Errorf("login: status %d", resp.StatusCode)
	}
	return jar, nil
}
