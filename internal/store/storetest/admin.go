package storetest

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/latchkey/latchkey/internal/store"
)

// generation reads the client generation. It is the backends' (their
// caches of clients and tokens follow it), not the contract's: each backend
// under test exposes it.
func generation(t *testing.T, s store.Store) int64 {
	t.Helper()
	gs, ok := s.(interface {
		ClientGeneration(context.Context) (int64, error)
	})
	if !ok {
		t.Fatalf("%T reads no client generation", s)
	}
	g, err := gs.ClientGeneration(ctx())
	if err != nil {
		t.Fatal(err)
	}
	return g
}

// testClientWrites: create refuses a taken ID; an update sees the row,
// keeps ID and CreatedAt and counts the revision; every write moves the
// client generation.
func testClientWrites(t *testing.T, s store.Store) {
	g0 := generation(t, s)
	c := fullClient("w1")
	if err := s.CreateClient(ctx(), c); err != nil {
		t.Fatal(err)
	}
	if err := s.CreateClient(ctx(), c); !errors.Is(err, store.ErrConflict) {
		t.Errorf("CreateClient of a taken ID = %v, want ErrConflict", err)
	}
	first, err := s.GetClient(ctx(), "w1")
	if err != nil || first.Revision != 1 {
		t.Fatalf("created client: revision %d, %v; want 1", first.Revision, err)
	}
	g1 := generation(t, s)
	if g1 <= g0 {
		t.Errorf("generation %d after a create, was %d", g1, g0)
	}
	updated, err := s.UpdateClient(ctx(), "w1", func(old store.Client) (store.Client, error) {
		if d := cmp.Diff(first, old); d != "" {
			t.Errorf("UpdateClient handed fn another client (-stored +handed):\n%s", d)
		}
		old.ID, old.CreatedAt, old.Name = "moved", time.Time{}, "Renamed"
		return old, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	got, err := s.GetClient(ctx(), "w1")
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(updated, got); d != "" {
		t.Errorf("UpdateClient's answer differs from the stored client (-answer +stored):\n%s", d)
	}
	if got.Name != "Renamed" || got.Revision != 2 || !got.CreatedAt.Equal(first.CreatedAt) || got.UpdatedAt.Before(first.UpdatedAt) {
		t.Errorf("after the update: %q revision %d created %v updated %v", got.Name, got.Revision, got.CreatedAt, got.UpdatedAt)
	}
	if _, err := s.GetClient(ctx(), "moved"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("an update moved the client to another ID: %v", err)
	}
	g2 := generation(t, s)
	if g2 <= g1 {
		t.Errorf("generation %d after an update, was %d", g2, g1)
	}
	boom := errors.New("refused")
	if _, err := s.UpdateClient(ctx(), "w1", func(c store.Client) (store.Client, error) { return c, boom }); !errors.Is(err, boom) {
		t.Errorf("UpdateClient with a failing fn = %v, want its error", err)
	}
	if c, _ := s.GetClient(ctx(), "w1"); c.Revision != 2 {
		t.Errorf("a failed update wrote: revision %d", c.Revision)
	}
	if _, err := s.UpdateClient(ctx(), "nope", func(c store.Client) (store.Client, error) { return c, nil }); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("UpdateClient of an unknown ID = %v, want ErrNotFound", err)
	}
	if err := s.UpsertClient(ctx(), got); err != nil {
		t.Fatal(err)
	}
	if c, _ := s.GetClient(ctx(), "w1"); c.Revision != 3 {
		t.Errorf("an upsert of an existing client: revision %d, want 3", c.Revision)
	}
	g3 := generation(t, s)
	if _, err := s.DeleteClient(ctx(), "w1", t0); err != nil {
		t.Fatal(err)
	}
	if g4 := generation(t, s); g3 <= g2 || g4 <= g3 {
		t.Errorf("generations %d, %d, %d after an upsert and a delete", g2, g3, g4)
	}
}

// testDeleteClientRevokes: deleting a client revokes its grants and their
// tokens (also as answered from memory) and forgets consents given to it;
// nothing of another client changes, and a grant for the deleted client
// can no longer be written.
func testDeleteClientRevokes(t *testing.T, s store.Store) {
	for _, id := range []string{"c1", "other"} {
		if err := s.CreateClient(ctx(), store.Client{ID: id, TokenEndpointAuthMethod: "none"}); err != nil {
			t.Fatal(err)
		}
	}
	issue := func(id, client, subject string) {
		t.Helper()
		g := grant(id)
		g.ClientID, g.Subject, g.StoredClient = client, subject, true
		if err := s.CreateGrant(ctx(), g); err != nil {
			t.Fatal(err)
		}
		tk := tok(id+"-a", store.KindAccess, id)
		tk.ClientID, tk.Subject = client, subject
		if err := s.CreateToken(ctx(), tk); err != nil {
			t.Fatal(err)
		}
	}
	issue("g1", "c1", "")
	issue("g2", "c1", "p1")
	issue("g3", "other", "p1")
	if err := s.SaveConsents(ctx(), []store.Consent{{PersonID: "p1", ClientID: "c1", Scope: "read", GrantedAt: t0},
		{PersonID: "p1", ClientID: "other", Scope: "read", GrantedAt: t0}}); err != nil {
		t.Fatal(err)
	}
	now := t0.Add(time.Minute)
	active := func(h string) bool {
		t.Helper()
		tk, g, err := s.GetTokenGrant(ctx(), []byte(h))
		if err != nil {
			t.Fatal(err)
		}
		return tk.Active(g, now)
	}
	for _, h := range []string{"g1-a", "g2-a", "g3-a"} {
		if !active(h) { // and cached, where a store caches
			t.Fatalf("%s inactive before the delete", h)
		}
	}
	got, err := s.DeleteClient(ctx(), "c1", now)
	if err != nil {
		t.Fatal(err)
	}
	if want := (store.ClientRevocation{Grants: 2, Tokens: 2}); got != want {
		t.Errorf("DeleteClient = %+v, want %+v", got, want)
	}
	for h, want := range map[string]bool{"g1-a": false, "g2-a": false, "g3-a": true} {
		if a := active(h); a != want {
			t.Errorf("%s active = %v after deleting c1, want %v", h, a, want)
		}
	}
	if cs, _ := s.ListConsents(ctx(), "p1", "c1"); len(cs) != 0 {
		t.Errorf("consents to the deleted client remain: %v", cs)
	}
	if cs, _ := s.ListConsents(ctx(), "p1", "other"); len(cs) != 1 {
		t.Errorf("consents to another client: %v", cs)
	}
	g := grant("g4")
	g.StoredClient = true
	if err := s.CreateGrant(ctx(), g); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("a grant for the deleted client = %v, want ErrNotFound", err)
	}
	if _, err := s.GetGrant(ctx(), "g4"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("the refused grant was written: %v", err)
	}
	// The ID comes back as a new client: what the old one held stays revoked.
	if err := s.CreateClient(ctx(), store.Client{ID: "c1", TokenEndpointAuthMethod: "none"}); err != nil {
		t.Fatal(err)
	}
	if active("g1-a") {
		t.Error("a token of the deleted client is active again under a new client of its ID")
	}
}

