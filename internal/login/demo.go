package login

import (
	"fmt"
	"net/http"
	"net/url"

	"github.com/latchkey/latchkey/internal/oauth"
)

// DemoVerifier is the PKCE verifier of the authorization URL that
// serve --demo prints (RFC 7636 appendix B).
const DemoVerifier = "dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk"

// DemoCallback is GET /demo/callback, registered only by serve --demo: the
// redirect URI of the demo clients, showing the code and the command that
// exchanges it, so a newcomer sees the whole flow without writing a client;
// it is their post-logout redirect URI too.
func (p *Pages) DemoCallback(issuer string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		q := r.URL.Query()
		t, lang := Messages("")
		d := &pageData{Lang: lang, T: t}
		switch {
		case q.Get("error") != "":
			d.Error = q.Get("error") + ": " + q.Get("error_description")
		case q.Get("code") == "":
			// The demo clients' post-logout redirect URI: the end of an
			// RP-initiated logout (OpenID Connect RP-Initiated Logout 1.0).
			d.Status = "signed-out"
		default:
			d.Message = fmt.Sprintf("curl -s -d grant_type=authorization_code -d client_id=demo-spa \\\n  -d code=%s \\\n  -d redirect_uri=%s \\\n  -d code_verifier=%s \\\n  %s/oauth/token",
				url.QueryEscape(q.Get("code")), url.QueryEscape(issuer+"/demo/callback"), DemoVerifier, issuer)
			// Sign out again through the end-session endpoint, back to here.
			d.Link = issuer + oauth.PathEndSession + "?" + url.Values{"client_id": {"demo-spa"},
				"post_logout_redirect_uri": {issuer + "/demo/callback"}}.Encode()
		}
		p.render(w, http.StatusOK, "demo.html", d)
	}
}
