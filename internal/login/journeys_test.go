package login_test

import (
	"context"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/latchkey/latchkey/internal/cimconfig"
	"github.com/latchkey/latchkey/internal/config"
	"github.com/latchkey/latchkey/internal/journey"
	"github.com/latchkey/latchkey/internal/mail/smtpsink"
	"github.com/latchkey/latchkey/internal/openapicheck"
	"github.com/latchkey/latchkey/internal/server/servertest"
	"github.com/latchkey/latchkey/internal/store"
)

// journeysServer has sign-up, password reset and activation switched on
// (on=true) or every journey off, with mails going to a real SMTP server.
func journeysServer(t *testing.T, backend string, on bool) (*servertest.Server, *smtpsink.Process) {
	t.Helper()
	sink := smtpsink.Start(t)
	cfg := &config.Config{
		Persons: []config.Person{{Email: email, Password: pass}},
		SMTP:    sink.SMTP(),
	}
	s := servertest.Start(t, cfg, servertest.Options{Backend: backend})
	typ := cimconfig.ActivationEmail
	err := s.App.Journeys().Config.Update(context.Background(), []string{cimconfig.UnitFeatures}, func(snap *cimconfig.Snapshot) error {
		snap.Features = &cimconfig.Features{SignUpEnabled: &on, PasswordResetEnabled: &on,
			PersonActivation: &cimconfig.PersonActivation{Enabled: &on, Type: &typ}}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return s, sink
}

// linkToken stores a mailed-link token of kind for the test person: fresh,
// expired, or already used.
func linkToken(t *testing.T, s *servertest.Server, kind, state string) string {
	t.Helper()
	ctx := context.Background()
	p, err := s.Store.GetPersonByEmail(ctx, "", email)
	if err != nil {
		t.Fatal(err)
	}
	value, hash := s.App.Journeys().Hasher.Mint(journey.LinkToken)
	now := time.Now().UTC()
	tok := store.PersonToken{Hash: hash, Kind: kind, PersonID: p.ID, CreatedAt: now.Add(-2 * time.Hour), ExpiresAt: now.Add(time.Hour)}
	switch state {
	case "expired":
		tok.ExpiresAt = now.Add(-time.Hour)
	case "used":
		tok.UsedAt = now.Add(-time.Minute)
	}
	if err := s.Store.CreatePersonToken(ctx, tok); err != nil {
		t.Fatal(err)
	}
	return value
}

func fetch(t *testing.T, b *http.Client, method, u string, v url.Values) (int, string) {
	t.Helper()
	var resp *http.Response
	var err error
	if method == http.MethodGet {
		resp, err = b.Get(u)
	} else {
		resp, err = b.PostForm(u, v)
	}
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	openapicheck.Response(t, resp.Request, resp, body)
	return resp.StatusCode, string(body)
}

// Bad input on the journey forms gets a clear page, never a 500: header
// injection (CR/LF) in names and emails, oversized and malformed fields,
// tampered, expired and reused links, a missing CSRF token. No mail leaves
// for any of it, and the one good sign-up's mail has no injected header.
func TestJourneyFormsBadInput(t *testing.T) {
	for _, backend := range servertest.Backends {
		t.Run(backend, func(t *testing.T) {
			s, sink := journeysServer(t, backend, true)
			b := s.Browser()
			reset := linkToken(t, s, store.PersonTokenPasswordReset, "fresh")
			activation := linkToken(t, s, store.PersonTokenActivation, "fresh")
			csrf := map[string]string{}
			for path, page := range map[string]string{"/signup": "/signup", "/password/forgot": "/password/forgot",
				"/activate/resend": "/activate/resend", "/password/reset": "/password/reset?token=" + reset,
				"/activate": "/activate?token=" + activation} {
				m := servertest.CSRFRE.FindStringSubmatch(servertest.Get(t, b, s.URL+page))
				if m == nil {
					t.Fatalf("no form at %s", page)
				}
				csrf[path] = m[1]
			}
			const injected = "victim@example.com"
			crlfEmail := "eve@example.com\r\nBcc: " + injected
			long := strings.Repeat("a", 5000)
			signup := func(over url.Values) url.Values {
				v := url.Values{"csrf_token": {csrf["/signup"]}, "email": {"new.person@example.com"}, "password": {"a long enough passphrase 1"},
					"first_name": {"Nina"}, "last_name": {"New"}}
				for k, x := range over {
					v[k] = x
				}
				return v
			}
			for _, tc := range []struct {
				name, method, path string
				form               url.Values
				status             int
				want               string // in the body
			}{
				{"sign-up: CR/LF in the email", "POST", "/signup", signup(url.Values{"email": {crlfEmail}}), 400, `id="email-error"`},
				{"sign-up: CR/LF in the first name", "POST", "/signup", signup(url.Values{"first_name": {"Eve\r\nBcc: " + injected}}), 400, `id="first_name-error"`},
				{"sign-up: LF in the last name", "POST", "/signup", signup(url.Values{"last_name": {"New\nSubject: hi"}}), 400, `id="last_name-error"`},
				{"sign-up: NUL in the first name", "POST", "/signup", signup(url.Values{"first_name": {"Ni\x00na"}}), 400, `id="first_name-error"`},
				{"sign-up: invalid UTF-8", "POST", "/signup", signup(url.Values{"first_name": {"\xff\xfe"}}), 400, `id="first_name-error"`},
				{"sign-up: oversized email", "POST", "/signup", signup(url.Values{"email": {long + "@example.com"}}), 400, `id="email-error"`},
				{"sign-up: oversized name", "POST", "/signup", signup(url.Values{"first_name": {long}}), 400, `id="first_name-error"`},
				{"sign-up: a form over the size limit", "POST", "/signup", signup(url.Values{"last_name": {strings.Repeat("x", 70<<10)}}), 400, "could not be read"},
				{"sign-up: no CSRF token", "POST", "/signup", signup(url.Values{"csrf_token": {""}}), 403, "form has expired"},
				{"forgot: CR/LF in the email", "POST", "/password/forgot", url.Values{"csrf_token": {csrf["/password/forgot"]}, "email": {crlfEmail}}, 303, ""},
				{"forgot: oversized email", "POST", "/password/forgot", url.Values{"csrf_token": {csrf["/password/forgot"]}, "email": {long}}, 303, ""},
				{"resend: CR/LF in the email", "POST", "/activate/resend", url.Values{"csrf_token": {csrf["/activate/resend"]}, "email": {crlfEmail}}, 200, `id="message"`},
				{"resend: oversized email", "POST", "/activate/resend", url.Values{"csrf_token": {csrf["/activate/resend"]}, "email": {long}}, 200, `id="message"`},
				{"reset: tampered link", "GET", "/password/reset?token=" + reset + "x", nil, 404, `href="/password/forgot"`},
				{"reset: not a link token", "GET", "/password/reset?token=" + long, nil, 404, `href="/password/forgot"`},
				{"reset: no token", "GET", "/password/reset", nil, 404, `href="/password/forgot"`},
				{"reset: expired link", "GET", "/password/reset?token=" + linkToken(t, s, store.PersonTokenPasswordReset, "expired"), nil, 410, `href="/password/forgot"`},
				{"reset: used link", "GET", "/password/reset?token=" + linkToken(t, s, store.PersonTokenPasswordReset, "used"), nil, 410, `href="/password/forgot"`},
				{"reset: an activation link", "GET", "/password/reset?token=" + activation, nil, 404, `href="/password/forgot"`},
				{"reset: tampered link posted", "POST", "/password/reset", url.Values{"csrf_token": {csrf["/password/reset"]}, "token": {reset + "x"},
					"password": {"a long enough passphrase 2"}, "password_confirm": {"a long enough passphrase 2"}}, 404, `href="/password/forgot"`},
				{"reset: oversized password", "POST", "/password/reset", url.Values{"csrf_token": {csrf["/password/reset"]}, "token": {reset},
					"password": {long}, "password_confirm": {long}}, 400, `id="error"`},
				{"reset: confirmation differs", "POST", "/password/reset", url.Values{"csrf_token": {csrf["/password/reset"]}, "token": {reset},
					"password": {"a long enough passphrase 2"}, "password_confirm": {"another"}}, 400, `id="error"`},
				{"activate: tampered link", "GET", "/activate?token=" + activation + "x", nil, 404, `href="/activate/resend"`},
				{"activate: expired link", "GET", "/activate?token=" + linkToken(t, s, store.PersonTokenActivation, "expired"), nil, 410, `href="/activate/resend"`},
				{"activate: used link", "GET", "/activate?token=" + linkToken(t, s, store.PersonTokenActivation, "used"), nil, 410, `href="/activate/resend"`},
				{"activate: tampered link posted", "POST", "/activate", url.Values{"csrf_token": {csrf["/activate"]}, "token": {activation + "x"}}, 404, `href="/activate/resend"`},
				{"activate: a reset link posted", "POST", "/activate", url.Values{"csrf_token": {csrf["/activate"]}, "token": {reset}}, 404, `href="/activate/resend"`},
				{"activate: oversized password", "POST", "/activate", url.Values{"csrf_token": {csrf["/activate"]}, "token": {activation},
					"first_name": {"Nina"}, "password": {long}, "password_confirm": {long}}, 400, `id="error"`},
				{"activate: no password", "POST", "/activate", url.Values{"csrf_token": {csrf["/activate"]}, "token": {activation},
					"first_name": {"Nina"}}, 400, `id="error"`},
				{"activate: confirmation differs", "POST", "/activate", url.Values{"csrf_token": {csrf["/activate"]}, "token": {activation},
					"first_name": {"Nina"}, "password": {"a long enough passphrase 2"}, "password_confirm": {"another"}}, 400, `id="error"`},
				{"activate: CR/LF in the first name", "POST", "/activate", url.Values{"csrf_token": {csrf["/activate"]}, "token": {activation},
					"first_name": {"Eve\r\nBcc: " + injected}, "password": {"a long enough passphrase 2"},
					"password_confirm": {"a long enough passphrase 2"}}, 400, `id="first_name-error"`},
				{"activate: oversized name", "POST", "/activate", url.Values{"csrf_token": {csrf["/activate"]}, "token": {activation},
					"first_name": {long}, "password": {"a long enough passphrase 2"}, "password_confirm": {"a long enough passphrase 2"}}, 400,
					`id="first_name-error"`},
			} {
				status, body := fetch(t, b, tc.method, s.URL+tc.path, tc.form)
				if status != tc.status || !strings.Contains(body, tc.want) || strings.Contains(body, "could not handle the request") {
					t.Errorf("%s: %d, want %d with %q:\n%.600s", tc.name, status, tc.status, tc.want, body)
				}
			}

			// One good sign-up with a name outside ASCII: its mail arrives,
			// and no mail went to the injected address or carries a Bcc.
			status, _ := fetch(t, b, "POST", s.URL+"/signup", signup(url.Values{"first_name": {"Zoë"}, "last_name": {"Ünal"}}))
			if status != http.StatusSeeOther {
				t.Fatalf("good sign-up: %d", status)
			}
			sink.WaitFor(1, 20*time.Second, func(m smtpsink.Mail) bool { return m.To == "new.person@example.com" })
			for _, m := range sink.Mails() {
				if m.To != "new.person@example.com" || m.Header.Get("Bcc") != "" || strings.Contains(string(m.Raw), injected) {
					t.Errorf("unexpected mail to %s:\n%s", m.To, m.Raw)
				}
			}
		})
	}
}

// Every page of sign-up and password reset answers the 404 page while its
// journey is off, to any input (before a CSRF token is read). The
// activation pages stay: invitations use them whatever person_activation
// says.
func TestJourneysOffAre404(t *testing.T) {
	s, _ := journeysServer(t, "sqlite", false)
	b := s.Browser()
	for _, tc := range []struct{ method, path string }{
		{"GET", "/signup"}, {"POST", "/signup"}, {"GET", "/signup/done"},
		{"GET", "/password/forgot"}, {"POST", "/password/forgot"}, {"GET", "/password/forgot/sent"},
		{"GET", "/password/reset?token=lk_ml_x"}, {"POST", "/password/reset"}, {"GET", "/password/reset/done"},
	} {
		if status, body := fetch(t, b, tc.method, s.URL+tc.path, url.Values{"email": {"a@example.com\r\nBcc: b@example.com"}}); status != http.StatusNotFound ||
			!strings.Contains(body, "There is no page at this address") {
			t.Errorf("%s %s with the journeys off: %d\n%.300s", tc.method, tc.path, status, body)
		}
	}
}
