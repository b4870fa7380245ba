package storetest

import (
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/latchkey/latchkey/internal/store"
)

func fullClient(id string) store.Client {
	return store.Client{
		ID: id, SecretHash: []byte{1, 2, 3, 0, 255}, SecretPHC: "$argon2id$v=19$m=1,t=1,p=1$c2FsdA$aGFzaA",
		Name: "Web App", TokenEndpointAuthMethod: "client_secret_basic", JWKS: []byte(`{"keys":[]}`),
		JWKSURI: "https://app.example/jwks", RedirectURIs: []string{"https://app.example/cb", "https://app.example/cb2"},
		GrantTypes: []string{"authorization_code", "refresh_token"}, Scopes: []string{"read", "write"},
		ConsentRequired: true, AllowPlainPKCE: true, AccessTokenLifetime: 15 * time.Minute,
		RefreshTokenLifetime: 720*time.Hour + time.Nanosecond, AppIdentifier: "com.example.app",
		AppPlatform: "ios", AppVersion: "1.2.3", IntrospectAnyToken: true, DeviceApprovalClients: []string{"tv", "console"},
		PostLogoutRedirectURIs: []string{"https://app.example/bye"}, AccessTokenFormat: "jwt",
		RegistrationHash: []byte{9, 8, 7},
	}
}

var ignoreStamps = cmpopts.IgnoreFields(store.Client{}, "CreatedAt", "UpdatedAt", "Revision")

func testClientRoundTrip(t *testing.T, s store.Store) {
	for _, want := range []store.Client{fullClient("full"), {ID: "bare", TokenEndpointAuthMethod: "none"}} {
		if err := s.UpsertClient(ctx(), want); err != nil {
			t.Fatal(err)
		}
		got, err := s.GetClient(ctx(), want.ID)
		if err != nil {
			t.Fatal(err)
		}
		if d := cmp.Diff(want, got, ignoreStamps); d != "" {
			t.Errorf("client %s round trip (-want +got):\n%s", want.ID, d)
		}
		if got.CreatedAt.IsZero() || got.CreatedAt.Location() != time.UTC {
			t.Errorf("CreatedAt = %v, want a UTC time", got.CreatedAt)
		}
	}
}

func testClientUpsert(t *testing.T, s store.Store) {
	c := fullClient("c1")
	if err := s.UpsertClient(ctx(), c); err != nil {
		t.Fatal(err)
	}
	first, _ := s.GetClient(ctx(), "c1")
	time.Sleep(2 * time.Millisecond)
	c.Name, c.Scopes = "Renamed", []string{"read"}
	if err := s.UpsertClient(ctx(), c); err != nil {
		t.Fatal(err)
	}
	second, err := s.GetClient(ctx(), "c1")
	if err != nil {
		t.Fatal(err)
	}
	if second.Name != "Renamed" || !cmp.Equal(second.Scopes, []string{"read"}) {
		t.Errorf("upsert did not replace fields: %+v", second)
	}
	if !second.CreatedAt.Equal(first.CreatedAt) || !second.UpdatedAt.After(first.UpdatedAt) {
		t.Errorf("CreatedAt must stay and UpdatedAt move: first %v/%v second %v/%v",
			first.CreatedAt, first.UpdatedAt, second.CreatedAt, second.UpdatedAt)
	}
}

func testClientNotFound(t *testing.T, s store.Store) {
	if _, err := s.GetClient(ctx(), "nope"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("GetClient = %v, want ErrNotFound", err)
	}
	if _, err := s.DeleteClient(ctx(), "nope", t0); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("DeleteClient = %v, want ErrNotFound", err)
	}
}

func testClientList(t *testing.T, s store.Store) {
	for _, id := range []string{"b", "a", "c"} {
		if err := s.UpsertClient(ctx(), store.Client{ID: id, TokenEndpointAuthMethod: "none"}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := s.DeleteClient(ctx(), "c", t0); err != nil {
		t.Fatal(err)
	}
	cs, err := s.ListClients(ctx())
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, c := range cs {
		ids = append(ids, c.ID)
	}
	if !cmp.Equal(ids, []string{"a", "b"}) {
		t.Errorf("ListClients = %v, want [a b] in order", ids)
	}
}

func testAssertionIDs(t *testing.T, s store.Store) {
	exp := t0.Add(5 * time.Minute)
	if err := s.UseAssertionID(ctx(), "c1", "j1", exp, t0); err != nil {
		t.Fatalf("first use: %v", err)
	}
	if err := s.UseAssertionID(ctx(), "c1", "j1", exp, t0.Add(time.Minute)); !errors.Is(err, store.ErrConflict) {
		t.Errorf("replay = %v, want ErrConflict", err)
	}
	if err := s.UseAssertionID(ctx(), "c2", "j1", exp, t0); err != nil {
		t.Errorf("the same jti of another client: %v", err)
	}
	if err := s.UseAssertionID(ctx(), "c1", "j1", exp.Add(time.Hour), exp.Add(time.Second)); err != nil {
		t.Errorf("a jti whose record expired can be recorded again: %v", err)
	}
}

func testAssertionIDRace(t *testing.T, s store.Store) {
	wins := race(t, 20, func() error { return s.UseAssertionID(ctx(), "c1", "jti", t0.Add(time.Minute), t0) }, store.ErrConflict)
	if wins != 1 {
		t.Errorf("%d of 20 concurrent uses of one jti succeeded, want 1", wins)
	}
}

func testUpsertClientRace(t *testing.T, s store.Store) {
	wins := race(t, 10, func() error { return s.UpsertClient(ctx(), fullClient("same")) }, nil)
	if wins != 10 {
		t.Errorf("%d of 10 concurrent upserts succeeded, want all", wins)
	}
	cs, err := s.ListClients(ctx())
	if err != nil || len(cs) != 1 {
		t.Errorf("ListClients = %d clients, %v; want 1", len(cs), err)
	}
}

// race runs fn n times at once and counts nil results. Errors other than
// allowed fail the test.
func race(t *testing.T, n int, fn func() error, allowed error) int {
	t.Helper()
	var wg sync.WaitGroup
	var mu sync.Mutex
	wins := 0
	start := make(chan struct{})
	for range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			err := fn()
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err == nil:
				wins++
			case allowed != nil && errors.Is(err, allowed):
			default:
				t.Errorf("unexpected error: %v", err)
			}
		}()
	}
	close(start)
	wg.Wait()
	return wins
}
