package login

import (
	"errors"
	"net/http"
	"net/url"

	"github.com/latchkey/latchkey/internal/client"
	"github.com/latchkey/latchkey/internal/federation"
	"github.com/latchkey/latchkey/internal/httpx"
	"github.com/latchkey/latchkey/internal/identity"
	"github.com/latchkey/latchkey/internal/oauth"
	"github.com/latchkey/latchkey/internal/store"
	"github.com/latchkey/latchkey/internal/token"
)

// Paths of the login methods' pages (docs/FEDERATION.md).
const (
	PathFederated = "/login/federated" // ?request=ID&method=MID: start a sign-in at a login method
	PathLDAP      = "/login/ldap"      // POST: the LDAP form
)

// bindingCookie binds a round trip to an upstream to the browser that
// started it: the state is refused in any other browser (login CSRF).
const bindingCookie = "lk_fed"

type loginMethodView struct{ ID, Name, Link string }

// methodLinks adds a "Continue with" button per enabled login method.
func (p *Pages) methodLinks(r *http.Request, d *pageData) {
	if p.Federation == nil {
		return
	}
	ms, err := p.Federation.Methods(r.Context())
	if err != nil {
		p.Log.Warn("list login methods", "err", err)
		return // the page works without them
	}
	for _, m := range ms {
		d.LoginMethods = append(d.LoginMethods, loginMethodView{ID: m.ID, Name: m.Name,
			Link: PathFederated + "?" + url.Values{"request": {d.Request}, "method": {m.ID}}.Encode()})
	}
}

// binding returns the browser's binding value, setting its cookie when
// the browser has none.
func (p *Pages) binding(w http.ResponseWriter, r *http.Request) string {
	if c, err := r.Cookie(bindingCookie); err == nil && len(c.Value) >= 32 && len(c.Value) <= 64 {
		return c.Value
	}
	v := token.Random(32)
	// Lax: the upstream's redirect back is a top-level GET from its site.
	http.SetCookie(w, &http.Cookie{Name: bindingCookie, Value: v, Path: "/", HttpOnly: true, Secure: p.Secure,
		SameSite: http.SameSiteLaxMode})
	return v
}

func boundValue(r *http.Request) string {
	if c, err := r.Cookie(bindingCookie); err == nil && len(c.Value) <= 64 {
		return c.Value
	}
	return ""
}

// FederatedStart is GET /login/federated?request=ID&method=MID: the button
// of a login method.
func (p *Pages) FederatedStart(w http.ResponseWriter, r *http.Request) error {
	id := r.URL.Query().Get("request")
	ar, client, err := p.OAuth.LoadRequest(r.Context(), id)
	if err != nil {
		return p.requestError(w, r, err)
	}
	if done, err := p.startMethod(w, r, id, ar, client, r.URL.Query().Get("method")); done || err != nil {
		return err
	}
	p.loginForm(w, r, id, ar, client, "")
	return nil
}

// startMethod sends the browser to login method mid: an OpenID Provider's
// authorization endpoint, or the LDAP form. done is false when mid is no
// enabled login method (the caller shows the login page).
func (p *Pages) startMethod(w http.ResponseWriter, r *http.Request, id string, ar *oauth.AuthorizeRequest, client store.Client,
	mid string) (bool, error) {
	if p.Federation == nil || mid == "" {
		return false, nil
	}
	m, err := p.Federation.Method(r.Context(), mid)
	if errors.Is(err, federation.ErrUnknownMethod) {
		return false, nil
	}
	if err != nil {
		return true, err
	}
	if m.Type == federation.TypeLDAP {
		p.ldapForm(w, r, http.StatusOK, id, ar, client, m, "", "")
		return true, nil
	}
	to, err := p.Federation.BeginOIDC(r.Context(), p.facts(r), m, id, p.binding(w, r), ar.LoginHint)
	var fe *federation.Error
	if errors.As(err, &fe) {
		return true, p.federationFailed(w, r, id, ar, fe)
	}
	if err != nil {
		return true, err
	}
	http.Redirect(w, r, to, http.StatusSeeOther)
	return true, nil
}

