package oauth_test

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"

	"golang.org/x/oauth2"

	"github.com/latchkey/latchkey/internal/config"
	"github.com/latchkey/latchkey/internal/server/servertest"
	"github.com/latchkey/latchkey/internal/store/postgres/pgtest"
)

const (
	legacySecret = "legacy-secret-legacy-secret"
	otherEmail   = "john@example.com"
	otherPass    = "another correct horse battery"
	apiPass      = "admin-password"
)

// blockConfig adds a password-grant client, a second person and an API
// user of the import API to introspectConfig.
func blockConfig() *config.Config {
	cfg := introspectConfig()
	cfg.Clients = append(cfg.Clients, config.Client{ClientID: "legacy", ClientSecret: legacySecret,
		GrantTypes: []string{"password", "refresh_token"}, Scopes: []string{"read"}})
	cfg.Persons = append(cfg.Persons, config.Person{Email: otherEmail, Password: otherPass, FirstName: "John"})
	cfg.APIUsers = []config.APIUser{{Username: "admin", Password: apiPass}}
	return cfg
}

// passwordToken runs the password grant of the legacy client.
func passwordToken(t *testing.T, s *servertest.Server, email, pass string) answer {
	t.Helper()
	return post(t, s, "/oauth/token", url.Values{"grant_type": {"password"}, "username": {email}, "password": {pass},
		"scope": {"read"}}, "legacy", legacySecret)
}

// refreshWith refreshes at the token endpoint as client id.
func refreshWith(t testing.TB, s *servertest.Server, id, secret, refresh string) answer {
	t.Helper()
	form := url.Values{"grant_type": {"refresh_token"}, "refresh_token": {refresh}}
	if secret == "" {
		form.Set("client_id", id)
		return post(t, s, "/oauth/token", form, "", "")
	}
	return post(t, s, "/oauth/token", form, id, secret)
}

