package storetest

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/latchkey/latchkey/internal/store"
)

func testAuthRequestsAndSessions(t *testing.T, s store.Store) {
	ar := store.AuthRequest{ID: "r1", ClientID: "c1", Data: []byte(`{"state":"x"}`), CreatedAt: t0.UTC(), ExpiresAt: t0.Add(time.Hour).UTC()}
	if err := s.CreateAuthRequest(ctx(), ar); err != nil {
		t.Fatal(err)
	}
	got, err := s.GetAuthRequest(ctx(), "r1")
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(ar, got); d != "" {
		t.Errorf("auth request round trip (-want +got):\n%s", d)
	}
	if err := s.DeleteAuthRequest(ctx(), "r1"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.GetAuthRequest(ctx(), "r1"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("after delete: %v", err)
	}
	if err := s.DeleteAuthRequest(ctx(), "r1"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("delete twice: %v", err)
	}

	se := store.Session{Hash: []byte("s1"), PersonID: "p1", AuthLevel: 1, AMR: []string{"DEFAULT"},
		AuthTime: t0.UTC(), ExpiresAt: t0.Add(time.Hour).UTC()}
	if err := s.CreateSession(ctx(), se); err != nil {
		t.Fatal(err)
	}
	gotS, err := s.GetSession(ctx(), []byte("s1"))
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(se, gotS); d != "" {
		t.Errorf("session round trip (-want +got):\n%s", d)
	}
	// With its person: none while p1 does not exist, then p1.
	if gotS, err = s.GetSession(ctx(), []byte("s1")); err != nil || gotS.Person != nil {
		t.Errorf("session of a person gone: person %v, %v; want the session without a person", gotS.Person, err)
	}
	if err := s.CreatePerson(ctx(), person("p1", "jane@example.com")); err != nil {
		t.Fatal(err)
	}
	wantP, err := s.GetPerson(ctx(), "p1")
	if err != nil {
		t.Fatal(err)
	}
	withP := se
	withP.Person = &wantP
	if gotS, err = s.GetSession(ctx(), []byte("s1")); err != nil {
		t.Fatal(err)
	} else if d := cmp.Diff(withP, gotS); d != "" {
		t.Errorf("session with its person (-want +got):\n%s", d)
	}
	if _, err := s.GetSession(ctx(), []byte("nope")); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("unknown session with its person: %v", err)
	}
	err = s.UpdateSession(ctx(), []byte("s1"), func(x store.Session) (store.Session, error) {
		x.AuthLevel, x.AMR = 3, []string{"DEFAULT", "TOTP"}
		return x, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if gotS, _ = s.GetSession(ctx(), []byte("s1")); gotS.AuthLevel != 3 || len(gotS.AMR) != 2 {
		t.Errorf("after update: %+v", gotS)
	}
	if err := s.DeleteSession(ctx(), []byte("s1")); err != nil {
		t.Fatal(err)
	}
	if _, err := s.GetSession(ctx(), []byte("s1")); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("after delete: %v", err)
	}
}

func testConsents(t *testing.T, s store.Store) {
	cs := []store.Consent{{PersonID: "p1", ClientID: "c1", Scope: "write", GrantedAt: t0.UTC()},
		{PersonID: "p1", ClientID: "c1", Scope: "read", GrantedAt: t0.UTC()},
		{PersonID: "p1", ClientID: "c2", Scope: "read", GrantedAt: t0.UTC()}}
	if err := s.SaveConsents(ctx(), cs); err != nil {
		t.Fatal(err)
	}
	later := t0.Add(time.Hour).UTC()
	if err := s.SaveConsents(ctx(), []store.Consent{{PersonID: "p1", ClientID: "c1", Scope: "read", GrantedAt: later}}); err != nil {
		t.Fatal(err)
	}
	got, err := s.ListConsents(ctx(), "p1", "c1")
	if err != nil {
		t.Fatal(err)
	}
	want := []store.Consent{{PersonID: "p1", ClientID: "c1", Scope: "read", GrantedAt: later}, cs[0]}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("consents (-want +got):\n%s", d)
	}
}