// testPersonLists: a person's live sessions and grants, and persons by
// email in every partition.
func testPersonLists(t *testing.T, s store.Store) {
	personGrant(t, s, "g1", "p1")
	personGrant(t, s, "g2", "p1")
	personGrant(t, s, "g3", "p2")
	personSession(t, s, "s1", "p1")
	personSession(t, s, "s2", "p2")
	if err := s.RevokeGrant(ctx(), "g2", t0); err != nil {
		t.Fatal(err)
	}
	gs, err := s.ListPersonGrants(ctx(), "p1", t0)
	if err != nil || len(gs) != 1 || gs[0].ID != "g1" {
		t.Errorf("ListPersonGrants(p1) = %v, %v; want g1 (g2 is revoked)", gs, err)
	}
	if gs, _ := s.ListPersonGrants(ctx(), "p1", t0.Add(2*time.Hour)); len(gs) != 0 {
		t.Errorf("expired grants listed: %v", gs)
	}
	ss, err := s.ListSessions(ctx(), "p1", t0)
	if err != nil || len(ss) != 1 || string(ss[0].Hash) != "s1" || !ss[0].AuthTime.Equal(t0) {
		t.Errorf("ListSessions(p1) = %+v, %v; want s1", ss, err)
	}
	if ss, _ := s.ListSessions(ctx(), "p1", t0.Add(2*time.Hour)); len(ss) != 0 {
		t.Errorf("expired sessions listed: %v", ss)
	}
	for _, p := range []store.Person{{ID: "a", Email: "Same@Example.com"}, {ID: "b", Partition: "x", Email: "same@example.com"},
		{ID: "c", Email: "other@example.com"}} {
		p.Status = "ACTIVATED"
		if err := s.CreatePerson(ctx(), p); err != nil {
			t.Fatal(err)
		}
	}
	ps, err := s.FindPersons(ctx(), "SAME@example.COM")
	var ids []string
	for _, p := range ps {
		ids = append(ids, p.ID)
	}
	if err != nil || !slices.Equal(ids, []string{"a", "b"}) {
		t.Errorf("FindPersons = %v, %v; want a and b, by partition", ids, err)
	}
}

