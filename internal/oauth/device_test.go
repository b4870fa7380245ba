package oauth_test

import (
	"context"
	"encoding/json"
	"math/rand/v2"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/oauth2"

	"github.com/latchkey/latchkey/internal/config"
	"github.com/latchkey/latchkey/internal/oauth"
	"github.com/latchkey/latchkey/internal/openapicheck"
	"github.com/latchkey/latchkey/internal/server/servertest"
)

const deviceGrant = "urn:ietf:params:oauth:grant-type:device_code"

func deviceConfig() *config.Config {
	cfg := introspectConfig()
	no := false
	cfg.Clients = append(cfg.Clients,
		config.Client{ClientID: "tv", TokenEndpointAuthMethod: "none", GrantTypes: []string{deviceGrant, "refresh_token"},
			Scopes: []string{"read", "write"}, ConsentRequired: &no},
		config.Client{ClientID: "tv2", TokenEndpointAuthMethod: "none", GrantTypes: []string{deviceGrant}, Scopes: []string{"read"}},
		config.Client{ClientID: "app", ClientSecret: "app-secret-app-secret", RedirectURIs: []string{redirect},
			GrantTypes: []string{"authorization_code"}, Scopes: []string{"read", oauth.DeviceApproveScope}, ConsentRequired: &no,
			DeviceApprovalClients: []string{"tv", "tv2"}})
	return cfg
}

func deviceAuth(t *testing.T, s *servertest.Server, client, scope string) oauth.DeviceResponse {
	t.Helper()
	r := post(t, s, "/oauth/device_authorization", url.Values{"client_id": {client}, "scope": {scope}}, "", "")
	if r.status != 200 {
		t.Fatalf("device authorization: %d %s", r.status, r.body)
	}
	var d oauth.DeviceResponse
	if err := json.Unmarshal([]byte(r.body), &d); err != nil {
		t.Fatal(err)
	}
	return d
}

func poll(t *testing.T, s *servertest.Server, client, deviceCode string) answer {
	t.Helper()
	return post(t, s, "/oauth/token", url.Values{"grant_type": {deviceGrant}, "device_code": {deviceCode}, "client_id": {client}}, "", "")
}

func approveInApp(t *testing.T, s *servertest.Server, bearer, userCode string) answer {
	t.Helper()
	req, _ := http.NewRequest("POST", s.URL+"/oauth/device_authorization/approve?user_code="+url.QueryEscape(userCode), nil)
	if bearer != "" {
		req.Header.Set("Authorization", "Bearer "+bearer)
	}
	resp, err := s.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var a answer
	a.status, a.header = resp.StatusCode, resp.Header
	_ = json.NewDecoder(resp.Body).Decode(&a.json)
	return a
}