func testThrottle(t *testing.T, s store.Store) {
	const w, limit = 15 * time.Minute, 3
	now := t0
	take := func(key string, at time.Time) (bool, time.Duration) {
		t.Helper()
		ok, retry, err := s.Take(ctx(), key, w, limit, at)
		if err != nil {
			t.Fatal(err)
		}
		return ok, retry
	}
	for i := 1; i <= limit; i++ {
		if ok, retry := take("k", now.Add(time.Duration(i)*time.Second)); !ok || retry != 0 {
			t.Fatalf("take %d of %d refused (retry %v)", i, limit, retry)
		}
	}
	// The window started at the first take (now+1s), not at a clock boundary.
	if ok, retry := take("k", now.Add(time.Minute)); ok || retry != w-time.Minute+time.Second {
		t.Errorf("take over the limit: allowed=%v retry=%v, want refused with %v", ok, retry, w-time.Minute+time.Second)
	}
	if n, retry, err := s.Count(ctx(), "k", w, now.Add(2*time.Minute)); err != nil || n != limit+1 || retry != w-2*time.Minute+time.Second {
		t.Errorf("count = %d, %v, %v: refused takes stop at limit+1, retry until the window ends", n, retry, err)
	}
	if ok, _ := take("k", now.Add(3*time.Minute)); ok {
		t.Error("refused takes must not free a slot")
	}
	if ok, _ := take("other", now.Add(time.Minute)); !ok {
		t.Error("keys are counted apart")
	}
	// The window ends w after its first take: the next take opens a new one.
	end := now.Add(time.Second + w)
	if n, _, _ := s.Count(ctx(), "k", w, end); n != 0 {
		t.Errorf("count after the window = %d, want 0", n)
	}
	if ok, _ := take("k", end); !ok {
		t.Error("first take of a new window refused")
	}
	if n, _, _ := s.Count(ctx(), "k", w, end); n != 1 {
		t.Errorf("count in the new window = %d, want 1", n)
	}
	// Release gives an attempt back, never below zero.
	for range 3 {
		if err := s.Release(ctx(), "k"); err != nil {
			t.Fatal(err)
		}
	}
	if n, _, _ := s.Count(ctx(), "k", w, end); n != 0 {
		t.Errorf("after releases = %d, want 0", n)
	}
	for range limit {
		take("k", end)
	}
	if ok, _ := take("k", end); ok {
		t.Error("a released key counts again from zero up to its limit")
	}
	if err := s.Reset(ctx(), "k"); err != nil {
		t.Fatal(err)
	}
	if n, _, _ := s.Count(ctx(), "k", w, end); n != 0 {
		t.Errorf("after reset = %d", n)
	}
	if n, retry, _ := s.Count(ctx(), "unknown", w, now); n != 0 || retry != 0 {
		t.Errorf("unknown key = %d, %v", n, retry)
	}
	// Finished windows are cleaned up with the other expired records.
	if _, err := s.DeleteExpired(ctx(), end.Add(2*w)); err != nil {
		t.Fatal(err)
	}
	if ok, _ := take("k", end.Add(2*w)); !ok {
		t.Error("take after clean-up refused")
	}
}

func testThrottleRace(t *testing.T, s store.Store) {
	const limit = 5
	errRefused := errors.New("refused")
	wins := race(t, 40, func() error {
		ok, _, err := s.Take(ctx(), "k", time.Hour, limit, t0)
		if err == nil && !ok {
			return errRefused
		}
		return err
	}, errRefused)
	if wins != limit {
		t.Errorf("%d of 40 concurrent takes allowed, want exactly %d", wins, limit)
	}
}

