package e2e

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/coreos/go-oidc/v3/oidc"
	"golang.org/x/crypto/bcrypt"
	"golang.org/x/oauth2"

	"github.com/latchkey/latchkey/internal/client"
	"github.com/latchkey/latchkey/internal/config"
	"github.com/latchkey/latchkey/internal/events"
	"github.com/latchkey/latchkey/internal/server/servertest"
	"github.com/latchkey/latchkey/internal/store"
)

// The login methods (docs/FEDERATION.md) against upstreams latchkey did
// not write, in Chromium, on both stores: a second latchkey and Dex as
// OpenID Providers, and Debian's slapd (ldap_test.go).

const (
	fedAdmin, fedAdminPass = "admin", "admin-password-0123"
	upSecret               = "upstream-client-secret-0123456789"
	upPass                 = "upstream password 0123"
)

// fedEnv is latchkey (on 127.0.0.1) with an upstream latchkey (on
// localhost: browsers keep cookies per host, so the two sessions stay
// apart), the client app and a browser.
type fedEnv struct {
	*env
	up       *servertest.Server
	upIssuer string
}

func newFedEnv(t *testing.T, backend string, more ...config.Client) *fedEnv {
	t.Helper()
	ctx := newBrowser(t)
	app := newClientApp(t)
	cfg := testConfig(app.callbackURL())
	cfg.Clients = append(cfg.Clients, more...)
	cfg.APIUsers = []config.APIUser{{Username: fedAdmin, Password: fedAdminPass}}
	cfg.Persons = append(cfg.Persons,
		config.Person{Email: "carol@example.com", Password: personPass, FirstName: "Carol"},
		config.Person{Email: "robert@corp.example", Password: personPass, FirstName: "Robert"})
	s := servertest.Start(t, cfg, servertest.Options{Backend: backend})
	up := servertest.Start(t, &config.Config{
		Clients: []config.Client{{ClientID: "latchkey-rp", Name: "Downstream latchkey", ClientSecret: upSecret,
			TokenEndpointAuthMethod: client.AuthClientSecretBasic, RedirectURIs: []string{s.URL + "/login/oidc/callback"},
			PostLogoutRedirectURIs: []string{s.URL + "/login/oidc/logged-out"},
			GrantTypes:             []string{client.GrantAuthorizationCode}, Scopes: []string{"read"}, ConsentRequired: boolPtr(false)}},
		Persons: []config.Person{
			{Email: "alice@example.com", Password: upPass, FirstName: "Alice", LastName: "Upstream"},
			{Email: "bob@example.com", Password: upPass, FirstName: "Bob"},
			{Email: "carol@example.com", Password: upPass, FirstName: "Carol"}},
	}, servertest.Options{Host: "localhost"})
	return &fedEnv{env: &env{backend: backend, s: s, app: app, ctx: ctx}, up: up,
		upIssuer: strings.Replace(up.URL, "127.0.0.1", "localhost", 1)}
}

// configure posts units to latchkey's configuration API.
func configure(t *testing.T, s *servertest.Server, body string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, s.URL+"/api/v2/config", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.SetBasicAuth(fedAdmin, fedAdminPass)
	resp, err := s.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusNoContent {
		b, _ := io.ReadAll(resp.Body)
		t.Fatalf("configure: %d %s", resp.StatusCode, b)
	}
}

func oidcMethod(id, name, discovery, clientID, secret string, extra string) string {
	return fmt.Sprintf(`{"id":%q,"name":%q,"type":"OPEN_ID_CONNECT","enabled":true,"authentication_level":1,
		"auto_activation_enabled":true,"synchronise_attributes":true,"excluded_unmapped_attributes":["updated_at"],
		"custom_attribute_mappings":[{"id":"c1","attribute_to_map_from":"name","attribute_to_map_to":"upstream_name"}]%s,
		"open_id_connect_attributes":{"client_authentication_method":"CLIENT_SECRET_BASIC","client_id":%q,"client_secret":%q,
		"discovery_url":%q,"scopes":["openid","email","profile"],"front_channel_logout_enabled":true,
		"metadata_expiration_time_in_seconds":600}}`, id, name, extra, clientID, secret, discovery)
}