// appToken is a person token of the "app" client with scopes.
func appToken(t *testing.T, s *servertest.Server, scopes ...string) *oauth2.Token {
	t.Helper()
	cfg := oauthConfig(s, "app", "app-secret-app-secret", oauth2.AuthStyleInHeader)
	cfg.Scopes = scopes
	verifier := oauth2.GenerateVerifier()
	back := authorize(t, s, browser(t, s), cfg.AuthCodeURL("st", oauth2.S256ChallengeOption(verifier)))
	tok, err := cfg.Exchange(clientCtx(s), back.Query().Get("code"), oauth2.VerifierOption(verifier))
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

func TestDeviceAuthorizationResponse(t *testing.T) {
	s := servertest.Start(t, deviceConfig(), servertest.Options{})
	d := deviceAuth(t, s, "tv", "read")
	if len(d.UserCode) != 8 || strings.Trim(d.UserCode, oauth.UserCodeAlphabet) != "" {
		t.Errorf("user_code %q: want 8 characters of %s", d.UserCode, oauth.UserCodeAlphabet)
	}
	if d.VerificationURI != s.URL+"/oauth/device_authorization/verification" ||
		d.VerificationURIComplete != d.VerificationURI+"?user_code="+d.UserCode || d.ExpiresIn != 600 || d.Interval != 5 ||
		!strings.HasPrefix(d.DeviceCode, "lk_dc_") {
		t.Errorf("response %+v", d)
	}
	for name, tc := range map[string]struct {
		form   url.Values
		status int
		code   string
	}{
		"missing client_id":                 {url.Values{}, 400, "invalid_request"},
		"unknown client":                    {url.Values{"client_id": {"nobody"}}, 401, "invalid_client"},
		"client without the device grant":   {url.Values{"client_id": {"spa"}}, 400, "unauthorized_client"},
		"scope not allowed":                 {url.Values{"client_id": {"tv"}, "scope": {"admin"}}, 400, "invalid_scope"},
		"confidential client without creds": {url.Values{"client_id": {"web"}}, 401, "invalid_client"},
	} {
		t.Run(name, func(t *testing.T) {
			r := post(t, s, "/oauth/device_authorization", tc.form, "", "")
			if r.status != tc.status || r.json["error"] != tc.code {
				t.Errorf("got %d %s, want %d %s", r.status, r.body, tc.status, tc.code)
			}
		})
	}
}

func TestUserCodes(t *testing.T) {
	counts := map[byte]int{}
	for range 2000 {
		c := oauth.NewUserCode()
		if len(c) != 8 {
			t.Fatalf("code %q", c)
		}
		for i := range c {
			counts[c[i]]++
		}
	}
	if len(counts) != len(oauth.UserCodeAlphabet) {
		t.Errorf("%d distinct characters in 16,000 draws, want all %d", len(counts), len(oauth.UserCodeAlphabet))
	}
	for in, want := range map[string]string{"BCDF-GHJK": "BCDFGHJK", "bcdfghjk": "BCDFGHJK", " bcdf ghjk ": "BCDFGHJK",
		"BCDFGHJ": "", "BCDFGHJKL": "", "ABCDEFGH": "", "BCDF_GHJK": "", "": ""} {
		if got := oauth.NormalizeUserCode(in); got != want {
			t.Errorf("NormalizeUserCode(%q) = %q, want %q", in, got, want)
		}
	}
}

func FuzzNormalizeUserCode(f *testing.F) {
	for _, s := range []string{"BCDF-GHJK", "bcdfghjk", "ÄÖÜ", strings.Repeat("B", 40)} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		c := oauth.NormalizeUserCode(s)
		if c != "" && (len(c) != 8 || strings.Trim(c, oauth.UserCodeAlphabet) != "") {
			t.Fatalf("NormalizeUserCode(%q) = %q", s, c)
		}
	})
}

