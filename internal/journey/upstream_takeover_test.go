package journey_test

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/latchkey/latchkey/internal/federation"
	"github.com/latchkey/latchkey/internal/identity"
	"github.com/latchkey/latchkey/internal/journey"
	"github.com/latchkey/latchkey/internal/server/servertest"
)

// upstream is the server's federation service with one OpenID Connect login
// method "corp" (auto activation as given), configured through the
// configuration API as an operator would.
func upstream(t *testing.T, s *servertest.Server, autoActivation bool) (*federation.Service, federation.Method) {
	t.Helper()
	act := "false"
	if autoActivation {
		act = "true"
	}
	body := `{"login_methods":{"login_methods":[{"id":"corp","name":"Corp","type":"OPEN_ID_CONNECT","enabled":true,
		"auto_activation_enabled":` + act + `,"open_id_connect_attributes":{"client_authentication_method":"CLIENT_SECRET_BASIC",
		"client_id":"latchkey","client_secret":"op-secret","discovery_url":"https://op.example/.well-known/openid-configuration"}}]}}`
	req, _ := http.NewRequest(http.MethodPost, s.URL+"/api/v2/config", strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.SetBasicAuth("importer", "importer-password")
	resp, err := s.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		t.Fatalf("configure: %d %s", resp.StatusCode, b)
	}
	s.App.Journeys().Config.Forget()
	fed := s.App.Federation()
	m, err := fed.Method(context.Background(), "corp")
	if err != nil {
		t.Fatal(err)
	}
	return fed, m
}

// The pre-account takeover through an upstream (issue 59): an attacker
// registers the victim's address at an identity provider that does not
// verify addresses and signs in, which makes an account with that
// address. When the victim proves the address by mail — activation, or a
// password reset where the account was activated at once — the
// attacker's upstream identity no longer leads to the account; an
// identity whose upstream vouched for the address stays linked.
func TestUnprovenUpstreamLinkEndsWhenTheAddressIsProven(t *testing.T) {
	for _, backend := range servertest.Backends {
		t.Run(backend, func(t *testing.T) {
			ctx := context.Background()
			for _, tc := range []struct {
				name           string
				autoActivation bool // the account is ACTIVATED at once: a reset proves the address
			}{{"activation", false}, {"reset", true}} {
				t.Run(tc.name, func(t *testing.T) {
					s, sink := journeysOn(t, backend)
					j := s.App.Journeys()
					fed, m := upstream(t, s, tc.autoActivation)
					prove := func(email string) {
						t.Helper()
						if tc.autoActivation {
							if err := j.RequestPasswordReset(ctx, from(), email, "", ""); err != nil {
								t.Fatal(err)
							}
							link := linkOf(t, s, mailed(t, sink, 1, email, resetSubj), journey.PathReset)
							if _, err := j.ResetPassword(ctx, from(), link, victimPass, ""); err != nil {
								t.Fatal(err)
							}
							return
						}
						if err := j.ResendActivation(ctx, from(), email, "", ""); err != nil {
							t.Fatal(err)
						}
						link := linkOf(t, s, mailed(t, sink, 1, email, activateSubj), journey.PathActivate)
						if _, err := j.Activate(ctx, from(), link, journey.SignUpForm{Password: victimPass, FirstName: "Vera"}, ""); err != nil {
							t.Fatal(err)
						}
					}

					eve := federation.Upstream{Subject: "eve", Attributes: map[string]any{"email": victim}}
					squat, err := fed.SignIn(ctx, from(), m, eve)
					if err != nil || !squat.Created || squat.Person.Profile.Emails[0].Verified {
						t.Fatalf("the attacker's first sign-in: %+v, %v; want a new account, address unproven", squat, err)
					}
					prove(victim)
					p, err := s.Store.GetPerson(ctx, squat.Person.ID)
					if err != nil || p.Status != identity.StatusActivated || !p.Profile.Emails[0].Verified {
						t.Fatalf("after the proof: %+v, %v", p, err)
					}
					if got, err := j.Identity.CheckPassword(ctx, from(), victim, victimPass); err != nil || got.ID != p.ID {
						t.Errorf("the victim's password: %v", err)
					}
					if again, err := fed.SignIn(ctx, from(), m, eve); err == nil || again.Person.ID == p.ID {
						t.Errorf("the attacker's upstream identity after the proof: %+v, %v; want refused", again, err)
					}
					if ids, _ := s.Store.ListIdentities(ctx, p.ID); len(ids) != 0 {
						t.Errorf("identities left on the victim's account: %+v", ids)
					}

					// An upstream that vouched for the address made a proven
					// link: the proof by mail keeps it.
					const owner = "owner@example.com"
					vouched := federation.Upstream{Subject: "owner", EmailVerified: true, Attributes: map[string]any{"email": owner}}
					first, err := fed.SignIn(ctx, from(), m, vouched)
					if err != nil || !first.Created {
						t.Fatalf("the vouched sign-in: %+v, %v", first, err)
					}
					prove(owner)
					if again, err := fed.SignIn(ctx, from(), m, vouched); err != nil || again.Person.ID != first.Person.ID {
						t.Errorf("the vouched identity after the proof: %+v, %v; want the same account", again, err)
					}
				})
			}
		})
	}
}
