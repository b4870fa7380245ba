package storetest

import (
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/latchkey/latchkey/internal/store"
)

func federationState(hash string) store.FederationState {
	return store.FederationState{Hash: []byte(hash), Kind: store.FederationLogin, RequestID: "r1", MethodID: "corp",
		Browser: []byte("browser"), CreatedAt: t0.UTC(), ExpiresAt: t0.Add(10 * time.Minute).UTC()}
}

func testFederationStates(t *testing.T, s store.Store) {
	st := federationState("f1")
	if err := s.CreateFederationState(ctx(), st); err != nil {
		t.Fatal(err)
	}
	if err := s.CreateFederationState(ctx(), st); !errors.Is(err, store.ErrConflict) {
		t.Errorf("a taken hash: %v, want ErrConflict", err)
	}
	// Expired at now: refused, and not removed by the refusal's clock.
	if _, err := s.TakeFederationState(ctx(), []byte("f1"), t0.Add(10*time.Minute)); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("take at expiry: %v, want ErrNotFound", err)
	}
	got, err := s.TakeFederationState(ctx(), []byte("f1"), t0)
	if err != nil || !cmp.Equal(st, got) {
		t.Fatalf("take: %v (-want +got):\n%s", err, cmp.Diff(st, got))
	}
	if _, err := s.TakeFederationState(ctx(), []byte("f1"), t0); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("second take: %v, want ErrNotFound (single use)", err)
	}
	logout := federationState("f2")
	logout.Kind, logout.RequestID, logout.Target = store.FederationLogout, "", "https://app.example/bye"
	if err := s.CreateFederationState(ctx(), logout); err != nil {
		t.Fatal(err)
	}
	if n, err := s.DeleteExpired(ctx(), t0.Add(11*time.Minute)); err != nil || n < 1 {
		t.Errorf("DeleteExpired: %d, %v; want the expired state removed", n, err)
	}
	if _, err := s.TakeFederationState(ctx(), []byte("f2"), t0); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("take after DeleteExpired: %v, want ErrNotFound", err)
	}
}

func testFindIdentity(t *testing.T, s store.Store) {
	if err := s.CreatePerson(ctx(), person("p1", "jane@example.com")); err != nil {
		t.Fatal(err)
	}
	link := store.ExternalIdentity{IdPID: "corp", ExternalID: "sub-1", PersonID: "p1", CreatedAt: t0.UTC()}
	if err := s.LinkIdentity(ctx(), link); err != nil {
		t.Fatal(err)
	}
	got, err := s.FindIdentity(ctx(), "", "corp", "sub-1")
	if err != nil || !cmp.Equal(link, got) {
		t.Errorf("find: %v (-want +got):\n%s", err, cmp.Diff(link, got))
	}
	for _, k := range [][3]string{{"", "corp", "SUB-1"}, {"", "other", "sub-1"}, {"p2", "corp", "sub-1"}} {
		if _, err := s.FindIdentity(ctx(), k[0], k[1], k[2]); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("find %q: %v, want ErrNotFound (exact key)", k, err)
		}
		if err := s.SetIdentityAttributes(ctx(), k[0], k[1], k[2], map[string]string{"a": "b"}); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("set attributes of %q: %v, want ErrNotFound (exact key)", k, err)
		}
	}
}

// An identity's attributes (what the upstream said that no mapping took)
// round-trip apart from the person's custom attributes: written with the
// link, replaced by SetIdentityAttributes, kept by the same link again.
func testIdentityAttributes(t *testing.T, s store.Store) {
	p := person("p1", "jane@example.com")
	p.Custom = map[string]string{"tier": "gold"}
	if err := s.CreatePerson(ctx(), p); err != nil {
		t.Fatal(err)
	}
	link := store.ExternalIdentity{IdPID: "corp", ExternalID: "sub-1", PersonID: "p1", CreatedAt: t0.UTC(),
		Attributes: map[string]string{"display_name": "Upstream's own", "department": "R&D", "note": "ünïcode \"quoted\""}}
	if err := s.LinkIdentity(ctx(), link); err != nil {
		t.Fatal(err)
	}
	got, err := s.FindIdentity(ctx(), "", "corp", "sub-1")
	if err != nil || !cmp.Equal(link, got) {
		t.Errorf("find: %v (-want +got):\n%s", err, cmp.Diff(link, got))
	}
	again := link
	again.Attributes = map[string]string{"other": "x"}
	if err := s.LinkIdentity(ctx(), again); err != nil {
		t.Fatal(err)
	}
	if got, _ := s.FindIdentity(ctx(), "", "corp", "sub-1"); !cmp.Equal(link, got) {
		t.Errorf("the same link again changed the attributes (-want +got):\n%s", cmp.Diff(link, got))
	}
	link.Attributes = map[string]string{"department": "Ops"}
	if err := s.SetIdentityAttributes(ctx(), "", "corp", "sub-1", link.Attributes); err != nil {
		t.Fatal(err)
	}
	ids, err := s.ListIdentities(ctx(), "p1")
	if err != nil || len(ids) != 1 || !cmp.Equal(link, ids[0]) {
		t.Errorf("list after set: %v, %v; want %v", ids, err, link)
	}
	if err := s.SetIdentityAttributes(ctx(), "", "corp", "sub-1", nil); err != nil {
		t.Fatal(err)
	}
	if got, _ := s.FindIdentity(ctx(), "", "corp", "sub-1"); got.Attributes != nil {
		t.Errorf("attributes after clearing: %v, want nil", got.Attributes)
	}
	if got, _ := s.GetPerson(ctx(), "p1"); !cmp.Equal(p.Custom, got.Custom) {
		t.Errorf("the person's custom attributes %v, want %v untouched", got.Custom, p.Custom)
	}
}

func testSessionUpstream(t *testing.T, s store.Store) {
	se := store.Session{Hash: []byte("s1"), PersonID: "p1", AuthLevel: 1, AMR: []string{"FEDERATED"}, AuthTime: t0.UTC(),
		ExpiresAt: t0.Add(time.Hour).UTC(), IdPID: "corp", UpstreamIDToken: []byte("sealed id token")}
	if err := s.CreateSession(ctx(), se); err != nil {
		t.Fatal(err)
	}
	got, err := s.GetSession(ctx(), []byte("s1"))
	if err != nil || !cmp.Equal(se, got) {
		t.Fatalf("round trip: %v (-want +got):\n%s", err, cmp.Diff(se, got))
	}
	// A step-up keeps the upstream of the session.
	if err := s.UpdateSession(ctx(), []byte("s1"), func(x store.Session) (store.Session, error) {
		x.AuthLevel = 2
		return x, nil
	}); err != nil {
		t.Fatal(err)
	}
	if got, _ := s.GetSession(ctx(), []byte("s1")); got.IdPID != "corp" || string(got.UpstreamIDToken) != "sealed id token" {
		t.Errorf("after update: %+v, want the upstream kept", got)
	}
}

func testFederationStateRace(t *testing.T, s store.Store) {
	if err := s.CreateFederationState(ctx(), federationState("race")); err != nil {
		t.Fatal(err)
	}
	const n = 8
	var wg sync.WaitGroup
	var mu sync.Mutex
	won := 0
	for range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err := s.TakeFederationState(ctx(), []byte("race"), t0)
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err == nil:
				won++
			case !errors.Is(err, store.ErrNotFound):
				t.Errorf("take: %v", err)
			}
		}()
	}
	wg.Wait()
	if won != 1 {
		t.Errorf("%d of %d concurrent takes succeeded, want exactly 1", won, n)
	}
}
