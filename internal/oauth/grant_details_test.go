package oauth_test

import (
	"testing"

	"golang.org/x/oauth2"

	"github.com/latchkey/latchkey/internal/config"
	"github.com/latchkey/latchkey/internal/server/servertest"
	"github.com/latchkey/latchkey/internal/store"
)

// A new OpenID grant is written with its user details, taken from the
// person its code exchange read: a change to the person between the
// authorization and the exchange shows in the ID token, and the ID token,
// UserInfo and introspection answer the same details from one hook call.
func TestNewOpenIDGrantIsWrittenWithItsUserDetails(t *testing.T) {
	for _, backend := range servertest.Backends {
		t.Run(backend, func(t *testing.T) {
			hook := newHook(t, hookSecret, `{"claims":{"loyalty":"gold"}}`)
			cfg := introspectConfig()
			cfg.Webhooks.UserDetails = config.Webhook{URL: hook.URL, Secret: hookSecret}
			s := servertest.Start(t, cfg, servertest.Options{Backend: backend})
			oc := oauthConfig(s, "web", webSecret, oauth2.AuthStyleInHeader)
			oc.Scopes = []string{"openid", "read"}
			code, verifier := codeFor(t, s, browser(t, s), oc)
			person := rename(t, s, "Janet")
			tok, err := oc.Exchange(clientCtx(s), code, oauth2.VerifierOption(verifier))
			if err != nil {
				t.Fatal(err)
			}
			idt := jwtClaims(t, tok.Extra("id_token").(string))
			if idt["first_name"] != "Janet" || idt["loyalty"] != "gold" || idt["sub"] != person.ID {
				t.Errorf("ID token claims %v, want the person as the exchange read it", idt)
			}
			if info := bearerGet(t, s, "/oauth/userinfo", tok.AccessToken); info.status != 200 || info.json["first_name"] != "Janet" || info.json["loyalty"] != "gold" {
				t.Errorf("userinfo %d %s", info.status, info.body)
			}
			r := introspect(t, s, tok.AccessToken, nil)
			if d, _ := r.json["user_details"].(map[string]any); d["first_name"] != "Janet" || d["loyalty"] != "gold" {
				t.Errorf("introspection: %s", r.body)
			}
			if len(hook.requests) != 1 {
				t.Errorf("the user details hook was called %d times for one grant, want once", len(hook.requests))
			}
		})
	}
}

// rename gives the test person a new first name and returns the person.
func rename(t *testing.T, s *servertest.Server, first string) store.Person {
	t.Helper()
	person, err := s.Store.GetPersonByEmail(t.Context(), "", personEmail)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Store.UpdatePerson(t.Context(), person.ID, func(p store.Person) (store.Person, error) {
		p.FirstName = first
		return p, nil
	}); err != nil {
		t.Fatal(err)
	}
	return person
}
