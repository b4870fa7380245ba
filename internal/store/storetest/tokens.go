package storetest

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/latchkey/latchkey/internal/store"
)

func grant(id string) store.Grant {
	return store.Grant{ID: id, ClientID: "c1", Subject: "p1", Scopes: []string{"read", "write"}, AuthLevel: 2,
		AMR: []string{"DEFAULT"}, Data: []byte(`{"k":["v"]}`), CreatedAt: t0.UTC(), ExpiresAt: t0.Add(time.Hour).UTC()}
}

func tok(hash, kind, grantID string) store.Token {
	return store.Token{Hash: []byte(hash), Kind: kind, GrantID: grantID, ClientID: "c1", Subject: "p1",
		Scopes: []string{"read"}, IssuedAt: t0.UTC(), ExpiresAt: t0.Add(time.Hour).UTC()}
}

func testGrantAndTokens(t *testing.T, s store.Store) {
	g := grant("g1")
	if err := s.CreateGrant(ctx(), g); err != nil {
		t.Fatal(err)
	}
	got, err := s.GetGrant(ctx(), "g1")
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(g, got); d != "" {
		t.Errorf("grant round trip (-want +got):\n%s", d)
	}
	if err := s.CreateGrant(ctx(), g); !errors.Is(err, store.ErrConflict) {
		t.Errorf("duplicate grant: %v, want ErrConflict", err)
	}
	if err := s.SetGrantData(ctx(), "g1", []byte(`{"user_details":{"email":"x"}}`)); err != nil {
		t.Fatal(err)
	}
	if got, _ := s.GetGrant(ctx(), "g1"); string(got.Data) != `{"user_details":{"email":"x"}}` {
		t.Errorf("grant data after SetGrantData: %s", got.Data)
	}
	if err := s.SetGrantData(ctx(), "nope", nil); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("SetGrantData unknown: %v", err)
	}
	at := tok("at1", store.KindAccess, "g1")
	at.UsageLimit = 3
	if err := s.CreateToken(ctx(), at); err != nil {
		t.Fatal(err)
	}
	gotT, err := s.GetToken(ctx(), []byte("at1"))
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(at, gotT); d != "" {
		t.Errorf("token round trip (-want +got):\n%s", d)
	}
	if _, err := s.GetToken(ctx(), []byte("nope")); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("unknown token: %v", err)
	}
	joinedT, joinedG, err := s.GetTokenGrant(ctx(), []byte("at1"))
	if err != nil {
		t.Fatal(err)
	}
	wantG, _ := s.GetGrant(ctx(), "g1")
	if d := cmp.Diff(at, joinedT); d != "" {
		t.Errorf("GetTokenGrant token (-want +got):\n%s", d)
	}
	if d := cmp.Diff(wantG, joinedG); d != "" {
		t.Errorf("GetTokenGrant grant (-want +got):\n%s", d)
	}
	if _, _, err := s.GetTokenGrant(ctx(), []byte("nope")); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("GetTokenGrant of an unknown token: %v", err)
	}
	if _, err := s.GetGrant(ctx(), "nope"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("unknown grant: %v", err)
	}
	if err := s.RevokeToken(ctx(), []byte("at1"), t0); err != nil {
		t.Fatal(err)
	}
	gotT, _ = s.GetToken(ctx(), []byte("at1"))
	if !gotT.RevokedAt.Equal(t0) {
		t.Errorf("RevokedAt = %v, want %v", gotT.RevokedAt, t0)
	}
	if err := s.RevokeToken(ctx(), []byte("at1"), t0.Add(time.Hour)); err != nil {
		t.Errorf("revoking twice: %v", err)
	}
	gotT, _ = s.GetToken(ctx(), []byte("at1"))
	if !gotT.RevokedAt.Equal(t0) {
		t.Errorf("a second revocation moved RevokedAt to %v", gotT.RevokedAt)
	}
	if err := s.RevokeToken(ctx(), []byte("nope"), t0); err != nil {
		t.Errorf("revoke unknown: %v", err)
	}
	if _, err := s.GetToken(ctx(), []byte("nope")); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("revoking an unknown token made one: %v", err)
	}
}