func testEvents(t *testing.T, s store.Store) {
	base := time.Now().UTC().Truncate(time.Second)
	mk := func(id, typ, user, client string, ms int) store.Event {
		return store.Event{ID: id, Kind: store.EventOAuth, Type: typ, Name: typ, UserID: user, ClientID: client,
			TransactionID: "tx-" + client, Occurred: base.Add(time.Duration(ms) * time.Millisecond)}
	}
	evs := []store.Event{
		mk("e1", "A", "Alice", "c1", 1), mk("e2", "B", "bob", "c1", 2), mk("e3", "A", "ALICE", "c2", 3),
		mk("e4", "C", "carol", "c2", 3), mk("e5", "B", "alice", "c1", 5),
		{ID: "p1", Kind: store.EventPerson, Type: "person.PersonCreatedEvent", Name: "Person Created", AgentUser: "admin",
			Partition: "tenant-2", Context: map[string]string{"campaign": "spring", "source": "crm"}, Occurred: base},
	}
	if err := s.AppendEvents(ctx(), evs...); err != nil {
		t.Fatal(err)
	}
	if err := s.AppendEvents(ctx(), evs[0]); !errors.Is(err, store.ErrConflict) {
		t.Errorf("an event id is unique: %v", err)
	}
	ids := func(f store.EventFilter, offset, limit int) []string {
		t.Helper()
		f.Kind = store.EventOAuth
		got, err := s.SearchEvents(ctx(), f, offset, limit)
		if err != nil {
			t.Fatal(err)
		}
		out := []string{}
		for _, e := range got {
			out = append(out, e.ID)
		}
		return out
	}
	for name, tc := range map[string]struct {
		f             store.EventFilter
		offset, limit int
		want          []string
	}{
		"all, latest first, ties by id": {store.EventFilter{}, 0, 10, []string{"e5", "e4", "e3", "e2", "e1"}},
		"a page":                        {store.EventFilter{}, 1, 2, []string{"e4", "e3"}},
		"past the end":                  {store.EventFilter{}, 10, 2, []string{}},
		"user, case-insensitive":        {store.EventFilter{UserID: "alice"}, 0, 10, []string{"e5", "e3", "e1"}},
		"client":                        {store.EventFilter{ClientID: "c2"}, 0, 10, []string{"e4", "e3"}},
		"types OR":                      {store.EventFilter{Types: []string{"A", "C"}}, 0, 10, []string{"e4", "e3", "e1"}},
		"exclude types":                 {store.EventFilter{ExcludeTypes: []string{"A", "B"}}, 0, 10, []string{"e4"}},
		"filters AND":                   {store.EventFilter{UserID: "ALICE", Types: []string{"B"}}, 0, 10, []string{"e5"}},
		"transaction":                   {store.EventFilter{TransactionID: "tx-c2"}, 0, 10, []string{"e4", "e3"}},
		"from and to inclusive":         {store.EventFilter{From: base.Add(2 * time.Millisecond), To: base.Add(3 * time.Millisecond)}, 0, 10, []string{"e4", "e3", "e2"}},
		"to exclusive":                  {store.EventFilter{To: base.Add(3 * time.Millisecond), ToExclusive: true}, 0, 10, []string{"e2", "e1"}},
	} {
		if got := ids(tc.f, tc.offset, tc.limit); !cmp.Equal(got, tc.want) {
			t.Errorf("%s: %v, want %v", name, got, tc.want)
		}
	}
	if n, err := s.CountEvents(ctx(), store.EventFilter{Kind: store.EventOAuth, UserID: "Alice"}, 100); err != nil || n != 3 {
		t.Errorf("count = %d, %v", n, err)
	}
	if n, _ := s.CountEvents(ctx(), store.EventFilter{Kind: store.EventOAuth}, 2); n != 2 {
		t.Errorf("a bounded count stops at its bound: %d", n)
	}
	persons, err := s.SearchEvents(ctx(), store.EventFilter{Kind: store.EventPerson, AgentUser: "admin"}, 0, 10)
	if err != nil || len(persons) != 1 {
		t.Fatalf("person events: %+v, %v", persons, err)
	}
	if d := cmp.Diff(evs[5], persons[0]); d != "" {
		t.Errorf("person event round trip (-want +got):\n%s", d)
	}
	if err := s.AppendEvents(ctx(), store.Event{ID: "bad-kind", Kind: "other", Type: "A", Name: "a", Occurred: base}); err == nil {
		t.Error("an event of an unknown kind (retention would never find it) was stored")
	}
	n, err := s.DeleteEventsBefore(ctx(), base.Add(3*time.Millisecond), 1)
	if err != nil || n != 1 {
		t.Errorf("a batch of one: %d, %v", n, err)
	}
	n, _ = s.DeleteEventsBefore(ctx(), base.Add(3*time.Millisecond), 100)
	if n != 2 { // e1 or e2, and p1
		t.Errorf("the rest before the cut: %d, want 2", n)
	}
	if got := ids(store.EventFilter{}, 0, 10); !cmp.Equal(got, []string{"e5", "e4", "e3"}) {
		t.Errorf("after retention: %v", got)
	}
}