// authorize starts an authorization request of the web client (asking for
// an ID token) and returns its PKCE verifier.
func (e *fedEnv) authorize(t *testing.T, state string, extra ...oauth2.AuthCodeOption) (*oauth2.Config, string) {
	t.Helper()
	cfg := e.oauthConfig("web", webSecret, oauth2.AuthStyleInHeader, "openid", "read")
	verifier := oauth2.GenerateVerifier()
	opts := append([]oauth2.AuthCodeOption{oauth2.S256ChallengeOption(verifier)}, extra...)
	navigate(t, e.ctx, cfg.AuthCodeURL(state, opts...))
	return cfg, verifier
}

// finish allows on latchkey's consent page, exchanges the code and
// verifies latchkey's own ID token; it returns that token.
func (e *fedEnv) finish(t *testing.T, cfg *oauth2.Config, verifier, state string) *oidc.IDToken {
	t.Helper()
	resp := click(t, e.ctx, "allow")
	if !strings.HasPrefix(resp.URL, e.app.callbackURL()+"?") {
		t.Fatalf("after allow the browser is at %s, want the client app", resp.URL)
	}
	code := e.expectCode(t, e.app.wait(t), state)
	ctx := e.oauthContext(t)
	tok, err := cfg.Exchange(ctx, code, oauth2.VerifierOption(verifier))
	if err != nil {
		t.Fatalf("exchange: %v", err)
	}
	provider, err := oidc.NewProvider(ctx, e.s.URL)
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := tok.Extra("id_token").(string)
	idt, err := provider.Verifier(&oidc.Config{ClientID: "web"}).Verify(ctx, raw)
	if err != nil {
		t.Fatalf("latchkey's ID token: %v", err)
	}
	return idt
}

// expectError checks that the client app got error and vendor_error_cause.
func (e *fedEnv) expectError(t *testing.T, state, code, cause string) {
	t.Helper()
	q := e.app.wait(t)
	if q.Get("error") != code || q.Get("vendor_error_cause") != cause || q.Get("state") != state || q.Get("code") != "" ||
		q.Get("iss") != e.s.URL {
		t.Errorf("callback %v: want error=%s, vendor_error_cause=%s, state %q, iss and no code", q, code, cause, state)
	}
}

func amrOf(t *testing.T, idt *oidc.IDToken) []string {
	t.Helper()
	var c struct {
		AMR []string `json:"amr"`
		ACR string   `json:"acr"`
	}
	if err := idt.Claims(&c); err != nil {
		t.Fatal(err)
	}
	return append(c.AMR, "acr="+c.ACR)
}

func hasEvent(t *testing.T, st store.Store, kind, typ, user string) bool {
	t.Helper()
	evs, err := st.SearchEvents(context.Background(), store.EventFilter{Kind: kind, Types: []string{typ}, UserID: user}, 0, 100)
	if err != nil {
		t.Fatal(err)
	}
	return len(evs) > 0
}

func personByEmail(t *testing.T, st store.Store, email string) store.Person {
	t.Helper()
	p, err := st.GetPersonByEmail(context.Background(), "", email)
	if err != nil {
		t.Fatalf("person %s: %v", email, err)
	}
	return p
}

