package admin_test

import (
	"testing"

	"github.com/latchkey/latchkey/internal/server/servertest"
	"github.com/latchkey/latchkey/internal/store/postgres/pgtest"
)

// TestChangesTakeEffectAtOnceOnEveryInstance: two instances on one
// PostgreSQL. Instance b has the client cached (it has just answered
// for it); every change made through instance a holds on b in the very
// next request, with no wait: the client cache checks the client
// generation instead of waiting out its TTL.
func TestChangesTakeEffectAtOnceOnEveryInstance(t *testing.T) {
	dsn := pgtest.NewDatabase(t)
	a := servertest.Start(t, testConfig(), servertest.Options{Backend: "postgres", PostgresURL: dsn})
	b := servertest.Start(t, testConfig(), servertest.Options{Backend: "postgres", PostgresURL: dsn})

	r := call(t, a, "POST", "/api/v1/clients", `{"client_id":"svc","token_endpoint_auth_method":"client_secret_basic",
		"grant_types":["client_credentials"],"scopes":["read","write"]}`, ops)
	secret, _ := r.json["client_secret"].(string)
	if r.status != 201 {
		t.Fatalf("create on a: %d %s", r.status, r.body)
	}
	for range 2 { // the second answer comes from b's cache
		if _, err := clientToken(b, "svc", secret, "write"); err != nil {
			t.Fatalf("token on b: %v", err)
		}
	}

	// An update: b refuses the scope it took away.
	r = call(t, a, "PUT", "/api/v1/clients/svc", `{"token_endpoint_auth_method":"client_secret_basic",
		"grant_types":["client_credentials"],"scopes":["read"]}`, ops)
	if r.status != 200 {
		t.Fatalf("update on a: %d %s", r.status, r.body)
	}
	if _, err := clientToken(b, "svc", secret, "write"); oauthStatus(err) != 400 {
		t.Errorf("b after the update took write away: %v, want 400 invalid_scope", err)
	}
	tok, err := clientToken(b, "svc", secret, "read")
	if err != nil {
		t.Fatalf("token on b: %v", err)
	}

	// A rotation: the old secret fails on b, the new one works.
	r = call(t, a, "POST", "/api/v1/clients/svc/secret", "", ops)
	fresh, _ := r.json["client_secret"].(string)
	if r.status != 200 {
		t.Fatalf("rotate on a: %d %s", r.status, r.body)
	}
	if _, err := clientToken(b, "svc", secret, "read"); oauthStatus(err) != 401 {
		t.Errorf("the old secret on b after the rotation: %v, want 401", err)
	}
	if _, err := clientToken(b, "svc", fresh, "read"); err != nil {
		t.Errorf("the new secret on b: %v", err)
	}

	// A delete: b refuses the client and answers its tokens inactive.
	if !active(t, b, tok) {
		t.Fatal("the token is not active on b before the delete")
	}
	if r := call(t, a, "DELETE", "/api/v1/clients/svc", "", ops); r.status != 200 {
		t.Fatalf("delete on a: %d %s", r.status, r.body)
	}
	if _, err := clientToken(b, "svc", fresh, "read"); oauthStatus(err) != 401 {
		t.Errorf("the deleted client on b: %v, want 401", err)
	}
	if active(t, b, tok) {
		t.Error("a token of the deleted client is active on b")
	}
	if r := call(t, b, "GET", "/api/v1/clients/svc", "", ops); r.status != 404 {
		t.Errorf("the deleted client read on b: %d", r.status)
	}
}
