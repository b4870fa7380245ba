// Package e2e runs latchkey's hosted pages in a real, headless Chromium:
// the browser follows the redirects, fills the forms and carries the cookies,
// and golang.org/x/oauth2 plays the client application.
//
// Set LATCHKEY_SCREENSHOTS to a folder to save PNG screenshots of the pages:
//
//	LATCHKEY_SCREENSHOTS=../../docs/img go test ./internal/e2e/
package e2e

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"html"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/chromedp"
	"golang.org/x/oauth2"

	"github.com/latchkey/latchkey/internal/client"
	"github.com/latchkey/latchkey/internal/config"
	"github.com/latchkey/latchkey/internal/server/servertest"
)

const (
	personEmail = "jane@example.com"
	personPass  = "correct horse battery staple"
	webSecret   = "web-secret-0123456789abcdef"

	browserTimeout = 60 * time.Second // no test may hang longer than this
	stepTimeout    = 10 * time.Second // one wait for the client app or the token endpoint

	viewportWidth  = 800
	viewportHeight = 900
)

// clientApp is the application the authorization server sends the browser
// back to. Its /callback records the query and shows a tiny page.
type clientApp struct {
	*httptest.Server
	got chan url.Values
}

func newClientApp(t *testing.T) *clientApp {
	t.Helper()
	a := &clientApp{got: make(chan url.Values, 8)}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /callback", func(w http.ResponseWriter, r *http.Request) {
		q := r.URL.Query()
		a.got <- q
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		msg := "Got a code."
		if e := q.Get("error"); e != "" {
			msg = "Got the error " + e + "."
		}
		fmt.Fprintf(w, `<!doctype html><title>client app</title><h1 id="callback">Back at the client app</h1><p id="result">%s</p>`,
			html.EscapeString(msg))
	})
	a.Server = httptest.NewServer(mux)
	t.Cleanup(a.Close)
	return a
}

func (a *clientApp) callbackURL() string { return a.URL + "/callback" }

// wait returns the query of the next callback.
func (a *clientApp) wait(t *testing.T) url.Values {
	t.Helper()
	select {
	case q := <-a.got:
		return q
	case <-time.After(stepTimeout):
		t.Fatal("the browser never came back to the client app's /callback")
		return nil
	}
}

// none fails when the client app got a callback.
func (a *clientApp) none(t *testing.T) {
	t.Helper()
	select {
	case q := <-a.got:
		t.Errorf("unexpected callback to the client app: %v", q)
	default:
	}
}

func boolPtr(b bool) *bool { return &b }

// testConfig has a confidential client that asks for consent, a public
// client that does not, and one person.
func testConfig(redirect string) *config.Config {
	return &config.Config{
		Clients: []config.Client{
			{ClientID: "web", Name: "Example App", ClientSecret: webSecret,
				TokenEndpointAuthMethod: client.AuthClientSecretBasic, RedirectURIs: []string{redirect},
				PostLogoutRedirectURIs: []string{redirect},
				GrantTypes:             []string{client.GrantAuthorizationCode, client.GrantRefreshToken},
				Scopes:                 []string{"read", "write"}, ConsentRequired: boolPtr(true), IntrospectAnyToken: true},
			{ClientID: "spa", Name: "Example SPA", TokenEndpointAuthMethod: client.AuthNone,
				RedirectURIs: []string{redirect},
				GrantTypes:   []string{client.GrantAuthorizationCode, client.GrantRefreshToken},
				Scopes:       []string{"read", "write"}, ConsentRequired: boolPtr(false)},
		},
		Persons: []config.Person{{Email: personEmail, Password: personPass, FirstName: "Jane", LastName: "Doe"}},
		// The upstream identity providers and directories of the
		// federation tests are local servers: the operator's exception to
		// the guard of API-configured URLs (docs/SECURITY.md).
		Outbound: config.Outbound{Allow: []string{"127.0.0.1", "localhost"}},
	}
}

// env is one test's world: the server on one backend, the client app and a browser.
type env struct {
	backend string
	s       *servertest.Server
	app     *clientApp
	ctx     context.Context // the browser tab
}

