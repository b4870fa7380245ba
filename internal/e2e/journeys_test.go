package e2e

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
	"golang.org/x/oauth2"

	"github.com/latchkey/latchkey/internal/cimconfig"
	"github.com/latchkey/latchkey/internal/mail/smtpsink"
	"github.com/latchkey/latchkey/internal/server/servertest"
)

// journeyEnv is env with a real SMTP server process behind the outbox.
type journeyEnv struct {
	*env
	sink *smtpsink.Process
}

func forEachBackendWithMail(t *testing.T, configure func(*cimconfig.Snapshot), fn func(t *testing.T, e *journeyEnv)) {
	for _, backend := range servertest.Backends {
		t.Run(backend, func(t *testing.T) {
			ctx := newBrowser(t)
			sink := smtpsink.Start(t)
			app := newClientApp(t)
			cfg := testConfig(app.callbackURL())
			cfg.SMTP = sink.SMTP()
			s := servertest.Start(t, cfg, servertest.Options{Backend: backend})
			cim := s.App.Journeys().Config
			err := cim.Update(context.Background(), []string{cimconfig.UnitFeatures, cimconfig.UnitAttributes,
				cimconfig.UnitEmailNotifications}, func(snap *cimconfig.Snapshot) error {
				configure(snap)
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
			fn(t, &journeyEnv{env: &env{backend: backend, s: s, app: app, ctx: ctx}, sink: sink})
		})
	}
}

func yes() *bool { t := true; return &t }

func fill(t *testing.T, ctx context.Context, fields map[string]string) {
	t.Helper()
	for id, v := range fields {
		do(t, ctx, "fill #"+id, chromedp.WaitVisible(chromedp.ID(id)), chromedp.Clear(chromedp.ID(id)),
			typeInto(chromedp.ID(id), v))
	}
}

func (e *journeyEnv) mailTo(t *testing.T, to, subject string) smtpsink.Mail {
	t.Helper()
	got := e.sink.WaitFor(1, stepTimeout, func(m smtpsink.Mail) bool {
		return m.To == to && m.Header.Get("Subject") == subject
	})
	return got[len(got)-1]
}

func text(t *testing.T, ctx context.Context, sel string) string {
	t.Helper()
	return run(t, ctx, "read "+sel, chromedp.Text(chromedp.CSS(sel)))
}

func TestPasswordResetInBrowser(t *testing.T) {
	forEachBackendWithMail(t, func(snap *cimconfig.Snapshot) {
		snap.Features = &cimconfig.Features{PasswordResetEnabled: yes()}
		snap.EmailNotifications = &cimconfig.EmailNotificationConfiguration{PasswordReset: yes()}
	}, func(t *testing.T, e *journeyEnv) {
		cfg := e.oauthConfig("spa", "", oauth2.AuthStyleInParams, "read")
		verifier := oauth2.GenerateVerifier()
		resp := navigate(t, e.ctx, cfg.AuthCodeURL("st-reset", oauth2.S256ChallengeOption(verifier)))
		expectPage(t, resp, e.s.URL, "/login", 200)
		if got := run(t, e.ctx, "sign-up link", chromedp.Evaluate[bool](`!!document.getElementById('signup')`)); got {
			t.Error("the login page links sign-up while it is off")
		}
		resp = click(t, e.ctx, "forgot")
		expectPage(t, resp, e.s.URL, "/password/forgot", 200)
		expectStyled(t, e.ctx)
		e.screenshot(t, "password-forgot.png")
		fill(t, e.ctx, map[string]string{"email": personEmail})
		resp = click(t, e.ctx, "submit")
		expectPage(t, resp, e.s.URL, "/password/forgot/sent", 200)
		e.screenshot(t, "password-forgot-sent.png")
		sentPage := text(t, e.ctx, "main")

		// An unknown address gets the same page, and no mail.
		navigate(t, e.ctx, e.s.URL+"/password/forgot")
		fill(t, e.ctx, map[string]string{"email": "nobody@example.com"})
		resp = click(t, e.ctx, "submit")
		expectPage(t, resp, e.s.URL, "/password/forgot/sent", 200)
		if got := text(t, e.ctx, "#message"); !strings.Contains(sentPage, got) {
			t.Errorf("unknown email answered %q, a known one %q", got, sentPage)
		}

		m := e.mailTo(t, personEmail, "Reset your password")
		link := m.Link(e.s.URL + "/password/reset?")
		if link == "" || !strings.Contains(link, "request=") {
			t.Fatalf("no reset link that returns to the request in the mail:\n%s", m.Raw)
		}
		resp = navigate(t, e.ctx, link)
		expectPage(t, resp, e.s.URL, "/password/reset", 200)
		e.screenshot(t, "password-reset.png")
		const newPass = "a new and long passphrase 42"
		fill(t, e.ctx, map[string]string{"password": newPass, "password_confirm": newPass})
		resp = click(t, e.ctx, "submit")
		expectPage(t, resp, e.s.URL, "/password/reset/done", 200)
		e.screenshot(t, "password-reset-done.png")
		e.mailTo(t, personEmail, "Your password was changed")

		// Back to the authorization request, signed in with the new password.
		resp = click(t, e.ctx, "next")
		expectPage(t, resp, e.s.URL, "/login", 200)
		resp = login(t, e.ctx, personEmail, personPass)
		expectPage(t, resp, e.s.URL, "/login", 401)
		login(t, e.ctx, personEmail, newPass)
		code := e.expectCode(t, e.app.wait(t), "st-reset")
		if _, err := cfg.Exchange(e.oauthContext(t), code, oauth2.VerifierOption(verifier)); err != nil {
			t.Fatalf("exchange: %v", err)
		}

		// The unknown address got nothing (mails leave in order, and the
		// ones queued after it have arrived).
		for _, m := range e.sink.Mails() {
			if m.To == "nobody@example.com" {
				t.Errorf("a mail went to an address without an account: %s", m.Header.Get("Subject"))
			}
		}

		// The link works once.
		resp = navigate(t, e.ctx, link)
		if resp.Status != http.StatusGone || !strings.Contains(text(t, e.ctx, "h1"), "already used") {
			t.Errorf("a used link: status %d, %q", resp.Status, text(t, e.ctx, "h1"))
		}
		e.screenshot(t, "link-used.png")
		// A tampered one is refused with a way to ask again.
		resp = navigate(t, e.ctx, strings.Replace(link, "token=lk_ml_", "token=lk_ml_x", 1))
		if resp.Status != http.StatusNotFound || text(t, e.ctx, "#next") == "" {
			t.Errorf("a tampered link: status %d", resp.Status)
		}
	})
}

func TestSignUpAndActivationInBrowser(t *testing.T) {
	forEachBackendWithMail(t, func(snap *cimconfig.Snapshot) {
		act := cimconfig.ActivationEmail
		hour := int64(3600)
		snap.Features = &cimconfig.Features{SignUpEnabled: yes(),
			PersonActivation: &cimconfig.PersonActivation{Enabled: yes(), Type: &act, ExpirationTime: &hour}}
		snap.Attributes = &cimconfig.Attributes{PersonCreationMandatoryFields: &cimconfig.PersonCreationMandatoryFields{
			FirstNameRequired: yes()}}
		snap.EmailNotifications = &cimconfig.EmailNotificationConfiguration{Welcome: &cimconfig.Welcome{OnWebEnabled: yes()}}
	}, func(t *testing.T, e *journeyEnv) {
		cfg := e.oauthConfig("spa", "", oauth2.AuthStyleInParams, "read")
		verifier := oauth2.GenerateVerifier()
		navigate(t, e.ctx, cfg.AuthCodeURL("st-signup", oauth2.S256ChallengeOption(verifier)))
		resp := click(t, e.ctx, "signup")
		expectPage(t, resp, e.s.URL, "/signup", 200)
		expectStyled(t, e.ctx)
		e.screenshot(t, "signup.png")
		request := run(t, e.ctx, "read the request id", chromedp.Evaluate[string](`document.querySelector('input[name=request]').value`))

		// With activation on the form asks for no password: the holder of
		// the mailed link chooses it (issue 59, pre-account takeover).
		if got := run(t, e.ctx, "password field", chromedp.Evaluate[bool](`!!document.getElementById('password')`)); got {
			t.Error("the sign-up form asks for a password while activation is on")
		}
		// A missing required name is a clear error, not a 500.
		const email, pass = "new.person@example.com", "my own long passphrase 7"
		fill(t, e.ctx, map[string]string{"email": email})
		resp = click(t, e.ctx, "submit")
		expectPage(t, resp, e.s.URL, "/signup", 400)
		if got := text(t, e.ctx, "#first_name-error"); got == "" {
			t.Error("no error at the missing first name")
		}
		e.screenshot(t, "signup-errors.png")
		fill(t, e.ctx, map[string]string{"first_name": "Nina", "last_name": "New"})
		resp = click(t, e.ctx, "submit")
		expectPage(t, resp, e.s.URL, "/signup/done", 200)
		done := text(t, e.ctx, "main")
		e.screenshot(t, "signup-done.png")

		// Not active yet: the login refuses it.
		p, err := e.s.Store.GetPersonByEmail(context.Background(), "", email)
		if err != nil || p.Status != "CREATED" {
			t.Fatalf("after sign-up: %+v, %v; want a CREATED person", p, err)
		}

		// The same email again: the same page, no second account, nothing
		// of the form written; the unproven account's address gets a fresh
		// link, which replaces the first.
		navigate(t, e.ctx, e.s.URL+"/signup?request="+url.QueryEscape(request))
		fill(t, e.ctx, map[string]string{"email": email, "first_name": "Eve"})
		resp = click(t, e.ctx, "submit")
		expectPage(t, resp, e.s.URL, "/signup/done", 200)
		if got := text(t, e.ctx, "main"); got != done {
			t.Errorf("an existing email answered %q, a new one %q", got, done)
		}

		ms := e.sink.WaitFor(2, stepTimeout, func(m smtpsink.Mail) bool {
			return m.To == email && m.Header.Get("Subject") == "Activate your account"
		})
		if old := ms[0].Link(e.s.URL + "/activate?"); old != "" {
			if resp := navigate(t, e.ctx, old); resp.Status != http.StatusNotFound {
				t.Errorf("the replaced activation link: status %d, want 404", resp.Status)
			}
		}
		m := ms[1]
		link := m.Link(e.s.URL + "/activate?")
		if link == "" {
			t.Fatalf("no activation link:\n%s", m.Raw)
		}
		resp = navigate(t, e.ctx, link)
		expectPage(t, resp, e.s.URL, "/activate", 200)
		if got := run(t, e.ctx, "first name", chromedp.Evaluate[string](`document.getElementById('first_name').value`)); got != "Nina" {
			t.Errorf("the activation page shows first name %q, want the sign-up's Nina to confirm", got)
		}
		e.screenshot(t, "activate.png")
		// The link holder chooses the password here.
		fill(t, e.ctx, map[string]string{"password": pass, "password_confirm": pass})
		resp = click(t, e.ctx, "submit")
		expectPage(t, resp, e.s.URL, "/activate/done", 200)
		e.screenshot(t, "activate-done.png")
		e.mailTo(t, email, "Welcome")
		if p, _ := e.s.Store.GetPersonByEmail(context.Background(), "", email); p.Status != "ACTIVATED" || p.FirstName != "Nina" {
			t.Errorf("after activation: %+v", p)
		}
		resp = click(t, e.ctx, "next")
		expectPage(t, resp, e.s.URL, "/login", 200)
		login(t, e.ctx, email, pass)
		e.expectCode(t, e.app.wait(t), "st-signup")

		resp = navigate(t, e.ctx, link)
		if resp.Status != http.StatusGone {
			t.Errorf("a used activation link: status %d", resp.Status)
		}
	})
}

// Switched off, the journeys' pages do not exist.
func TestJourneysSwitchedOffAre404(t *testing.T) {
	s := servertest.Start(t, testConfig("http://127.0.0.1/cb"), servertest.Options{})
	for _, path := range []string{"/signup", "/password/forgot", "/password/reset?token=lk_ml_x"} {
		resp, err := s.Client().Get(s.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusNotFound {
			t.Errorf("GET %s: %d, want 404", path, resp.StatusCode)
		}
	}
	resp, err := s.Client().Get(s.URL + "/")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Errorf("GET /: %d, want the home page", resp.StatusCode)
	}
}