// testRefreshReadFindsTokenGrantAndPerson: the token, its grant and its person in one
// read, inside a transaction and out; ErrNotFound when any is missing.
func testRefreshReadFindsTokenGrantAndPerson(t *testing.T, s store.Store) {
	p := person("p1", "jane@example.com")
	if err := s.CreatePerson(ctx(), p); err != nil {
		t.Fatal(err)
	}
	wantP, err := s.GetPerson(ctx(), "p1")
	if err != nil {
		t.Fatal(err)
	}
	gone := tok("r-gone", store.KindRefresh, "g1")
	gone.Subject = "p-gone"
	own := tok("r-own", store.KindRefresh, "g1")
	own.Subject = ""
	if err := s.CreateGrant(ctx(), grant("g1")); err != nil {
		t.Fatal(err)
	}
	for _, tk := range []store.Token{tok("r1", store.KindRefresh, "g1"), gone, own} {
		if err := s.CreateToken(ctx(), tk); err != nil {
			t.Fatal(err)
		}
	}
	wantT, wantG, err := s.GetTokenGrant(ctx(), []byte("r1"))
	if err != nil {
		t.Fatal(err)
	}
	checkRead := func(read func(context.Context, []byte) (store.Token, store.Grant, store.Person, error)) error {
		gotT, gotG, gotP, err := read(ctx(), []byte("r1"))
		if err != nil {
			return err
		}
		if d := cmp.Diff(wantT, gotT); d != "" {
			t.Errorf("token (-want +got):\n%s", d)
		}
		if d := cmp.Diff(wantG, gotG); d != "" {
			t.Errorf("grant (-want +got):\n%s", d)
		}
		if d := cmp.Diff(wantP, gotP); d != "" {
			t.Errorf("person (-want +got):\n%s", d)
		}
		for _, h := range []string{"r-gone", "r-own", "nope"} {
			if _, _, _, err := read(ctx(), []byte(h)); !errors.Is(err, store.ErrNotFound) {
				t.Errorf("token %s: %v, want ErrNotFound", h, err)
			}
		}
		return nil
	}
	check := func(st store.Store) error {
		for _, read := range []func(context.Context, []byte) (store.Token, store.Grant, store.Person, error){
			st.GetTokenGrantSharePerson, st.GetTokenGrantGuardPerson, st.GetTokenGrantPerson} {
			if err := checkRead(read); err != nil {
				return err
			}
		}
		return nil
	}
	if err := check(s); err != nil {
		t.Fatal(err)
	}
	if err := s.Tx(ctx(), check); err != nil {
		t.Fatal(err)
	}
}

func testRevokeGrant(t *testing.T, s store.Store) {
	for _, g := range []string{"g1", "g2"} {
		if err := s.CreateGrant(ctx(), grant(g)); err != nil {
			t.Fatal(err)
		}
	}
	for _, tk := range []store.Token{tok("a1", store.KindAccess, "g1"), tok("r1", store.KindRefresh, "g1"), tok("a2", store.KindAccess, "g2")} {
		if err := s.CreateToken(ctx(), tk); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.RevokeGrant(ctx(), "g1", t0); err != nil {
		t.Fatal(err)
	}
	for hash, revoked := range map[string]bool{"a1": true, "r1": true, "a2": false} {
		tk, _ := s.GetToken(ctx(), []byte(hash))
		if tk.RevokedAt.IsZero() == revoked {
			t.Errorf("token %s revoked=%v, want %v", hash, !tk.RevokedAt.IsZero(), revoked)
		}
	}
	if g, _ := s.GetGrant(ctx(), "g1"); !g.RevokedAt.Equal(t0) {
		t.Errorf("grant RevokedAt = %v", g.RevokedAt)
	}
	if err := s.RevokeGrant(ctx(), "g1", t0.Add(time.Hour)); err != nil {
		t.Errorf("revoking twice: %v", err)
	}
	if err := s.RevokeGrant(ctx(), "nope", t0); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("unknown grant: %v", err)
	}
}