// introspectAs introspects token at s as the client id (a resource server,
// HTTP basic with secret) and decodes the answer into dst.
func introspectAs(t *testing.T, s *servertest.Server, id, secret, token string, dst any) {
	t.Helper()
	req, _ := http.NewRequest("POST", s.URL+"/oauth/api/v2/token/introspect", strings.NewReader(url.Values{"token": {token}}.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.SetBasicAuth(id, secret)
	resp, err := s.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if err := json.NewDecoder(resp.Body).Decode(dst); err != nil {
		t.Fatal(err)
	}
}

// forEachBackend runs fn on every store backend, each with its own server,
// client app and browser.
func forEachBackend(t *testing.T, fn func(t *testing.T, e *env)) {
	for _, backend := range servertest.Backends {
		t.Run(backend, func(t *testing.T) {
			ctx := newBrowser(t) // first: a missing Chromium skips before the store is set up
			app := newClientApp(t)
			s := servertest.Start(t, testConfig(app.callbackURL()), servertest.Options{Backend: backend})
			fn(t, &env{backend: backend, s: s, app: app, ctx: ctx})
		})
	}
}

// chromiumPath finds the browser. Without one the test skips, except with
// CI=true, where it fails: CI must never pass by skipping the browser tests.
func chromiumPath(t *testing.T) string {
	t.Helper()
	for _, name := range []string{"chromium", "/usr/bin/chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	if os.Getenv("CI") == "true" {
		t.Fatal("Chromium is not installed and CI=true")
	}
	t.Skip("Chromium is not installed (looked for chromium, chromium-browser, google-chrome)")
	return ""
}

// newBrowser starts a headless Chromium with a fresh profile and returns the
// context of its tab. Every action on it ends within browserTimeout. The
// browser stops when the test ends; its console is checked then for
// Content-Security-Policy violations and script errors.
func newBrowser(t *testing.T) context.Context {
	t.Helper()
	path := chromiumPath(t)
	profile := filepath.Join(t.TempDir(), "chromium-profile")
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(path),
		chromedp.Headless,
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.NoFirstRun,
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("no-proxy-server", true), // the servers are on 127.0.0.1
		chromedp.UserDataDir(profile),
		chromedp.WindowSize(viewportWidth, viewportHeight),
	)
	timeoutCtx, cancelTimeout := context.WithTimeout(context.Background(), browserTimeout)
	allocCtx, cancelAlloc := chromedp.NewExecAllocator(timeoutCtx, opts...)
	ctx, cancelTab := chromedp.NewContext(allocCtx, chromedp.WithLogf(t.Logf))

	var mu sync.Mutex
	var console []chromedp.ConsoleMessage
	done := make(chan struct{})
	stop := func() {
		cancelTab()
		cancelAlloc() // waits until the browser has exited
		cancelTimeout()
		<-done
		// Chromium's helpers can still write in the profile for a moment.
		for range 50 {
			if err := os.RemoveAll(profile); err == nil {
				break
			}
			time.Sleep(100 * time.Millisecond)
		}
	}

	if err := chromedp.Do(ctx, chromedp.EmulateViewport(viewportWidth, viewportHeight)); err != nil {
		close(done)
		stop()
		t.Fatalf("start Chromium (%s): %v", path, err)
	}
	messages := chromedp.Console(ctx)
	go func() {
		defer close(done)
		for m, err := range messages {
			if err != nil {
				return
			}
			mu.Lock()
			console = append(console, m)
			mu.Unlock()
		}
	}()
	t.Cleanup(func() {
		stop()
		mu.Lock()
		defer mu.Unlock()
		for _, m := range console {
			switch {
			case strings.HasSuffix(m.URL, "/favicon.ico"): // neither server has one
			case strings.Contains(m.Text, "Content Security Policy"), m.IsException():
				t.Errorf("browser console: %s (%s)", m, m.URL)
			default:
				t.Logf("browser console: %s (%s)", m, m.URL)
			}
		}
	})
	return ctx
}

// do runs browser steps and fails the test on error.
func do(t *testing.T, ctx context.Context, what string, steps ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	if err := chromedp.Do(ctx, steps...); err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

// typeInto types v into the first element sel finds once it is visible,
// as chromedp.SendKeys does for a text field. SendKeys (chromedp v0.23.0,
// query.go) reads the node's attributes before it takes the node's lock,
// while chromedp's event loop may be writing them for an attribute change
// on the page: a data race that -race reported in CI. Focus and KeyEvent
// do the same steps without that read.
func typeInto[S chromedp.Selectable](sel S, v string) chromedp.Action[chromedp.Void] {
	return chromedp.Steps(chromedp.Focus(sel, chromedp.NodeVisible), chromedp.KeyEvent(v))
}

// run runs one browser action that returns a value and fails the test on error.
func run[T any](t *testing.T, ctx context.Context, what string, a chromedp.Action[T]) T {
	t.Helper()
	v, err := chromedp.Run(ctx, a)
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	return v
}

// navigate opens u and returns the response of the page it lands on, after
// every redirect.
func navigate(t *testing.T, ctx context.Context, u string) *network.Response {
	t.Helper()
	return run(t, ctx, "navigate to "+u, chromedp.NavigateResponse(u))
}

// click clicks the element and waits for the page that the click loads.
func click(t *testing.T, ctx context.Context, id string) *network.Response {
	t.Helper()
	resp, err := chromedp.RunResponse(ctx, chromedp.Click(chromedp.ID(id)))
	if err != nil {
		t.Fatalf("click #%s: %v", id, err)
	}
	return resp
}

// expectPage checks that the browser shows path on server base with status.
func expectPage(t *testing.T, resp *network.Response, base, path string, status int64) {
	t.Helper()
	u, err := url.Parse(resp.URL)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(resp.URL, base+"/") || u.Path != path || resp.Status != status {
		t.Fatalf("browser is at %s (status %d), want %s%s (status %d)", resp.URL, resp.Status, base, path, status)
	}
}

// expectStyled checks that latchkey.css applied (a Content-Security-Policy
// that blocks it leaves an unstyled page).
func expectStyled(t *testing.T, ctx context.Context) {
	t.Helper()
	got := run(t, ctx, "read the card's style", chromedp.Evaluate[string](
		`(() => { const m = getComputedStyle(document.getElementById('main'));
		   return m.maxWidth + ' ' + m.borderRadius + ' ' + getComputedStyle(document.body).display; })()`))
	if got != "420px 12px grid" {
		t.Errorf("the page is not styled by latchkey.css: .card max-width, border-radius and body display are %q", got)
	}
}

// login fills the login form and submits it.
func login(t *testing.T, ctx context.Context, email, password string) *network.Response {
	t.Helper()
	do(t, ctx, "fill the login form",
		chromedp.WaitVisible(chromedp.ID("email")),
		chromedp.Clear(chromedp.ID("email")),
		typeInto(chromedp.ID("email"), email),
		typeInto(chromedp.ID("password"), password),
	)
	return click(t, ctx, "submit")
}

// screenshot saves a PNG of the viewport as name in $LATCHKEY_SCREENSHOTS,
// once (on the first backend only).
func (e *env) screenshot(t *testing.T, name string) {
	t.Helper()
	dir := os.Getenv("LATCHKEY_SCREENSHOTS")
	if dir == "" || e.backend != servertest.Backends[0] {
		return
	}
	// Drop the focus ring of autofocus, so the picture shows the page at rest.
	run(t, e.ctx, "blur", chromedp.Evaluate[bool](`document.activeElement ? (document.activeElement.blur(), true) : false`))
	png := run(t, e.ctx, "screenshot "+name, chromedp.CaptureScreenshot())
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, name), png, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("screenshot %s", filepath.Join(dir, name))
}

// oauthContext lets golang.org/x/oauth2 reach the test server.
func (e *env) oauthContext(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), stepTimeout)
	t.Cleanup(cancel)
	return context.WithValue(ctx, oauth2.HTTPClient, e.s.Client())
}

