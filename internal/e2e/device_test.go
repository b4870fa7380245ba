package e2e

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"golang.org/x/oauth2"

	"github.com/latchkey/latchkey/internal/client"
	"github.com/latchkey/latchkey/internal/config"
	"github.com/latchkey/latchkey/internal/oauth"
	"github.com/latchkey/latchkey/internal/server/servertest"
)

const deviceGrant = "urn:ietf:params:oauth:grant-type:device_code"

// pollTimeout bounds one device flow: golang.org/x/oauth2 waits the
// interval (5 s) before every poll.
const pollTimeout = 40 * time.Second

// deviceEnv is the browser world plus a TV that asks for consent and an
// app whose tokens may approve the TV's device flows (device_approval_clients).
func deviceEnv(t *testing.T, backend string) *env {
	ctx := newBrowser(t)
	app := newClientApp(t)
	cfg := testConfig(app.callbackURL())
	cfg.Clients = append(cfg.Clients,
		config.Client{ClientID: "tv", Name: "Living Room TV", TokenEndpointAuthMethod: client.AuthNone,
			GrantTypes: []string{deviceGrant, client.GrantRefreshToken}, Scopes: []string{"read", "write"},
			ConsentRequired: boolPtr(true)},
		config.Client{ClientID: "app", Name: "Example Mobile App", TokenEndpointAuthMethod: client.AuthNone,
			RedirectURIs: []string{app.callbackURL()}, GrantTypes: []string{client.GrantAuthorizationCode},
			Scopes: []string{"read", oauth.DeviceApproveScope}, ConsentRequired: boolPtr(false),
			DeviceApprovalClients: []string{"tv"}})
	s := servertest.Start(t, cfg, servertest.Options{Backend: backend})
	return &env{backend: backend, s: s, app: app, ctx: ctx}
}

func (e *env) tvConfig(scopes ...string) *oauth2.Config {
	return &oauth2.Config{ClientID: "tv", Scopes: scopes, Endpoint: oauth2.Endpoint{
		DeviceAuthURL: e.s.URL + "/oauth/device_authorization", TokenURL: e.s.URL + "/oauth/token",
		AuthStyle: oauth2.AuthStyleInParams}}
}

// startDevice asks for a device authorization and starts polling for its
// tokens as a TV would; the returned channel gets the outcome.
func (e *env) startDevice(t *testing.T, oc *oauth2.Config, opts ...oauth2.AuthCodeOption) (*oauth2.DeviceAuthResponse, <-chan deviceResult) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.WithValue(context.Background(), oauth2.HTTPClient, e.s.Client()), pollTimeout)
	t.Cleanup(cancel)
	da, err := oc.DeviceAuth(ctx, opts...)
	if err != nil {
		t.Fatalf("device authorization: %v", err)
	}
	if da.VerificationURI != e.s.URL+oauth.PathDeviceVerification || da.Interval != 5 || len(da.UserCode) != 8 ||
		strings.Trim(da.UserCode, "BCDFGHJKLMNPQRSTVWXZ") != "" {
		t.Fatalf("device authorization %+v: want verification_uri %s, interval 5 and 8 characters of BCDFGHJKLMNPQRSTVWXZ",
			da, e.s.URL+oauth.PathDeviceVerification)
	}
	done := make(chan deviceResult, 1)
	go func() {
		tok, err := oc.DeviceAccessToken(ctx, da)
		done <- deviceResult{tok, err}
	}()
	return da, done
}

type deviceResult struct {
	tok *oauth2.Token
	err error
}

func (r deviceResult) expectError(t *testing.T, code string) {
	t.Helper()
	var re *oauth2.RetrieveError
	if !errors.As(r.err, &re) || re.ErrorCode != code || re.Response.StatusCode != http.StatusBadRequest {
		t.Fatalf("device token: got %v (token %v), want HTTP 400 with error %s", r.err, r.tok, code)
	}
}

func expectDeviceStatus(t *testing.T, ctx context.Context, want string) {
	t.Helper()
	got := run(t, ctx, "read #status", chromedp.Evaluate[string](`document.getElementById('status').dataset.status`))
	if got != want {
		t.Fatalf("device status page says %q, want %q", got, want)
	}
}