// testEventCountFollowsDeletions: a whole kind's count that reached its
// bound is remembered (CountEvents), and a deletion must end that.
func testEventCountFollowsDeletions(t *testing.T, s store.Store) {
	base := time.Now().UTC().Truncate(time.Second)
	var evs []store.Event
	for i := range 6 {
		evs = append(evs, store.Event{ID: fmt.Sprintf("c%d", i), Kind: store.EventOAuth, Type: "A", Name: "a",
			Occurred: base.Add(time.Duration(i) * time.Millisecond)})
	}
	if err := s.AppendEvents(ctx(), evs[:4]...); err != nil {
		t.Fatal(err)
	}
	all := store.EventFilter{Kind: store.EventOAuth}
	count := func(max, want int, why string) {
		t.Helper()
		if n, err := s.CountEvents(ctx(), all, max); err != nil || n != want {
			t.Errorf("%s: count up to %d = %d, %v; want %d", why, max, n, err, want)
		}
	}
	count(3, 3, "at the bound")
	count(3, 3, "at the bound again")
	count(10, 4, "under a higher bound")
	if n, err := s.DeleteEventsBefore(ctx(), base.Add(2*time.Millisecond), 100); err != nil || n != 2 {
		t.Fatalf("deleted %d, %v", n, err)
	}
	count(3, 2, "after a deletion")
	if err := s.AppendEvents(ctx(), evs[4:]...); err != nil {
		t.Fatal(err)
	}
	count(3, 3, "after inserts")
	count(4, 4, "all of them")
	count(5, 4, "above all of them")
	if n, err := s.CountEvents(ctx(), store.EventFilter{Kind: store.EventPerson}, 3); err != nil || n != 0 {
		t.Errorf("the other kind: %d, %v", n, err)
	}
}