func (e *env) oauthConfig(id, secret string, style oauth2.AuthStyle, scopes ...string) *oauth2.Config {
	return &oauth2.Config{ClientID: id, ClientSecret: secret, RedirectURL: e.app.callbackURL(), Scopes: scopes,
		Endpoint: oauth2.Endpoint{AuthURL: e.s.URL + "/oauth/authorize", TokenURL: e.s.URL + "/oauth/token", AuthStyle: style}}
}

// expectCode checks a successful callback and returns its code.
func (e *env) expectCode(t *testing.T, q url.Values, state string) string {
	t.Helper()
	if q.Get("code") == "" || q.Get("state") != state || q.Get("iss") != e.s.URL || q.Get("error") != "" {
		t.Fatalf("callback %v: want a code, state %q and iss %q", q, state, e.s.URL)
	}
	return q.Get("code")
}

func expectTokens(t *testing.T, tok *oauth2.Token) {
	t.Helper()
	if !strings.HasPrefix(tok.AccessToken, "lk_at_") || !strings.HasPrefix(tok.RefreshToken, "lk_rt_") ||
		!tok.Expiry.After(time.Now()) || tok.Extra("profile_id") != "static" {
		t.Errorf("token: access %q refresh %q expiry %v profile_id %v; want lk_at_…, lk_rt_…, a future expiry and profile_id static",
			tok.AccessToken, tok.RefreshToken, tok.Expiry, tok.Extra("profile_id"))
	}
}

