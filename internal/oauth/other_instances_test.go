package oauth_test

import (
	"net/url"
	"testing"

	"github.com/latchkey/latchkey/internal/events"
	"github.com/latchkey/latchkey/internal/server/servertest"
	"github.com/latchkey/latchkey/internal/store"
	"github.com/latchkey/latchkey/internal/store/postgres/pgtest"
)

// Introspection, revocation and token requests decide on the generations
// last read and confirm them in their first write (client.Optimistically):
// an event's insert, a transaction's first statement, or a read before any
// other write. Two instances share one PostgreSQL database, and b answers
// only token requests, introspections and revocations, none of which reads
// the generations first: every change a makes must hold on b's very next
// request, and each request records exactly one event and issues at most
// one token, however many times it ran.
func TestEveryChangeHoldsOnAnotherInstancesNextRequest(t *testing.T) {
	dsn := pgtest.NewDatabase(t)
	a := servertest.Start(t, introspectConfig(), servertest.Options{Backend: "postgres", PostgresURL: dsn})
	b := servertest.Start(t, introspectConfig(), servertest.Options{Backend: "postgres", PostgresURL: dsn})
	issued := 0
	issueOn := func(s *servertest.Server) string {
		t.Helper()
		issued++
		r := post(t, s, "/oauth/token", url.Values{"grant_type": {"client_credentials"}}, "other", "other-secret-other-secret")
		tok, _ := r.json["access_token"].(string)
		if tok == "" {
			t.Fatalf("token: %d %s", r.status, r.body)
		}
		return tok
	}
	issue := func() string { return issueOn(a) }
	revoke := func(s *servertest.Server, tok string) {
		t.Helper()
		if r := post(t, s, "/oauth/revoke", url.Values{"token": {tok}}, "other", "other-secret-other-secret"); r.status != 200 {
			t.Fatalf("revoke: %d %s", r.status, r.body)
		}
	}
	active := func(s *servertest.Server, tok string) bool {
		t.Helper()
		r := introspect(t, s, tok, nil)
		if r.status != 200 {
			t.Fatalf("introspect: %d %s", r.status, r.body)
		}
		return r.json["active"] == true
	}
	introspections, revocations := 0, 0
	t1, t2, t3, t4 := issue(), issue(), issue(), issue()
	for range 2 {
		if !active(b, t1) {
			t.Fatal("a new token is inactive on b")
		}
		introspections++
	}

	revoke(a, t1)
	revocations++
	if active(b, t1) {
		t.Error("b answers active for a token a has revoked")
	}
	introspections++

	// b's first revocation of t2 writes; a has moved the generations.
	revoke(a, t3)
	revoke(b, t2)
	revocations += 2
	if active(a, t2) || active(b, t2) {
		t.Error("a token b revoked is active")
	}
	introspections += 2

	// b's repeated revocation of t2 writes its event alone; a has moved the
	// generations again.
	revoke(a, t4)
	revoke(b, t2)
	revocations += 2
	for _, tok := range []string{t1, t2, t3, t4} {
		if active(b, tok) {
			t.Error("b answers active for a revoked token")
		}
		introspections++
	}

	// b's issuances: each transaction's statement checks the generations,
	// which a has just moved.
	for range 3 {
		revoke(a, issue())
		revocations++
		tok := issueOn(b)
		if !active(a, tok) {
			t.Error("a token b issued is inactive")
		}
		introspections++
	}

	count := func(types ...string) int {
		t.Helper()
		n, err := a.Store.CountEvents(t.Context(), store.EventFilter{Kind: store.EventOAuth, Types: types}, 1000)
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	if n := count(events.IntrospectionSuccess, events.IntrospectionFailed); n != introspections {
		t.Errorf("%d introspection events for %d introspections", n, introspections)
	}
	if n := count(events.TokenRequestAccessTokenCreated); n != issued {
		t.Errorf("%d issuance events for %d issuances", n, issued)
	}
	if n := count(events.TokenRevokeAccessTokenSuccess); n != revocations {
		t.Errorf("%d revocation events for %d revocations", n, revocations)
	}
}