// Erased is the person the erasure test erases: every value below is
// personal data that no stored row may hold afterwards.
var erased = store.Person{ID: "p-erased", Email: "Zebulon.Quaxworth@Example.org", FirstName: "Zebulon",
	LastName: "Quaxworth", PasswordHash: "$argon2id$v=19$m=1,t=1,p=1$c2FsdA$aGFzaA", Status: "ACTIVATED",
	Custom: map[string]string{"nickname": "Quaxy-the-Bold"},
	Profile: store.PersonProfile{DisplayName: "Zeb Quaxworth", Initials: "Z.Q.",
		Emails: []store.ContactPoint{{Value: "zeb.private@quax-mail.test", Verified: true}},
		Phones: []store.ContactPoint{{Value: "+31 6 98765432"}},
		Addresses: []store.PostalAddress{{HouseNumber: 17, StreetName: "Quaxworthlaan", City: "Zwolle-Noord",
			PostalCode: "8011QX", CountryCode: "NL"}}},
	TOTPSecret: []byte("sealed-totp-secret")}

// ErasedData are the personal data of the erased person (tests of other
// packages scan for them too).
var ErasedData = []string{"zebulon", "quaxworth", "quax-mail", "quaxy", "98765432", "8011qx", "zwolle-noord",
	"203.0.113.77", "ZebBrowser/9.9"}