func testRefreshSingleUse(t *testing.T, s store.Store) {
	if err := s.CreateToken(ctx(), tok("r1", store.KindRefresh, "g1")); err != nil {
		t.Fatal(err)
	}
	got, err := s.UseRefreshToken(ctx(), []byte("r1"), t0)
	if err != nil || !got.UsedAt.Equal(t0) {
		t.Fatalf("first use: %+v, %v", got, err)
	}
	got, err = s.UseRefreshToken(ctx(), []byte("r1"), t0.Add(time.Second))
	if !errors.Is(err, store.ErrConflict) || got.GrantID != "g1" {
		t.Errorf("second use: %+v, %v; want the token with ErrConflict", got, err)
	}
	if _, err := s.UseRefreshToken(ctx(), []byte("nope"), t0); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("unknown: %v", err)
	}
}

func testUsageLimit(t *testing.T, s store.Store) {
	limited := tok("l1", store.KindAccess, "g1")
	limited.UsageLimit = 2
	if err := s.CreateToken(ctx(), limited); err != nil {
		t.Fatal(err)
	}
	for i := 1; i <= 2; i++ {
		got, err := s.SpendTokenUse(ctx(), []byte("l1"), nil)
		if err != nil || got.UsageCount != i {
			t.Fatalf("use %d: count %d, %v", i, got.UsageCount, err)
		}
	}
	if got, err := s.SpendTokenUse(ctx(), []byte("l1"), nil); !errors.Is(err, store.ErrConflict) || got.UsageCount != 2 {
		t.Errorf("use past the limit: %d, %v; want 2 and ErrConflict", got.UsageCount, err)
	}
	if _, err := s.SpendTokenUse(ctx(), []byte("nope"), nil); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("unknown: %v", err)
	}
}

// useEvent is the event of an answer a use of a limited token allows.
func useEvent(id string) store.Event {
	return store.Event{ID: id, Kind: store.EventOAuth, Type: "TOKEN_INTROSPECTION_SUCCESS", Name: "Token Introspection Success",
		ClientID: "c1", AppName: "App", TransactionID: "g1", ClientIP: "192.0.2.7", UserAgent: "Agent/1", Occurred: t0}
}

// eventIDs are the ids of the OAuth events stored, sorted.
func eventIDs(t *testing.T, s store.Store) []string {
	t.Helper()
	got, err := s.SearchEvents(ctx(), store.EventFilter{Kind: store.EventOAuth}, 0, 1000)
	if err != nil {
		t.Fatal(err)
	}
	ids := make([]string, len(got))
	for i, e := range got {
		ids[i] = e.ID
	}
	sort.Strings(ids)
	return ids
}

// testUseAndItsEventCommitTogether: a use counted with its event appends the event, and
// a use not counted (exhausted, unknown, an event the store refuses, a
// transaction rolled back) appends none and counts nothing.
func testUseAndItsEventCommitTogether(t *testing.T, s store.Store) {
	limited := tok("l1", store.KindAccess, "g1")
	limited.UsageLimit = 2
	if err := s.CreateToken(ctx(), limited); err != nil {
		t.Fatal(err)
	}
	bad := useEvent("u-bad")
	bad.Kind = "no-such-kind"
	if _, err := s.SpendTokenUse(ctx(), []byte("l1"), eventRef(bad)); err == nil {
		t.Error("a use with an event of no known kind was counted")
	}
	rollback := errors.New("rolled back")
	err := s.Tx(ctx(), func(tx store.Store) error {
		if got, err := tx.SpendTokenUse(ctx(), []byte("l1"), eventRef(useEvent("u-tx"))); err != nil || got.UsageCount != 1 {
			t.Errorf("use in a transaction: count %d, %v", got.UsageCount, err)
		}
		return rollback
	})
	if !errors.Is(err, rollback) {
		t.Fatalf("Tx = %v", err)
	}
	for i := 1; i <= 2; i++ {
		got, err := s.SpendTokenUse(ctx(), []byte("l1"), eventRef(useEvent(fmt.Sprintf("u%d", i))))
		if err != nil || got.UsageCount != i {
			t.Fatalf("use %d: count %d, %v", i, got.UsageCount, err)
		}
	}
	if got, err := s.SpendTokenUse(ctx(), []byte("l1"), eventRef(useEvent("u3"))); !errors.Is(err, store.ErrConflict) || got.UsageCount != 2 {
		t.Errorf("use past the limit: %d, %v; want 2 and ErrConflict", got.UsageCount, err)
	}
	if _, err := s.SpendTokenUse(ctx(), []byte("nope"), eventRef(useEvent("u4"))); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("unknown: %v", err)
	}
	if got := eventIDs(t, s); !slices.Equal(got, []string{"u1", "u2"}) {
		t.Errorf("events %v, want those of the two uses counted", got)
	}
	events, err := s.SearchEvents(ctx(), store.EventFilter{Kind: store.EventOAuth}, 0, 1)
	if err != nil || len(events) != 1 {
		t.Fatalf("search: %v, %v", events, err)
	}
	if want := useEvent("u2"); events[0].Type != want.Type || events[0].TransactionID != "g1" || !events[0].Occurred.Equal(t0.Truncate(time.Millisecond)) {
		t.Errorf("stored event %+v, want %+v", events[0], want)
	}
}