func TestDevicePolling(t *testing.T) {
	forEachBackend2(t, func(t *testing.T, s *servertest.Server) {
		clock := s.Clock
		d := deviceAuth(t, s, "tv", "read")
		// The interval is between polls (RFC 8628 section 3.5): the first
		// poll, at once, waits for the person; the next one at once is too fast.
		if r := poll(t, s, "tv", d.DeviceCode); r.status != 400 || r.json["error"] != "authorization_pending" {
			t.Errorf("the first poll, right after the device authorization: %d %s, want authorization_pending", r.status, r.body)
		}
		clock.Advance(time.Second)
		if r := poll(t, s, "tv", d.DeviceCode); r.status != 400 || r.json["error"] != "slow_down" {
			t.Errorf("a poll before the interval: %d %s, want slow_down", r.status, r.body)
		}
		clock.Advance(10 * time.Second) // the interval grew to 10 s
		r := poll(t, s, "tv", d.DeviceCode)
		if r.status != 400 || r.json["error"] != "authorization_pending" || r.json["error_description"] != "The authorization request is still pending" {
			t.Errorf("waiting: %d %s", r.status, r.body)
		}
		clock.Advance(5 * time.Second)
		if r := poll(t, s, "tv", d.DeviceCode); r.json["error"] != "slow_down" {
			t.Errorf("5 s after the last poll with a 10 s interval: %s, want slow_down", r.body)
		}
		clock.Advance(15 * time.Second)
		if r := poll(t, s, "tv2", d.DeviceCode); r.status != 400 || r.json["error"] != "invalid_grant" {
			t.Errorf("the device code of another client: %d %s", r.status, r.body)
		}
		if r := poll(t, s, "tv", "lk_dc_unknown"); r.json["error"] != "invalid_grant" {
			t.Errorf("unknown device code: %s", r.body)
		}
		if r := post(t, s, "/oauth/token", url.Values{"grant_type": {deviceGrant}, "client_id": {"tv"}}, "", ""); r.json["error"] != "invalid_request" {
			t.Errorf("missing device_code: %s", r.body)
		}
		// In-app approval, then exactly one poll gets the tokens.
		app := appToken(t, s, "read", oauth.DeviceApproveScope)
		if r := approveInApp(t, s, app.AccessToken, strings.ToLower(oauth.FormatUserCode(d.UserCode))); r.status != 204 {
			t.Fatalf("approve: %d %v", r.status, r.json)
		}
		if r := approveInApp(t, s, app.AccessToken, d.UserCode); r.status != 400 || r.json["error"] != "already_authorized" {
			t.Errorf("approve twice: %d %v", r.status, r.json)
		}
		clock.Advance(15 * time.Second)
		r = poll(t, s, "tv", d.DeviceCode)
		if r.status != 200 || !strings.HasPrefix(r.json["access_token"].(string), "lk_at_") || !strings.HasPrefix(r.json["refresh_token"].(string), "lk_rt_") {
			t.Fatalf("first poll after approval: %d %s", r.status, r.body)
		}
		clock.Advance(15 * time.Second)
		if r := poll(t, s, "tv", d.DeviceCode); r.json["error"] != "invalid_grant" {
			t.Errorf("second poll after approval: %s, want invalid_grant", r.body)
		}
		// Expiry.
		d2 := deviceAuth(t, s, "tv", "read")
		clock.Advance(11 * time.Minute)
		if r := poll(t, s, "tv", d2.DeviceCode); r.json["error"] != "expired_token" {
			t.Errorf("after 11 minutes: %s, want expired_token", r.body)
		}
		if r := approveInApp(t, s, appToken(t, s, "read", oauth.DeviceApproveScope).AccessToken, d2.UserCode); r.json["error"] != "expired_token" {
			t.Errorf("approving an expired code: %v", r.json)
		}
	})
}

// forEachBackend2 runs fn on each store with deviceConfig and an injected clock.
func forEachBackend2(t *testing.T, fn func(t *testing.T, s *servertest.Server)) {
	for _, backend := range servertest.Backends {
		t.Run(backend, func(t *testing.T) {
			fn(t, servertest.Start(t, deviceConfig(), servertest.Options{Backend: backend, Clock: servertest.NewClock()}))
		})
	}
}

func TestInAppApprovalRefusals(t *testing.T) {
	s := servertest.Start(t, deviceConfig(), servertest.Options{})
	d := deviceAuth(t, s, "tv", "read write")
	withApprove := appToken(t, s, "read", oauth.DeviceApproveScope).AccessToken
	withoutApprove := appToken(t, s, "read").AccessToken
	cc := post(t, s, "/oauth/token", url.Values{"grant_type": {"client_credentials"}}, "other", "other-secret-other-secret").json["access_token"].(string)
	for name, tc := range map[string]struct {
		bearer, code string
		status       int
		err          string
	}{
		"no token":                        {"", d.UserCode, 401, "invalid_request"},
		"no user code":                    {withApprove, "", 400, "invalid_request"},
		"unknown token":                   {"lk_at_nope", d.UserCode, 401, "invalid_token"},
		"token without the approve scope": {withoutApprove, d.UserCode, 403, "access_denied"},
		"client credentials token":        {cc, d.UserCode, 403, "access_denied"},
		"grant lacks a device scope":      {withApprove, d.UserCode, 403, "insufficient_scope"},
		"unknown user code":               {withApprove, "BBBB-BBBB", 400, "invalid_grant"},
	} {
		t.Run(name, func(t *testing.T) {
			r := approveInApp(t, s, tc.bearer, tc.code)
			if r.status != tc.status || r.json["error"] != tc.err {
				t.Errorf("got %d %v, want %d %s", r.status, r.json, tc.status, tc.err)
			}
		})
	}
}

