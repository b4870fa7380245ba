package admin_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/latchkey/latchkey/internal/admin"
	"github.com/latchkey/latchkey/internal/config"
	"github.com/latchkey/latchkey/internal/server/servertest"
)

// jwks_uri values latchkey must never fetch for a registrant or an API
// caller: not https, or a literal internal address in any spelling.
var refusedJWKSURIs = []string{
	"http://keys.example.com/jwks",
	"http://127.0.0.1:8080/jwks",
	"https://127.0.0.1:8443/jwks",
	"https://169.254.169.254/latest/meta-data/",
	"https://[::ffff:10.0.0.1]/jwks",
	"https://localhost/jwks",
	"https://2130706433/jwks",
	"https://192.168.1.1/jwks",
	"https://[fd00::1]/jwks",
}

func keyMetadata(uri string) string {
	return `{"token_endpoint_auth_method":"private_key_jwt","grant_types":["client_credentials"],"jwks_uri":"` + uri + `"}`
}

// Registration (RFC 7591) and its update (RFC 7592) refuse such a
// jwks_uri with one description, whatever was wrong with it.
func TestRegistrationRefusesInternalJWKSURI(t *testing.T) {
	s := servertest.Start(t, registrationConfig(""), servertest.Options{})
	var first string
	for _, uri := range refusedJWKSURIs {
		r := call(t, s, "POST", "/oauth/register", keyMetadata(uri), nil)
		desc, _ := r.json["error_description"].(string)
		if r.status != 400 || r.json["error"] != "invalid_client_metadata" {
			t.Errorf("register jwks_uri %s: %d %s, want 400 invalid_client_metadata", uri, r.status, r.body)
		}
		if first == "" {
			first = desc
		}
		if desc != first {
			t.Errorf("register jwks_uri %s: description %q, want the same as the others' %q", uri, desc, first)
		}
	}
	r := call(t, s, "POST", "/oauth/register", keyMetadata("https://keys.example.com/jwks"), nil)
	if r.status != 201 {
		t.Fatalf("register a public https jwks_uri: %d %s", r.status, r.body)
	}
	id, _ := r.json["client_id"].(string)
	rat, _ := r.json["registration_access_token"].(string)
	up := call(t, s, "PUT", "/oauth/register/"+id, `{"client_id":"`+id+`","token_endpoint_auth_method":"private_key_jwt",`+
		`"grant_types":["client_credentials"],"jwks_uri":"http://169.254.169.254/latest/meta-data/"}`, bearer(rat))
	if up.status != 400 || up.json["error_description"] != first {
		t.Errorf("re-aim jwks_uri at the metadata service: %d %s", up.status, up.body)
	}
}

// The admin API refuses them too, naming jwks_uri, with one text.
func TestAdminAPIRefusesInternalJWKSURI(t *testing.T) {
	s := servertest.Start(t, testConfig(), servertest.Options{})
	var first string
	for _, uri := range refusedJWKSURIs {
		r := call(t, s, "POST", "/api/v1/clients", keyMetadata(uri), ops)
		details, _ := r.json["details"].([]any)
		msg := fmt.Sprint(r.json["error_description"], r.json["message"])
		if r.status != 400 || len(details) != 1 || details[0] != "jwks_uri" {
			t.Errorf("create with jwks_uri %s: %d %s, want 400 naming jwks_uri", uri, r.status, r.body)
		}
		if first == "" {
			first = msg
		}
		if msg != first {
			t.Errorf("create with jwks_uri %s: %q, want the same text as the others' %q", uri, msg, first)
		}
	}
	if r := call(t, s, "POST", "/api/v1/clients", keyMetadata("https://keys.example.com/jwks"), ops); r.status != 201 {
		t.Fatalf("create with a public https jwks_uri: %d %s", r.status, r.body)
	}
}

// outbound.allow lets an operator's internal server through: the API
// accepts it, over http too.
func TestAllowedJWKSURIIsAccepted(t *testing.T) {
	cfg := testConfig()
	cfg.Outbound = config.Outbound{Allow: []string{"127.0.0.1", "keys.internal"}}
	s := servertest.Start(t, cfg, servertest.Options{})
	for _, uri := range []string{"http://127.0.0.1:8080/jwks", "http://keys.internal/jwks"} {
		if r := call(t, s, "POST", "/api/v1/clients", keyMetadata(uri), ops); r.status != 201 {
			t.Errorf("create with allowed jwks_uri %s: %d %s", uri, r.status, r.body)
		}
	}
	if r := call(t, s, "POST", "/api/v1/clients", keyMetadata("http://10.0.0.1/jwks"), ops); r.status != 400 {
		t.Errorf("create with jwks_uri outside the allow list: %d %s", r.status, r.body)
	}
}

// RFC 7592 updates are throttled per client (its token holder cannot
// re-aim it in a loop) and per address (across clients); the window's end
// lets them through again.
func TestRegistrationUpdateIsThrottled(t *testing.T) {
	clock := servertest.NewClock()
	s := servertest.Start(t, registrationConfig(""), servertest.Options{Clock: clock})
	type reg struct{ id, rat string }
	register := func() reg {
		r := call(t, s, "POST", "/oauth/register", keyMetadata("https://keys.example.com/jwks"), nil)
		if r.status != 201 {
			t.Fatalf("register: %d %s", r.status, r.body)
		}
		id, _ := r.json["client_id"].(string)
		rat, _ := r.json["registration_access_token"].(string)
		return reg{id, rat}
	}
	update := func(c reg, n int) result {
		return call(t, s, "PUT", "/oauth/register/"+c.id, `{"client_id":"`+c.id+`","token_endpoint_auth_method":"private_key_jwt",`+
			`"grant_types":["client_credentials"],"jwks_uri":"https://keys`+fmt.Sprint(n)+`.example.com/jwks"}`, bearer(c.rat))
	}
	a := register()
	for i := range admin.MaxUpdatesPerClient {
		if r := update(a, i); r.status != 200 {
			t.Fatalf("update %d: %d %s", i+1, r.status, r.body)
		}
	}
	r := update(a, 99)
	if r.status != 429 || r.header.Get("Retry-After") == "" {
		t.Fatalf("update %d of one client: %d %s, want 429 with Retry-After", admin.MaxUpdatesPerClient+1, r.status, r.body)
	}
	// A caller without the client's token does not use up its updates:
	// another client from the same address still may (per-address count).
	b := register()
	if r := update(b, 1); r.status != 200 {
		t.Fatalf("another client's update: %d %s", r.status, r.body)
	}

	clock.Advance(admin.UpdateWindow + time.Second)
	if r := update(a, 100); r.status != 200 {
		t.Fatalf("update after the window: %d %s", r.status, r.body)
	}

	// Per address: every attempt counts, across clients, wrong tokens too.
	clock.Advance(admin.UpdateWindow + time.Second)
	wrong := reg{a.id, "lk_rat_wrong"}
	for i := range admin.MaxUpdatesPerIP {
		if r := update(wrong, i); r.status != 401 {
			t.Fatalf("update %d with a wrong token: %d %s, want 401", i+1, r.status, r.body)
		}
	}
	if r := update(b, 2); r.status != 429 {
		t.Fatalf("update past the address's limit: %d %s, want 429", r.status, r.body)
	}
}
