package admin_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/latchkey/latchkey/internal/admin"
	"github.com/latchkey/latchkey/internal/client"
	"github.com/latchkey/latchkey/internal/request"
	"github.com/latchkey/latchkey/internal/server/servertest"
)

// Redirect URIs the rule refuses (client.ValidateRedirectURI), in the
// spellings of the review's probes.
var refusedRedirects = []string{
	`javascript://app.example/%0aalert(document.domain)`, `JAVASCRIPT://app.example/cb`, `javascript:alert(1)`,
	`data://text/html;base64,PHNjcmlwdD4=`, `data:text/html,x`, `vbscript://msgbox(1)`, `file:///etc/passwd`,
	` https://app.example/cb`, `https://app.example/cb\t`, `https://app.example@evil.example/cb`,
	`http://app.example/cb`, `http://localhost:3000/cb`, `myapp:/cb`, `/cb`, `https:///cb`,
}

// Redirect URIs it accepts: https, http on loopback literals, private-use
// reverse-domain schemes.
var acceptedRedirects = []string{`https://app.example/cb`, `http://127.0.0.1:3000/cb`, `http://[::1]:3000/cb`,
	`com.example.app:/oauth2redirect`}

// TestAdminAPIAppliesTheRedirectRule: the admin API refuses every spelling
// of a script, local or cleartext redirect URI, in redirect_uris and
// post_logout_redirect_uris, on create and replace, and has no way to ask
// for the config file's development switch.
func TestAdminAPIAppliesTheRedirectRule(t *testing.T) {
	s := servertest.Start(t, testConfig(), servertest.Options{})
	const base = `"token_endpoint_auth_method":"none","grant_types":["authorization_code"]`
	for i, u := range acceptedRedirects {
		body := fmt.Sprintf(`{"client_id":"ok-%d",%s,"redirect_uris":[%q],"post_logout_redirect_uris":[%q]}`, i, base, u, u)
		if r := call(t, s, "POST", "/api/v1/clients", body, ops); r.status != 201 {
			t.Errorf("create with %q: %d %s", u, r.status, r.body)
		}
	}
	for _, u := range refusedRedirects {
		for _, tc := range []struct{ method, path, body, field string }{
			{"POST", "/api/v1/clients", fmt.Sprintf(`{%s,"redirect_uris":[%q]}`, base, u), "redirect_uris"},
			{"POST", "/api/v1/clients", fmt.Sprintf(`{%s,"redirect_uris":["https://app.example/cb"],"post_logout_redirect_uris":[%q]}`, base, u),
				"post_logout_redirect_uris"},
			{"PUT", "/api/v1/clients/ok-0", fmt.Sprintf(`{%s,"redirect_uris":["https://app.example/cb",%q]}`, base, u), "redirect_uris"},
		} {
			r := call(t, s, tc.method, tc.path, tc.body, ops)
			details, _ := r.json["details"].([]any)
			if r.status != 400 || len(details) != 1 || details[0] != tc.field {
				t.Errorf("%s %s with %q: %d %s, want 400 naming %s", tc.method, tc.path, u, r.status, r.body, tc.field)
			}
		}
	}
	body := fmt.Sprintf(`{%s,"redirect_uris":["http://dev.example/cb"],"allow_insecure_http_redirect_uris":true}`, base)
	if r := call(t, s, "POST", "/api/v1/clients", body, ops); r.status != 400 {
		t.Errorf("create asking for the dev switch: %d %s, want 400", r.status, r.body)
	}
}