// setStatus changes a person's status through the person import API, as an
// operator does today: an import carrying the person's reference_id.
func setStatus(t testing.TB, s *servertest.Server, email, status string) {
	t.Helper()
	p, err := s.Store.GetPersonByEmail(context.Background(), "", email)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := json.Marshal(map[string]any{"persons": []any{map[string]any{"status": status, "profile": map[string]any{
		"reference_id": p.ID, "email_addresses": []any{map[string]any{"value": email, "primary": true}}}}}})
	req, _ := http.NewRequest("POST", s.URL+"/api/import/persons", bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.SetBasicAuth("admin", apiPass)
	resp, err := s.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusCreated {
		t.Fatalf("import setting %s to %s: status %d", email, status, resp.StatusCode)
	}
}

func active(t testing.TB, s *servertest.Server, tok string) bool {
	t.Helper()
	a := post(t, s, "/oauth/api/v2/token/introspect", url.Values{"token": {tok}}, "rs", rsSecret)
	if a.status != http.StatusOK {
		t.Fatalf("introspection: %d %s", a.status, a.body)
	}
	return a.json["active"] == true
}

// TestBlockingEndsEverything: a person blocked through the import API
// loses at once every access token, refresh token, unexchanged code and
// browser session; signing in again is refused. Another person keeps theirs.
func TestBlockingEndsEverything(t *testing.T) {
	forEachBackendWith(t, blockConfig, func(t *testing.T, s *servertest.Server) {
		ctx := clientCtx(s)
		b := browser(t, s) // keeps Jane's session cookie
		web := oauthConfig(s, "web", webSecret, oauth2.AuthStyleInHeader)
		code, verifier := codeFor(t, s, b, web)
		byCode, err := web.Exchange(ctx, code, oauth2.VerifierOption(verifier))
		if err != nil {
			t.Fatal(err)
		}
		// A second code from the same session, not exchanged before the block.
		pending, pendingVerifier := codeFor(t, s, b, web)
		byPassword := passwordToken(t, s, personEmail, personPass)
		john := passwordToken(t, s, otherEmail, otherPass)
		if byPassword.status != 200 || john.status != 200 {
			t.Fatalf("password grants: %d %s; %d %s", byPassword.status, byPassword.body, john.status, john.body)
		}
		janes := []string{byCode.AccessToken, byCode.RefreshToken,
			byPassword.json["access_token"].(string), byPassword.json["refresh_token"].(string)}
		for range 2 { // the second answer may come from memory (SQLite's token cache)
			for _, tok := range janes {
				if !active(t, s, tok) {
					t.Fatal("a token is not active before the block")
				}
			}
		}

		setStatus(t, s, personEmail, "BLOCKED")

		for i, tok := range janes {
			if active(t, s, tok) {
				t.Errorf("token %d of the blocked person introspects active", i)
			}
		}
		for _, tc := range []struct{ name, id, secret, refresh string }{
			{"code flow", "web", webSecret, byCode.RefreshToken},
			{"password grant", "legacy", legacySecret, byPassword.json["refresh_token"].(string)},
		} {
			if a := refreshWith(t, s, tc.id, tc.secret, tc.refresh); a.status != 400 || a.json["error"] != "invalid_grant" {
				t.Errorf("refresh (%s) after the block: %d %s, want invalid_grant", tc.name, a.status, a.body)
			}
		}
		if _, err := web.Exchange(ctx, pending, oauth2.VerifierOption(pendingVerifier)); !isOAuthError(err, "invalid_grant") {
			t.Errorf("exchanging a code issued before the block: %v, want invalid_grant", err)
		}
		if a := passwordToken(t, s, personEmail, personPass); a.status != 400 || a.json["error"] != "invalid_grant" {
			t.Errorf("password grant after the block: %d %s", a.status, a.body)
		}

		// The browser's session is gone: the authorization request goes to
		// the login form, and signing in is refused.
		resp, err := b.Get(web.AuthCodeURL("st-2", oauth2.S256ChallengeOption(oauth2.GenerateVerifier())))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		loc, _ := resp.Location()
		if resp.StatusCode != http.StatusFound || loc == nil || loc.Path != "/login" {
			t.Fatalf("authorize with the blocked person's session: %d to %v, want the login page", resp.StatusCode, loc)
		}
		page := get(t, b, loc.String())
		if !strings.Contains(page, `id="email"`) {
			t.Fatal("the login page did not ask the blocked person to sign in")
		}
		m := csrfRE.FindStringSubmatch(page)
		if m == nil {
			t.Fatal("no CSRF token on the login page")
		}
		resp, err = b.PostForm(s.URL+"/login", url.Values{"csrf_token": {m[1]}, "request": {loc.Query().Get("request")},
			"email": {personEmail}, "password": {personPass}})
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusUnauthorized {
			to, _ := resp.Location()
			t.Errorf("signing in as the blocked person: %d to %v, want 401", resp.StatusCode, to)
		}

		for _, tok := range []string{john.json["access_token"].(string), john.json["refresh_token"].(string)} {
			if !active(t, s, tok) {
				t.Error("blocking one person revoked another's token")
			}
		}
		if a := refreshWith(t, s, "legacy", legacySecret, john.json["refresh_token"].(string)); a.status != 200 {
			t.Errorf("another person's refresh: %d %s", a.status, a.body)
		}

		// Unblocking lets the person sign in again; what was revoked stays revoked.
		setStatus(t, s, personEmail, "ACTIVATED")
		if a := passwordToken(t, s, personEmail, personPass); a.status != 200 {
			t.Errorf("password grant after unblocking: %d %s", a.status, a.body)
		}
		if active(t, s, byCode.AccessToken) {
			t.Error("unblocking brought a revoked token back")
		}
	})
}

func isOAuthError(err error, code string) bool {
	re, ok := err.(*oauth2.RetrieveError)
	return ok && re.ErrorCode == code
}

// TestBlockOnOneInstanceIsSeenByAnother: two instances share one
// PostgreSQL; a person blocked through instance B has no active token on
// instance A, at once.
func TestBlockOnOneInstanceIsSeenByAnother(t *testing.T) {
	dsn := pgtest.NewDatabase(t)
	a := servertest.Start(t, blockConfig(), servertest.Options{Backend: "postgres", PostgresURL: dsn})
	b := servertest.Start(t, blockConfig(), servertest.Options{Backend: "postgres", PostgresURL: dsn})
	tok := passwordToken(t, a, personEmail, personPass)
	if tok.status != 200 {
		t.Fatalf("password grant on A: %d %s", tok.status, tok.body)
	}
	access, refresh := tok.json["access_token"].(string), tok.json["refresh_token"].(string)
	if !active(t, a, access) || !active(t, b, access) {
		t.Fatal("the token is not active on both instances")
	}
	setStatus(t, b, personEmail, "BLOCKED")
	for name, s := range map[string]*servertest.Server{"A": a, "B": b} {
		if active(t, s, access) || active(t, s, refresh) {
			t.Errorf("instance %s answers a token of the blocked person as active", name)
		}
	}
	if r := refreshWith(t, a, "legacy", legacySecret, refresh); r.status != 400 || r.json["error"] != "invalid_grant" {
		t.Errorf("refresh on A after the block on B: %d %s", r.status, r.body)
	}
}

// TestIssuanceRacingABlock refreshes (rotating and not) and mints by
// password grant for a person while the person is blocked: every token
// issued, before or during the block, is inactive once the block has
// returned and the racing requests are answered.
func TestIssuanceRacingABlock(t *testing.T) {
	forEachBackendWith(t, blockConfig, func(t *testing.T, s *servertest.Server) {
		var mu sync.Mutex
		var issued []string
		keep := func(a answer) {
			mu.Lock()
			defer mu.Unlock()
			for _, k := range []string{"access_token", "refresh_token"} {
				if v, ok := a.json[k].(string); ok {
					issued = append(issued, v)
				}
			}
		}
		type chain struct{ id, secret, refresh string }
		var chains []chain
		for range 2 {
			tok := personToken(t, s, "spa", "", "") // public: rotates
			keep(answer{json: map[string]any{"access_token": tok.AccessToken, "refresh_token": tok.RefreshToken}})
			chains = append(chains, chain{"spa", "", tok.RefreshToken})
			pw := passwordToken(t, s, personEmail, personPass) // confidential: keeps its refresh token
			keep(pw)
			chains = append(chains, chain{"legacy", legacySecret, pw.json["refresh_token"].(string)})
		}
		var wg sync.WaitGroup
		started := make(chan struct{}, len(chains)+1)
		// Each racer issues until it is refused: after the block every
		// request is, so the loops end; none waits on a timer.
		for _, c := range chains {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := 0; ; i++ {
					a := refreshWith(t, s, c.id, c.secret, c.refresh)
					if a.status != 200 {
						if a.json["error"] != "invalid_grant" {
							t.Errorf("refresh refused with %d %s, want invalid_grant", a.status, a.body)
						}
						if i == 0 {
							started <- struct{}{}
						}
						return
					}
					keep(a)
					if v, ok := a.json["refresh_token"].(string); ok {
						c.refresh = v
					}
					if i == 0 {
						started <- struct{}{}
					}
				}
			}()
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; ; i++ {
				a := passwordToken(t, s, personEmail, personPass)
				if i == 0 {
					started <- struct{}{}
				}
				if a.status != 200 {
					return
				}
				keep(a)
			}
		}()
		for range len(chains) + 1 { // every racer is under way
			<-started
		}
		setStatus(t, s, personEmail, "BLOCKED")
		wg.Wait()
		mu.Lock()
		defer mu.Unlock()
		t.Logf("%d tokens issued for the person", len(issued))
		live := 0
		for _, tok := range issued {
			if active(t, s, tok) {
				live++
			}
		}
		if live > 0 {
			t.Errorf("%d of %d tokens issued for the person are active after the block", live, len(issued))
		}
	})
}