func TestConcurrentPollsIssueOnce(t *testing.T) {
	clock := servertest.NewClock()
	for _, backend := range servertest.Backends {
		t.Run(backend, func(t *testing.T) {
			s := servertest.Start(t, deviceConfig(), servertest.Options{Backend: backend, Clock: clock})
			d := deviceAuth(t, s, "tv", "read")
			app := appToken(t, s, "read", oauth.DeviceApproveScope)
			if r := approveInApp(t, s, app.AccessToken, d.UserCode); r.status != 204 {
				t.Fatalf("approve: %d", r.status)
			}
			clock.Advance(time.Minute)
			var mu sync.Mutex
			var wg sync.WaitGroup
			ok := 0
			for range 20 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					req, _ := http.NewRequest("POST", s.URL+"/oauth/token", strings.NewReader(url.Values{"grant_type": {deviceGrant}, "device_code": {d.DeviceCode}, "client_id": {"tv"}}.Encode()))
					req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
					resp, err := s.Client().Do(req)
					if err != nil {
						t.Error(err)
						return
					}
					resp.Body.Close()
					if resp.StatusCode == 200 {
						mu.Lock()
						ok++
						mu.Unlock()
					}
				}()
			}
			wg.Wait()
			if ok != 1 {
				t.Errorf("%d of 20 concurrent polls got tokens, want 1", ok)
			}
		})
	}
}

// Polls decided on a plain read (the compare-and-set path) race each other
// and the person's approval: no poll is answered before the approval as if
// it came after, none is lost to a server error, and the approval turns
// into tokens exactly once.
func TestPollsRacingTheApproval(t *testing.T) {
	for _, backend := range servertest.Backends {
		t.Run(backend, func(t *testing.T) {
			clock := servertest.NewClock()
			s := servertest.Start(t, deviceConfig(), servertest.Options{Backend: backend, Clock: clock})
			d := deviceAuth(t, s, "tv", "read")
			if r := poll(t, s, "tv", d.DeviceCode); r.json["error"] != "authorization_pending" {
				t.Fatalf("first poll: %s", r.body)
			}
			// Polls at once after it are all too fast, whichever writes.
			answers := concurrentPolls(t, s, d.DeviceCode, 20)
			if answers["slow_down"] != 20 {
				t.Errorf("20 polls right after a poll: %v, want 20 slow_down", answers)
			}
			app := appToken(t, s, "read", oauth.DeviceApproveScope)
			clock.Advance(10 * time.Minute / 2)
			approved := make(chan answer, 1)
			go func() { approved <- approveInApp(t, s, app.AccessToken, d.UserCode) }()
			answers = concurrentPolls(t, s, d.DeviceCode, 20)
			if r := <-approved; r.status != 204 {
				t.Fatalf("approve: %d %v", r.status, r.json)
			}
			if answers["tokens"] == 0 {
				clock.Advance(time.Minute)
				if r := poll(t, s, "tv", d.DeviceCode); r.status == 200 {
					answers["tokens"]++
				} else {
					t.Errorf("the poll after the approval: %s", r.body)
				}
			}
			if answers["tokens"] != 1 || answers["other"] != 0 {
				t.Errorf("polls racing the approval: %v, want tokens once and nothing but pending, slow_down or invalid_grant", answers)
			}
		})
	}
}

