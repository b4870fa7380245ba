package oauth_test

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"testing"
	"time"

	"github.com/latchkey/latchkey/internal/cimconfig"
	"github.com/latchkey/latchkey/internal/config"
	"github.com/latchkey/latchkey/internal/events"
	"github.com/latchkey/latchkey/internal/federation"
	"github.com/latchkey/latchkey/internal/oauth"
	"github.com/latchkey/latchkey/internal/request"
	"github.com/latchkey/latchkey/internal/server/servertest"
	"github.com/latchkey/latchkey/internal/store"
	"github.com/latchkey/latchkey/internal/token"
)

// newFederation is a federation service on the store and configuration of s.
func newFederation(t *testing.T, s *servertest.Server) *federation.Service {
	t.Helper()
	h, err := token.NewHasher(servertest.Key)
	if err != nil {
		t.Fatal(err)
	}
	return &federation.Service{Store: s.Store, Config: s.App.Journeys().Config, Identity: s.App.Journeys().Identity,
		Hasher: h, Events: events.NewRecorder(), Issuer: s.URL, HTTP: &http.Client{Timeout: 5 * time.Second},
		PasswordLevel: 1, Now: time.Now, Log: slog.New(slog.NewTextHandler(io.Discard, nil))}
}

func strp(s string) *string { return &s }

// released are the three places the claims of person p are released,
// built as the server builds them: introspection's user_details (the
// user_details mapping; no web hook is configured), UserInfo and the ID
// token, for scopes.
func released(t *testing.T, s *servertest.Server, p store.Person, scopes []string) map[string]map[string]any {
	t.Helper()
	svc := s.App.OAuth()
	details := svc.MappedAttributes(p)
	userinfo := oauth.PersonClaims(p, details, scopes)
	userinfo["sub"] = p.ID // as UserInfo answers
	idt, err := svc.IDTokenClaimsOver(p, details, scopes)
	if err != nil {
		t.Fatal(err)
	}
	return map[string]map[string]any{"user_details": details, "userinfo": userinfo, "id_token": idt}
}

// The probe of issue 59: a login method maps family_name to display_name,
// and the upstream sends a display_name (and first_name, name) of its own.
// The person shows the mapped value; user_details, UserInfo and the ID
// token release exactly that, and the upstream's own claim reaches none of
// them — at creation and at a synchronising sign-in.
func TestMappedAttributesWinOverUpstreamClaims(t *testing.T) {
	for _, backend := range servertest.Backends {
		t.Run(backend, func(t *testing.T) {
			s := servertest.Start(t, &config.Config{}, servertest.Options{Backend: backend})
			fed := newFederation(t, s)
			on := true
			m := federation.Method{ID: "partner", Name: "Partner", Type: federation.TypeOIDC, LoginMethod: cimconfig.LoginMethod{
				AutoActivationEnabled: &on, SynchroniseAttributes: &on,
				AttributeMappings: []cimconfig.AttributeMapping{{ID: strp("a1"), MapTo: strp("display_name"), MapFrom: strp("family_name")}}}}
			const shadow = "Shadow From Upstream"
			up := federation.Upstream{Subject: "up-ada", EmailVerified: true, Attributes: map[string]any{
				"email": "ada@example.com", "given_name": "Ada", "family_name": "Lovelace", "name": "Ada Lovelace",
				"display_name": shadow, "first_name": shadow, "last_name": shadow, "email_verified": true}}
			ctx := context.Background()
			for _, round := range []string{"creation", "synchronising sign-in"} {
				if round != "creation" {
					up.Attributes["family_name"] = "Byron"
				}
				out, err := fed.SignIn(ctx, request.Facts{}, m, up)
				if err != nil {
					t.Fatalf("%s: %v", round, err)
				}
				p, err := s.Store.GetPerson(ctx, out.Person.ID)
				if err != nil {
					t.Fatal(err)
				}
				want := up.Attributes["family_name"]
				if p.Profile.DisplayName != want || p.FirstName != "Ada" || p.LastName != want || p.Custom != nil {
					t.Fatalf("%s: person %+v, want display name %q from the mapping and no custom attributes", round, p, want)
				}
				// The upstream's own claims are kept apart, on the identity.
				link, err := s.Store.FindIdentity(ctx, "", "partner", "up-ada")
				if err != nil || link.Attributes["display_name"] != shadow || link.Attributes["name"] != "Ada Lovelace" {
					t.Errorf("%s: the identity keeps %v, %v; want the upstream's display_name and name", round, link.Attributes, err)
				}
				for place, claims := range released(t, s, p, []string{"openid", "profile", "email"}) {
					if claims["display_name"] != want {
						t.Errorf("%s: %s display_name = %v, want the mapped %q", round, place, claims["display_name"], want)
					}
					if claims["first_name"] != "Ada" {
						t.Errorf("%s: %s first_name = %v, want the profile's Ada", round, place, claims["first_name"])
					}
					if place != "user_details" && claims["name"] != want {
						t.Errorf("%s: %s name = %v, want the profile's display name %q", round, place, claims["name"], want)
					}
					for k, v := range claims {
						if v == shadow {
							t.Errorf("%s: %s releases the upstream's own claim as %s", round, place, k)
						}
					}
				}
			}
		})
	}
}

