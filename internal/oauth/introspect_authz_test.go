package oauth_test

import (
	"net/url"
	"testing"

	"github.com/latchkey/latchkey/internal/server/servertest"
)

// RFC 7662 section 2.1: only an authenticated client introspects, and
// (docs/SECURITY.md) a client sees only its own tokens unless the operator
// made it a resource server with introspect_any_token.
func TestIntrospectionIsAuthorized(t *testing.T) {
	forEachBackendWith(t, meteredConfig, func(t *testing.T, s *servertest.Server) {
		spa := personToken(t, s, "spa", "", "")
		web := personToken(t, s, "web", webSecret, "")
		as := func(user, pass, tok string, form url.Values) answer {
			f := url.Values{"token": {tok}}
			for k, v := range form {
				f[k] = v
			}
			return post(t, s, "/oauth/api/v2/token/introspect", f, user, pass)
		}
		t.Run("a public client is refused, even for its own token", func(t *testing.T) {
			r := as("", "", spa.AccessToken, url.Values{"client_id": {"spa"}})
			if r.status != 401 || r.json["error"] != "invalid_client" || r.json["sub"] != nil {
				t.Errorf("got %d %s, want 401 invalid_client", r.status, r.body)
			}
		})
		t.Run("a confidential client sees its own token", func(t *testing.T) {
			if r := as("web", webSecret, web.AccessToken, nil); r.status != 200 || r.json["active"] != true {
				t.Errorf("got %d %s", r.status, r.body)
			}
		})
		t.Run("a confidential client does not see another client's token", func(t *testing.T) {
			for _, tok := range []string{spa.AccessToken, spa.RefreshToken} {
				if r := as("web", webSecret, tok, nil); r.status != 200 || r.body != `{"active":false}` {
					t.Errorf("got %d %s, want inactive", r.status, r.body)
				}
			}
		})
		t.Run("a resource server sees every token", func(t *testing.T) {
			if r := introspect(t, s, spa.AccessToken, nil); r.json["active"] != true || r.json["client_id"] != "spa" {
				t.Errorf("got %d %s", r.status, r.body)
			}
		})
		t.Run("a refused caller spends no use of a limited token", func(t *testing.T) {
			tok := limitedToken(t, s, 1)
			for range 3 {
				if r := as("web", webSecret, tok, nil); r.body != `{"active":false}` {
					t.Fatalf("foreign caller: %s", r.body)
				}
			}
			if r := introspect(t, s, tok, nil); r.json["active"] != true || r.json["usage_count"] != float64(1) {
				t.Errorf("the resource server's first use: %s", r.body)
			}
		})
	})
}
