package storetest

import (
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/latchkey/latchkey/internal/store"
)

// personGrant is a grant of subject with an access and a refresh token
// (hashes id+"-a", id+"-r").
func personGrant(t *testing.T, s store.Store, id, subject string) {
	t.Helper()
	g := grant(id)
	g.Subject = subject
	if err := s.CreateGrant(ctx(), g); err != nil {
		t.Fatal(err)
	}
	for _, kind := range []string{store.KindAccess, store.KindRefresh} {
		tk := tok(id+"-"+kind[:1], kind, id)
		tk.Subject = subject
		if err := s.CreateToken(ctx(), tk); err != nil {
			t.Fatal(err)
		}
	}
}

func personSession(t *testing.T, s store.Store, hash, personID string) {
	t.Helper()
	if err := s.CreateSession(ctx(), store.Session{Hash: []byte(hash), PersonID: personID, AuthLevel: 1,
		AMR: []string{"DEFAULT"}, AuthTime: t0.UTC(), ExpiresAt: t0.Add(time.Hour).UTC()}); err != nil {
		t.Fatal(err)
	}
}

// testRevokePerson: revoking a person ends their grants, tokens and
// sessions — as the token reads see them, also reads answered from memory
// — and nobody else's.
func testRevokePerson(t *testing.T, s store.Store) {
	personGrant(t, s, "g1", "p1")
	personGrant(t, s, "g2", "p1")
	personGrant(t, s, "g3", "p2")
	personGrant(t, s, "g4", "") // client credentials
	personSession(t, s, "s1", "p1")
	personSession(t, s, "s2", "p1")
	personSession(t, s, "s3", "p2")
	now := t0.Add(time.Minute)
	active := func(hash string) bool {
		t.Helper()
		tk, g, err := s.GetTokenGrant(ctx(), []byte(hash))
		if err != nil {
			t.Fatalf("GetTokenGrant %s: %v", hash, err)
		}
		return tk.Active(g, now)
	}
	all := []string{"g1-a", "g1-r", "g2-a", "g2-r", "g3-a", "g3-r", "g4-a", "g4-r"}
	for range 2 { // the second read may come from memory
		for _, h := range all {
			if !active(h) {
				t.Fatalf("%s is not active before the revocation", h)
			}
		}
	}

	got, err := s.RevokePerson(ctx(), "p1", now)
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(store.PersonRevocation{Grants: 2, Tokens: 4, Sessions: 2}, got); d != "" {
		t.Errorf("RevokePerson counts (-want +got):\n%s", d)
	}
	for _, h := range all {
		mine := h[:2] == "g1" || h[:2] == "g2"
		if a := active(h); a == mine {
			t.Errorf("%s active = %v after revoking p1", h, a)
		}
		tk, err := s.GetToken(ctx(), []byte(h))
		if err != nil {
			t.Fatal(err)
		}
		if revoked := !tk.RevokedAt.IsZero(); revoked != mine {
			t.Errorf("%s token row revoked = %v after revoking p1", h, revoked)
		}
	}
	for _, id := range []string{"g1", "g2"} {
		if g, _ := s.GetGrant(ctx(), id); !g.RevokedAt.Equal(now.UTC()) {
			t.Errorf("grant %s revoked at %v, want %v", id, g.RevokedAt, now.UTC())
		}
	}
	for _, h := range []string{"s1", "s2"} {
		if _, err := s.GetSession(ctx(), []byte(h)); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("session %s of the revoked person: %v, want ErrNotFound", h, err)
		}
	}
	if _, err := s.GetSession(ctx(), []byte("s3")); err != nil {
		t.Errorf("another person's session: %v", err)
	}

	// Again: nothing left to revoke, and the first revocation time stays.
	got, err = s.RevokePerson(ctx(), "p1", now.Add(time.Minute))
	if err != nil || got != (store.PersonRevocation{}) {
		t.Errorf("second RevokePerson = %+v, %v; want nothing, nil", got, err)
	}
	if g, _ := s.GetGrant(ctx(), "g1"); !g.RevokedAt.Equal(now.UTC()) {
		t.Errorf("a second revocation moved revoked_at to %v", g.RevokedAt)
	}
	// The empty subject is that of client credentials, never a person.
	if got, err := s.RevokePerson(ctx(), "", now); err != nil || got != (store.PersonRevocation{}) {
		t.Errorf(`RevokePerson("") = %+v, %v; want nothing, nil`, got, err)
	}
	if !active("g4-a") {
		t.Error(`RevokePerson("") revoked a client-credentials token`)
	}

	// Inside a transaction: rolled back, nothing happened; committed, it shows.
	errRollback := fmt.Errorf("roll back")
	if err := s.Tx(ctx(), func(tx store.Store) error {
		if _, err := tx.RevokePerson(ctx(), "p2", now); err != nil {
			return err
		}
		return errRollback
	}); err != errRollback {
		t.Fatalf("rolled back Tx: %v", err)
	}
	if !active("g3-a") {
		t.Error("a rolled-back revocation shows")
	}
	if _, err := s.GetSession(ctx(), []byte("s3")); err != nil {
		t.Errorf("a rolled-back revocation deleted a session: %v", err)
	}
	if err := s.Tx(ctx(), func(tx store.Store) error { _, err := tx.RevokePerson(ctx(), "p2", now); return err }); err != nil {
		t.Fatal(err)
	}
	if active("g3-a") || active("g3-r") {
		t.Error("a committed revocation does not show")
	}
}

