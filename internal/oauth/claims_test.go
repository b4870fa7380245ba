package oauth_test

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"maps"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"golang.org/x/oauth2"

	"github.com/latchkey/latchkey/internal/cimconfig"
	"github.com/latchkey/latchkey/internal/config"
	"github.com/latchkey/latchkey/internal/events"
	"github.com/latchkey/latchkey/internal/federation"
	"github.com/latchkey/latchkey/internal/oauth"
	"github.com/latchkey/latchkey/internal/openapicheck"
	"github.com/latchkey/latchkey/internal/password"
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

// releasedOverHTTP are the same three, answered by the server's endpoints:
// the person signs in with email and password through the hosted pages,
// client web exchanges the code for scopes, and its access token is sent
// to UserInfo and introspected by the resource server rs.
func releasedOverHTTP(t *testing.T, s *servertest.Server, email, pass string, scopes []string) map[string]map[string]any {
	t.Helper()
	oc := oauthConfig(s, "web", webSecret, oauth2.AuthStyleInHeader)
	oc.Scopes = scopes
	verifier := oauth2.GenerateVerifier()
	back := s.Authorize(t, s.Browser(), oc.AuthCodeURL("st", oauth2.S256ChallengeOption(verifier)), email, pass, "allow").Back
	tok, err := oc.Exchange(clientCtx(s), back.Query().Get("code"), oauth2.VerifierOption(verifier))
	if err != nil {
		t.Fatalf("exchange (back %s): %v", back, err)
	}
	raw, _ := tok.Extra("id_token").(string)
	info := bearerGet(t, s, "/oauth/userinfo", tok.AccessToken)
	if info.status != http.StatusOK {
		t.Fatalf("userinfo: %d %s", info.status, info.body)
	}
	r := introspect(t, s, tok.AccessToken, nil)
	details, ok := r.json["user_details"].(map[string]any)
	if r.status != http.StatusOK || !ok {
		t.Fatalf("introspection: %d %s", r.status, r.body)
	}
	return map[string]map[string]any{"user_details": details, "userinfo": info.json, "id_token": jwtClaims(t, raw)}
}

// setPassword gives person id a password, so the tests can sign in as a
// person a federated sign-in created.
func setPassword(t *testing.T, s *servertest.Server, id, pass string) {
	t.Helper()
	h, err := password.Hash(pass)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Store.UpdatePerson(t.Context(), id, func(p store.Person) (store.Person, error) {
		p.PasswordHash = h
		return p, nil
	}); err != nil {
		t.Fatal(err)
	}
}

