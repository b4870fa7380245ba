package cimconfig_test

import (
	"context"
	"strings"
	"testing"

	"github.com/latchkey/latchkey/internal/server/servertest"
)

// The login methods' secrets are write-only: sealed at rest, never
// answered, kept by an update that leaves them out, removed by "".
func TestLoginMethodSecretsAreWriteOnly(t *testing.T) {
	forEachBackend(t, nil, func(t *testing.T, s *servertest.Server) {
		const secret, bindPass = "oidc-client-secret-4242", "ldap-bind-pass-4242"
		unit := func(oidcSecret, ldapPass string) string {
			return `{"login_methods":{"login_methods":[
			  {"id":"Partner","name":"Partner","type":"OPEN_ID_CONNECT","open_id_connect_attributes":{
			   "client_authentication_method":"CLIENT_SECRET_BASIC","client_id":"latchkey","discovery_url":"https://partner.example/.well-known/openid-configuration"` +
				oidcSecret + `}},
			  {"id":"dir","name":"Directory","type":"LDAP","ladp_attributes":{"server_urls":"ldap://127.0.0.1:1","base_suffix":"dc=example,dc=com",
			   "user_distinguished_name":"cn=admin,dc=example,dc=com"` + ldapPass + `}}]}}`
		}
		if a := admin(t, s, "POST", "/api/v2/config", unit(`,"client_secret":"`+secret+`"`, `,"password":"`+bindPass+`"`)); a.status != 204 {
			t.Fatalf("POST: %d %s", a.status, a.body)
		}
		cim := s.App.Journeys().Config
		opened := func() (string, string) {
			t.Helper()
			cim.Forget()
			snap, err := cim.Snapshot(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			m, ok := snap.LoginMethod("partner")
			d, ok2 := snap.LoginMethod("DIR")
			if !ok || !ok2 {
				t.Fatal("login methods not found by id (case-insensitive)")
			}
			cs, err := cim.ClientSecret(m)
			if err != nil {
				t.Fatal(err)
			}
			bp, err := cim.BindPassword(d)
			if err != nil {
				t.Fatal(err)
			}
			return cs, bp
		}
		if cs, bp := opened(); cs != secret || bp != bindPass {
			t.Errorf("opened %q and %q, want the secrets sent", cs, bp)
		}
		for _, path := range []string{"/api/v2/config/login-methods", "/api/v2/config"} {
			a := admin(t, s, "GET", path, "")
			if a.status != 200 || strings.Contains(string(a.body), secret) || strings.Contains(string(a.body), bindPass) ||
				strings.Contains(string(a.body), "sealed") || strings.Contains(string(a.body), "client_secret") {
				t.Errorf("GET %s answers a secret or its sealed form: %s", path, a.body)
			}
		}
		units, err := s.Store.GetConfigUnits(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if stored := units["login_methods"]; strings.Contains(stored, secret) || strings.Contains(stored, bindPass) {
			t.Errorf("a secret is stored in the clear: %s", stored)
		}

		// A GET-modify-POST (no secrets in it) keeps them.
		if a := admin(t, s, "POST", "/api/v2/config", unit("", "")); a.status != 204 {
			t.Fatalf("POST without secrets: %d %s", a.status, a.body)
		}
		if cs, bp := opened(); cs != secret || bp != bindPass {
			t.Errorf("after an update without secrets: %q and %q, want them kept", cs, bp)
		}
		// "" removes one.
		if a := admin(t, s, "POST", "/api/v2/config", unit(`,"client_secret":""`, "")); a.status != 204 {
			t.Fatalf("POST removing the secret: %d %s", a.status, a.body)
		}
		if cs, bp := opened(); cs != "" || bp != bindPass {
			t.Errorf("after client_secret \"\": %q and %q, want the client secret gone and the password kept", cs, bp)
		}
		// The sealed form is never accepted from a client.
		if a := admin(t, s, "POST", "/api/v2/config", unit(`,"sealed_client_secret":"AQID"`, "")); a.status != 400 ||
			!strings.Contains(string(a.body), "sealed_client_secret: is kept by the server") {
			t.Errorf("POST with sealed_client_secret: %d %s, want 400", a.status, a.body)
		}
		// PRIVATE_KEY_JWT names its key pair.
		noKey := strings.Replace(unit("", ""), "CLIENT_SECRET_BASIC", "PRIVATE_KEY_JWT", 1)
		if a := admin(t, s, "POST", "/api/v2/config", noKey); a.status != 400 || !strings.Contains(string(a.body), "signing_key_id: is required") {
			t.Errorf("PRIVATE_KEY_JWT without signing_key_id: %d %s, want 400", a.status, a.body)
		}
	})
}