// TestDeviceApprovedBeforeABlockGetsNothing: a device the person approved
// before being blocked hears access_denied at its poll, and gets no tokens.
func TestDeviceApprovedBeforeABlockGetsNothing(t *testing.T) {
	cfg := func() *config.Config {
		c := deviceConfig()
		c.APIUsers = []config.APIUser{{Username: "admin", Password: apiPass}}
		return c
	}
	forEachBackendWith(t, cfg, func(t *testing.T, s *servertest.Server) {
		app := appToken(t, s, "read", "access:device-authorization:approve")
		d := deviceAuth(t, s, "tv", "read")
		if r := approveInApp(t, s, app.AccessToken, d.UserCode); r.status != http.StatusNoContent {
			t.Fatalf("in-app approval: %d %v", r.status, r.json)
		}
		setStatus(t, s, personEmail, "BLOCKED")
		if r := poll(t, s, "tv", d.DeviceCode); r.status != 400 || r.json["error"] != "access_denied" {
			t.Errorf("poll after the block: %d %s, want access_denied", r.status, r.body)
		}
		if r := poll(t, s, "tv", d.DeviceCode); r.status != 400 || r.json["error"] != "invalid_grant" {
			t.Errorf("poll again: %d %s, want invalid_grant (the approval is spent)", r.status, r.body)
		}
	})
}
