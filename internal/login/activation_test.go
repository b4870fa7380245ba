package login_test

import (
	"context"
	"io"
	"net/url"
	"strings"
	"testing"

	"github.com/latchkey/latchkey/internal/cimconfig"
	"github.com/latchkey/latchkey/internal/config"
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
