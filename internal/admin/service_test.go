package admin_test

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/latchkey/latchkey/internal/admin"
	"github.com/latchkey/latchkey/internal/client"
	"github.com/latchkey/latchkey/internal/events"
	"github.com/latchkey/latchkey/internal/store"
	"github.com/latchkey/latchkey/internal/store/sqlite"
	"github.com/latchkey/latchkey/internal/token"
)

// newService is the admin rules on a fresh SQLite store, with one config
// file client ("file").
func newService(t *testing.T) *admin.Service {
	t.Helper()
	st, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "admin.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	h, err := token.NewHasher(make([]byte, 32))
	if err != nil {
		t.Fatal(err)
	}
	file := store.Client{ID: "file", TokenEndpointAuthMethod: client.AuthNone}
	return &admin.Service{Store: client.NewStatic(st, []store.Client{file}), Secrets: h, Events: events.NewRecorder(), Now: time.Now}
}

var op = admin.Actor{Name: "ops"}

// TestReplaceKeepsOrMakesTheSecret: an update keeps the stored secret while
// the method uses one, drops it when the method no longer does, makes one
// when the method newly needs one, and takes a PHC hash instead.
func TestReplaceKeepsOrMakesTheSecret(t *testing.T) {
	ctx := context.Background()
	svc := newService(t)
	cc := []string{client.GrantClientCredentials}
	_, secret, err := svc.CreateClient(ctx, op, admin.ClientInput{ClientID: "c", TokenEndpointAuthMethod: client.AuthClientSecretBasic, GrantTypes: cc})
	if err != nil || secret == "" {
		t.Fatalf("create: %q %v", secret, err)
	}
	stored := func() store.Client {
		c, err := svc.Store.GetClient(ctx, "c")
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	first := stored().SecretHash
	for _, tc := range []struct {
		name      string
		in        admin.ClientInput
		newSecret bool
		check     func(store.Client) bool
	}{
		{"the method still uses a secret: kept", admin.ClientInput{TokenEndpointAuthMethod: client.AuthClientSecretPost, GrantTypes: cc}, false,
			func(c store.Client) bool { return string(c.SecretHash) == string(first) }},
		{"a public client: dropped", admin.ClientInput{TokenEndpointAuthMethod: client.AuthNone, RedirectURIs: []string{"https://a.example/cb"}}, false,
			func(c store.Client) bool { return c.SecretHash == nil && c.SecretPHC == "" }},
		{"confidential again: a new one", admin.ClientInput{TokenEndpointAuthMethod: client.AuthClientSecretBasic, GrantTypes: cc}, true,
			func(c store.Client) bool { return c.SecretHash != nil && string(c.SecretHash) != string(first) }},
		{"a PHC hash instead", admin.ClientInput{TokenEndpointAuthMethod: client.AuthClientSecretBasic, GrantTypes: cc,
			ClientSecretHash: "$argon2id$v=19$m=1,t=1,p=1$c2FsdA$aGFzaA"}, false,
			func(c store.Client) bool { return c.SecretHash == nil && c.SecretPHC != "" }},
	} {
		_, secret, err := svc.ReplaceClient(ctx, op, "c", 0, tc.in)
		if err != nil || (secret != "") != tc.newSecret || !tc.check(stored()) {
			t.Errorf("%s: secret %q, %v, stored %+v", tc.name, secret, err, stored())
		}
	}
	if _, _, err := svc.ReplaceClient(ctx, op, "c", 1, admin.ClientInput{TokenEndpointAuthMethod: client.AuthNone,
		RedirectURIs: []string{"https://a.example/cb"}}); !errors.Is(err, admin.ErrChangedSinceRevision) {
		t.Errorf("a stale revision: %v", err)
	}
	_, _, err = svc.ReplaceClient(ctx, op, "file", 0, admin.ClientInput{})
	if !errors.Is(err, admin.ErrReadOnly) {
		t.Errorf("a config file client: %v", err)
	}
	if _, err := svc.DeleteClient(ctx, op, "c", 99); !errors.Is(err, admin.ErrChangedSinceRevision) {
		t.Errorf("a delete at a stale revision: %v", err)
	}
	if _, err := svc.GetClient(ctx, "c"); err != nil {
		t.Errorf("a refused delete deleted: %v", err)
	}
}

func TestRotateNeedsASecretMethod(t *testing.T) {
	ctx := context.Background()
	svc := newService(t)
	if _, _, err := svc.CreateClient(ctx, op, admin.ClientInput{ClientID: "spa", RedirectURIs: []string{"https://a.example/cb"}}); err != nil {
		t.Fatal(err)
	}
	var ie *admin.InvalidError
	if _, _, err := svc.RotateSecret(ctx, op, "spa", 0); !errors.As(err, &ie) || ie.Field != "token_endpoint_auth_method" {
		t.Errorf("rotating a public client's secret: %v", err)
	}
	if _, _, err := svc.RotateSecret(ctx, op, "nope", 0); !errors.Is(err, admin.ErrNotFound) {
		t.Errorf("an unknown client: %v", err)
	}
}

// TestErasureHook: the notification hook runs in the erasing transaction
// with the person as they were; its failure undoes the erasure.
func TestErasureHook(t *testing.T) {
	ctx := context.Background()
	svc := newService(t)
	p := store.Person{ID: "p1", Email: "ann@example.org", FirstName: "Ann", Status: "ACTIVATED"}
	if err := svc.Store.CreatePerson(ctx, p); err != nil {
		t.Fatal(err)
	}
	boom := errors.New("mail refused")
	var told store.Person
	svc.AccountRemoved = func(_ context.Context, tx store.Store, got store.Person) error {
		told = got
		return boom
	}
	if _, err := svc.ErasePerson(ctx, op, "p1"); !errors.Is(err, boom) {
		t.Fatalf("erase with a failing hook: %v", err)
	}
	if told.Email != p.Email {
		t.Errorf("the hook was told %+v", told)
	}
	if _, err := svc.Store.GetPerson(ctx, "p1"); err != nil {
		t.Errorf("a failed hook did not undo the erasure: %v", err)
	}
	svc.AccountRemoved = func(context.Context, store.Store, store.Person) error { return nil }
	if _, err := svc.ErasePerson(ctx, op, "p1"); err != nil {
		t.Fatal(err)
	}
	if _, err := svc.Store.GetPerson(ctx, "p1"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("after the erasure: %v", err)
	}
	if _, err := svc.ErasePerson(ctx, op, "p1"); !errors.Is(err, admin.ErrNotFound) {
		t.Errorf("erasing again: %v", err)
	}
}

// TestRegistrationRules: what a registration may not ask for, without HTTP.
func TestRegistrationRules(t *testing.T) {
	ctx := context.Background()
	svc := newService(t)
	svc.Registration = admin.Registration{Enabled: true}
	for _, id := range []string{"read", "vendor_api_config"} {
		if err := svc.Store.CreateScope(ctx, store.Scope{ID: id}); err != nil {
			t.Fatal(err)
		}
	}
	cc := []string{client.GrantClientCredentials}
	for _, tc := range []struct {
		name string
		m    admin.Metadata
		code string // "" registers
	}{
		{"a configured scope", admin.Metadata{GrantTypes: cc, Scope: "read"}, ""},
		{"an admin scope", admin.Metadata{GrantTypes: cc, Scope: "read vendor_api_config"}, "invalid_client_metadata"},
		{"the password grant", admin.Metadata{GrantTypes: []string{client.GrantPassword}}, "invalid_client_metadata"},
		{"a public client of client credentials", admin.Metadata{GrantTypes: cc, TokenEndpointAuthMethod: client.AuthNone}, "invalid_client_metadata"},
		{"the code flow without a redirect URI", admin.Metadata{}, "invalid_redirect_uri"},
		{"the token response type", admin.Metadata{ResponseTypes: []string{"token"}, RedirectURIs: []string{"https://a.example/cb"}}, "invalid_client_metadata"},
	} {
		reg, err := svc.Register(ctx, op.Facts, "", tc.m)
		var me *admin.MetadataError
		switch {
		case tc.code == "" && err != nil:
			t.Errorf("%s: %v", tc.name, err)
		case tc.code == "" && (reg.Secret == "" || reg.Token == "" || reg.Client.ConsentRequired != true):
			t.Errorf("%s: %+v", tc.name, reg)
		case tc.code != "" && (!errors.As(err, &me) || me.Code != tc.code):
			t.Errorf("%s: %v, want %s", tc.name, err, tc.code)
		}
	}
	svc.Registration.InitialAccessToken = "the-initial-access-token"
	if _, err := svc.Register(ctx, op.Facts, "guess", admin.Metadata{GrantTypes: cc}); !errors.Is(err, admin.ErrBadToken) {
		t.Errorf("a wrong initial access token: %v", err)
	}
}

// An email written in fullwidth or other compatibility characters would
// look like another person's address: PATCH refuses it (400 at its
// member), as email and in email_addresses, and changes nothing.
func TestPatchRefusesLookAlikeAddresses(t *testing.T) {
	const p1 = "0b7e2a4c-1d6f-4e8a-9c3b-5a2d7f1e6b90"
	s := newService(t)
	ctx := context.Background()
	if err := s.Store.CreatePerson(ctx, store.Person{ID: p1, Email: "case@example.com", Status: "ACTIVATED"}); err != nil {
		t.Fatal(err)
	}
	look := "\uff43ase@example.com" // NFKC: case@example.com
	for _, tc := range []struct {
		field string
		patch admin.PersonPatch
	}{
		{"email", admin.PersonPatch{Email: &look}},
		{"email_addresses", admin.PersonPatch{EmailAddresses: &[]store.ContactPoint{{Value: look, Primary: true}}}},
	} {
		_, _, err := s.PatchPerson(ctx, op, p1, tc.patch)
		var ie *admin.InvalidError
		if !errors.As(err, &ie) || ie.Field != tc.field || !strings.Contains(ie.Msg, "compatibility characters") {
			t.Errorf("%s %q: %v, want a clear 400 at %s", tc.field, look, err, tc.field)
		}
	}
	if p, _ := s.Store.GetPerson(ctx, p1); p.Email != "case@example.com" || len(p.Profile.Emails) != 0 {
		t.Errorf("the person changed: %+v", p)
	}
}