// OIDCCallback is GET /login/oidc/callback, the redirect URI latchkey
// registers at OpenID Providers.
func (p *Pages) OIDCCallback(w http.ResponseWriter, r *http.Request) error {
	ctx := r.Context()
	q := r.URL.Query()
	st, err := p.Federation.TakeState(ctx, p.facts(r), store.FederationLogin, q.Get("state"), boundValue(r))
	var fe *federation.Error
	if errors.As(err, &fe) {
		// No pending request can be trusted: nobody to redirect to.
		p.ErrorPage(w, r, http.StatusBadRequest, fe.Description)
		return nil
	}
	if err != nil {
		return err
	}
	ar, client, err := p.OAuth.LoadRequest(ctx, st.RequestID)
	if err != nil {
		return p.requestError(w, r, err)
	}
	res, err := p.Federation.CompleteOIDC(ctx, p.facts(r), st, q, client.ID)
	if errors.As(err, &fe) {
		return p.federationFailed(w, r, st.RequestID, ar, fe)
	}
	if err != nil {
		return err
	}
	return p.federatedSession(w, r, st.RequestID, ar, client, res.Method, res.Outcome, federation.AMRFederated, res.SealedIDToken)
}

// federatedSession starts the session of a successful sign-in at method
// m — its authentication_level, the amr of the kind of method — and lets
// authflow decide what comes next, as after a password.
func (p *Pages) federatedSession(w http.ResponseWriter, r *http.Request, id string, ar *oauth.AuthorizeRequest, client store.Client,
	m federation.Method, out federation.Outcome, amr string, sealedIDToken []byte) error {
	if out.Person.Status == identity.StatusCreated && p.Journeys != nil {
		// As for a password: with activation on, an account signs in once
		// its mailed link was followed. A new account gets its link now.
		st, err := p.Journeys.Settings(r.Context())
		if err != nil {
			return err
		}
		if st.Activation {
			t, lang := Messages(ar.Language)
			if out.Created {
				if err := p.Journeys.ResendActivation(r.Context(), p.facts(r), out.Person.Email, lang, id); err != nil {
					p.Log.Warn("activation mail of a federated account", "err", err)
				}
			}
			d := &pageData{Lang: lang, T: t, Action: oauth.PathLogin, Request: id, CSRF: p.csrfToken(w, r, id),
				ClientName: displayName(client), Email: out.Person.Email, Error: t["login.not_activated"]}
			p.journeyLinks(r, d)
			p.methodLinks(r, d)
			p.render(w, http.StatusForbidden, "login.html", d)
			return nil
		}
	}
	sess, err := p.startSessionAs(w, r, store.Session{PersonID: out.Person.ID,
		AuthLevel: m.Level(p.OAuth.Flow.PasswordLevel), AMR: []string{amr}, IdPID: m.ID, UpstreamIDToken: sealedIDToken})
	if err != nil {
		return err
	}
	return p.next(w, r, id, ar, client, &sess, false)
}

// federationFailed ends a request whose sign-in at an upstream failed:
// the client hears the RFC 6749 error with vendor_error_cause; a device
// hears access_denied at its next poll.
func (p *Pages) federationFailed(w http.ResponseWriter, r *http.Request, id string, ar *oauth.AuthorizeRequest, fe *federation.Error) error {
	if done, err := p.finishRefused(w, r, id, ar); done || err != nil {
		return err
	}
	p.OAuth.LogRefusal(r.Context(), ar.ClientID, fe.Code, fe.Description, oauth.AnsweredRedirect)
	to := p.OAuth.ErrorRedirect(ar, &oauth.AuthorizeError{Code: fe.Code, Description: fe.Description, Redirect: true,
		RedirectURI: ar.RedirectURI, State: ar.State, VendorCause: fe.Cause})
	http.Redirect(w, r, to, http.StatusSeeOther)
	return nil
}

// ldapForm shows the user name and password form of an LDAP method.
func (p *Pages) ldapForm(w http.ResponseWriter, r *http.Request, status int, id string, ar *oauth.AuthorizeRequest,
	client store.Client, m federation.Method, username, msgKey string) {
	t, lang := Messages(ar.Language)
	p.render(w, status, "ldap.html", &pageData{Lang: lang, T: t, Action: PathLDAP, Request: id, CSRF: p.csrfToken(w, r, id),
		ClientName: displayName(client), Title: m.Name, Method: m.ID, Email: username, Error: t[msgKey],
		Link: oauth.PathLogin + "?" + url.Values{"request": {id}, "choose": {"1"}}.Encode()})
}

