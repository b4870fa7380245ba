package e2e

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
	"golang.org/x/oauth2"

	"github.com/latchkey/latchkey/internal/cimconfig"
	"github.com/latchkey/latchkey/internal/store"
)

// The step-up by mailed code in Chromium: the scope "write" needs level 2,
// the person has no authenticator app, and email_authentication_level is
// 2. The code is read from the mail the SMTP server process received.
func TestEmailCodeStepUpInBrowser(t *testing.T) {
	forEachBackendWithMail(t, func(snap *cimconfig.Snapshot) {
		snap.EmailNotifications = &cimconfig.EmailNotificationConfiguration{StepUpAuthentication: yes()}
	}, func(t *testing.T, e *journeyEnv) {
		ctx := context.Background()
		level := int64(2)
		err := e.s.App.Journeys().Config.Update(ctx, []string{cimconfig.UnitStepUp}, func(snap *cimconfig.Snapshot) error {
			snap.StepUp = &cimconfig.StepUp{AuthenticationMethods: &cimconfig.StepUpAuthenticationMethods{EmailAuthenticationLevel: &level}}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		if err := e.s.Store.CreateScope(ctx, store.Scope{ID: "write", AuthenticationLevel: 2}); err != nil {
			t.Fatal(err)
		}
		cfg := e.oauthConfig("web", webSecret, oauth2.AuthStyleInHeader, "read", "write")
		verifier := oauth2.GenerateVerifier()
		navigate(t, e.ctx, cfg.AuthCodeURL("st-email", oauth2.S256ChallengeOption(verifier)))
		resp := login(t, e.ctx, personEmail, personPass)
		expectPage(t, resp, e.s.URL, "/login/email", 200)
		expectStyled(t, e.ctx)
		e.screenshot(t, "stepup-email.png")
		resp = click(t, e.ctx, "send")
		expectPage(t, resp, e.s.URL, "/login/email", 200)
		e.screenshot(t, "stepup-email-sent.png")

		m := e.mailTo(t, personEmail, "Your sign-in code")
		code := m.Code()
		if code == "" {
			t.Fatalf("no code in the mail:\n%s", m.Raw)
		}
		// A wrong code: the page again, with the error at hand.
		wrong := "000000"
		if code == wrong {
			wrong = "111111"
		}
		fill(t, e.ctx, map[string]string{"code": wrong})
		resp = click(t, e.ctx, "submit")
		expectPage(t, resp, e.s.URL, "/login/email", 401)
		if text(t, e.ctx, "#error") == "" {
			t.Error("no error shown for a wrong code")
		}
		fill(t, e.ctx, map[string]string{"code": code})
		resp = click(t, e.ctx, "submit")
		expectPage(t, resp, e.s.URL, "/consent", 200)
		if got := scopeNames(t, e.ctx); !slices.Equal(got, []string{"read", "write"}) {
			t.Errorf("consent lists %q", got)
		}
		resp = click(t, e.ctx, "allow")
		if !strings.HasPrefix(resp.URL, e.app.callbackURL()+"?") {
			t.Fatalf("after allow: %s", resp.URL)
		}
		tok, err := cfg.Exchange(e.oauthContext(t), e.expectCode(t, e.app.wait(t), "st-email"), oauth2.VerifierOption(verifier))
		if err != nil {
			t.Fatalf("exchange: %v", err)
		}
		var got struct {
			AMR []string `json:"amr"`
		}
		introspectAs(t, e.s, "web", webSecret, tok.AccessToken, &got)
		if !slices.Equal(got.AMR, []string{"DEFAULT", "OTP", "EMAIL"}) {
			t.Errorf("amr %v, want DEFAULT OTP EMAIL", got.AMR)
		}
		e.mailTo(t, personEmail, "You confirmed a sign-in")
		if got := run(t, e.ctx, "no code field left", chromedp.Evaluate[bool](`!!document.getElementById('code')`)); got {
			t.Error("the client's page has a code field")
		}
	})
}
