package oauth_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"golang.org/x/oauth2"

	"github.com/latchkey/latchkey/internal/server/servertest"
	"github.com/latchkey/latchkey/internal/store"
)

// Redirect URIs that fail the rule, as a row written before it (or by hand)
// may hold them.
var storedBadURIs = []string{"JAVASCRIPT://app.example/%0aalert(document.domain)", "javascript:alert(1)",
	"data:text/html,<script>alert(1)</script>", "vbscript://msgbox(1)", "file:///etc/passwd", "http://app.example/cb",
	"https://app.example@evil.example/cb"}

// forgeClient writes a client straight into the store, past every API's
// validation.
func forgeClient(t *testing.T, s *servertest.Server, id string, redirects []string) {
	t.Helper()
	err := s.Store.UpsertClient(context.Background(), store.Client{ID: id, Name: "Forged", TokenEndpointAuthMethod: "none",
		RedirectURIs: redirects, PostLogoutRedirectURIs: redirects, GrantTypes: []string{"authorization_code"},
		Scopes: []string{"read"}, AccessTokenLifetime: time.Hour, RefreshTokenLifetime: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
}

// refusedOnAPage: a 400 HTML error page and no Location.
func refusedOnAPage(t *testing.T, what string, resp *http.Response) {
	t.Helper()
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusBadRequest || !strings.Contains(resp.Header.Get("Content-Type"), "text/html") ||
		!strings.Contains(string(body), `id="error"`) {
		t.Errorf("%s: %d %s, want a 400 error page", what, resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	if loc := resp.Header.Get("Location"); loc != "" {
		t.Errorf("%s: redirected to %s", what, loc)
	}
}

// TestAuthorizeRefusesAStoredBadRedirectURI: a client row whose redirect
// URI fails the rule gets an error page from the authorization endpoint,
// never a Location to it with a code or an error — signed in or not,
// named in the request or the client's only one.
func TestAuthorizeRefusesAStoredBadRedirectURI(t *testing.T) {
	forEachBackend(t, func(t *testing.T, s *servertest.Server) {
		forgeClient(t, s, "forged", storedBadURIs)
		for i, u := range storedBadURIs {
			forgeClient(t, s, "forged-one-"+string(rune('a'+i)), []string{u})
		}
		signedIn := browser(t, s)
		authorize(t, s, signedIn, oauthConfig(s, "spa", "", oauth2.AuthStyleInParams).AuthCodeURL("st",
			oauth2.S256ChallengeOption(oauth2.GenerateVerifier())))
		challenge := "&response_type=code&scope=read&state=st&code_challenge_method=S256&code_challenge=" + s256(oauth2.GenerateVerifier())
		for name, b := range map[string]*http.Client{"signed in": signedIn, "signed out": browser(t, s)} {
			for i, u := range storedBadURIs {
				for _, q := range []string{"client_id=forged&redirect_uri=" + url.QueryEscape(u),
					"client_id=forged-one-" + string(rune('a'+i))} {
					resp, err := b.Get(s.URL + "/oauth/authorize?" + q + challenge)
					if err != nil {
						t.Fatal(err)
					}
					refusedOnAPage(t, name+" "+q, resp)
				}
			}
		}
	})
}

// TestSavedRequestIsRecheckedWhenLoaded: an authorization request saved
// with a redirect URI that fails the rule (forged in the store) is refused
// by every page that loads it, also for a signed-in person whose next step
// would be the code itself.
func TestSavedRequestIsRecheckedWhenLoaded(t *testing.T) {
	forEachBackend(t, func(t *testing.T, s *servertest.Server) {
		ctx := context.Background()
		forgeClient(t, s, "forged", storedBadURIs)
		signedIn := browser(t, s)
		authorize(t, s, signedIn, oauthConfig(s, "spa", "", oauth2.AuthStyleInParams).AuthCodeURL("st",
			oauth2.S256ChallengeOption(oauth2.GenerateVerifier())))
		save := func(id, clientID, redirectURI string) {
			t.Helper()
			data, err := json.Marshal(map[string]any{"client_id": clientID, "response_type": "code", "redirect_uri": redirectURI,
				"redirect_uri_sent": true, "scopes": []string{"read"}, "state": "st", "code_challenge": s256(oauth2.GenerateVerifier()),
				"code_challenge_method": "S256"})
			if err != nil {
				t.Fatal(err)
			}
			now := time.Now().UTC()
			if err := s.Store.CreateAuthRequest(ctx, store.AuthRequest{ID: id, ClientID: clientID, Data: data, CreatedAt: now,
				ExpiresAt: now.Add(time.Hour)}); err != nil {
				t.Fatal(err)
			}
		}
		// A static client's request aimed at an address it never registered,
		// and a forged client's aimed at its own bad addresses.
		save("forged-spa", "spa", "javascript://app.example/%0aalert(1)")
		ids := []string{"forged-spa"}
		for i, u := range storedBadURIs {
			id := "forged-" + string(rune('a'+i))
			save(id, "forged", u)
			ids = append(ids, id)
		}
		for name, b := range map[string]*http.Client{"signed in": signedIn, "signed out": browser(t, s)} {
			for _, id := range ids {
				for _, page := range []string{"/login", "/login/step-up", "/login/federated"} {
					resp, err := b.Get(s.URL + page + "?request=" + id)
					if err != nil {
						t.Fatal(err)
					}
					refusedOnAPage(t, name+" "+page+" "+id, resp)
				}
				resp, err := b.PostForm(s.URL+"/login", url.Values{"request": {id}, "email": {personEmail}, "password": {personPass}})
				if err != nil {
					t.Fatal(err)
				}
				resp.Body.Close()
				if loc := resp.Header.Get("Location"); strings.Contains(strings.ToLower(loc), "app.example") ||
					strings.HasPrefix(strings.ToLower(loc), "javascript") {
					t.Errorf("%s POST /login of %s: redirected to %s", name, id, loc)
				}
			}
		}
	})
}

// TestEndSessionRefusesAStoredBadPostLogoutURI: RP-initiated logout
// refuses a registered post_logout_redirect_uri that fails the rule.
func TestEndSessionRefusesAStoredBadPostLogoutURI(t *testing.T) {
	forEachBackend(t, func(t *testing.T, s *servertest.Server) {
		forgeClient(t, s, "forged", storedBadURIs)
		b := browser(t, s)
		for _, u := range storedBadURIs {
			q := url.Values{"client_id": {"forged"}, "post_logout_redirect_uri": {u}, "state": {"st"}}
			resp, err := b.Get(s.URL + "/oauth/end_session?" + q.Encode())
			if err != nil {
				t.Fatal(err)
			}
			refusedOnAPage(t, "GET end_session to "+u, resp)
			resp, err = b.PostForm(s.URL+"/oauth/end_session", q)
			if err != nil {
				t.Fatal(err)
			}
			refusedOnAPage(t, "POST end_session to "+u, resp)
		}
	})
}