// scopeNames lists the scopes that the consent page shows.
func scopeNames(t *testing.T, ctx context.Context) []string {
	t.Helper()
	return run(t, ctx, "read #scopes", chromedp.Evaluate[[]string](
		`[...document.querySelectorAll('#scopes .scope-name')].map(e => e.textContent.trim())`))
}

func TestAuthorizationCodeWithPKCEInBrowser(t *testing.T) {
	forEachBackend(t, func(t *testing.T, e *env) {
		// The confidential client: login, consent, code, tokens.
		cfg := e.oauthConfig("web", webSecret, oauth2.AuthStyleInHeader, "read", "write")
		verifier := oauth2.GenerateVerifier()
		const state = "state-web-1"
		resp := navigate(t, e.ctx, cfg.AuthCodeURL(state, oauth2.S256ChallengeOption(verifier)))
		expectPage(t, resp, e.s.URL, "/login", 200)
		expectStyled(t, e.ctx)
		if lead := run(t, e.ctx, "read the lead", chromedp.Text(chromedp.CSS("p.lead"))); !strings.Contains(lead, "Example App") {
			t.Errorf("login page lead %q does not name the client", lead)
		}
		e.screenshot(t, "login.png")

		resp = login(t, e.ctx, personEmail, personPass)
		expectPage(t, resp, e.s.URL, "/consent", 200)
		expectStyled(t, e.ctx)
		if got := scopeNames(t, e.ctx); !slices.Equal(got, []string{"read", "write"}) {
			t.Errorf("consent page lists the scopes %q, want read and write", got)
		}
		if who := run(t, e.ctx, "read the consent page", chromedp.Text(chromedp.CSS("main"))); !strings.Contains(who, personEmail) {
			t.Errorf("consent page does not name the signed-in person:\n%s", who)
		}
		e.screenshot(t, "consent.png")

		resp = click(t, e.ctx, "allow")
		if !strings.HasPrefix(resp.URL, e.app.callbackURL()+"?") || resp.Status != 200 {
			t.Fatalf("after allow the browser is at %s (status %d), want the client app's callback", resp.URL, resp.Status)
		}
		code := e.expectCode(t, e.app.wait(t), state)

		ctx := e.oauthContext(t)
		tok, err := cfg.Exchange(ctx, code, oauth2.VerifierOption(verifier))
		if err != nil {
			t.Fatalf("exchange: %v", err)
		}
		expectTokens(t, tok)
		// RFC 6749 section 5.1: scope may be left out when it is the requested one.
		if sc, _ := tok.Extra("scope").(string); sc != "" && sc != "read write" {
			t.Errorf("token scope %q, want \"read write\" or none", sc)
		}

		// Refresh: an expired token makes the token source use the refresh token.
		expired := *tok
		expired.Expiry = time.Now().Add(-time.Minute)
		fresh, err := cfg.TokenSource(ctx, &expired).Token()
		if err != nil {
			t.Fatalf("refresh: %v", err)
		}
		if !strings.HasPrefix(fresh.AccessToken, "lk_at_") || fresh.AccessToken == tok.AccessToken {
			t.Errorf("refresh gave the access token %q (before: %q), want a new one", fresh.AccessToken, tok.AccessToken)
		}

		// Revoke the refresh token (RFC 7009): 200, empty body; refresh then fails.
		form := url.Values{"token": {tok.RefreshToken}, "token_type_hint": {"refresh_token"}}
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, e.s.URL+"/oauth/revoke", strings.NewReader(form.Encode()))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		req.SetBasicAuth("web", webSecret)
		rr, err := e.s.Client().Do(req)
		if err != nil {
			t.Fatalf("revoke: %v", err)
		}
		body, _ := io.ReadAll(rr.Body)
		rr.Body.Close()
		if rr.StatusCode != http.StatusOK || len(body) != 0 {
			t.Errorf("revoke: status %d body %q, want 200 and an empty body", rr.StatusCode, body)
		}
		_, err = cfg.TokenSource(ctx, &expired).Token()
		var re *oauth2.RetrieveError
		if !errors.As(err, &re) || re.ErrorCode != "invalid_grant" {
			t.Errorf("refresh after revocation: %v, want invalid_grant", err)
		}

		// The public client: the browser has a session and the client asks
		// for no consent, so the browser goes straight back with a code.
		spa := e.oauthConfig("spa", "", oauth2.AuthStyleInParams, "read")
		spaVerifier := oauth2.GenerateVerifier()
		const spaState = "state-spa-1"
		resp = navigate(t, e.ctx, spa.AuthCodeURL(spaState, oauth2.S256ChallengeOption(spaVerifier)))
		if !strings.HasPrefix(resp.URL, e.app.callbackURL()+"?") || resp.Status != 200 {
			t.Fatalf("with a session the browser is at %s (status %d), want the client app's callback without a login page",
				resp.URL, resp.Status)
		}
		spaCode := e.expectCode(t, e.app.wait(t), spaState)
		spaTok, err := spa.Exchange(ctx, spaCode, oauth2.VerifierOption(spaVerifier))
		if err != nil {
			t.Fatalf("public client exchange: %v", err)
		}
		expectTokens(t, spaTok)
		if sc, _ := spaTok.Extra("scope").(string); sc != "" && sc != "read" {
			t.Errorf("public client token scope %q, want \"read\" or none", sc)
		}
		e.app.none(t)
	})
}

