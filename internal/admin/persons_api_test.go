package admin_test

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"golang.org/x/oauth2"

	"github.com/latchkey/latchkey/internal/config"
	"github.com/latchkey/latchkey/internal/server/servertest"
	"github.com/latchkey/latchkey/internal/store"
)

const (
	personEmail = "Zebulon.Quaxworth@example.org"
	personPass  = "correct horse battery staple"
	webSecret   = "web-secret-web-secret-web"
	redirect    = "https://web.example/cb"
	// browserAgent is the person's user agent: personal data the events
	// keep until the erasure.
	browserAgent = "ZebBrowser/9.9 (Quaxworth edition)"
)

// personalData are the values no stored row may hold after the erasure.
var personalData = []string{"zebulon", "quaxworth", "+31 6 98765432", "Quaxworthlaan", "Zwolle-Noord", "quaxy-the-bold",
	"ZebBrowser"}

func personsConfig() *config.Config {
	cfg := testConfig()
	no := false
	cfg.Clients = append(cfg.Clients, config.Client{ClientID: "web", ClientSecret: webSecret, RedirectURIs: []string{redirect},
		GrantTypes: []string{"authorization_code", "refresh_token"}, Scopes: []string{"read"}, ConsentRequired: &no})
	cfg.Persons = []config.Person{{Email: personEmail, Password: personPass, FirstName: "Zebulon", LastName: "Quaxworth"},
		{Email: "kept@example.org", Password: personPass, FirstName: "Kept", LastName: "Person"}}
	return cfg
}

// agentTransport sends every request with the person's user agent.
type agentTransport struct{ next http.RoundTripper }

func (a agentTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("User-Agent", browserAgent)
	return a.next.RoundTrip(r)
}