// TestRegistrationAppliesTheRedirectRule: dynamic registration (RFC 7591)
// answers invalid_redirect_uri for a refused redirect_uris member and
// invalid_client_metadata for a refused post_logout_redirect_uris, on
// register and update (each register from its own address: the throttle
// counts every attempt).
func TestRegistrationAppliesTheRedirectRule(t *testing.T) {
	ctx := context.Background()
	svc := newService(t)
	svc.Registration = admin.Registration{Enabled: true}
	n := 0
	from := func() request.Facts { n++; return request.Facts{Addr: fmt.Sprintf("10.%d.%d.1", n/200, n%200)} }
	for _, u := range acceptedRedirects {
		m := admin.Metadata{TokenEndpointAuthMethod: client.AuthNone, RedirectURIs: []string{u}, PostLogoutRedirectURIs: []string{u}}
		if _, err := svc.Register(ctx, from(), "", m); err != nil {
			t.Errorf("register with %q: %v", u, err)
		}
	}
	for _, u := range refusedRedirects {
		for _, tc := range []struct {
			name, code string
			do         func() error
		}{
			{"register redirect_uris", "invalid_redirect_uri", func() error {
				_, err := svc.Register(ctx, from(), "", admin.Metadata{RedirectURIs: []string{u}})
				return err
			}},
			{"register post_logout_redirect_uris", "invalid_client_metadata", func() error {
				_, err := svc.Register(ctx, from(), "", admin.Metadata{RedirectURIs: []string{"https://app.example/cb"},
					PostLogoutRedirectURIs: []string{u}})
				return err
			}},
			{"update redirect_uris", "invalid_redirect_uri", func() error {
				// A client of its own each time: updates are throttled per client.
				reg, err := svc.Register(ctx, from(), "", admin.Metadata{TokenEndpointAuthMethod: client.AuthNone,
					RedirectURIs: []string{"https://app.example/cb"}})
				if err != nil {
					return err
				}
				_, err = svc.UpdateRegistration(ctx, from(), reg.Client.ID, reg.Token, func() (admin.Metadata, error) {
					return admin.Metadata{ClientID: reg.Client.ID, TokenEndpointAuthMethod: client.AuthNone,
						RedirectURIs: []string{"https://app.example/cb", u}}, nil
				})
				return err
			}},
		} {
			var me *admin.MetadataError
			if err := tc.do(); !errors.As(err, &me) || me.Code != tc.code || me.Msg == "" || strings.ContainsAny(me.Msg, "\n\t") {
				t.Errorf("%s %q: %v, want %s", tc.name, u, err, tc.code)
			}
		}
	}
}

// TestRegistrationEndpointRefusesScriptsAndCleartext: the same over HTTP,
// as a registrant sees it; unknown members are ignored (RFC 7591 section
// 2), so asking for the config file's dev switch changes nothing.
func TestRegistrationEndpointRefusesScriptsAndCleartext(t *testing.T) {
	s := servertest.Start(t, registrationConfig(initialToken), servertest.Options{})
	for _, tc := range []struct{ body, code string }{
		{`{"token_endpoint_auth_method":"none","redirect_uris":["http://127.0.0.1:3000/cb"],"post_logout_redirect_uris":["com.example.app:/bye"]}`, ""},
		{`{"redirect_uris":["javascript://app.example/%0aalert(document.domain)"]}`, "invalid_redirect_uri"},
		{`{"redirect_uris":["JAVASCRIPT://app.example/cb"]}`, "invalid_redirect_uri"},
		{`{"redirect_uris":["http://app.example/cb"]}`, "invalid_redirect_uri"},
		{`{"redirect_uris":["https://app.example/cb"],"post_logout_redirect_uris":["data:text/html,x"]}`, "invalid_client_metadata"},
		{`{"token_endpoint_auth_method":"none","redirect_uris":["http://dev.example/cb"],"allow_insecure_http_redirect_uris":true}`, "invalid_redirect_uri"},
	} {
		r := call(t, s, "POST", "/oauth/register", tc.body, bearer(initialToken))
		switch {
		case tc.code == "" && r.status != 201:
			t.Errorf("%s: %d %s, want 201", tc.body, r.status, r.body)
		case tc.code != "" && (r.status != 400 || r.json["error"] != tc.code || r.json["error_description"] == nil):
			t.Errorf("%s: %d %s, want 400 %s", tc.body, r.status, r.body, tc.code)
		}
	}
}
