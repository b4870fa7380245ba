package login

import (
	"context"
	"net/http"

	"github.com/latchkey/latchkey/internal/token"
)

// PathLogout ends the browser session.
const PathLogout = "/logout"

// Logout is GET /logout: it ends the browser's session, then sends the
// browser to post_logout_redirect_uri (or the configured url_after_logout)
// when the redirects whitelist allows it, or shows the signed-out page.
// An address the whitelist does not allow is refused before anything ends,
// so a crafted link cannot use latchkey as an open redirector.
func (p *Pages) Logout(w http.ResponseWriter, r *http.Request) error {
	t, lang := Messages(r.URL.Query().Get("language"))
	target := ""
	if p.LogoutTarget != nil {
		var ok bool
		var err error
		target, ok, err = p.LogoutTarget(r.Context(), r.URL.Query().Get("post_logout_redirect_uri"))
		if err != nil {
			return err
		}
		if !ok {
			p.render(w, http.StatusBadRequest, "error.html", &pageData{Lang: lang, T: t, Message: t["error.redirect"]})
			return nil
		}
	} else if r.URL.Query().Get("post_logout_redirect_uri") != "" {
		p.render(w, http.StatusBadRequest, "error.html", &pageData{Lang: lang, T: t, Message: t["error.redirect"]})
		return nil
	}
	if c, err := r.Cookie(SessionCookie); err == nil && len(c.Value) <= 128 {
		if err := p.Store.DeleteSession(r.Context(), p.Hasher.HashOf(token.Session, c.Value)); err != nil {
			return err
		}
	}
	http.SetCookie(w, &http.Cookie{Name: SessionCookie, Value: "", Path: "/", HttpOnly: true, Secure: p.Secure,
		SameSite: http.SameSiteLaxMode, MaxAge: -1})
	if target != "" {
		http.Redirect(w, r, target, http.StatusSeeOther)
		return nil
	}
	p.render(w, http.StatusOK, "logout.html", &pageData{Lang: lang, T: t})
	return nil
}

// LogoutTargetFunc decides where a logout may send the browser: requested
// ("" when the link names none) or a configured default; ok=false refuses.
type LogoutTargetFunc func(ctx context.Context, requested string) (target string, ok bool, err error)