// TestDeviceFlowInBrowser: golang.org/x/oauth2's device client polls while a
// person types the code (lower case, with the dash) on the verification
// page, signs in and consents; then a second device is denied from its
// verification_uri_complete link.
func TestDeviceFlowInBrowser(t *testing.T) {
	for _, backend := range servertest.Backends {
		t.Run(backend, func(t *testing.T) {
			e := deviceEnv(t, backend)
			ctx, s := e.ctx, e.s
			oc := e.tvConfig("read")

			da, result := e.startDevice(t, oc)
			expectPage(t, navigate(t, ctx, da.VerificationURI), s.URL, oauth.PathDeviceVerification, 200)
			expectStyled(t, ctx)
			e.screenshot(t, "device-code.png")
			do(t, ctx, "type the user code", typeInto(chromedp.ID("user_code"),
				strings.ToLower(da.UserCode[:4]+"-"+da.UserCode[4:])))
			expectPage(t, click(t, ctx, "submit"), s.URL, oauth.PathLogin, 200)
			expectPage(t, login(t, ctx, personEmail, personPass), s.URL, "/consent", 200)
			if got := scopeNames(t, ctx); len(got) != 1 || got[0] != "read" {
				t.Errorf("device consent shows scopes %v, want [read]", got)
			}
			e.screenshot(t, "device-consent.png")
			expectPage(t, click(t, ctx, "allow"), s.URL, oauth.PathDeviceVerification, 200)
			expectDeviceStatus(t, ctx, "approved")
			e.screenshot(t, "device-status.png")

			r := <-result
			if r.err != nil {
				t.Fatalf("device token: %v", r.err)
			}
			expectTokens(t, r.tok)
			expectActive(t, e, r.tok.AccessToken, "tv", "read")
			e.app.none(t)

			// A second TV: the link with the code leads to a confirmation
			// page; the person (still signed in) denies.
			da, result = e.startDevice(t, oc)
			expectPage(t, navigate(t, ctx, da.VerificationURIComplete), s.URL, oauth.PathDeviceVerification, 200)
			shown := run(t, ctx, "read the code", chromedp.Evaluate[string](`document.getElementById('user_code').value`))
			readonly := run(t, ctx, "read readonly", chromedp.Evaluate[bool](`document.getElementById('user_code').readOnly`))
			if shown != da.UserCode[:4]+"-"+da.UserCode[4:] || !readonly {
				t.Errorf("confirmation page shows %q (readonly %v), want %q read-only", shown, readonly, da.UserCode)
			}
			e.screenshot(t, "device-confirm.png")
			expectPage(t, click(t, ctx, "submit"), s.URL, "/consent", 200)
			expectPage(t, click(t, ctx, "deny"), s.URL, oauth.PathDeviceVerification, 200)
			expectDeviceStatus(t, ctx, "denied")
			(<-result).expectError(t, "access_denied")

			// The used code cannot be entered again.
			navigate(t, ctx, da.VerificationURIComplete)
			click(t, ctx, "submit")
			expectDeviceStatus(t, ctx, "authorized")
		})
	}
}

// TestDeviceInAppApprovalEndToEnd: the person's signed-in mobile app approves
// the TV's code through POST /oauth/device_authorization/approve; the TV's
// polling client gets its tokens, and a second approval is refused.
func TestDeviceInAppApprovalEndToEnd(t *testing.T) {
	for _, backend := range servertest.Backends {
		t.Run(backend, func(t *testing.T) {
			e := deviceEnv(t, backend)
			ctx, s := e.ctx, e.s

			// The app signs the person in with authorization code + PKCE.
			ac := &oauth2.Config{ClientID: "app", RedirectURL: e.app.callbackURL(), Scopes: []string{"read", oauth.DeviceApproveScope},
				Endpoint: oauth2.Endpoint{AuthURL: s.URL + "/oauth/authorize", TokenURL: s.URL + "/oauth/token", AuthStyle: oauth2.AuthStyleInParams}}
			verifier := oauth2.GenerateVerifier()
			navigate(t, ctx, ac.AuthCodeURL("st-app", oauth2.S256ChallengeOption(verifier)))
			login(t, ctx, personEmail, personPass)
			appTok, err := ac.Exchange(e.oauthContext(t), e.expectCode(t, e.app.wait(t), "st-app"), oauth2.VerifierOption(verifier))
			if err != nil {
				t.Fatalf("app token: %v", err)
			}

			da, result := e.startDevice(t, e.tvConfig("read"))
			// The app passes on what the person typed, in lower case.
			typed := strings.ToLower(da.UserCode)
			if status, body := approve(t, s, appTok.AccessToken, typed); status != http.StatusNoContent || body != "" {
				t.Fatalf("approve: %d %q, want 204 with an empty body", status, body)
			}
			r := <-result
			if r.err != nil {
				t.Fatalf("device token: %v", r.err)
			}
			expectTokens(t, r.tok)
			expectActive(t, e, r.tok.AccessToken, "tv", "read")

			status, body := approve(t, s, appTok.AccessToken, da.UserCode[:4]+"-"+da.UserCode[4:])
			var eb struct {
				Error string `json:"error"`
			}
			_ = json.Unmarshal([]byte(body), &eb)
			if status != http.StatusBadRequest || eb.Error != "already_authorized" {
				t.Errorf("second approve: %d %s, want 400 already_authorized", status, body)
			}
		})
	}
}

func approve(t *testing.T, s *servertest.Server, bearer, userCode string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest("POST", s.URL+oauth.PathDeviceApprove+"?user_code="+url.QueryEscape(userCode), nil)
	req.Header.Set("Authorization", "Bearer "+bearer)
	resp, err := s.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, string(b)
}

// expectActive introspects the token as the web client and checks it
// belongs to the person, the client and the scope.
func expectActive(t *testing.T, e *env, token, client, scope string) {
	t.Helper()
	var got struct {
		Active   bool   `json:"active"`
		ClientID string `json:"client_id"`
		Scope    string `json:"scope"`
		Sub      string `json:"sub"`
	}
	introspectAs(t, e.s, "web", webSecret, token, &got)
	p, err := e.s.Store.GetPersonByEmail(context.Background(), "", personEmail)
	if err != nil {
		t.Fatal(err)
	}
	if !got.Active || got.ClientID != client || got.Scope != scope || got.Sub != p.ID {
		t.Errorf("introspection %+v: want active, client %s, scope %s, sub %s", got, client, scope, p.ID)
	}
}