// A custom attribute is released under no reserved name, whoever wrote it
// (an upstream, the import API, the admin API: here the store itself) and
// whatever the mapping says — these Details bypass config.Load, which
// refuses such a mapping. Each reserved name is tried as a custom
// attribute's key in user_details and as a custom attribute's own name;
// the released value is always the profile's or the protocol's, or none.
func TestCustomAttributesNeverProduceReservedClaims(t *testing.T) {
	const evil = "EVIL"
	reserved := []string{"iss", "sub", "aud", "exp", "nbf", "iat", "jti", "auth_time", "nonce", "acr", "amr", "azp",
		"at_hash", "c_hash", "sid", "cnf", "client_id", "scope", "urn:vendor.com:oidc:group_policies", "group_permissions",
		"name", "given_name", "family_name", "email", "email_verified", "phone_number", "phone_number_verified", "address",
		"updated_at", "locale", "gender", "birthdate", "preferred_username", "picture",
		"id", "first_name", "last_name", "display_name", "status"}
	p := store.Person{ID: "p-1", Email: "jane@example.com", FirstName: "Jane", LastName: "Doe", Status: "ACTIVATED",
		UpdatedAt: time.Unix(1700000000, 0), Profile: store.PersonProfile{DisplayName: "Jane D.",
			Emails: []store.ContactPoint{{Value: "jane@example.com", Primary: true, Verified: true}}}}
	p.Custom = map[string]string{"evil": evil, "tier": "gold"}
	for _, name := range reserved {
		p.Custom[name] = evil // a custom attribute named like the claim
	}
	scopes := []string{"openid", "profile", "email", "phone", "address"}
	for _, name := range reserved {
		t.Run(name, func(t *testing.T) {
			mapping := map[string]string{"email": "email", "first_name": "first_name", "last_name": "last_name",
				"display_name": "display_name", "custom.evil": name, "custom." + name: name, "custom.tier": "tier"}
			svc := &oauth.Service{Issuer: "https://login.example", Details: oauth.Details{UserDetails: mapping}}
			details := svc.MappedAttributes(p)
			userinfo := oauth.PersonClaims(p, details, scopes)
			idt, err := svc.IDTokenClaimsOver(p, details, scopes)
			if err != nil {
				t.Fatal(err)
			}
			for place, claims := range map[string]map[string]any{"user_details": details, "userinfo": userinfo, "id_token": idt} {
				for k, v := range claims {
					if v == evil {
						t.Errorf("%s releases a custom attribute as %q", place, k)
					}
				}
				if claims["tier"] != "gold" {
					t.Errorf("%s tier = %v: a custom attribute under a name of its own is released", place, claims["tier"])
				}
				if claims["display_name"] != "Jane D." || claims["email"] != "jane@example.com" {
					t.Errorf("%s display_name %v, email %v: want the profile's", place, claims["display_name"], claims["email"])
				}
			}
			if idt["iss"] != "https://login.example" || idt["sub"] != p.ID || idt["aud"] != "web" || idt["nonce"] != "nonce-of-the-request" {
				t.Errorf("ID token protocol claims %v", idt)
			}
		})
	}
}

// A web hook's or a cached grant's details never carry a protocol claim
// into UserInfo or the ID token, and the standard claims of the scopes are
// the profile's, over any detail of that name.
func TestPersonClaimsProfileAndProtocolWin(t *testing.T) {
	p := store.Person{ID: "p-1", Email: "jane@example.com", FirstName: "Jane", LastName: "Doe",
		Profile: store.PersonProfile{DisplayName: "Jane D."}}
	details := map[string]any{"name": "hook", "email": "hook@example.com", "nonce": "hook", "amr": []string{"hook"},
		"sid": "hook", "cnf": "hook", "loyalty": "gold"}
	got := oauth.PersonClaims(p, details, []string{"openid", "profile", "email"})
	want := map[string]any{"name": "Jane D.", "given_name": "Jane", "family_name": "Doe", "email": "jane@example.com",
		"email_verified": false, "loyalty": "gold"}
	if len(got) != len(want) {
		t.Errorf("claims %v, want %v", got, want)
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s = %v, want %v", k, got[k], v)
		}
	}
	// Without the scope, a detail of a standard name is the operator's
	// mapping (of a profile attribute) or the hook's: it stays.
	if got := oauth.PersonClaims(p, details, []string{"openid"}); got["email"] != "hook@example.com" || got["nonce"] != nil {
		t.Errorf("openid alone: %v", got)
	}
}