// testEventPageAgrees: EventPage answers what SearchEvents and CountEvents
// answer, for short and full pages, past the end, at and over the count's
// bound, and after a deletion ends a remembered count.
func testEventPageAgrees(t *testing.T, s store.Store) {
	base := time.Now().UTC().Truncate(time.Second)
	var evs []store.Event
	for i := range 30 {
		evs = append(evs, store.Event{ID: fmt.Sprintf("p%02d", i), Kind: store.EventOAuth, Type: []string{"A", "B"}[i%2],
			Name: "a", ClientID: []string{"one", "two", "three"}[i%3], Occurred: base.Add(time.Duration(i) * time.Millisecond)})
	}
	if err := s.AppendEvents(ctx(), evs...); err != nil {
		t.Fatal(err)
	}
	filters := []store.EventFilter{
		{Kind: store.EventOAuth},
		{Kind: store.EventOAuth, ClientID: "two"},
		{Kind: store.EventOAuth, Types: []string{"B"}},
		{Kind: store.EventOAuth, From: base.Add(25 * time.Millisecond)},
		{Kind: store.EventPerson},
	}
	check := func(why string) {
		t.Helper()
		for _, f := range filters {
			for _, offset := range []int{0, 3, 9, 10, 29, 30, 40} {
				for _, limit := range []int{1, 5, 10, 30} {
					for _, max := range []int{4, 10, 31} {
						want, err := s.SearchEvents(ctx(), f, offset, limit)
						if err != nil {
							t.Fatal(err)
						}
						wantN, err := s.CountEvents(ctx(), f, max)
						if err != nil {
							t.Fatal(err)
						}
						got, n, err := s.EventPage(ctx(), f, offset, limit, max)
						if err != nil || n != wantN || !cmp.Equal(got, want) {
							t.Errorf("%s: %+v offset %d limit %d max %d: %d events, count %d, %v; want %d, %d",
								why, f, offset, limit, max, len(got), n, err, len(want), wantN)
						}
					}
				}
			}
		}
	}
	check("stored")
	// Remembered counts of the whole kind at each bound, then a deletion.
	for _, max := range []int{4, 10} {
		if _, n, err := s.EventPage(ctx(), filters[0], 0, 2, max); err != nil || n != max {
			t.Fatalf("count to %d: %d, %v", max, n, err)
		}
	}
	if n, err := s.DeleteEventsBefore(ctx(), base.Add(24*time.Millisecond), 100); err != nil || n != 24 {
		t.Fatalf("deleted %d, %v", n, err)
	}
	if _, n, err := s.EventPage(ctx(), filters[0], 0, 2, 10); err != nil || n != 6 {
		t.Errorf("after the deletion: count %d, %v; want 6", n, err)
	}
	check("after the deletion")
}

func testDeleteExpired(t *testing.T, s store.Store) {
	old := grant("old")
	old.ExpiresAt = t0.UTC()
	live := grant("live")
	live.ExpiresAt = t0.Add(48 * time.Hour).UTC()
	for _, g := range []store.Grant{old, live} {
		if err := s.CreateGrant(ctx(), g); err != nil {
			t.Fatal(err)
		}
	}
	for _, tk := range []store.Token{tok("t-old", store.KindAccess, "old"), tok("t-live", store.KindAccess, "live")} {
		if err := s.CreateToken(ctx(), tk); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.CreateSession(ctx(), store.Session{Hash: []byte("s"), PersonID: "p", AuthTime: t0, ExpiresAt: t0}); err != nil {
		t.Fatal(err)
	}
	if err := s.UseAssertionID(ctx(), "c", "j", t0, t0.Add(-time.Minute)); err != nil {
		t.Fatal(err)
	}
	n, err := s.DeleteExpired(ctx(), t0.Add(25*time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	if n != 4 {
		t.Errorf("DeleteExpired removed %d records, want 4 (grant, its token, session, assertion id)", n)
	}
	if _, err := s.GetToken(ctx(), []byte("t-live")); err != nil {
		t.Errorf("a live token was removed: %v", err)
	}
	if _, err := s.GetGrant(ctx(), "old"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("expired grant kept: %v", err)
	}
}

func testSeedFingerprint(t *testing.T, s store.Store) {
	if _, err := s.SeedFingerprint(ctx(), "p-1"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("none recorded: %v", err)
	}
	for _, fp := range []string{"one", "two"} {
		if err := s.SetSeedFingerprint(ctx(), "p-1", []byte(fp)); err != nil {
			t.Fatal(err)
		}
		if got, err := s.SeedFingerprint(ctx(), "p-1"); err != nil || string(got) != fp {
			t.Errorf("recorded %q: read %q, %v", fp, got, err)
		}
	}
	if _, err := s.SeedFingerprint(ctx(), "p-2"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("another person: %v", err)
	}
	// Erasing the person erases its fingerprint.
	if err := s.CreatePerson(ctx(), person("p-1", "seeded@example.com")); err != nil {
		t.Fatal(err)
	}
	if _, err := s.ErasePerson(ctx(), "p-1", t0, func(store.Store, store.Person) error { return nil }); err != nil {
		t.Fatal(err)
	}
	if _, err := s.SeedFingerprint(ctx(), "p-1"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("after the erasure: %v", err)
	}
}