// testDeletePerson: a deleted person takes their identities and remembered
// consents along; LockPerson reads like GetPerson.
func testDeletePerson(t *testing.T, s store.Store) {
	for _, p := range []store.Person{person("p1", "a@example.com"), person("p2", "b@example.com")} {
		if err := s.CreatePerson(ctx(), p); err != nil {
			t.Fatal(err)
		}
		if err := s.LinkIdentity(ctx(), store.ExternalIdentity{IdPID: "idp", ExternalID: "x-" + p.ID, PersonID: p.ID}); err != nil {
			t.Fatal(err)
		}
		if err := s.SaveConsents(ctx(), []store.Consent{{PersonID: p.ID, ClientID: "c1", Scope: "read", GrantedAt: t0}}); err != nil {
			t.Fatal(err)
		}
	}
	want, _ := s.GetPerson(ctx(), "p1")
	var locked store.Person
	if err := s.Tx(ctx(), func(tx store.Store) error {
		var err error
		locked, err = tx.LockPerson(ctx(), "p1")
		return err
	}); err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(want, locked); d != "" {
		t.Errorf("LockPerson (-GetPerson +LockPerson):\n%s", d)
	}
	if err := s.DeletePerson(ctx(), "p1"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.GetPerson(ctx(), "p1"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("GetPerson after delete: %v", err)
	}
	if _, err := s.LockPerson(ctx(), "p1"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("LockPerson after delete: %v", err)
	}
	if ids, err := s.ListIdentities(ctx(), "p1"); err != nil || len(ids) != 0 {
		t.Errorf("identities after delete: %v, %v", ids, err)
	}
	if cs, err := s.ListConsents(ctx(), "p1", "c1"); err != nil || len(cs) != 0 {
		t.Errorf("consents after delete: %v, %v", cs, err)
	}
	if err := s.DeletePerson(ctx(), "p1"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("delete twice: %v, want ErrNotFound", err)
	}
	// The identity is free again, and the other person keeps theirs.
	if err := s.LinkIdentity(ctx(), store.ExternalIdentity{IdPID: "idp", ExternalID: "x-p1", PersonID: "p2"}); err != nil {
		t.Errorf("linking a deleted person's identity: %v", err)
	}
	if ids, _ := s.ListIdentities(ctx(), "p2"); len(ids) != 2 {
		t.Errorf("other person's identities: %v", ids)
	}
	if cs, _ := s.ListConsents(ctx(), "p2", "c1"); len(cs) != 1 {
		t.Errorf("other person's consents: %v", cs)
	}
}

// testRevokePersonRace issues grants for a person (reading the status under
// SharePerson, as issuance does) while the person is blocked and revoked in
// one transaction: afterwards no grant of the person may be unrevoked. An
// issuance either ran before the block (and was revoked by it) or after
// (and saw the status).
func testRevokePersonRace(t *testing.T, s store.Store) {
	if err := s.CreatePerson(ctx(), person("p1", "a@example.com")); err != nil {
		t.Fatal(err)
	}
	now := t0.Add(time.Minute)
	const issuers, each = 6, 10
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i := range issuers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			for j := range each {
				err := s.Tx(ctx(), func(tx store.Store) error {
					p, err := tx.SharePerson(ctx(), "p1")
					if err != nil || p.Status != "ACTIVATED" {
						return err
					}
					g := grant(fmt.Sprintf("g%d-%d", i, j))
					return tx.CreateGrant(ctx(), g)
				})
				if err != nil {
					t.Errorf("issue: %v", err)
					return
				}
			}
		}()
	}
	close(start)
	err := s.Tx(ctx(), func(tx store.Store) error {
		if err := tx.UpdatePerson(ctx(), "p1", func(p store.Person) (store.Person, error) {
			p.Status = "BLOCKED"
			return p, nil
		}); err != nil {
			return err
		}
		_, err := tx.RevokePerson(ctx(), "p1", now)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	for i := range issuers {
		for j := range each {
			g, err := s.GetGrant(ctx(), fmt.Sprintf("g%d-%d", i, j))
			if errors.Is(err, store.ErrNotFound) {
				continue // issued after the block: refused
			}
			if err != nil {
				t.Fatal(err)
			}
			if g.RevokedAt.IsZero() {
				t.Errorf("grant %s was issued for a person blocked concurrently and is not revoked", g.ID)
			}
		}
	}
}

// revocationEvent is the event a revocation of an access token appends,
// before the store sets its grant and subject.
func revocationEvent(id string, at time.Time) store.Event {
	return store.Event{ID: id, Kind: store.EventOAuth, Type: "TOKEN_REVOKE_ACCESS_TOKEN_SUCCESS",
		Name: "Token Revoke Access Token Success", ClientID: "c1", AppName: "App", ClientIP: "192.0.2.7",
		UserAgent: "Agent/1", Occurred: at}
}

// testRevokeAccessToken: a revocation without a read first revokes only
// the caller's live access token, and appends its event with the token's
// grant and subject (found by either case of the subject); in every other
// case it writes nothing and says so. Reads answered from memory see it.
func testRevokeAccessToken(t *testing.T, s store.Store) {
	g := grant("g1")
	g.Subject = "Person-One"
	if err := s.CreateGrant(ctx(), g); err != nil {
		t.Fatal(err)
	}
	mine := func(hash, kind, client string) {
		t.Helper()
		tk := tok(hash, kind, "g1")
		tk.Subject, tk.ClientID = "Person-One", client
		if err := s.CreateToken(ctx(), tk); err != nil {
			t.Fatal(err)
		}
	}
	mine("at1", store.KindAccess, "c1")
	mine("at2", store.KindAccess, "c2")
	mine("rt1", store.KindRefresh, "c1")
	mine("at3", store.KindAccess, "c1")
	now := t0.Add(time.Minute)
	// A cached live answer, which the revocation must drop.
	if tk, gr, err := s.GetTokenGrant(ctx(), []byte("at1")); err != nil || !tk.Active(gr, now) {
		t.Fatalf("at1 before: active %v, %v", tk.Active(gr, now), err)
	}
	for _, c := range []struct{ name, hash string }{
		{"unknown", "nope"}, {"another client's", "at2"}, {"a refresh token", "rt1"},
	} {
		ok, err := s.RevokeLiveToken(ctx(), store.KindAccess, []byte(c.hash), "c1", now, revocationEvent("e-"+c.hash, now))
		if ok || err != nil {
			t.Errorf("%s: RevokeLiveToken = %v, %v; want false, nil", c.name, ok, err)
		}
	}
	odd := revocationEvent("e-odd", now)
	odd.Kind = "odd"
	if ok, err := s.RevokeLiveToken(ctx(), store.KindAccess, []byte("at1"), "c1", now, odd); ok || err == nil {
		t.Errorf("an event of an unknown kind: %v, %v; want an error", ok, err)
	}
	ok, err := s.RevokeLiveToken(ctx(), store.KindAccess, []byte("at1"), "c1", now, revocationEvent("e1", now))
	if !ok || err != nil {
		t.Fatalf("RevokeLiveToken of a live token = %v, %v", ok, err)
	}
	if tk, gr, err := s.GetTokenGrant(ctx(), []byte("at1")); err != nil || tk.Active(gr, now) || !tk.RevokedAt.Equal(now) {
		t.Errorf("at1 after: active %v, revoked at %v, %v; want revoked at %v", tk.Active(gr, now), tk.RevokedAt, err, now)
	}
	later := now.Add(time.Minute)
	if ok, err := s.RevokeLiveToken(ctx(), store.KindAccess, []byte("at1"), "c1", later, revocationEvent("e2", later)); ok || err != nil {
		t.Errorf("a second revocation = %v, %v; want false, nil", ok, err)
	}
	if tk, err := s.GetToken(ctx(), []byte("at1")); err != nil || !tk.RevokedAt.Equal(now) {
		t.Errorf("a second revocation moved revoked_at to %v (%v), want %v", tk.RevokedAt, err, now)
	}
	// In a transaction too.
	if err := s.Tx(ctx(), func(tx store.Store) error {
		ok, err := tx.RevokeLiveToken(ctx(), store.KindAccess, []byte("at3"), "c1", now, revocationEvent("e3", now))
		if !ok && err == nil {
			t.Error("RevokeLiveToken in a transaction revoked nothing")
		}
		return err
	}); err != nil {
		t.Fatal(err)
	}
	for _, h := range []string{"at2", "rt1"} {
		if tk, err := s.GetToken(ctx(), []byte(h)); err != nil || !tk.RevokedAt.IsZero() {
			t.Errorf("%s after the others' revocations: revoked at %v, %v", h, tk.RevokedAt, err)
		}
	}
	got, err := s.SearchEvents(ctx(), store.EventFilter{Kind: store.EventOAuth}, 0, 10)
	if err != nil {
		t.Fatal(err)
	}
	want := []store.Event{revocationEvent("e3", now), revocationEvent("e1", now)}
	for i := range want {
		want[i].TransactionID, want[i].UserID, want[i].Occurred = "g1", "Person-One", now.Truncate(time.Millisecond).UTC()
	}
	if d := cmp.Diff(want, got, cmpopts.EquateEmpty()); d != "" {
		t.Errorf("events (-want +got):\n%s", d)
	}
	if got, err := s.SearchEvents(ctx(), store.EventFilter{Kind: store.EventOAuth, UserID: "person-one", TransactionID: "g1"}, 0, 10); err != nil || len(got) != 2 {
		t.Errorf("events by the subject in lower case and the grant: %d, %v; want 2", len(got), err)
	}
}

// testRevokeAccessTokenRace: of concurrent revocations of one token
// exactly one revokes it, and one event is appended.
func testRevokeAccessTokenRace(t *testing.T, s store.Store) {
	if err := s.CreateGrant(ctx(), grant("g1")); err != nil {
		t.Fatal(err)
	}
	if err := s.CreateToken(ctx(), tok("at1", store.KindAccess, "g1")); err != nil {
		t.Fatal(err)
	}
	var n atomic.Int64
	notRevoked := errors.New("not revoked")
	wins := race(t, 20, func() error {
		ok, err := s.RevokeLiveToken(ctx(), store.KindAccess, []byte("at1"), "c1", t0, revocationEvent(fmt.Sprintf("e%d", n.Add(1)), t0))
		if err == nil && !ok {
			err = notRevoked
		}
		return err
	}, notRevoked)
	if wins != 1 {
		t.Errorf("%d of 20 concurrent revocations of one token revoked it, want 1", wins)
	}
	if got, err := s.SearchEvents(ctx(), store.EventFilter{Kind: store.EventOAuth}, 0, 30); err != nil || len(got) != 1 {
		t.Errorf("%d events, %v; want 1", len(got), err)
	}
}

// refreshRevocationEvent is the event a revocation of a refresh token
// appends, before the store sets its grant and subject.
func refreshRevocationEvent(id string, at time.Time) store.Event {
	e := revocationEvent(id, at)
	e.Type, e.Name = "TOKEN_REVOKE_REFRESH_TOKEN_SUCCESS", "Token Revoke Refresh Token Success"
	return e
}

// testRevokeRefreshToken: a revocation of a refresh token without a read
// first revokes the caller's live refresh token with its grant and the
// grant's other tokens, and appends its event with the grant and subject;
// in every other case it writes nothing and says so. Reads answered from
// memory see every token of the grant revoked.
func testRevokeRefreshToken(t *testing.T, s store.Store) {
	for _, id := range []string{"g1", "g2", "g3"} {
		g := grant(id)
		g.Subject = "Person-One"
		if err := s.CreateGrant(ctx(), g); err != nil {
			t.Fatal(err)
		}
	}
	mine := func(hash, kind, grantID, client string) {
		t.Helper()
		tk := tok(hash, kind, grantID)
		tk.Subject, tk.ClientID = "Person-One", client
		if err := s.CreateToken(ctx(), tk); err != nil {
			t.Fatal(err)
		}
	}
	mine("rt1", store.KindRefresh, "g1", "c1")
	mine("at1", store.KindAccess, "g1", "c1")
	mine("rt2", store.KindRefresh, "g2", "c2")
	mine("at2", store.KindAccess, "g2", "c1")
	mine("rt3", store.KindRefresh, "g3", "c1")
	mine("rt4", store.KindRefresh, "gone", "c1") // its grant removed already
	now := t0.Add(time.Minute)
	// A cached live answer for the grant's access token, which the
	// revocation must drop.
	if tk, gr, err := s.GetTokenGrant(ctx(), []byte("at1")); err != nil || !tk.Active(gr, now) {
		t.Fatalf("at1 before: active %v, %v", tk.Active(gr, now), err)
	}
	for _, c := range []struct{ name, hash string }{
		{"unknown", "nope"}, {"another client's", "rt2"}, {"an access token", "at2"},
	} {
		ok, err := s.RevokeLiveToken(ctx(), store.KindRefresh, []byte(c.hash), "c1", now, refreshRevocationEvent("e-"+c.hash, now))
		if ok || err != nil {
			t.Errorf("%s: RevokeLiveToken = %v, %v; want false, nil", c.name, ok, err)
		}
	}
	odd := refreshRevocationEvent("e-odd", now)
	odd.Kind = "odd"
	if ok, err := s.RevokeLiveToken(ctx(), store.KindRefresh, []byte("rt1"), "c1", now, odd); ok || err == nil {
		t.Errorf("an event of an unknown kind: %v, %v; want an error", ok, err)
	}
	ok, err := s.RevokeLiveToken(ctx(), store.KindRefresh, []byte("rt1"), "c1", now, refreshRevocationEvent("e1", now))
	if !ok || err != nil {
		t.Fatalf("RevokeLiveToken of a live refresh token = %v, %v", ok, err)
	}
	for _, h := range []string{"rt1", "at1"} {
		if tk, gr, err := s.GetTokenGrant(ctx(), []byte(h)); err != nil || tk.Active(gr, now) || !tk.RevokedAt.Equal(now) ||
			!gr.RevokedAt.Equal(now) {
			t.Errorf("%s after: active %v, revoked at %v, grant revoked at %v, %v; want both at %v",
				h, tk.Active(gr, now), tk.RevokedAt, gr.RevokedAt, err, now)
		}
	}
	later := now.Add(time.Minute)
	if ok, err := s.RevokeLiveToken(ctx(), store.KindRefresh, []byte("rt1"), "c1", later, refreshRevocationEvent("e2", later)); ok || err != nil {
		t.Errorf("a second revocation = %v, %v; want false, nil", ok, err)
	}
	if g, err := s.GetGrant(ctx(), "g1"); err != nil || !g.RevokedAt.Equal(now) {
		t.Errorf("a second revocation moved the grant's revoked_at to %v (%v), want %v", g.RevokedAt, err, now)
	}
	// In a transaction too.
	if err := s.Tx(ctx(), func(tx store.Store) error {
		ok, err := tx.RevokeLiveToken(ctx(), store.KindRefresh, []byte("rt3"), "c1", now, refreshRevocationEvent("e3", now))
		if !ok && err == nil {
			t.Error("RevokeLiveToken in a transaction revoked nothing")
		}
		return err
	}); err != nil {
		t.Fatal(err)
	}
	if g, err := s.GetGrant(ctx(), "g3"); err != nil || !g.RevokedAt.Equal(now) {
		t.Errorf("g3 after its refresh token's revocation in a transaction: revoked at %v, %v", g.RevokedAt, err)
	}
	if ok, err := s.RevokeLiveToken(ctx(), store.KindRefresh, []byte("rt4"), "c1", now, refreshRevocationEvent("e4", now)); !ok || err != nil {
		t.Errorf("a refresh token whose grant is gone: %v, %v; want true, nil", ok, err)
	}
	if tk, err := s.GetToken(ctx(), []byte("rt4")); err != nil || !tk.RevokedAt.Equal(now) {
		t.Errorf("rt4 after its revocation: revoked at %v, %v", tk.RevokedAt, err)
	}
	for _, h := range []string{"rt2", "at2"} {
		if tk, gr, err := s.GetTokenGrant(ctx(), []byte(h)); err != nil || !tk.RevokedAt.IsZero() || !gr.RevokedAt.IsZero() {
			t.Errorf("%s after the others' revocations: revoked at %v, grant at %v, %v", h, tk.RevokedAt, gr.RevokedAt, err)
		}
	}
	got, err := s.SearchEvents(ctx(), store.EventFilter{Kind: store.EventOAuth}, 0, 10)
	if err != nil {
		t.Fatal(err)
	}
	want := []store.Event{refreshRevocationEvent("e4", now), refreshRevocationEvent("e3", now), refreshRevocationEvent("e1", now)}
	want[0].TransactionID, want[1].TransactionID, want[2].TransactionID = "gone", "g3", "g1"
	for i := range want {
		want[i].UserID, want[i].Occurred = "Person-One", now.Truncate(time.Millisecond).UTC()
	}
	if d := cmp.Diff(want, got, cmpopts.EquateEmpty()); d != "" {
		t.Errorf("events (-want +got):\n%s", d)
	}
}

// testRevokeRefreshTokenRace: of concurrent revocations of two refresh
// tokens of one grant (a rotation's old and new), exactly one revokes, one
// event is appended, and none fails.
func testRevokeRefreshTokenRace(t *testing.T, s store.Store) {
	if err := s.CreateGrant(ctx(), grant("g1")); err != nil {
		t.Fatal(err)
	}
	for _, h := range []string{"rt1", "rt2"} {
		if err := s.CreateToken(ctx(), tok(h, store.KindRefresh, "g1")); err != nil {
			t.Fatal(err)
		}
	}
	var n atomic.Int64
	notRevoked := errors.New("not revoked")
	wins := race(t, 20, func() error {
		i := n.Add(1)
		h := []byte(fmt.Sprintf("rt%d", 1+i%2))
		ok, err := s.RevokeLiveToken(ctx(), store.KindRefresh, h, "c1", t0, refreshRevocationEvent(fmt.Sprintf("e%d", i), t0))
		if err == nil && !ok {
			err = notRevoked
		}
		return err
	}, notRevoked)
	if wins != 1 {
		t.Errorf("%d of 20 concurrent revocations of one grant's refresh tokens revoked, want 1", wins)
	}
	if got, err := s.SearchEvents(ctx(), store.EventFilter{Kind: store.EventOAuth}, 0, 30); err != nil || len(got) != 1 {
		t.Errorf("%d events, %v; want 1", len(got), err)
	}
	for _, h := range []string{"rt1", "rt2"} {
		if tk, err := s.GetToken(ctx(), []byte(h)); err != nil || tk.RevokedAt.IsZero() {
			t.Errorf("%s: revoked at %v, %v; want revoked", h, tk.RevokedAt, err)
		}
	}
}