// testErasePerson: after ErasePerson no table (nor SQLite's event log)
// holds any of the person's data; what others hold is untouched; events
// keep the person ID.
func testErasePerson(t *testing.T, s store.Store) {
	finder, ok := s.(interface {
		FindText(ctx context.Context, needles ...string) ([]string, error)
	})
	if !ok {
		t.Fatalf("%T has no FindText to check an erasure with", s)
	}
	p := erased
	p.CreatedAt, p.UpdatedAt = t0, t0
	if err := s.CreatePerson(ctx(), p); err != nil {
		t.Fatal(err)
	}
	keep := store.Person{ID: "p-kept", Email: "kept@example.org", FirstName: "Kept", Status: "ACTIVATED"}
	if err := s.CreatePerson(ctx(), keep); err != nil {
		t.Fatal(err)
	}
	if err := s.LinkIdentity(ctx(), store.ExternalIdentity{IdPID: "idp", ExternalID: "zebulon-ext", PersonID: p.ID}); err != nil {
		t.Fatal(err)
	}
	if err := s.SaveConsents(ctx(), []store.Consent{{PersonID: p.ID, ClientID: "c1", Scope: "read", GrantedAt: t0}}); err != nil {
		t.Fatal(err)
	}
	personGrant(t, s, "g1", p.ID)
	if err := s.SetGrantData(ctx(), "g1", []byte(`{"user_details":{"email":"Zebulon.Quaxworth@Example.org"}}`)); err != nil {
		t.Fatal(err)
	}
	personSession(t, s, "s1", p.ID)
	if err := s.CreateAuthCode(ctx(), store.AuthCode{Hash: []byte("code"), ClientID: "c1", Subject: p.ID,
		Data: []byte(`{"login_hint":"zebulon"}`), IssuedAt: t0, ExpiresAt: t0.Add(time.Minute)}); err != nil {
		t.Fatal(err)
	}
	if err := s.CreatePersonToken(ctx(), store.PersonToken{Hash: []byte("pt"), Kind: store.PersonTokenPasswordReset,
		PersonID: p.ID, CreatedAt: t0, ExpiresAt: t0.Add(time.Hour)}); err != nil {
		t.Fatal(err)
	}
	if err := s.EnqueueMail(ctx(), store.Mail{ID: "m1", Kind: "password_reset", PersonID: p.ID,
		Recipient: p.Email, Body: []byte("sealed"), NextAttemptAt: t0, CreatedAt: t0}); err != nil {
		t.Fatal(err)
	}
	for _, key := range []string{"login:pair:zebulon.quaxworth@example.org|203.0.113.77", "login:account:zebulon.quaxworth@example.org",
		"mail:to:zeb.private@quax-mail.test", "login:ip:192.0.2.1"} {
		if _, _, err := s.Take(ctx(), key, time.Hour, 10, t0); err != nil {
			t.Fatal(err)
		}
	}
	ev := func(id, kind, user, agent string) store.Event {
		return store.Event{ID: id, Kind: kind, Type: "T", Name: "T", ClientID: "c1", UserID: user, PersonID: user,
			ClientIP: "203.0.113.77", UserAgent: "ZebBrowser/9.9", AgentUser: agent,
			Context: map[string]string{"referrer": "quax-mail.test"}, Occurred: t0}
	}
	// In the events table, in a transaction, and outside one: SQLite's
	// event log, where some may still wait to be indexed at the erasure.
	if err := s.Tx(ctx(), func(tx store.Store) error {
		return tx.AppendEvents(ctx(), ev("e1", store.EventPerson, p.ID, "admin"), ev("e2", store.EventOAuth, "", p.Email))
	}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.SearchEvents(ctx(), store.EventFilter{Kind: store.EventOAuth}, 0, 1); err != nil {
		t.Fatal(err)
	}
	if err := s.EventSink().AppendEvents(ctx(), ev("e3", store.EventOAuth, p.ID, ""),
		ev("e4", store.EventOAuth, "zebulon.quaxworth@example.org", ""), ev("e5", store.EventPerson, p.ID, p.ID)); err != nil {
		t.Fatal(err)
	}
	other := ev("e6", store.EventPerson, keep.ID, "admin")
	other.ClientIP, other.UserAgent, other.Context = "198.51.100.5", "OtherBrowser/1", map[string]string{"referrer": "example.net"}
	if err := s.EventSink().AppendEvents(ctx(), other); err != nil {
		t.Fatal(err)
	}
	if found, err := finder.FindText(ctx(), ErasedData...); err != nil || len(found) == 0 {
		t.Fatalf("FindText found none of the person's data before the erasure (%v): the check checks nothing", err)
	}

	var told store.Person
	now := t0.Add(time.Minute)
	r, err := s.ErasePerson(ctx(), p.ID, now, func(tx store.Store, p store.Person) error {
		told = p
		return tx.AppendEvents(ctx(), store.Event{ID: "e7", Kind: store.EventPerson, Type: "person.PersonDeletedEvent",
			Name: "Person Deleted", UserID: p.ID, PersonID: p.ID, AgentUser: "admin", Occurred: now})
	})
	if err != nil {
		t.Fatal(err)
	}
	if told.Email != p.Email || told.ID != p.ID {
		t.Errorf("fn was told %+v, want the person as it was", told)
	}
	if want := (store.PersonRevocation{Grants: 1, Tokens: 2, Sessions: 1}); r != want {
		t.Errorf("ErasePerson = %+v, want %+v", r, want)
	}
	found, err := finder.FindText(ctx(), ErasedData...)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range found {
		t.Errorf("after the erasure the store still holds the person's data: %s", f)
	}
	if _, err := s.GetPerson(ctx(), p.ID); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("GetPerson after the erasure: %v", err)
	}
	if tk, g, err := s.GetTokenGrant(ctx(), []byte("g1-a")); err != nil || tk.Active(g, now) {
		t.Errorf("the person's token after the erasure: active %v, %v", tk.Active(g, now), err)
	}
	evs, err := s.SearchEvents(ctx(), store.EventFilter{Kind: store.EventOAuth}, 0, 10)
	if err != nil {
		t.Fatal(err)
	}
	persons, err := s.SearchEvents(ctx(), store.EventFilter{Kind: store.EventPerson}, 0, 10)
	if err != nil {
		t.Fatal(err)
	}
	byID := map[string]store.Event{}
	for _, e := range append(evs, persons...) {
		byID[e.ID] = e
	}
	for _, id := range []string{"e1", "e2", "e3", "e4", "e5", "e7"} {
		e, ok := byID[id]
		switch {
		case !ok:
			t.Errorf("event %s is gone: an erasure keeps the events", id)
		case e.UserID != p.ID && e.AgentUser != p.ID:
			t.Errorf("event %s lost the person ID: %+v", id, e)
		}
	}
	if e := byID["e6"]; e.ClientIP != other.ClientIP || e.UserAgent != other.UserAgent || len(e.Context) != 1 {
		t.Errorf("another person's event was scrubbed: %+v", e)
	}
	if _, err := s.GetPerson(ctx(), keep.ID); err != nil {
		t.Errorf("another person: %v", err)
	}
	if _, err := s.ErasePerson(ctx(), p.ID, now, func(store.Store, store.Person) error { return nil }); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("erasing again = %v, want ErrNotFound", err)
	}
}