func TestOpenIDConnectLoginMethodInBrowser(t *testing.T) {
	for _, backend := range servertest.Backends {
		t.Run(backend, func(t *testing.T) {
			e := newFedEnv(t, backend)
			// family_name -> display_name (issue 59's probe): the upstream, a
			// latchkey, also sends a display_name of its own ("Alice Upstream").
			configure(t, e.s, `{"features":{"automated_external_identity_coupling_enabled":true},"login_methods":{"login_methods":[`+
				oidcMethod("partner", "Partner", e.upIssuer+"/.well-known/openid-configuration", "latchkey-rp", upSecret,
					`,"attribute_mappings":[{"id":"a1","map_to":"display_name","map_from":"family_name"}]`)+`]}}`)

			// Creation: the login page's button, the upstream's own login
			// page, back to latchkey's consent page, a code.
			cfg, verifier := e.authorize(t, "fed-1")
			expectStyled(t, e.ctx)
			if label := run(t, e.ctx, "read the method button", chromedp.Text(chromedp.ID("idp-partner"))); label != "Continue with Partner" {
				t.Errorf("login method button says %q", label)
			}
			e.screenshot(t, "login-methods.png")
			resp := click(t, e.ctx, "idp-partner")
			expectPage(t, resp, e.upIssuer, "/login", 200)
			resp = login(t, e.ctx, "alice@example.com", upPass)
			expectPage(t, resp, e.s.URL, "/consent", 200)
			idt := e.finish(t, cfg, verifier, "fed-1")
			alice := personByEmail(t, e.s.Store, "alice@example.com")
			upAlice := personByEmail(t, e.up.Store, "alice@example.com")
			if idt.Subject != alice.ID || alice.Status != "ACTIVATED" || alice.FirstName != "Alice" || alice.LastName != "Upstream" ||
				alice.Profile.DisplayName != "Upstream" || len(alice.Custom) != 1 || alice.Custom["upstream_name"] != "Alice Upstream" {
				t.Errorf("created person %+v (ID token sub %s): want Alice Upstream, ACTIVATED, mapped attributes only", alice, idt.Subject)
			}
			// latchkey's ID token releases the mapped display name; the
			// upstream's own is kept on the identity, apart.
			var released struct {
				DisplayName string `json:"display_name"`
				FirstName   string `json:"first_name"`
			}
			if err := idt.Claims(&released); err != nil || released.DisplayName != "Upstream" || released.FirstName != "Alice" {
				t.Errorf("ID token display_name %q, first_name %q (%v): want the mapped Upstream and Alice", released.DisplayName,
					released.FirstName, err)
			}
			if link, err := e.s.Store.FindIdentity(context.Background(), "", "partner", upAlice.ID); err != nil ||
				link.Attributes["display_name"] != "Alice Upstream" {
				t.Errorf("identity of the upstream subject: %+v, %v; want the upstream's display_name kept on it", link, err)
			}
			if got := amrOf(t, idt); strings.Join(got, " ") != "fed acr=1" {
				t.Errorf("ID token amr and acr: %v, want fed and 1", got)
			}
			if !hasEvent(t, e.s.Store, store.EventOAuth, events.IdPLoginSucceeded, alice.ID) ||
				!hasEvent(t, e.s.Store, store.EventPerson, events.PersonCreated, alice.ID) {
				t.Error("missing the events of the creation (IDP_OAUTH_OIDC_LOGIN_SUCCEEDED, person created)")
			}

			// Logout ends the upstream session too (front_channel_logout_enabled).
			resp = navigate(t, e.ctx, e.s.URL+"/logout")
			expectPage(t, resp, e.s.URL, "/login/oidc/logged-out", 200)
			if !hasEvent(t, e.up.Store, store.EventOAuth, events.OpenIDLogoutSuccess, "") {
				t.Error("the upstream recorded no logout")
			}

			// Linking: an imported identity signs in as its person, whatever
			// the upstream's email; idp= goes straight to the upstream (whose
			// login page shows: its session ended above).
			robert := personByEmail(t, e.s.Store, "robert@corp.example")
			upBob := personByEmail(t, e.up.Store, "bob@example.com")
			if err := e.s.Store.LinkIdentity(context.Background(), store.ExternalIdentity{IdPID: "partner", ExternalID: upBob.ID,
				PersonID: robert.ID}); err != nil {
				t.Fatal(err)
			}
			cfg, verifier = e.authorize(t, "fed-2", oauth2.SetAuthURLParam("idp", "partner"))
			resp = login(t, e.ctx, "bob@example.com", upPass)
			expectPage(t, resp, e.s.URL, "/consent", 200)
			if idt := e.finish(t, cfg, verifier, "fed-2"); idt.Subject != robert.ID {
				t.Errorf("linked identity signed in as %s, want %s", idt.Subject, robert.ID)
			}
			if !hasEvent(t, e.s.Store, store.EventPerson, events.PersonExternalLogin, robert.ID) {
				t.Error("no person.ExternalLoginEvent for the linked sign-in")
			}
			navigate(t, e.ctx, e.s.URL+"/logout")

			// Coupling: the upstream does not vouch for carol's address, so
			// her existing account is not coupled.
			e.authorize(t, "fed-3", oauth2.SetAuthURLParam("idp", "partner"))
			login(t, e.ctx, "carol@example.com", upPass)
			e.expectError(t, "fed-3", "access_denied", "email_not_verified")
			carol := personByEmail(t, e.s.Store, "carol@example.com")
			if ids, _ := e.s.Store.ListIdentities(context.Background(), carol.ID); len(ids) != 0 {
				t.Errorf("carol's account got identities %v", ids)
			}

			// The upstream down: the client hears temporarily_unavailable.
			dead := deadURL(t)
			configure(t, e.s, `{"login_methods":{"login_methods":[`+
				oidcMethod("down", "Down", dead+"/.well-known/openid-configuration", "x", "y", "")+`]}}`)
			e.authorize(t, "fed-4", oauth2.SetAuthURLParam("idp", "down"))
			e.expectError(t, "fed-4", "temporarily_unavailable", "idp_unavailable")
			e.app.none(t)
		})
	}
}

