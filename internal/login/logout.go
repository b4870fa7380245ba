package login

import (
	"context"
	"errors"
	"net/http"

	"github.com/latchkey/latchkey/internal/events"
	"github.com/latchkey/latchkey/internal/httpx"
	"github.com/latchkey/latchkey/internal/oauth"
	"github.com/latchkey/latchkey/internal/store"

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
	sess, signedIn := p.Session(r)
	if c, err := r.Cookie(SessionCookie); err == nil && len(c.Value) <= 128 {
		if err := p.Store.DeleteSession(r.Context(), p.Hasher.HashOf(token.Session, c.Value)); err != nil {
			return err
		}
	}
	http.SetCookie(w, &http.Cookie{Name: SessionCookie, Value: "", Path: "/", HttpOnly: true, Secure: p.Secure,
		SameSite: http.SameSiteLaxMode, MaxAge: -1})
	if signedIn {
		if done, err := p.upstreamLogout(w, r, sess, target); done || err != nil {
			return err
		}
	}
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

// EndSession is GET and POST /oauth/end_session, OpenID Connect
// RP-Initiated Logout 1.0. A valid id_token_hint of the signed-in person
// (or of anyone, when nobody is signed in) ends the session at once;
// otherwise the person confirms on a page first, so that a link on
// another site cannot sign people out. The browser then goes to the
// client's registered post_logout_redirect_uri, with state, or sees the
// signed-out page.
func (p *Pages) EndSession(w http.ResponseWriter, r *http.Request) error {
	ctx := r.Context()
	f := p.facts(r)
	q := r.URL.Query()
	if r.Method == http.MethodPost {
		if err := httpx.ParseForm(w, r, httpx.MaxFormBytes); err != nil {
			p.ErrorPage(w, r, http.StatusBadRequest, "The form could not be read.")
			return nil
		}
		q = r.PostForm
	}
	t, lang := Messages(oauth.PickLanguage(q.Get("ui_locales"), Languages()))
	es, err := p.OAuth.ParseEndSession(ctx, f, q)
	var refused *oauth.Error
	if errors.As(err, &refused) {
		p.render(w, http.StatusBadRequest, "error.html", &pageData{Lang: lang, T: t, Message: refused.Description})
		return nil
	}
	if err != nil {
		return err
	}
	sess, signedIn := p.Session(r)
	confirmed := false
	if r.Method == http.MethodPost && q.Get("confirm") != "" {
		if !p.checkCSRF(r, endSessionPurpose) {
			p.render(w, http.StatusForbidden, "error.html", &pageData{Lang: lang, T: t, Message: t["error.csrf"]})
			return nil
		}
		confirmed = true
	}
	hinted := es.Subject != "" && (!signedIn || sess.PersonID == es.Subject)
	if signedIn && !hinted && !confirmed {
		p.OAuth.RecordLogout(ctx, f, events.OpenIDLogoutConfirmShown, es)
		p.render(w, http.StatusOK, "end_session.html", &pageData{Lang: lang, T: t, Action: oauth.PathEndSession,
			CSRF: p.csrfToken(w, r, endSessionPurpose), ClientName: es.ClientName, Fields: []formField{
				{Name: "client_id", Value: es.ClientID}, {Name: "post_logout_redirect_uri", Value: q.Get("post_logout_redirect_uri")},
				{Name: "state", Value: q.Get("state")}, {Name: "ui_locales", Value: q.Get("ui_locales")}}})
		return nil
	}
	if signedIn {
		if err := p.Store.DeleteSession(ctx, sess.Hash); err != nil && !errors.Is(err, store.ErrNotFound) {
			return err
		}
		if es.Subject == "" {
			es.Subject = sess.PersonID
		}
		p.OAuth.RecordLogout(ctx, f, events.OpenIDLogoutSuccess, es)
	}
	http.SetCookie(w, &http.Cookie{Name: SessionCookie, Value: "", Path: "/", HttpOnly: true, Secure: p.Secure,
		SameSite: http.SameSiteLaxMode, MaxAge: -1})
	if signedIn {
		if done, err := p.upstreamLogout(w, r, sess, es.Target); done || err != nil {
			return err
		}
	}
	if es.Target != "" {
		http.Redirect(w, r, es.Target, http.StatusSeeOther)
		return nil
	}
	p.render(w, http.StatusOK, "logout.html", &pageData{Lang: lang, T: t})
	return nil
}

// endSessionPurpose binds the logout confirmation form's CSRF token.
const endSessionPurpose = "end_session"