// testUpdateClientRace: concurrent updates of one client each see the one
// before: none is lost.
func testUpdateClientRace(t *testing.T, s store.Store) {
	if err := s.CreateClient(ctx(), store.Client{ID: "c1", TokenEndpointAuthMethod: "none"}); err != nil {
		t.Fatal(err)
	}
	var n atomic.Int64
	wins := race(t, 20, func() error {
		uri := fmt.Sprintf("https://app.example/cb%d", n.Add(1))
		_, err := s.UpdateClient(ctx(), "c1", func(c store.Client) (store.Client, error) {
			c.RedirectURIs = append(c.RedirectURIs, uri)
			return c, nil
		})
		return err
	}, nil)
	c, err := s.GetClient(ctx(), "c1")
	if err != nil {
		t.Fatal(err)
	}
	if wins != 20 || len(c.RedirectURIs) != 20 || c.Revision != 21 {
		t.Errorf("%d updates succeeded; the client has %d redirect URIs at revision %d; want 20, 20, 21",
			wins, len(c.RedirectURIs), c.Revision)
	}
}

// testDeleteClientDuringIssuance: issuances racing a delete of their
// client either commit before it (and are revoked by it) or write
// nothing: no active token of the deleted client is left.
func testDeleteClientDuringIssuance(t *testing.T, s store.Store) {
	if err := s.CreateClient(ctx(), store.Client{ID: "c1", TokenEndpointAuthMethod: "client_secret_basic"}); err != nil {
		t.Fatal(err)
	}
	var (
		wg      sync.WaitGroup
		issued  atomic.Int64
		seq     atomic.Int64
		started = make(chan struct{})
		once    sync.Once
	)
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				id := fmt.Sprintf("g%d", seq.Add(1))
				err := s.Tx(ctx(), func(tx store.Store) error {
					g := grant(id)
					g.Subject, g.StoredClient = "", true
					if err := tx.CreateGrant(ctx(), g); err != nil {
						return err
					}
					tk := tok(id+"-a", store.KindAccess, id)
					tk.Subject = ""
					return tx.CreateToken(ctx(), tk)
				})
				if errors.Is(err, store.ErrNotFound) {
					return // the client is gone
				}
				if err != nil {
					t.Errorf("issuance: %v", err)
					return
				}
				if issued.Add(1) >= 20 {
					once.Do(func() { close(started) })
				}
			}
		}()
	}
	<-started
	now := time.Now()
	if _, err := s.DeleteClient(ctx(), "c1", now); err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	for i := int64(1); i <= seq.Load(); i++ {
		h := fmt.Sprintf("g%d-a", i)
		tk, g, err := s.GetTokenGrant(ctx(), []byte(h))
		if errors.Is(err, store.ErrNotFound) {
			continue // refused: never written
		}
		if err != nil {
			t.Fatal(err)
		}
		if tk.Active(g, now) {
			t.Errorf("token %s of the deleted client is active (%d issued before the delete)", h, issued.Load())
		}
	}
}