// signIn runs the code flow in a fresh browser of the person and returns
// the tokens: a login session, a grant, an access and a refresh token.
func signIn(t *testing.T, s *servertest.Server) *oauth2.Token {
	t.Helper()
	b := s.Browser()
	b.Transport = agentTransport{next: b.Transport}
	cfg := &oauth2.Config{ClientID: "web", ClientSecret: webSecret, RedirectURL: redirect, Scopes: []string{"read"},
		Endpoint: oauth2.Endpoint{AuthURL: s.URL + "/oauth/authorize", TokenURL: s.URL + "/oauth/token", AuthStyle: oauth2.AuthStyleInHeader}}
	verifier := oauth2.GenerateVerifier()
	back := s.Authorize(t, b, cfg.AuthCodeURL("st", oauth2.S256ChallengeOption(verifier)), personEmail, personPass, "allow").Back
	code := back.Query().Get("code")
	if code == "" {
		t.Fatalf("no code: %s", back)
	}
	ctx := context.WithValue(context.Background(), oauth2.HTTPClient, &http.Client{Transport: agentTransport{next: s.Client().Transport}})
	tok, err := cfg.Exchange(ctx, code, oauth2.VerifierOption(verifier))
	if err != nil {
		t.Fatal(err)
	}
	// Introspection with fresh user details caches them in the grant.
	req, _ := http.NewRequest("POST", s.URL+"/oauth/api/v2/token/introspect",
		strings.NewReader(url.Values{"token": {tok.AccessToken}, "refresh_user_details": {"true"}}.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.SetBasicAuth("rs", rsSecret)
	resp, err := s.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return tok
}

func personID(t *testing.T, s *servertest.Server) string {
	t.Helper()
	r := call(t, s, "GET", "/api/v1/persons?email="+url.QueryEscape(strings.ToUpper(personEmail)), "", ops)
	ps, _ := r.json["persons"].([]any)
	if r.status != 200 || len(ps) != 1 {
		t.Fatalf("find: %d %s", r.status, r.body)
	}
	return ps[0].(map[string]any)["person_id"].(string)
}

func TestPersonsAPI(t *testing.T) {
	for _, backend := range servertest.Backends {
		t.Run(backend, func(t *testing.T) {
			s := servertest.Start(t, personsConfig(), servertest.Options{Backend: backend})
			tok := signIn(t, s)
			id := personID(t, s)
			path := "/api/v1/persons/" + id

			r := call(t, s, "GET", path, "", ops)
			if r.status != 200 || r.json["has_password"] != true || r.json["email"] != personEmail ||
				strings.Contains(string(r.body), "$argon2") || strings.Contains(string(r.body), "password_hash") {
				t.Errorf("read: %d %s", r.status, r.body)
			}
			if r := call(t, s, "GET", "/api/v1/persons/nope", "", ops); r.status != 404 {
				t.Errorf("an unknown person: %d", r.status)
			}
			if r := call(t, s, "GET", "/api/v1/persons", "", ops); r.status != 400 {
				t.Errorf("find without email: %d", r.status)
			}
			r = call(t, s, "GET", path+"/sessions", "", ops)
			if ss, gs := r.json["sessions"].([]any), r.json["grants"].([]any); r.status != 200 || len(ss) != 1 || len(gs) != 1 {
				t.Errorf("sessions: %d %s", r.status, r.body)
			}

			for _, tc := range []struct{ body, field string }{
				{`{"status":"FROZEN"}`, "status"},
				{`{"status":5}`, "status"},
				{`{"email":"not-an-address"}`, "email"},
				{`{"first_name":"` + strings.Repeat("z", 300) + `"}`, "first_name"},
				{`{"last_name":"` + strings.Repeat("z", 300) + `"}`, "last_name"},
				{`{"display_name":"` + strings.Repeat("z", 300) + `"}`, "display_name"},
				{`{"initials":"` + strings.Repeat("z", 300) + `"}`, "initials"},
				{`{"gender":"X"}`, "gender"},
				{`{"date_of_birth":"2999-01-01"}`, "date_of_birth"},
				{`{"preferred_locale":"english please"}`, "preferred_locale"},
				{`{"email_addresses":[{"value":"nope"}]}`, "email_addresses"},
				{`{"phone_numbers":[{"value":"call me"}]}`, "phone_numbers"},
				{`{"addresses":[{"country_code":"NLD"}]}`, "addresses"},
				{`{"custom_attributes":{"":"v"}}`, "custom_attributes"},
				{`{"nickname":"Zeb"}`, "nickname"},
			} {
				r := call(t, s, "PATCH", path, tc.body, ops)
				details, _ := r.json["details"].([]any)
				if r.status != 400 || len(details) != 1 || details[0] != tc.field {
					t.Errorf("%.60s: %d %s, want 400 naming %s", tc.body, r.status, r.body, tc.field)
				}
			}
			if r := call(t, s, "PATCH", path, `{"email":"KEPT@example.org"}`, ops); r.status != 409 {
				t.Errorf("an email taken in the partition: %d %s", r.status, r.body)
			}
			r = call(t, s, "PATCH", path, `{"display_name":"Zeb","phone_numbers":[{"value":"+31 6 98765432","primary":true}],
				"addresses":[{"street_name":"Quaxworthlaan","house_number":17,"city":"Zwolle-Noord","country_code":"nl"}],
				"custom_attributes":{"nickname":"quaxy-the-bold"}}`, ops)
			if r.status != 200 || r.json["display_name"] != "Zeb" || r.json["first_name"] != "Zebulon" ||
				r.json["addresses"].([]any)[0].(map[string]any)["country_code"] != "NL" {
				t.Fatalf("patch: %d %s", r.status, r.body)
			}

			// Blocking revokes everything at once; unblocking brings nothing back.
			if !active(t, s, tok.AccessToken) {
				t.Fatal("the person's token is not active")
			}
			if r := call(t, s, "PATCH", path, `{"status":"BLOCKED"}`, ops); r.status != 200 || r.json["status"] != "BLOCKED" {
				t.Fatalf("block: %d %s", r.status, r.body)
			}
			if active(t, s, tok.AccessToken) {
				t.Error("a blocked person's token is active")
			}
			r = call(t, s, "GET", path+"/sessions", "", ops)
			if len(r.json["sessions"].([]any)) != 0 || len(r.json["grants"].([]any)) != 0 {
				t.Errorf("a blocked person's sessions: %s", r.body)
			}
			if r := call(t, s, "PATCH", path, `{"status":"ACTIVATED"}`, ops); r.status != 200 {
				t.Fatalf("unblock: %d %s", r.status, r.body)
			}
			if active(t, s, tok.AccessToken) {
				t.Error("unblocking revived a token")
			}

			// Ending the sessions.
			tok = signIn(t, s)
			r = call(t, s, "DELETE", path+"/sessions", "", ops)
			if r.status != 200 || r.json["sessions_ended"] != float64(1) || r.json["grants_revoked"] != float64(1) {
				t.Errorf("end sessions: %d %s", r.status, r.body)
			}
			if active(t, s, tok.AccessToken) {
				t.Error("a token is active after its sessions were ended")
			}
			got := strings.Join(eventTypes(t, s.Store, store.EventPerson, "ops"), " ")
			for _, typ := range []string{"person.PersonUpdatedEvent", "person.PersonBlockedEvent", "person.PersonUnblockedEvent",
				"person.PersonSessionsEndedEvent"} {
				if !strings.Contains(got, typ) {
					t.Errorf("person events by ops: %s, want %s", got, typ)
				}
			}

			// The erasure.
			tok = signIn(t, s)
			finder := s.Store.(interface {
				FindText(context.Context, ...string) ([]string, error)
			})
			if found, err := finder.FindText(context.Background(), personalData...); err != nil || len(found) < 3 {
				t.Fatalf("before the erasure the store holds %d rows of the person's data (%v): the scan scans nothing", len(found), err)
			}
			r = call(t, s, "DELETE", path, "", ops)
			if r.status != 200 || r.json["sessions_ended"] != float64(1) {
				t.Fatalf("erase: %d %s", r.status, r.body)
			}
			if active(t, s, tok.AccessToken) {
				t.Error("an erased person's token is active")
			}
			if r := call(t, s, "GET", path, "", ops); r.status != 404 {
				t.Errorf("read after the erasure: %d", r.status)
			}
			if r := call(t, s, "DELETE", path, "", ops); r.status != 404 {
				t.Errorf("erase again: %d", r.status)
			}
			found, err := finder.FindText(context.Background(), personalData...)
			if err != nil {
				t.Fatal(err)
			}
			for _, f := range found {
				t.Errorf("after the erasure the store holds the person's data: %s", f)
			}
			evs, err := s.Store.SearchEvents(context.Background(), store.EventFilter{Kind: store.EventOAuth, UserID: id}, 0, 100)
			if err != nil || len(evs) == 0 {
				t.Errorf("the person's OAuth events are gone (%v): an erasure keeps them, with the id", err)
			}
			if types := strings.Join(eventTypes(t, s.Store, store.EventPerson, "ops"), " "); !strings.Contains(types, "person.PersonErasedEvent") {
				t.Errorf("no erasure event: %s", types)
			}
			if r := call(t, s, "GET", "/api/v1/persons?email=kept@example.org", "", ops); len(r.json["persons"].([]any)) != 1 {
				t.Errorf("another person: %s", r.body)
			}
		})
	}
}

func TestPersonsAPISwitchedOff(t *testing.T) {
	cfg := personsConfig()
	off := false
	cfg.Features.PersonAPIEnabled = &off
	s := servertest.Start(t, cfg, servertest.Options{})
	r := call(t, s, "GET", "/api/v1/persons?email=kept@example.org", "", ops)
	if r.status != 503 || r.json["error_code"] != float64(1001) {
		t.Errorf("persons while switched off: %d %s", r.status, r.body)
	}
	if r := call(t, s, "GET", "/api/v1/persons?email=kept@example.org", "", nil); r.status != 401 {
		t.Errorf("without credentials while switched off: %d, want 401 first", r.status)
	}
	if r := call(t, s, "GET", "/api/v1/clients", "", ops); r.status != 200 {
		t.Errorf("clients while persons are switched off: %d", r.status)
	}
}