// testUsesWithEventsKeepTheLimit: of many concurrent uses with events, exactly the
// limit's are counted, and exactly their events are stored.
func testUsesWithEventsKeepTheLimit(t *testing.T, s store.Store) {
	limited := tok("l1", store.KindAccess, "g1")
	limited.UsageLimit = 7
	if err := s.CreateToken(ctx(), limited); err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var won []string
	var n atomic.Int64
	wins := race(t, 50, func() error {
		id := fmt.Sprintf("u%02d", n.Add(1))
		_, err := s.SpendTokenUse(ctx(), []byte("l1"), eventRef(useEvent(id)))
		if err == nil {
			mu.Lock()
			won = append(won, id)
			mu.Unlock()
		}
		return err
	}, store.ErrConflict)
	if wins != 7 {
		t.Errorf("%d of 50 concurrent uses succeeded, want exactly the limit 7", wins)
	}
	sort.Strings(won)
	if got := eventIDs(t, s); !slices.Equal(got, won) {
		t.Errorf("events %v, want exactly those of the uses counted %v", got, won)
	}
}

func testRefreshRace(t *testing.T, s store.Store) {
	if err := s.CreateToken(ctx(), tok("r1", store.KindRefresh, "g1")); err != nil {
		t.Fatal(err)
	}
	wins := race(t, 20, func() error { _, err := s.UseRefreshToken(ctx(), []byte("r1"), t0); return err }, store.ErrConflict)
	if wins != 1 {
		t.Errorf("%d of 20 concurrent uses of one refresh token succeeded, want 1", wins)
	}
}

func testUsageLimitRace(t *testing.T, s store.Store) {
	limited := tok("l1", store.KindAccess, "g1")
	limited.UsageLimit = 5
	if err := s.CreateToken(ctx(), limited); err != nil {
		t.Fatal(err)
	}
	wins := race(t, 50, func() error { _, err := s.SpendTokenUse(ctx(), []byte("l1"), nil); return err }, store.ErrConflict)
	if wins != 5 {
		t.Errorf("%d of 50 concurrent uses succeeded, want exactly the limit 5", wins)
	}
	// Each use that succeeds is told a count of its own: 1 to the limit.
	limited = tok("l2", store.KindAccess, "g1")
	limited.UsageLimit = 40
	if err := s.CreateToken(ctx(), limited); err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	counts := map[int]int{}
	wins = race(t, 60, func() error {
		got, err := s.SpendTokenUse(ctx(), []byte("l2"), nil)
		if err == nil {
			mu.Lock()
			counts[got.UsageCount]++
			mu.Unlock()
		} else if got.UsageCount != 40 {
			t.Errorf("a refused use was told the count %d, want 40", got.UsageCount)
		}
		return err
	}, store.ErrConflict)
	if wins != 40 || len(counts) != 40 {
		t.Errorf("%d of 60 uses succeeded with %d distinct counts, want 40 and 40", wins, len(counts))
	}
	for n, times := range counts {
		if n < 1 || n > 40 || times != 1 {
			t.Errorf("count %d told %d times", n, times)
		}
	}
	if got, err := s.GetToken(ctx(), []byte("l2")); err != nil || got.UsageCount != 40 {
		t.Errorf("stored count %d, %v", got.UsageCount, err)
	}
}