// deadURL is an address where nothing listens.
func deadURL(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	return "http://" + addr
}

// dexPath finds the Dex binary scripts/test-deps builds: skipped without
// it, except under CI=true.
func dexPath(t *testing.T) string {
	t.Helper()
	p := os.Getenv("LATCHKEY_DEX")
	if p == "" {
		cache, err := os.UserCacheDir()
		if err == nil {
			p = filepath.Join(cache, "latchkey-test", "dex-v2.41.1", "dex")
		}
	}
	if _, err := os.Stat(p); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("Dex is not installed (%s) and CI=true: run scripts/test-deps", p)
		}
		t.Skipf("Dex is not installed (%s): run scripts/test-deps", p)
	}
	return p
}

// startDex runs Dex with a static client for latchkey and static
// passwords, on memory storage, until the test ends, and returns its issuer.
func startDex(t *testing.T, redirect string, users map[string]string) string {
	t.Helper()
	bin := dexPath(t)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	issuer := "http://" + addr + "/dex"
	var pw strings.Builder
	i := 0
	for email, pass := range users {
		h, err := bcrypt.GenerateFromPassword([]byte(pass), bcrypt.DefaultCost) // Dex refuses cheaper hashes
		if err != nil {
			t.Fatal(err)
		}
		i++
		fmt.Fprintf(&pw, "- email: %q\n  hash: %q\n  username: %q\n  userID: \"user-%d\"\n", email, h, strings.Split(email, "@")[0], i)
	}
	conf := fmt.Sprintf(`issuer: %s
storage:
  type: memory
web:
  http: %s
logger:
  level: debug
oauth2:
  skipApprovalScreen: true
enablePasswordDB: true
staticClients:
- id: latchkey
  secret: dex-client-secret-0123
  name: latchkey
  redirectURIs: [%q]
staticPasswords:
%s`, issuer, addr, redirect, pw.String())
	dir := t.TempDir()
	path := filepath.Join(dir, "dex.yaml")
	if err := os.WriteFile(path, []byte(conf), 0o600); err != nil {
		t.Fatal(err)
	}
	startLogged(t, dir, "dex", bin, "serve", path)
	waitFor(t, issuer+"/.well-known/openid-configuration")
	return issuer
}

// waitFor polls u until it answers 200, within a deadline.
// startLogged starts bin with args for the rest of the test, its output in
// dir/name.log, which the test's log shows when the test fails.
func startLogged(t *testing.T, dir, name, bin string, args ...string) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	cmd := exec.CommandContext(ctx, bin, args...)
	logf, err := os.Create(filepath.Join(dir, name+".log"))
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		cancel()
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cancel()
		_ = cmd.Wait()
		logf.Close()
		if t.Failed() {
			b, _ := os.ReadFile(logf.Name())
			t.Logf("%s log:\n%s", name, b)
		}
	})
}