// upstreamLogout continues a logout at the session's upstream OpenID
// Provider when its login method asks for it (front_channel_logout_enabled).
func (p *Pages) upstreamLogout(w http.ResponseWriter, r *http.Request, sess store.Session, target string) (bool, error) {
	if p.Federation == nil || sess.IdPID == "" {
		return false, nil
	}
	to, ok, err := p.Federation.BeginLogout(r.Context(), p.facts(r), sess, target, p.binding(w, r))
	if err != nil || !ok {
		return false, err
	}
	http.Redirect(w, r, to, http.StatusSeeOther)
	return true, nil
}

// UpstreamLoggedOut is GET /login/oidc/logged-out, where an upstream's
// end-session endpoint sends the browser back: on to the logout's target,
// or the signed-out page. The local session ended before the browser left.
func (p *Pages) UpstreamLoggedOut(w http.ResponseWriter, r *http.Request) error {
	t, lang := Messages(r.URL.Query().Get("language"))
	st, err := p.Federation.TakeState(r.Context(), p.facts(r), store.FederationLogout, r.URL.Query().Get("state"), boundValue(r))
	// The target passed the rule when the logout began; the stored row is
	// checked again for script and local schemes (which client it was is not
	// kept, so a config file client's cleartext http stays allowed).
	if err == nil && st.Target != "" && client.ValidateRedirectURI(st.Target, client.RedirectPolicy{InsecureHTTP: true}) == nil {
		http.Redirect(w, r, st.Target, http.StatusSeeOther)
		return nil
	}
	var fe *federation.Error
	if err != nil && !errors.As(err, &fe) {
		return err
	}
	p.render(w, http.StatusOK, "logout.html", &pageData{Lang: lang, T: t})
	return nil
}

// LDAPLogin is POST /login/ldap: the user name and password of an LDAP
// login method, checked by the directory.
func (p *Pages) LDAPLogin(w http.ResponseWriter, r *http.Request) error {
	f, err := p.posted(w, r)
	if f == nil {
		return err
	}
	if p.Federation == nil {
		p.loginForm(w, r, f.id, f.ar, f.client, "")
		return nil
	}
	m, err := p.Federation.Method(r.Context(), r.PostForm.Get("method"))
	if errors.Is(err, federation.ErrUnknownMethod) || (err == nil && m.Type != federation.TypeLDAP) {
		p.loginForm(w, r, f.id, f.ar, f.client, "")
		return nil
	}
	if err != nil {
		return err
	}
	username := r.PostForm.Get("username")
	facts := p.facts(r)
	if c, err := r.Cookie(identity.DeviceCookie); err == nil {
		facts.DeviceCookie = c.Value
	}
	out, err := p.Federation.LDAPSignIn(r.Context(), facts, m, username, r.PostForm.Get("password"), f.client.ID)
	var te *identity.ThrottledError
	var fe *federation.Error
	switch {
	case errors.As(err, &te):
		w.Header().Set("Retry-After", httpx.RetryAfter(te.RetryAfter))
		p.ldapForm(w, r, http.StatusTooManyRequests, f.id, f.ar, f.client, m, username, "")
		return nil
	case errors.Is(err, federation.ErrLDAPCredentials):
		p.ldapForm(w, r, http.StatusUnauthorized, f.id, f.ar, f.client, m, username, "ldap.wrong")
		return nil
	case errors.Is(err, federation.ErrLDAPUnavailable):
		p.ldapForm(w, r, http.StatusServiceUnavailable, f.id, f.ar, f.client, m, username, "ldap.unavailable")
		return nil
	case errors.Is(err, federation.ErrLDAPAddress):
		p.ldapForm(w, r, http.StatusForbidden, f.id, f.ar, f.client, m, username, "ldap.not_allowed")
		return nil
	case errors.As(err, &fe):
		return p.federationFailed(w, r, f.id, f.ar, fe)
	case err != nil:
		return err
	}
	return p.federatedSession(w, r, f.id, f.ar, f.client, m, out, federation.AMRLDAP, nil)
}