func TestConsentDenyInBrowser(t *testing.T) {
	forEachBackend(t, func(t *testing.T, e *env) {
		cfg := e.oauthConfig("web", webSecret, oauth2.AuthStyleInHeader, "read")
		const state = "state-deny-1"
		resp := navigate(t, e.ctx, cfg.AuthCodeURL(state, oauth2.S256ChallengeOption(oauth2.GenerateVerifier())))
		expectPage(t, resp, e.s.URL, "/login", 200)
		resp = login(t, e.ctx, personEmail, personPass)
		expectPage(t, resp, e.s.URL, "/consent", 200)
		if got := scopeNames(t, e.ctx); !slices.Equal(got, []string{"read"}) {
			t.Errorf("consent page lists the scopes %q, want read", got)
		}

		resp = click(t, e.ctx, "deny")
		if !strings.HasPrefix(resp.URL, e.app.callbackURL()+"?") {
			t.Fatalf("after deny the browser is at %s, want the client app's callback", resp.URL)
		}
		q := e.app.wait(t)
		if q.Get("error") != "access_denied" || q.Get("state") != state || q.Get("code") != "" || q.Get("iss") != e.s.URL {
			t.Errorf("callback %v: want error=access_denied, state %q, iss and no code", q, state)
		}
		if got := run(t, e.ctx, "read the client app page", chromedp.Text(chromedp.ID("result"))); got != "Got the error access_denied." {
			t.Errorf("client app page says %q", got)
		}

		// The request is answered: going back to the consent page and
		// allowing cannot turn the denial into a code.
		resp = navigate(t, e.ctx, e.s.URL+"/consent?"+url.Values{"request": {requestID(t, e)}}.Encode())
		if resp.Status != http.StatusBadRequest {
			t.Errorf("consent page of an answered request: status %d, want 400", resp.Status)
		}
		e.app.none(t)
	})
}

