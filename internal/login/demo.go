package login

import (
	"fmt"
	"net/http"
	"net/url"
)

// DemoVerifier is the PKCE verifier of the authorization URL that
// serve --demo prints (RFC 7636 appendix B).
const DemoVerifier = "dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk"

// DemoCallback is GET /demo/callback, registered only by serve --demo: the
// redirect URI of the demo clients, showing the code and the command that
// exchanges it, so a newcomer sees the whole flow without writing a client.
func (p *Pages) DemoCallback(issuer string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		q := r.URL.Query()
		t, lang := Messages("")
		d := &pageData{Lang: lang, T: t}
		if e := q.Get("error"); e != "" {
			d.Error = e + ": " + q.Get("error_description")
		} else {
			d.Message = fmt.Sprintf("curl -s -d grant_type=authorization_code -d client_id=demo-spa \\\n  -d code=%s \\\n  -d redirect_uri=%s \\\n  -d code_verifier=%s \\\n  %s/oauth/token",
				url.QueryEscape(q.Get("code")), url.QueryEscape(issuer+"/demo/callback"), DemoVerifier, issuer)
		}
		p.render(w, http.StatusOK, "demo.html", d)
	}
}