func code(hash string) store.AuthCode {
	return store.AuthCode{Hash: []byte(hash), ClientID: "c1", Subject: "p1", RedirectURI: "https://app.example/cb",
		Scopes: []string{"read"}, CodeChallenge: "abc", CodeChallengeMethod: "S256", AuthLevel: 1,
		AMR: []string{"DEFAULT"}, Data: []byte(`{}`), IssuedAt: t0.UTC(), ExpiresAt: t0.Add(time.Minute).UTC()}
}

func testAuthCodeSingleUse(t *testing.T, s store.Store) {
	c := code("c1")
	if err := s.CreateAuthCode(ctx(), c); err != nil {
		t.Fatal(err)
	}
	got, err := s.UseAuthCode(ctx(), []byte("c1"), t0)
	if err != nil {
		t.Fatal(err)
	}
	c.UsedAt = t0.UTC()
	if d := cmp.Diff(c, got); d != "" {
		t.Errorf("code round trip (-want +got):\n%s", d)
	}
	if err := s.SetAuthCodeGrant(ctx(), []byte("c1"), "g1"); err != nil {
		t.Fatal(err)
	}
	got, err = s.UseAuthCode(ctx(), []byte("c1"), t0)
	if !errors.Is(err, store.ErrConflict) || got.GrantID != "g1" {
		t.Errorf("reuse: %+v, %v; want the code (with its grant) and ErrConflict", got, err)
	}
	if _, err := s.UseAuthCode(ctx(), []byte("nope"), t0); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("unknown: %v", err)
	}
	if err := s.SetAuthCodeGrant(ctx(), []byte("nope"), "g"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("SetAuthCodeGrant unknown: %v", err)
	}
}

func testAuthCodeRace(t *testing.T, s store.Store) {
	if err := s.CreateAuthCode(ctx(), code("c1")); err != nil {
		t.Fatal(err)
	}
	wins := race(t, 20, func() error { _, err := s.UseAuthCode(ctx(), []byte("c1"), t0); return err }, store.ErrConflict)
	if wins != 1 {
		t.Errorf("%d of 20 concurrent exchanges of one code succeeded, want 1", wins)
	}
}