// requestID is the pending request of the last /consent page the browser saw.
func requestID(t *testing.T, e *env) string {
	t.Helper()
	entries := run(t, e.ctx, "read the history", chromedp.NavigationEntries())
	for i := len(entries.Entries) - 1; i >= 0; i-- {
		u, err := url.Parse(entries.Entries[i].URL)
		if err == nil && u.Path == "/consent" && u.Query().Get("request") != "" {
			return u.Query().Get("request")
		}
	}
	t.Fatal("no /consent page in the browser history")
	return ""
}

func TestLoginErrorsInBrowser(t *testing.T) {
	forEachBackend(t, func(t *testing.T, e *env) {
		cfg := e.oauthConfig("web", webSecret, oauth2.AuthStyleInHeader, "read", "write")
		const state = "state-login-1"
		resp := navigate(t, e.ctx, cfg.AuthCodeURL(state, oauth2.S256ChallengeOption(oauth2.GenerateVerifier())))
		expectPage(t, resp, e.s.URL, "/login", 200)

		// A wrong password: the login page again, with the error, the email kept.
		resp = login(t, e.ctx, personEmail, "not the password")
		expectPage(t, resp, e.s.URL, "/login", http.StatusUnauthorized)
		expectStyled(t, e.ctx)
		msg := run(t, e.ctx, "read #error", chromedp.Text(chromedp.ID("error")))
		if msg != "The email address or password is wrong." {
			t.Errorf("#error says %q", msg)
		}
		if v := run(t, e.ctx, "read #email", chromedp.Value(chromedp.ID("email"))); v != personEmail {
			t.Errorf("the email field holds %q after the error, want %q", v, personEmail)
		}
		if v := run(t, e.ctx, "read #password", chromedp.Value(chromedp.ID("password"))); v != "" {
			t.Errorf("the password field is not empty after the error")
		}
		e.screenshot(t, "login-error.png")
		e.app.none(t)

		// An unknown person gets the same answer (no account enumeration).
		resp = login(t, e.ctx, "nobody@example.com", personPass)
		expectPage(t, resp, e.s.URL, "/login", http.StatusUnauthorized)
		if again := run(t, e.ctx, "read #error", chromedp.Text(chromedp.ID("error"))); again != msg {
			t.Errorf("unknown person: #error says %q, want the same text as for a wrong password (%q)", again, msg)
		}
		e.app.none(t)

		// The same form then works with the right password.
		resp = login(t, e.ctx, personEmail, personPass)
		expectPage(t, resp, e.s.URL, "/consent", 200)
		e.app.none(t)
	})
}

func TestErrorPageInBrowser(t *testing.T) {
	forEachBackend(t, func(t *testing.T, e *env) {
		// An unknown client: an error page, never a redirect.
		resp := navigate(t, e.ctx, e.s.URL+"/oauth/authorize?"+url.Values{"client_id": {"unknown"},
			"response_type": {"code"}, "redirect_uri": {e.app.callbackURL()}, "state": {"s"}}.Encode())
		expectPage(t, resp, e.s.URL, "/oauth/authorize", http.StatusBadRequest)
		expectStyled(t, e.ctx)
		if msg := run(t, e.ctx, "read #error", chromedp.Text(chromedp.ID("error"))); msg != "The application that sent you here is not known." {
			t.Errorf("#error says %q", msg)
		}
		e.screenshot(t, "error.png")

		// A redirect_uri that the client did not register: an error page,
		// not an open redirect.
		cfg := e.oauthConfig("web", webSecret, oauth2.AuthStyleInHeader, "read")
		cfg.RedirectURL = e.app.URL + "/elsewhere"
		resp = navigate(t, e.ctx, cfg.AuthCodeURL("s", oauth2.S256ChallengeOption(oauth2.GenerateVerifier())))
		expectPage(t, resp, e.s.URL, "/oauth/authorize", http.StatusBadRequest)
		if msg := run(t, e.ctx, "read #error", chromedp.Text(chromedp.ID("error"))); !strings.Contains(msg, "redirect_uri") {
			t.Errorf("#error says %q, want a message about the redirect_uri", msg)
		}
		e.app.none(t)
	})
}