func waitFor(t *testing.T, u string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		resp, err := http.Get(u)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s did not answer within 30 s: %v", u, err)
		}
		select {
		case <-time.After(100 * time.Millisecond):
		case <-t.Context().Done():
			t.Fatal("test ended")
		}
	}
}

// dexLogin fills Dex's password form.
func dexLogin(t *testing.T, ctx context.Context, email, password string) {
	t.Helper()
	do(t, ctx, "fill Dex's login form",
		chromedp.WaitVisible(chromedp.ID("login")),
		typeInto(chromedp.ID("login"), email),
		typeInto(chromedp.ID("password"), password),
	)
}

func TestDexLoginMethodInBrowser(t *testing.T) {
	dexPath(t)
	for _, backend := range servertest.Backends {
		t.Run(backend, func(t *testing.T) {
			ctx := newBrowser(t)
			app := newClientApp(t)
			cfg := testConfig(app.callbackURL())
			cfg.APIUsers = []config.APIUser{{Username: fedAdmin, Password: fedAdminPass}}
			cfg.Persons = append(cfg.Persons, config.Person{Email: "dora@example.com", Password: personPass, FirstName: "Dora"})
			s := servertest.Start(t, cfg, servertest.Options{Backend: backend})
			e := &fedEnv{env: &env{backend: backend, s: s, app: app, ctx: ctx}}
			dex := startDex(t, s.URL+"/login/oidc/callback", map[string]string{"dora@example.com": "dora-pass-123",
				"erin@example.com": "erin-pass-123"})
			configure(t, s, `{"features":{"automated_external_identity_coupling_enabled":true},"login_methods":{"login_methods":[`+
				oidcMethod("dex", "Dex", dex+"/.well-known/openid-configuration", "latchkey", "dex-client-secret-0123", "")+`]}}`)

			// Coupling: Dex vouches for dora's address (email_verified), so
			// her existing account is coupled and signs in.
			cfgW, verifier := e.authorize(t, "dex-1", oauth2.SetAuthURLParam("idp", "dex"))
			dexLogin(t, ctx, "dora@example.com", "dora-pass-123")
			resp := click(t, ctx, "submit-login")
			expectPage(t, resp, s.URL, "/consent", 200)
			dora := personByEmail(t, s.Store, "dora@example.com")
			if idt := e.finish(t, cfgW, verifier, "dex-1"); idt.Subject != dora.ID {
				t.Errorf("coupled sign-in as %s, want dora %s", idt.Subject, dora.ID)
			}
			ids, err := s.Store.ListIdentities(context.Background(), dora.ID)
			if err != nil || len(ids) != 1 || ids[0].IdPID != "dex" {
				t.Errorf("dora's identities: %v, %v; want one of dex", ids, err)
			}
			if !hasEvent(t, s.Store, store.EventPerson, events.PersonIdentityCoupled, dora.ID) {
				t.Error("no person.IdentityCoupledEvent")
			}
			navigate(t, ctx, s.URL+"/logout")

			// Creation: erin has no account.
			cfgW, verifier = e.authorize(t, "dex-2", oauth2.SetAuthURLParam("idp", "dex"))
			dexLogin(t, ctx, "erin@example.com", "erin-pass-123")
			resp = click(t, ctx, "submit-login")
			expectPage(t, resp, s.URL, "/consent", 200)
			idt := e.finish(t, cfgW, verifier, "dex-2")
			erin := personByEmail(t, s.Store, "erin@example.com")
			if idt.Subject != erin.ID || !erin.Profile.Emails[0].Verified {
				t.Errorf("created %+v (sub %s): want erin with her verified address", erin, idt.Subject)
			}
			if len(erin.Custom) != 1 || erin.Custom["upstream_name"] != "erin" {
				t.Errorf("erin's custom attributes %v: want only upstream_name, the one mapped (Dex's name: erin)", erin.Custom)
			}
			if ids, err := s.Store.ListIdentities(context.Background(), erin.ID); err != nil || len(ids) != 1 || ids[0].IdPID != "dex" {
				t.Errorf("erin's identities %v, %v; want one of dex", ids, err)
			}
			app.none(t)
		})
	}
}
