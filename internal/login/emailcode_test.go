package login_test

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/latchkey/latchkey/internal/cimconfig"
	"github.com/latchkey/latchkey/internal/config"
	"github.com/latchkey/latchkey/internal/mail/smtpsink"
	"github.com/latchkey/latchkey/internal/server/servertest"
	"github.com/latchkey/latchkey/internal/store"
	"github.com/latchkey/latchkey/internal/totp"
)

// emailCodeServer serves the consent-asking client "web" and the scope
// "vault" at level 2, with mails going to a real SMTP server process, and
// the identity configuration's step-up set by stepUp (the mailed code at
// level 2 unless stepUp says otherwise) and step_up_authentication on.
func emailCodeServer(t *testing.T, backend string, stepUp func(*cimconfig.StepUp)) (*servertest.Server, *smtpsink.Process) {
	t.Helper()
	sink := smtpsink.Start(t)
	yes := true
	cfg := &config.Config{
		Clients: []config.Client{{ClientID: "web", ClientSecret: "web-secret-web-secret", RedirectURIs: []string{cb},
			GrantTypes: []string{"authorization_code", "refresh_token"}, Scopes: []string{"vault", "profile"}, ConsentRequired: &yes}},
		Persons: []config.Person{{Email: email, Password: pass}},
		SMTP:    sink.SMTP(),
	}
	s := servertest.Start(t, cfg, servertest.Options{Backend: backend, Clock: servertest.NewClock()})
	ctx := context.Background()
	if err := s.Store.CreateScope(ctx, store.Scope{ID: "vault", AuthenticationLevel: 2, VerificationFailedEndpoint: "https://svc.example/failed"}); err != nil {
		t.Fatal(err)
	}
	level := int64(2)
	err := s.App.Journeys().Config.Update(ctx, []string{cimconfig.UnitStepUp, cimconfig.UnitEmailNotifications}, func(snap *cimconfig.Snapshot) error {
		snap.StepUp = &cimconfig.StepUp{AuthenticationMethods: &cimconfig.StepUpAuthenticationMethods{EmailAuthenticationLevel: &level}}
		if stepUp != nil {
			stepUp(snap.StepUp)
		}
		snap.EmailNotifications = &cimconfig.EmailNotificationConfiguration{StepUpAuthentication: &yes}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return s, sink
}

// toStepUp logs in for scope vault and returns the request id, the CSRF
// token, and where the browser was sent after the password.
func toStepUp(t *testing.T, s *servertest.Server, b *http.Client) (request, csrf string, next *url.URL) {
	t.Helper()
	return logIn(t, s, b, url.Values{"client_id": {"web"}, "response_type": {"code"}, "redirect_uri": {cb}, "scope": {"vault"}, "state": {"st"}})
}

func emailAction(t *testing.T, s *servertest.Server, b *http.Client, request, csrf string, v url.Values) *http.Response {
	t.Helper()
	v.Set("csrf_token", csrf)
	v.Set("request", request)
	return form(t, b, s.URL+"/login/email", v)
}

// sendCode asks for a code on the page and returns it from the received mail.
func sendCode(t *testing.T, s *servertest.Server, sink *smtpsink.Process, b *http.Client, request, csrf string) string {
	t.Helper()
	before := len(codeMails(sink))
	resp := emailAction(t, s, b, request, csrf, url.Values{"action": {"send"}})
	if loc := location(t, resp); loc.Path != "/login/email" || loc.Query().Get("sent") != "1" {
		t.Fatalf("after send: %s", loc)
	}
	got := sink.WaitFor(before+1, 20*time.Second, isCodeMail)
	code := got[len(got)-1].Code()
	if code == "" {
		t.Fatalf("no code in the mail:\n%s", got[len(got)-1].Raw)
	}
	return code
}

func isCodeMail(m smtpsink.Mail) bool {
	return m.To == email && m.Header.Get("Subject") == "Your sign-in code"
}

func codeMails(sink *smtpsink.Process) []smtpsink.Mail {
	var out []smtpsink.Mail
	for _, m := range sink.Mails() {
		if isCodeMail(m) {
			out = append(out, m)
		}
	}
	return out
}

func wrongCode(code string) string {
	if code == "000000" {
		return "111111"
	}
	return "000000"
}

// The step-up by mailed code: a person without TOTP is sent to it; the
// code comes from the received mail, is bound to the browser session,
// expires, and a newer one replaces it (single use is storetest's
// PersonTokens); a right code raises the session, whose amr
// gains OTP and EMAIL; the step_up_authentication notification is mailed.
func TestEmailCodeStepUp(t *testing.T) {
	for _, backend := range servertest.Backends {
		t.Run(backend, func(t *testing.T) {
			s, sink := emailCodeServer(t, backend, nil)
			b := s.Browser()
			request, csrf, next := toStepUp(t, s, b)
			if next.Path != "/login/email" {
				t.Fatalf("after the password: %s, want /login/email", next)
			}
			page := servertest.Get(t, b, next.String())
			if !strings.Contains(page, `id="send"`) || strings.Contains(page, `id="code"`) || !strings.Contains(page, "j•••@example.com") {
				t.Fatalf("the first view offers to send a code to the masked address:\n%s", page)
			}
			code := sendCode(t, s, sink, b, request, csrf)
			page = servertest.Get(t, b, s.URL+"/login/email?request="+url.QueryEscape(request)+"&sent=1")
			if !strings.Contains(page, `id="code"`) || !strings.Contains(page, `for="code"`) {
				t.Fatalf("after sending, no labelled code field:\n%s", page)
			}

			// Another browser's code is not this session's, and replaces
			// this one (one code per person is good at a time).
			b2 := s.Browser()
			request2, csrf2, _ := toStepUp(t, s, b2)
			code2 := sendCode(t, s, sink, b2, request2, csrf2)
			for name, c := range map[string]string{"another session's": code2, "replaced": code, "letters": "abcdef"} {
				if c == code2 && name != "another session's" {
					continue
				}
				if resp := emailAction(t, s, b, request, csrf, url.Values{"action": {"verify"}, "code": {c}}); resp.StatusCode != http.StatusUnauthorized {
					t.Errorf("%s code: %d, want 401", name, resp.StatusCode)
				}
			}
			code = sendCode(t, s, sink, b, request, csrf)
			resp := emailAction(t, s, b, request, csrf, url.Values{"action": {"verify"}, "code": {code}})
			if loc := location(t, resp); loc.Path != "/consent" {
				t.Fatalf("right code: %s, want the consent page", loc)
			}
			resp = form(t, b, s.URL+"/consent", url.Values{"csrf_token": {csrf}, "request": {request}, "decision": {"allow"}})
			c := location(t, resp).Query().Get("code")
			if c == "" {
				t.Fatal("no code after consent")
			}
			if got := introspectAMR(t, s, exchange(t, s, c)); got != `["DEFAULT","OTP","EMAIL"]` {
				t.Errorf("amr %s, want [DEFAULT OTP EMAIL]", got)
			}
			sink.WaitFor(1, 20*time.Second, func(m smtpsink.Mail) bool {
				return m.To == email && m.Header.Get("Subject") == "You confirmed a sign-in"
			})

			// Expired: a code of the second browser, 11 minutes later.
			code4 := sendCode(t, s, sink, b2, request2, csrf2)
			s.Clock.Advance(11 * time.Minute)
			if resp := emailAction(t, s, b2, request2, csrf2, url.Values{"action": {"verify"}, "code": {code4}}); resp.StatusCode != http.StatusUnauthorized {
				t.Errorf("expired code: %d, want 401", resp.StatusCode)
			}
			code5 := sendCode(t, s, sink, b2, request2, csrf2)
			if resp := emailAction(t, s, b2, request2, csrf2, url.Values{"action": {"verify"}, "code": {code5}}); location(t, resp).Path != "/consent" {
				t.Fatalf("fresh code: %s", location(t, resp))
			}
			if n, err := s.Store.CountEvents(context.Background(), store.EventFilter{Kind: store.EventOAuth,
				Types: []string{"STEP_UP_EMAIL_CODE_SUCCEEDED"}}, 100); err != nil || n != 2 {
				t.Errorf("%d successful step-up events, %v; want 2", n, err)
			}
			if n := len(codeMails(sink)); n != 5 {
				t.Errorf("%d code mails, want 5 (one per send)", n)
			}
		})
	}
}

// A hostile client cannot skip the mailed code: consent posted before it,
// a TOTP code posted while only the mailed code is offered, and a verify
// without a send issue nothing and raise nothing.
func TestConsentCannotSkipTheEmailCode(t *testing.T) {
	for _, backend := range servertest.Backends {
		t.Run(backend, func(t *testing.T) {
			s, _ := emailCodeServer(t, backend, nil)
			b := s.Browser()
			request, csrf, _ := toStepUp(t, s, b)
			resp := form(t, b, s.URL+"/consent", url.Values{"csrf_token": {csrf}, "request": {request}, "decision": {"allow"}})
			if loc := location(t, resp); loc.Path != "/login/email" || loc.Query().Get("code") != "" {
				t.Fatalf("POST /consent allow went to %s, want /login/email", loc)
			}
			// TOTP is not offered (no secret): its page leads to the mailed code.
			resp = postCode(t, s, b, request, csrf, "123456")
			if loc := location(t, resp); loc.Path != "/login/email" {
				t.Errorf("POST /login/totp went to %s, want /login/email", loc)
			}
			resp = emailAction(t, s, b, request, csrf, url.Values{"action": {"verify"}, "code": {"123456"}})
			if resp.StatusCode != http.StatusUnauthorized {
				t.Errorf("verify without a sent code: %d, want 401", resp.StatusCode)
			}
			resp = emailAction(t, s, b, request, "forged", url.Values{"action": {"send"}})
			if resp.StatusCode != http.StatusForbidden {
				t.Errorf("send with a forged CSRF token: %d, want 403", resp.StatusCode)
			}
			if n := grantEvents(t, s, "AUTHZ_REQUEST_GRANT_CREATED"); n != 0 {
				t.Fatalf("%d codes issued without the step-up", n)
			}
			resp = form(t, b, s.URL+"/consent", url.Values{"csrf_token": {csrf}, "request": {request}, "decision": {"allow"}})
			if loc := location(t, resp); loc.Path != "/login/email" {
				t.Errorf("consent after the failed attempts went to %s", loc)
			}
		})
	}
}

// Wrong codes are throttled per person: after 5, even the right code is
// refused until the window ends; sends are bounded too.
func TestEmailCodeThrottled(t *testing.T) {
	s, sink := emailCodeServer(t, "sqlite", nil)
	b := s.Browser()
	request, csrf, _ := toStepUp(t, s, b)
	code := sendCode(t, s, sink, b, request, csrf)
	for range 5 {
		emailAction(t, s, b, request, csrf, url.Values{"action": {"verify"}, "code": {wrongCode(code)}})
	}
	resp := emailAction(t, s, b, request, csrf, url.Values{"action": {"verify"}, "code": {code}})
	if resp.StatusCode != http.StatusTooManyRequests || resp.Header.Get("Retry-After") == "" {
		t.Errorf("right code after 5 wrong ones: %d (Retry-After %q), want 429", resp.StatusCode, resp.Header.Get("Retry-After"))
	}
	for range 4 {
		sendCode(t, s, sink, b, request, csrf)
	}
	resp = emailAction(t, s, b, request, csrf, url.Values{"action": {"send"}})
	if resp.StatusCode != http.StatusTooManyRequests {
		t.Errorf("sixth send in the window: %d, want 429", resp.StatusCode)
	}
	s.Clock.Advance(16 * time.Minute)
	code = sendCode(t, s, sink, b, request, csrf)
	if loc := location(t, emailAction(t, s, b, request, csrf, url.Values{"action": {"verify"}, "code": {code}})); loc.Path != "/consent" {
		t.Errorf("right code after the window: %s", loc)
	}
}

// The strategy: STRONGEST_AVAILABLE offers one method, USER_PREFERENCE the
// choice of every method that reaches the level.
func TestStepUpStrategy(t *testing.T) {
	for _, tc := range []struct {
		name     string
		strategy string
		level    int64
		want     string
	}{
		{"strongest, equal levels: TOTP", "STRONGEST_AVAILABLE", 2, "/login/totp"},
		{"strongest: the mailed code reaches more", "STRONGEST_AVAILABLE", 3, "/login/email"},
		{"user preference: the choice", "USER_PREFERENCE", 2, "/login/step-up"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, _ := emailCodeServer(t, "sqlite", func(su *cimconfig.StepUp) {
				su.Stategy = &tc.strategy
				su.AuthenticationMethods.EmailAuthenticationLevel = &tc.level
			})
			setTOTPSecret(t, s)
			b := s.Browser()
			request, csrf, next := toStepUp(t, s, b)
			if next.Path != tc.want {
				t.Fatalf("after the password: %s, want %s", next, tc.want)
			}
			if tc.want != "/login/step-up" {
				return
			}
			page := servertest.Get(t, b, next.String())
			if !strings.Contains(page, `id="method-totp"`) || !strings.Contains(page, `id="method-email"`) {
				t.Fatalf("the choice does not offer both methods:\n%s", page)
			}
			totpPage := servertest.Get(t, b, s.URL+"/login/totp?request="+url.QueryEscape(request))
			if !strings.Contains(totpPage, `id="other"`) {
				t.Error("the TOTP page does not link the other methods")
			}
			resp := postCode(t, s, b, request, csrf, totp.Code(secret, totp.Counter(s.Clock.Now())))
			if loc := location(t, resp); loc.Path != "/consent" {
				t.Fatalf("after the chosen TOTP: %s", loc)
			}
		})
	}
}