// testCodeExchangeUsesOnceWithItsPerson: an exchange's use of its code, with the code's
// person, inside a transaction: the grant set in it goes with the use, a
// transaction that writes nothing else (a refused exchange) still uses the
// code, a code whose person is gone comes with none, and of concurrent
// exchanges of one code exactly one commits, its grant the code's.
func testCodeExchangeUsesOnceWithItsPerson(t *testing.T, s store.Store) {
	if err := s.CreatePerson(ctx(), person("p1", "jane@example.com")); err != nil {
		t.Fatal(err)
	}
	wantP, err := s.GetPerson(ctx(), "p1")
	if err != nil {
		t.Fatal(err)
	}
	gone := code("c-gone")
	gone.Subject = "p-gone"
	for _, c := range []store.AuthCode{code("c1"), code("c-refused"), gone, code("c-race")} {
		if err := s.CreateAuthCode(ctx(), c); err != nil {
			t.Fatal(err)
		}
	}
	// Read before an exchange: the code stays unused.
	for range 2 {
		c, p, err := s.GetAuthCodePerson(ctx(), []byte("c1"))
		if err != nil {
			t.Fatal(err)
		}
		if d := cmp.Diff(code("c1"), c); d != "" {
			t.Errorf("GetAuthCodePerson's code (-want +got):\n%s", d)
		}
		if d := cmp.Diff(wantP, p); d != "" {
			t.Errorf("GetAuthCodePerson's person (-want +got):\n%s", d)
		}
	}
	for _, h := range []string{"c-gone", "nope"} {
		if _, _, err := s.GetAuthCodePerson(ctx(), []byte(h)); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("GetAuthCodePerson(%s): %v, want ErrNotFound", h, err)
		}
	}
	// exchange uses hash in a transaction and, unless refuse, writes a
	// grant of its own and records it on the code.
	exchange := func(hash, grantID string, refuse bool) (store.AuthCode, store.Person, error) {
		var c store.AuthCode
		var p store.Person
		err := s.Tx(ctx(), func(tx store.Store) error {
			var err error
			if c, p, err = tx.UseAuthCodeGuardPerson(ctx(), []byte(hash), t0); err != nil || refuse {
				return err
			}
			g := grant(grantID)
			if err := tx.CreateGrant(ctx(), g); err != nil {
				return err
			}
			return tx.SetAuthCodeGrant(ctx(), []byte(hash), grantID)
		})
		return c, p, err
	}
	c, p, err := exchange("c1", "g1", false)
	if err != nil {
		t.Fatal(err)
	}
	want := code("c1")
	want.UsedAt = t0.UTC()
	if d := cmp.Diff(want, c); d != "" {
		t.Errorf("code (-want +got):\n%s", d)
	}
	if d := cmp.Diff(wantP, p); d != "" {
		t.Errorf("person (-want +got):\n%s", d)
	}
	want.GrantID = "g1"
	if got, _, err := s.GetAuthCodePerson(ctx(), []byte("c1")); err != nil || cmp.Diff(want, got) != "" {
		t.Errorf("GetAuthCodePerson after the exchange: %+v, %v; want %+v", got, err, want)
	}
	if got, err := s.UseAuthCode(ctx(), []byte("c1"), t0); !errors.Is(err, store.ErrConflict) || got.GrantID != "g1" {
		t.Errorf("after the exchange: %+v, %v; want the code with grant g1 and ErrConflict", got, err)
	}
	if _, _, err := exchange("c1", "g1-again", false); !errors.Is(err, store.ErrConflict) {
		t.Errorf("second exchange: %v, want ErrConflict", err)
	}
	if _, err := s.GetGrant(ctx(), "g1-again"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("the second exchange's grant: %v, want none", err)
	}
	if _, _, err := exchange("c-refused", "", true); err != nil {
		t.Fatal(err)
	}
	if got, err := s.UseAuthCode(ctx(), []byte("c-refused"), t0); !errors.Is(err, store.ErrConflict) || got.GrantID != "" {
		t.Errorf("after a refused exchange: %+v, %v; want the code used, without a grant", got, err)
	}
	if c, p, err := exchange("c-gone", "", true); err != nil || c.Subject != "p-gone" || p.ID != "" {
		t.Errorf("code of a person gone: %q, person %q, %v; want the code and no person", c.Subject, p.ID, err)
	}
	if _, err := s.UseAuthCode(ctx(), []byte("c-gone"), t0); !errors.Is(err, store.ErrConflict) {
		t.Errorf("the code of a person gone was not used: %v", err)
	}
	if _, _, err := exchange("nope", "", true); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("unknown code: %v", err)
	}
	var n atomic.Int32
	wins := race(t, 20, func() error {
		_, _, err := exchange("c-race", fmt.Sprintf("g-race-%d", n.Add(1)), false)
		return err
	}, store.ErrConflict)
	if wins != 1 {
		t.Errorf("%d of 20 concurrent exchanges of one code committed, want 1", wins)
	}
	got, err := s.UseAuthCode(ctx(), []byte("c-race"), t0)
	if !errors.Is(err, store.ErrConflict) {
		t.Fatalf("after the race: %v", err)
	}
	if _, err := s.GetGrant(ctx(), got.GrantID); err != nil {
		t.Errorf("the code's grant %q: %v", got.GrantID, err)
	}
	for i := 1; i <= 20; i++ {
		id := fmt.Sprintf("g-race-%d", i)
		if _, err := s.GetGrant(ctx(), id); err == nil && id != got.GrantID {
			t.Errorf("grant %s of a losing exchange was stored", id)
		}
	}
}

// eventRef is ev as SpendTokenUse takes it.
func eventRef(ev store.Event) *store.Event { return &ev }