// concurrentPolls polls n times at once and counts the answers.
func concurrentPolls(t *testing.T, s *servertest.Server, deviceCode string, n int) map[string]int {
	t.Helper()
	var mu sync.Mutex
	var wg sync.WaitGroup
	out := map[string]int{}
	for range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := poll(t, s, "tv", deviceCode)
			key := "other"
			switch e, _ := r.json["error"].(string); {
			case r.status == 200:
				key = "tokens"
			case r.status == 400 && (e == "authorization_pending" || e == "slow_down" || e == "invalid_grant"):
				key = e
			}
			mu.Lock()
			out[key]++
			mu.Unlock()
		}()
	}
	wg.Wait()
	return out
}

// 200 random wrong codes are refused, then throttled; after the window the
// right code still works for its owner.
func TestWrongUserCodesAreThrottled(t *testing.T) {
	clock := servertest.NewClock()
	s := servertest.Start(t, deviceConfig(), servertest.Options{Clock: clock})
	d := deviceAuth(t, s, "tv", "read")
	b := s.Browser()
	page := servertest.Get(t, b, s.URL+oauth.PathDeviceVerification)
	csrf := servertest.CSRFRE.FindStringSubmatch(page)[1]
	submit := func(code string) int {
		resp, err := b.PostForm(s.URL+oauth.PathDeviceVerification, url.Values{"csrf_token": {csrf}, "user_code": {code}})
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	statuses := map[int]int{}
	rng := rand.New(rand.NewPCG(1, 2))
	for range 200 {
		code := make([]byte, 8)
		for i := range code {
			code[i] = oauth.UserCodeAlphabet[rng.IntN(len(oauth.UserCodeAlphabet))]
		}
		if string(code) == d.UserCode {
			continue
		}
		statuses[submit(string(code))]++
	}
	if statuses[http.StatusBadRequest] != oauth.MaxWrongCodesPerIP || statuses[http.StatusTooManyRequests] != 200-oauth.MaxWrongCodesPerIP {
		t.Errorf("statuses %v: want %d refused as invalid, then the rest throttled", statuses, oauth.MaxWrongCodesPerIP)
	}
	if got := submit(d.UserCode); got != http.StatusTooManyRequests {
		t.Errorf("during the throttle even the right code waits: %d", got)
	}
	resp, err := b.PostForm(s.URL+oauth.PathDeviceVerification, url.Values{"csrf_token": {csrf}, "user_code": {"BBBBBBBB"}})
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if ra := resp.Header.Get("Retry-After"); ra != strconv.Itoa(int(oauth.DeviceThrottleWindow/time.Second)) {
		t.Errorf("429 Retry-After = %q, want the rest of the window", ra)
	}
	clock.Advance(oauth.DeviceThrottleWindow)
	if got := submit(d.UserCode); got != http.StatusSeeOther {
		t.Errorf("after the window the right code continues to login: %d", got)
	}
}

// The device code is marked used and its tokens minted in one transaction:
// a failure in between (here the access token hook, failing closed) loses
// nothing, and the next poll gets the tokens.
func TestDeviceIssuanceIsOneTransaction(t *testing.T) {
	for _, backend := range servertest.Backends {
		t.Run(backend, func(t *testing.T) {
			hook := newHook(t, hookSecret, `{}`)
			cfg := deviceConfig()
			cfg.Webhooks.AccessToken = config.Webhook{URL: hook.URL, Secret: hookSecret, FailClosed: true}
			s := servertest.Start(t, cfg, servertest.Options{Backend: backend, Clock: servertest.NewClock()})
			app := appToken(t, s, "read", oauth.DeviceApproveScope)
			d := deviceAuth(t, s, "tv", "read")
			if r := approveInApp(t, s, app.AccessToken, d.UserCode); r.status != 204 {
				t.Fatalf("approve: %d %v", r.status, r.json)
			}
			hook.mu.Lock()
			hook.status = http.StatusServiceUnavailable
			hook.mu.Unlock()
			if r := poll(t, s, "tv", d.DeviceCode); r.status != 500 {
				t.Fatalf("poll while the hook fails closed: %d %s, want 500", r.status, r.body)
			}
			hook.mu.Lock()
			hook.status = 0
			hook.mu.Unlock()
			s.Clock.Advance(10 * time.Second)
			if r := poll(t, s, "tv", d.DeviceCode); r.status != 200 || r.json["access_token"] == nil {
				t.Fatalf("poll once the hook works again: %d %s, want the tokens", r.status, r.body)
			}
			s.Clock.Advance(10 * time.Second)
			if r := poll(t, s, "tv", d.DeviceCode); r.json["error"] != "invalid_grant" {
				t.Errorf("a poll after the tokens: %s, want invalid_grant", r.body)
			}
		})
	}
}

// A token of one client approves device flows of another only when the
// operator listed that client in device_approval_clients: the person never
// sees the device's client named in-app.
func TestInAppApprovalAcrossClients(t *testing.T) {
	cfg := func() *config.Config {
		c := deviceConfig()
		no := false
		c.Clients = append(c.Clients, config.Client{ClientID: "app2", ClientSecret: "app2-secret-app2-secret", RedirectURIs: []string{redirect},
			GrantTypes: []string{"authorization_code"}, Scopes: []string{"read", oauth.DeviceApproveScope}, ConsentRequired: &no,
			DeviceApprovalClients: []string{"tv2"}})
		return c
	}
	forEachBackendWith(t, cfg, func(t *testing.T, s *servertest.Server) {
		oc := oauthConfig(s, "app2", "app2-secret-app2-secret", oauth2.AuthStyleInHeader)
		oc.Scopes = []string{"read", oauth.DeviceApproveScope}
		verifier := oauth2.GenerateVerifier()
		back := authorize(t, s, browser(t, s), oc.AuthCodeURL("st", oauth2.S256ChallengeOption(verifier)))
		app2, err := oc.Exchange(clientCtx(s), back.Query().Get("code"), oauth2.VerifierOption(verifier))
		if err != nil {
			t.Fatal(err)
		}
		tv := deviceAuth(t, s, "tv", "read")
		if r := approveInApp(t, s, app2.AccessToken, tv.UserCode); r.status != 403 || r.json["error"] != "access_denied" {
			t.Fatalf("app2 approving tv: %d %v, want 403 access_denied", r.status, r.json)
		}
		if r := poll(t, s, "tv", tv.DeviceCode); r.json["error"] != "authorization_pending" {
			t.Errorf("tv after a refused approval: %v, want authorization_pending", r.json)
		}
		tv2 := deviceAuth(t, s, "tv2", "read")
		if r := approveInApp(t, s, app2.AccessToken, tv2.UserCode); r.status != 204 {
			t.Errorf("app2 approving a listed client's device: %d %v", r.status, r.json)
		}
	})
}

// proxied is a config whose clients reach latchkey through a trusted proxy
// (the test's own loopback), so each request names its client address.
func proxied(cfg *config.Config) *config.Config {
	cfg.TrustedProxies = []string{"127.0.0.1", "::1"}
	return cfg
}

// A distributed search of user codes (the global count of misses is full)
// must not refuse a person who types a valid code from a fresh address;
// addresses that miss get the smaller budget.
func TestValidUserCodeIsNotRefusedByTheGlobalLimit(t *testing.T) {
	for _, backend := range servertest.Backends {
		t.Run(backend, func(t *testing.T) {
			s := servertest.Start(t, proxied(deviceConfig()), servertest.Options{Backend: backend, Clock: servertest.NewClock()})
			d := deviceAuth(t, s, "tv", "read")
			// The misses of a botnet, counted as the service counts them.
			for range oauth.MaxWrongCodesGlobal {
				if _, _, err := s.Store.Take(context.Background(), "device:global", oauth.GlobalThrottleWindow,
					oauth.MaxWrongCodesGlobal, s.Clock.Now()); err != nil {
					t.Fatal(err)
				}
			}
			b := s.Browser()
			page := servertest.Get(t, b, s.URL+oauth.PathDeviceVerification)
			csrf := servertest.CSRFRE.FindStringSubmatch(page)[1]
			submit := func(from, code string) *http.Response {
				req, _ := http.NewRequest("POST", s.URL+oauth.PathDeviceVerification,
					strings.NewReader(url.Values{"csrf_token": {csrf}, "user_code": {code}}.Encode()))
				req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
				req.Header.Set("X-Forwarded-For", from)
				resp, err := b.Do(req)
				if err != nil {
					t.Fatal(err)
				}
				resp.Body.Close()
				return resp
			}
			if resp := submit("198.51.100.1", d.UserCode); resp.StatusCode != http.StatusSeeOther {
				t.Errorf("a valid code from a fresh address during a search: %d, want 303 to login", resp.StatusCode)
			}
			for i := range oauth.MaxWrongCodesPerIPUnderAttack {
				if resp := submit("198.51.100.2", "BBBBBBBB"); resp.StatusCode != http.StatusBadRequest {
					t.Fatalf("miss %d: %d", i+1, resp.StatusCode)
				}
			}
			resp := submit("198.51.100.2", "BBBBBBBB")
			if resp.StatusCode != http.StatusTooManyRequests || resp.Header.Get("Retry-After") == "" {
				t.Errorf("an address past the smaller budget: %d, Retry-After %q; want 429 with Retry-After",
					resp.StatusCode, resp.Header.Get("Retry-After"))
			}
		})
	}
}

// The in-app approval endpoint answers user codes too: the same guessing
// throttle as the verification page, not 60 answers to 60 guesses.
func TestInAppApprovalThrottlesWrongUserCodes(t *testing.T) {
	for _, backend := range servertest.Backends {
		t.Run(backend, func(t *testing.T) {
			s := servertest.Start(t, proxied(deviceConfig()), servertest.Options{Backend: backend, Clock: servertest.NewClock()})
			app := appToken(t, s, "read", oauth.DeviceApproveScope)
			d := deviceAuth(t, s, "tv", "read")
			approve := func(from, code string) answer {
				req, _ := http.NewRequest("POST", s.URL+oauth.PathDeviceApprove+"?user_code="+url.QueryEscape(code), nil)
				req.Header.Set("Authorization", "Bearer "+app.AccessToken)
				req.Header.Set("X-Forwarded-For", from)
				resp, body := openapicheck.Do(t, s.Client(), req)
				a := answer{status: resp.StatusCode, header: resp.Header, body: string(body)}
				_ = json.Unmarshal(body, &a.json)
				return a
			}
			for i := range oauth.MaxWrongCodesPerIP {
				if r := approve("203.0.113.7", "BBBBBBBB"); r.status != http.StatusBadRequest || r.json["error"] != "invalid_grant" {
					t.Fatalf("wrong code %d: %d %s", i+1, r.status, r.body)
				}
			}
			r := approve("203.0.113.7", d.UserCode)
			if r.status != http.StatusTooManyRequests || r.header.Get("Retry-After") != strconv.Itoa(int(oauth.DeviceThrottleWindow/time.Second)) {
				t.Errorf("after %d wrong codes: %d %s, Retry-After %q; want 429 with the rest of the window",
					oauth.MaxWrongCodesPerIP, r.status, r.body, r.header.Get("Retry-After"))
			}
			if r := approve("203.0.113.8", d.UserCode); r.status != http.StatusNoContent {
				t.Errorf("from another address the valid code is approved: %d %s", r.status, r.body)
			}
		})
	}
}