// The probe of issue 59: a login method maps family_name to display_name,
// and the upstream sends a display_name (and first_name, name) of its own.
// The person shows the mapped value; user_details, UserInfo and the ID
// token release exactly that, and the upstream's own claim reaches none of
// them — at creation and at a synchronising sign-in; built as the server
// builds them, and answered by the server's own endpoints.
func TestMappedAttributesWinOverUpstreamClaims(t *testing.T) {
	for _, backend := range servertest.Backends {
		t.Run(backend, func(t *testing.T) {
			s := servertest.Start(t, introspectConfig(), servertest.Options{Backend: backend})
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
				if round == "creation" {
					setPassword(t, s, p.ID, personPass)
				}
				scopes := []string{"openid", "profile", "email"}
				views := released(t, s, p, scopes)
				for place, claims := range releasedOverHTTP(t, s, "ada@example.com", personPass, append(scopes, "read")) {
					views["endpoint "+place] = claims
				}
				for place, claims := range views {
					if claims["display_name"] != want {
						t.Errorf("%s: %s display_name = %v, want the mapped %q", round, place, claims["display_name"], want)
					}
					if claims["first_name"] != "Ada" {
						t.Errorf("%s: %s first_name = %v, want the profile's Ada", round, place, claims["first_name"])
					}
					if !strings.HasSuffix(place, "user_details") && claims["name"] != want {
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

// Custom attributes written through the person import API and the admin
// API, named like the claims they would shadow, never reach a released
// claim of that name: user_details (introspection), UserInfo and the ID
// token answer the profile's and the protocol's values, and a custom
// attribute only under the key the operator's user_details mapping gives
// it (here custom.display_name -> imported_display_name).
func TestWrittenCustomAttributesNeverShadowClaims(t *testing.T) {
	shadowed := []string{"display_name", "name", "email", "email_verified", "given_name", "family_name", "first_name",
		"last_name", "id", "status", "sub", "iss", "aud", "nonce", "amr", "acr", "sid", "auth_time", "group_permissions"}
	for _, backend := range servertest.Backends {
		t.Run(backend, func(t *testing.T) {
			cfg := introspectConfig()
			cfg.APIUsers = []config.APIUser{{Username: "admin", Password: apiPass}}
			cfg.Introspection.UserDetails = map[string]string{"email": "email", "first_name": "first_name", "last_name": "last_name",
				"display_name": "display_name", "id": "id", "status": "status", "custom.tier": "tier",
				"custom.display_name": "imported_display_name"}
			s := servertest.Start(t, cfg, servertest.Options{Backend: backend})
			jane, err := s.Store.GetPersonByEmail(t.Context(), "", personEmail)
			if err != nil {
				t.Fatal(err)
			}
			for _, writer := range []string{"import API", "admin API"} {
				shadow := "shadow by the " + writer
				custom := map[string]string{"tier": writer}
				for _, name := range shadowed {
					custom[name] = shadow
				}
				if writer == "import API" {
					var attrs []any
					for _, k := range slices.Sorted(maps.Keys(custom)) {
						attrs = append(attrs, map[string]any{"name": k, "value": custom[k]})
					}
					body, _ := json.Marshal(map[string]any{"persons": []any{map[string]any{"status": "ACTIVATED", "profile": map[string]any{
						"reference_id": jane.ID, "email_addresses": []any{map[string]any{"value": personEmail, "primary": true}},
						"name":              map[string]any{"first_name": "Jane", "last_name": "Doe", "display_name": "Jane D."},
						"custom_attributes": attrs}}}})
					if r := apiCall(t, s, http.MethodPost, "/api/import/persons", string(body)); r.status != http.StatusCreated ||
						len(r.json["failures"].([]any)) != 0 {
						t.Fatalf("import: %d %s", r.status, r.body)
					}
				} else {
					body, _ := json.Marshal(map[string]any{"custom_attributes": custom})
					if r := apiCall(t, s, http.MethodPatch, "/api/v1/persons/"+jane.ID, string(body)); r.status != http.StatusOK {
						t.Fatalf("admin API: %d %s", r.status, r.body)
					}
				}
				if p, _ := s.Store.GetPerson(t.Context(), jane.ID); !maps.Equal(p.Custom, custom) || p.Profile.DisplayName != "Jane D." {
					t.Fatalf("%s wrote %v (display name %q), want %v", writer, p.Custom, p.Profile.DisplayName, custom)
				}
				for place, claims := range releasedOverHTTP(t, s, personEmail, personPass, []string{"openid", "profile", "email", "read"}) {
					for k, v := range claims {
						if v == shadow && k != "imported_display_name" {
							t.Errorf("%s: %s releases a custom attribute as %q", writer, place, k)
						}
					}
					if claims["imported_display_name"] != shadow || claims["tier"] != writer {
						t.Errorf("%s: %s imported_display_name %v, tier %v: want the custom attributes under the mapping's keys",
							writer, place, claims["imported_display_name"], claims["tier"])
					}
					if claims["display_name"] != "Jane D." || claims["email"] != personEmail || claims["first_name"] != "Jane" ||
						claims["id"] != jane.ID || claims["status"] != "ACTIVATED" {
						t.Errorf("%s: %s %v: want the profile's display_name, email, first_name, id and status", writer, place, claims)
					}
					if place != "user_details" && (claims["sub"] != jane.ID || claims["name"] != "Jane D." || claims["given_name"] != "Jane") {
						t.Errorf("%s: %s sub %v, name %v, given_name %v: want the person's", writer, place, claims["sub"], claims["name"],
							claims["given_name"])
					}
				}
			}
		})
	}
}

// apiCall sends a JSON body to an API of the API user admin.
func apiCall(t *testing.T, s *servertest.Server, method, path, body string) answer {
	t.Helper()
	req, _ := http.NewRequest(method, s.URL+path, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.SetBasicAuth("admin", apiPass)
	resp, b := openapicheck.Do(t, s.Client(), req)
	a := answer{status: resp.StatusCode, header: resp.Header, body: string(b)}
	_ = json.Unmarshal(b, &a.json)
	return a
}
