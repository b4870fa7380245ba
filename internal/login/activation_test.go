package login_test

import (
	"context"
	"io"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/latchkey/latchkey/internal/cimconfig"
	"github.com/latchkey/latchkey/internal/config"
	"github.com/latchkey/latchkey/internal/mail/smtpsink"
	"github.com/latchkey/latchkey/internal/request"
	"github.com/latchkey/latchkey/internal/server/servertest"
	"github.com/latchkey/latchkey/internal/store"
)

// setStatus sets the test person's status.
func setStatus(t *testing.T, s *servertest.Server, status string) {
	t.Helper()
	ctx := context.Background()
	p, err := s.Store.GetPersonByEmail(ctx, "", email)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Store.UpdatePerson(ctx, p.ID, func(p store.Person) (store.Person, error) {
		p.Status = status
		return p, nil
	}); err != nil {
		t.Fatal(err)
	}
}

// setActivation switches features.person_activation (type EMAIL).
func setActivation(t *testing.T, s *servertest.Server, on bool) {
	t.Helper()
	typ := cimconfig.ActivationEmail
	err := s.App.Journeys().Config.Update(context.Background(), []string{cimconfig.UnitFeatures}, func(snap *cimconfig.Snapshot) error {
		snap.Features = &cimconfig.Features{PersonActivation: &cimconfig.PersonActivation{Enabled: &on, Type: &typ}}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// With activation on, a CREATED person is refused by every flow, not only
// by the login page: the password grant (no page to skip) and the refresh
// of tokens issued before activation was switched on ask authflow's rule.
func TestCreatedPersonRefusedWithoutThePages(t *testing.T) {
	for _, backend := range servertest.Backends {
		t.Run(backend, func(t *testing.T) {
			no := false
			s := servertest.Start(t, &config.Config{
				Clients: []config.Client{{ClientID: "app", ClientSecret: "app-secret-app-secret", RedirectURIs: []string{cb},
					GrantTypes: []string{"authorization_code", "password", "refresh_token"}, Scopes: []string{"profile"}, ConsentRequired: &no}},
				Persons: []config.Person{{Email: email, Password: pass}},
			}, servertest.Options{Backend: backend, Clock: servertest.NewClock()})
			setStatus(t, s, "CREATED")
			password := url.Values{"grant_type": {"password"}, "username": {email}, "password": {pass}, "scope": {"profile"}}

			// Activation off: a CREATED person signs in.
			before := tokenRequest(t, s, password)
			if before["refresh_token"] == nil {
				t.Fatalf("password grant with activation off: %v", before)
			}
			b := s.Browser()
			f := s.Authorize(t, b, s.URL+"/oauth/authorize?"+url.Values{"client_id": {"app"}, "response_type": {"code"},
				"redirect_uri": {cb}, "scope": {"profile"}}.Encode(), email, pass, "")
			if f.Back.Query().Get("code") == "" {
				t.Fatalf("browser login with activation off: %s", f.Back)
			}

			setActivation(t, s, true)
			if r := tokenRequest(t, s, password); r["error"] != "invalid_grant" {
				t.Errorf("password grant of a CREATED person with activation on: %v, want invalid_grant", r)
			}
			refresh := url.Values{"grant_type": {"refresh_token"}, "refresh_token": {before["refresh_token"].(string)}}
			if r := tokenRequest(t, s, refresh); r["error"] != "invalid_grant" {
				t.Errorf("refresh of a token issued before activation was on: %v, want invalid_grant", r)
			}
			// The browser's session, made before, issues nothing either.
			resp, err := b.Get(s.URL + "/oauth/authorize?" + url.Values{"client_id": {"app"}, "response_type": {"code"},
				"redirect_uri": {cb}, "scope": {"profile"}, "state": {"s2"}}.Encode())
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp, err = b.Get(location(t, resp).String()); err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if loc := location(t, resp); loc.Query().Get("code") != "" || loc.Query().Get("error") != "access_denied" {
				t.Errorf("authorize with the old session: %s, want access_denied", loc)
			}

			// Activated: everything works again (a refresh too: the grant
			// was never revoked, only refused).
			setStatus(t, s, "ACTIVATED")
			if r := tokenRequest(t, s, password); r["access_token"] == nil {
				t.Errorf("password grant once activated: %v", r)
			}
			if r := tokenRequest(t, s, refresh); r["access_token"] == nil {
				t.Errorf("refresh once activated: %v", r)
			}
		})
	}
}

// The login page tells a CREATED person to activate first, from the same
// rule (authflow.Policy.MaySignIn).
func TestLoginPageAsksToActivate(t *testing.T) {
	s := stepUpServer(t, "sqlite")
	setStatus(t, s, "CREATED")
	setActivation(t, s, true)
	b := s.Browser()
	resp, err := b.Get(s.URL + "/oauth/authorize?" + url.Values{"client_id": {"web"}, "response_type": {"code"},
		"redirect_uri": {cb}, "scope": {"profile"}}.Encode())
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	loc := location(t, resp)
	page := servertest.Get(t, b, loc.String())
	csrf := servertest.CSRFRE.FindStringSubmatch(page)[1]
	resp, err = b.PostForm(s.URL+"/login", url.Values{"csrf_token": {csrf}, "request": {loc.Query().Get("request")},
		"email": {email}, "password": {pass}})
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body := new(strings.Builder)
	_, _ = io.Copy(body, resp.Body)
	if resp.StatusCode != 403 || !strings.Contains(body.String(), "Activate your account first") {
		t.Errorf("login of a CREATED person: %d\n%s", resp.StatusCode, body)
	}
}

// The pages of sign-up with activation on (issue 59): the sign-up form
// asks for no password — one typed before the address is proven could be
// a squatter's — and the mailed link's page asks for it (twice) with the
// profile fields to confirm, prefilled (the mobile number in its
// confirmation too); the account then signs in with the password chosen
// there. Every answer is checked against api/openapi.yaml.
func TestActivationPageAsksForThePassword(t *testing.T) {
	for _, backend := range servertest.Backends {
		t.Run(backend, func(t *testing.T) {
			s, sink := journeysServer(t, backend, true)
			yes := true
			if err := s.App.Journeys().Config.Update(context.Background(), []string{cimconfig.UnitAttributes}, func(snap *cimconfig.Snapshot) error {
				snap.Attributes = &cimconfig.Attributes{SignUpFormFields: &cimconfig.SignUpFormFields{MobileNumberEnabled: &yes,
					MobileNumberConfirmationEnabled: &yes}}
				return nil
			}); err != nil {
				t.Fatal(err)
			}
			b := s.Browser()
			page := servertest.Get(t, b, s.URL+"/signup")
			if strings.Contains(page, `name="password"`) {
				t.Errorf("the sign-up form asks for a password while activation is on:\n%s", page)
			}
			csrf := servertest.CSRFRE.FindStringSubmatch(page)[1]
			const who, chosen, phone = "nina@example.com", "the passphrase chosen at activation 5", "+31612345678"
			if status, _ := fetch(t, b, "POST", s.URL+"/signup", url.Values{"csrf_token": {csrf}, "email": {who},
				"password": {"typed anyway, never stored 1"}, "first_name": {"Nina"}, "phone": {phone}, "phone_confirm": {phone}}); status != http.StatusSeeOther {
				t.Fatalf("sign-up: %d", status)
			}
			m := sink.WaitFor(1, 20*time.Second, func(m smtpsink.Mail) bool { return m.To == who })[0]
			link := m.Link(s.URL + "/activate?")
			status, page := fetch(t, b, "GET", link, nil)
			if status != http.StatusOK || !strings.Contains(page, `name="password"`) || !strings.Contains(page, `name="password_confirm"`) ||
				!strings.Contains(page, `value="Nina"`) {
				t.Fatalf("the activation page: %d\n%s", status, page)
			}
			// The number and its confirmation are filled as the account
			// holds them: confirming what is shown needs no retyping.
			for _, name := range []string{"phone", "phone_confirm"} {
				if !regexp.MustCompile(`name="` + name + `"[^>]*value="(\+|&#43;)` + phone[1:] + `"`).MatchString(page) { // html/template escapes +
					t.Errorf("the activation page's %s is not filled with %s:\n%s", name, phone, page)
				}
			}
			token := regexp.MustCompile(`name="token" value="([^"]+)"`).FindStringSubmatch(page)[1]
			csrf = servertest.CSRFRE.FindStringSubmatch(page)[1]
			form := url.Values{"csrf_token": {csrf}, "token": {token}, "first_name": {"Nina"}, "last_name": {"New"},
				"phone": {phone}, "phone_confirm": {phone}}
			if status, page := fetch(t, b, "POST", s.URL+"/activate", form); status != http.StatusBadRequest || !strings.Contains(page, `id="error"`) {
				t.Errorf("activation without a password: %d\n%.400s", status, page)
			}
			form.Set("password", chosen)
			form.Set("password_confirm", chosen)
			if status, _ := fetch(t, b, "POST", s.URL+"/activate", form); status != http.StatusSeeOther {
				t.Fatalf("activation: %d", status)
			}
			p, err := s.Store.GetPersonByEmail(context.Background(), "", who)
			if err != nil || p.Status != "ACTIVATED" || p.LastName != "New" || len(p.Profile.Phones) != 1 || p.Profile.Phones[0].Value != phone {
				t.Fatalf("after activation: %+v, %v", p, err)
			}
			if _, err := s.App.Journeys().Identity.CheckPassword(context.Background(), request.Facts{Addr: "192.0.2.9"}, who, chosen); err != nil {
				t.Errorf("the chosen password: %v", err)
			}
			if _, err := s.App.Journeys().Identity.CheckPassword(context.Background(), request.Facts{Addr: "192.0.2.9"}, who,
				"typed anyway, never stored 1"); err == nil {
				t.Error("the password typed at sign-up signs in")
			}
		})
	}
}
