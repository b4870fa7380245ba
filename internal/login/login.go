// Package login serves the hosted pages of the authorization flow: login,
// consent and error pages, the browser session, and CSRF protection.
package login

import (
	"crypto/subtle"
	"encoding/base64"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/latchkey/latchkey/internal/authflow"
	"github.com/latchkey/latchkey/internal/federation"
	"github.com/latchkey/latchkey/internal/httpx"
	"github.com/latchkey/latchkey/internal/identity"
	"github.com/latchkey/latchkey/internal/journey"
	"github.com/latchkey/latchkey/internal/oauth"
	"github.com/latchkey/latchkey/internal/request"
	"github.com/latchkey/latchkey/internal/scopes"
	"github.com/latchkey/latchkey/internal/store"
	"github.com/latchkey/latchkey/internal/token"
	"github.com/latchkey/latchkey/web"
)

// Cookie names. The session cookie holds a random value; the store keeps
// only its keyed hash.
const (
	SessionCookie = "lk_session"
	csrfCookie    = "lk_csrf"
)

// Pages serves the hosted pages.
type Pages struct {
	OAuth    *oauth.Service
	Identity *identity.Service
	Journeys *journey.Service
	// Federation signs persons in at the configured login methods (nil:
	// only latchkey's own password).
	Federation *federation.Service
	Store      store.Store
	Hasher     *token.Hasher
	Templates  *web.Templates
	// CustomMessages returns the configured texts of a language (the
	// configuration API's custom_messages), which override the built-in ones.
	CustomMessages func(lang string) map[string]string
	// LogoutTarget applies the redirects whitelist to logouts (nil: no
	// redirect after logout).
	LogoutTarget LogoutTargetFunc
	Secure       bool // Secure cookies (the issuer is https)
	Now          func() time.Time
	Log          *slog.Logger

	SessionLifetime time.Duration // default 12 h
}

const pageCSP = "default-src 'none'; style-src 'self'; img-src 'self' data:; frame-ancestors 'none'; base-uri 'none'"

func (p *Pages) sessionLifetime() time.Duration {
	if p.SessionLifetime > 0 {
		return p.SessionLifetime
	}
	return 12 * time.Hour
}

// Session returns the browser's logged-in session, if any (oauth.Pages).
func (p *Pages) Session(r *http.Request) (store.Session, bool) {
	c, err := r.Cookie(SessionCookie)
	if err != nil || len(c.Value) > 128 {
		return store.Session{}, false
	}
	// With its person: the authorization endpoint's next read (oauth.Next).
	s, err := p.Store.GetSession(r.Context(), p.Hasher.HashOf(token.Session, c.Value))
	if err != nil || !p.Now().Before(s.ExpiresAt) {
		return store.Session{}, false
	}
	return s, true
}

type pageData struct {
	Lang        string
	T           map[string]string
	Action      string
	CSRF        string
	Request     string
	ClientName  string
	Email       string
	Error       string
	Message     string
	PersonEmail string
	Scopes      []scopeView
	UserCode    string
	Confirm     bool
	Status      string
	// The journeys' pages.
	Title, Submit, Link, LinkText, Token string
	AskPassword                          bool
	Fields                               []formField
	SignUpLink, ForgotLink               string
	// The step-up's choice of methods.
	Methods []methodView
	// The login methods (federation.go): buttons of the login page, and
	// the method of the LDAP form.
	LoginMethods []loginMethodView
	Method       string
	// RequestID is the id of the request an error page answers, for the
	// operator's log (httpx.WithRequestID).
	RequestID string
}

type scopeView struct{ Name, Description string }

func (p *Pages) render(w http.ResponseWriter, status int, page string, d *pageData) {
	h := w.Header()
	h.Set("Content-Security-Policy", pageCSP)
	h.Set("Content-Type", "text/html; charset=utf-8")
	h.Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	if page == "error.html" && d.RequestID == "" {
		// The id WithRequestID gave this response: the person can quote
		// it, and the log line of the refusal carries it.
		d.RequestID = h.Get(httpx.RequestIDHeader)
	}
	if p.CustomMessages != nil && d.T != nil {
		if over := p.CustomMessages(d.Lang); len(over) > 0 {
			t := maps.Clone(d.T)
			maps.Copy(t, over)
			d.T = t
		}
	}
	if err := p.Templates.Render(w, page, d); err != nil {
		p.Log.Error("render page", "page", page, "err", err)
	}
}

// ErrorPage shows msg (oauth.Pages).
func (p *Pages) ErrorPage(w http.ResponseWriter, r *http.Request, status int, msg string) {
	t, lang := Messages(r.URL.Query().Get("language"))
	p.render(w, status, "error.html", &pageData{Lang: lang, T: t, Message: msg})
}

// csrfToken binds a form to the browser (its lk_csrf cookie) and to one
// purpose (the pending request), so a cross-site form post cannot forge it.
func (p *Pages) csrfToken(w http.ResponseWriter, r *http.Request, purpose string) string {
	c, err := r.Cookie(csrfCookie)
	seed := ""
	if err == nil && len(c.Value) >= 32 && len(c.Value) <= 64 {
		seed = c.Value
	} else {
		seed = token.Random(32)
		http.SetCookie(w, &http.Cookie{Name: csrfCookie, Value: seed, Path: "/", HttpOnly: true,
			Secure: p.Secure, SameSite: http.SameSiteLaxMode})
	}
	return base64.RawURLEncoding.EncodeToString(p.Hasher.Hash("csrf", seed+"|"+purpose))
}

func (p *Pages) checkCSRF(r *http.Request, purpose string) bool {
	c, err := r.Cookie(csrfCookie)
	if err != nil {
		return false
	}
	want := base64.RawURLEncoding.EncodeToString(p.Hasher.Hash("csrf", c.Value+"|"+purpose))
	got := r.PostForm.Get("csrf_token")
	return subtle.ConstantTimeCompare([]byte(want), []byte(got)) == 1
}

// LoginPage is GET /login?request=ID.
func (p *Pages) LoginPage(w http.ResponseWriter, r *http.Request) error {
	id := r.URL.Query().Get("request")
	ar, client, err := p.OAuth.LoadRequest(r.Context(), id)
	if err != nil {
		return p.requestError(w, r, err)
	}
	if sess, ok := p.Session(r); ok {
		return p.next(w, r, id, ar, client, &sess, false)
	}
	if ar.IDP != "" && r.URL.Query().Get("choose") == "" {
		// idp names the login method: straight to it (an unknown or
		// disabled one shows the page with every method; so does the
		// method page's way back, choose=1).
		if done, err := p.startMethod(w, r, id, ar, client, ar.IDP); done || err != nil {
			return err
		}
	}
	p.loginForm(w, r, id, ar, client, "")
	return nil
}

func (p *Pages) loginForm(w http.ResponseWriter, r *http.Request, id string, ar *oauth.AuthorizeRequest, client store.Client, msgKey string) {
	t, lang := Messages(ar.Language)
	// login_hint (OpenID Connect) fills in the address; the person may change it.
	d := &pageData{Lang: lang, T: t, Action: oauth.PathLogin, Request: id,
		CSRF: p.csrfToken(w, r, id), ClientName: displayName(client), Error: t[msgKey], Email: ar.LoginHint}
	p.journeyLinks(r, d)
	p.methodLinks(r, d)
	p.render(w, http.StatusOK, "login.html", d)
}

// Login is POST /login.
func (p *Pages) Login(w http.ResponseWriter, r *http.Request) error {
	f, err := p.posted(w, r)
	if f == nil {
		return err
	}
	id, ar, client, t, lang := f.id, f.ar, f.client, f.t, f.lang
	email := r.PostForm.Get("email")
	facts := p.facts(r)
	if c, err := r.Cookie(identity.DeviceCookie); err == nil {
		facts.DeviceCookie = c.Value // the known-device counter (identity.DeviceCookie)
	}
	person, err := p.Identity.CheckPassword(r.Context(), facts, email, r.PostForm.Get("password"))
	if err != nil {
		status, msg, ok := loginRefusal(w, err)
		if !ok {
			return err
		}
		d := &pageData{Lang: lang, T: t, Action: oauth.PathLogin, Request: id,
			CSRF: p.csrfToken(w, r, id), ClientName: displayName(client), Email: email, Error: msg}
		p.journeyLinks(r, d)
		p.render(w, status, "login.html", d)
		return nil
	}
	// authflow's rule, asked before a session starts so that the page can
	// say why: with activation on, a CREATED account signs in once its
	// mailed link was followed (the flows without pages ask it too).
	pol, err := p.OAuth.Policy(r.Context())
	if err != nil {
		return err
	}
	if !pol.MaySignIn(person.Status) {
		msg := t["login.not_activated"]
		if person.Status != identity.StatusCreated {
			msg = "The account cannot sign in."
		}
		d := &pageData{Lang: lang, T: t, Action: oauth.PathLogin, Request: id, CSRF: p.csrfToken(w, r, id),
			ClientName: displayName(client), Email: email, Error: msg}
		p.journeyLinks(r, d)
		p.render(w, http.StatusForbidden, "login.html", d)
		return nil
	}
	// This browser now counts as the account's known device: failures
	// elsewhere no longer lock its owner out here (identity.DeviceCookie).
	p.Identity.RememberDevice(w, email, p.Secure)
	sess, err := p.startSession(w, r, person)
	if err != nil {
		return err
	}
	return p.next(w, r, id, ar, client, &sess, false)
}

// loginRefusal maps identity's refusal of a login to the page's answer:
// its status and the text shown, neither telling whether the account
// exists. ok is false for any other error (a 500).
func loginRefusal(w http.ResponseWriter, err error) (status int, msg string, ok bool) {
	var te *identity.ThrottledError
	switch {
	case errors.As(err, &te):
		w.Header().Set("Retry-After", httpx.RetryAfter(te.RetryAfter))
		return http.StatusTooManyRequests, "Too many failed attempts. Wait a few minutes and try again.", true
	case errors.Is(err, identity.ErrBadCredentials):
		return http.StatusUnauthorized, "The email address or password is wrong.", true
	}
	return 0, "", false
}

// facts are the request facts the services take.
func (p *Pages) facts(r *http.Request) request.Facts { return request.Of(r).At(p.Now()) }

// postedForm is a hosted form post whose pending request was loaded and
// whose CSRF token was checked.
type postedForm struct {
	id     string
	ar     *oauth.AuthorizeRequest
	client store.Client
	t      map[string]string
	lang   string
}

// posted reads a hosted form post. A nil form means the answer was written
// (an error page) or err holds the failure.
func (p *Pages) posted(w http.ResponseWriter, r *http.Request) (*postedForm, error) {
	if err := httpx.ParseForm(w, r, httpx.MaxFormBytes); err != nil {
		p.ErrorPage(w, r, http.StatusBadRequest, "The form could not be read.")
		return nil, nil
	}
	id := r.PostForm.Get("request")
	ar, client, err := p.OAuth.LoadRequest(r.Context(), id)
	if err != nil {
		return nil, p.requestError(w, r, err)
	}
	t, lang := Messages(ar.Language)
	if !p.checkCSRF(r, id) {
		p.render(w, http.StatusForbidden, "error.html", &pageData{Lang: lang, T: t, Message: t["error.csrf"]})
		return nil, nil
	}
	return &postedForm{id: id, ar: ar, client: client, t: t, lang: lang}, nil
}

// startSession creates a fresh session (a new value at every login: no
// session fixation) and sets its cookie.
func (p *Pages) startSession(w http.ResponseWriter, r *http.Request, person store.Person) (store.Session, error) {
	return p.startSessionAs(w, r, store.Session{PersonID: person.ID, AuthLevel: p.OAuth.Flow.PasswordLevel,
		AMR: []string{"DEFAULT"}})
}

// startSessionAs starts a session with s's person and authentication (a
// sign-in at a login method sets its own level and amr).
func (p *Pages) startSessionAs(w http.ResponseWriter, r *http.Request, s store.Session) (store.Session, error) {
	value, hash := p.Hasher.Mint(token.Session)
	now := p.Now().UTC()
	s.Hash, s.AuthTime, s.ExpiresAt = hash, now, now.Add(p.sessionLifetime())
	if err := p.Store.CreateSession(r.Context(), s); err != nil {
		return store.Session{}, err
	}
	// Max-Age, not Expires: a lifetime relative to the browser's clock stays
	// right whatever our clock says (an injected one, or a skewed host).
	http.SetCookie(w, &http.Cookie{Name: SessionCookie, Value: value, Path: "/", HttpOnly: true, Secure: p.Secure,
		SameSite: http.SameSiteLaxMode, MaxAge: int(p.sessionLifetime() / time.Second)})
	return s, nil
}

// next asks authflow what the flow needs now and renders or redirects to
// exactly that: the pages never decide on their own. consented: the
// person consented in this request.
func (p *Pages) next(w http.ResponseWriter, r *http.Request, id string, ar *oauth.AuthorizeRequest, client store.Client,
	sess *store.Session, consented bool) error {
	d, err := p.OAuth.Next(r.Context(), client, ar, sess, consented)
	if err != nil {
		return err
	}
	return p.follow(w, r, id, ar, client, d, consented)
}

// follow carries out decision d on the request id.
func (p *Pages) follow(w http.ResponseWriter, r *http.Request, id string, ar *oauth.AuthorizeRequest, client store.Client,
	d authflow.Decision, consented bool) error {
	switch d.Step {
	case authflow.Login:
		// A session below the level a password reaches: sign in again.
		p.loginForm(w, r, id, ar, client, "login.step_up")
		return nil
	case authflow.StepUp:
		http.Redirect(w, r, stepUpPath(d)+"?request="+url.QueryEscape(id), http.StatusSeeOther)
		return nil
	case authflow.Consent:
		http.Redirect(w, r, PathConsent+"?request="+url.QueryEscape(id), http.StatusSeeOther)
		return nil
	case authflow.Issue:
		a, _ := d.Approved()
		if consented {
			if err := p.remember(r, client, ar, a); err != nil {
				return err
			}
		}
		to, err := p.OAuth.Complete(r.Context(), p.facts(r), client, ar, a)
		if err != nil {
			return err
		}
		if err := p.OAuth.FinishRequest(r.Context(), id); err != nil {
			return err
		}
		http.Redirect(w, r, to, http.StatusSeeOther)
		return nil
	}
	return p.refuse(w, r, id, ar, d)
}

// refuse ends a request that cannot go on: a person who may not sign in,
// or a level no method here reaches. The scope's failure endpoint gets the
// person when it names one; else the client hears access_denied.
func (p *Pages) refuse(w http.ResponseWriter, r *http.Request, id string, ar *oauth.AuthorizeRequest, d authflow.Decision) error {
	if done, err := p.finishRefused(w, r, id, ar); done || err != nil {
		return err
	}
	desc := "The authentication level the scope requires cannot be reached."
	if d.Reason == authflow.ReasonInactive {
		desc = "The account cannot sign in."
	}
	if d.FailURL != "" {
		p.OAuth.LogRefusal(r.Context(), ar.ClientID, oauth.ErrAccessDenied, desc, oauth.AnsweredFailURL)
		http.Redirect(w, r, d.FailURL, http.StatusSeeOther)
		return nil
	}
	p.OAuth.LogRefusal(r.Context(), ar.ClientID, oauth.ErrAccessDenied, desc, oauth.AnsweredRedirect)
	to := p.OAuth.ErrorRedirect(ar, &oauth.AuthorizeError{Code: oauth.ErrAccessDenied, Description: desc, Redirect: true,
		RedirectURI: ar.RedirectURI, State: ar.State})
	http.Redirect(w, r, to, http.StatusSeeOther)
	return nil
}

// finishRefused ends a request that will not issue anything. For a device
// request it also denies the device (which hears access_denied at its
// next poll), shows the browser the device's status and reports done; the
// caller answers any other client itself.
func (p *Pages) finishRefused(w http.ResponseWriter, r *http.Request, id string, ar *oauth.AuthorizeRequest) (done bool, err error) {
	if err := p.OAuth.FinishRequest(r.Context(), id); err != nil {
		return false, err
	}
	if ar.DeviceUserCode == "" {
		return false, nil
	}
	status := "denied"
	if err := p.OAuth.DenyDevice(r.Context(), p.facts(r), ar.DeviceUserCode, ""); err != nil {
		status = oauth.DeviceStatus(err)
	}
	http.Redirect(w, r, oauth.DeviceStatusURL(status), http.StatusSeeOther)
	return true, nil
}

// PathConsent is the consent page.
const PathConsent = "/consent"

// ConsentPage is GET /consent?request=ID.
func (p *Pages) ConsentPage(w http.ResponseWriter, r *http.Request) error {
	id := r.URL.Query().Get("request")
	ar, client, err := p.OAuth.LoadRequest(r.Context(), id)
	if err != nil {
		return p.requestError(w, r, err)
	}
	sess, ok := p.Session(r)
	if !ok {
		http.Redirect(w, r, oauth.PathLogin+"?request="+url.QueryEscape(id), http.StatusSeeOther)
		return nil
	}
	// The consent page is shown only when consent is the next step: going
	// straight to it skips nothing (a step-up still comes first).
	d, err := p.OAuth.Next(r.Context(), client, ar, &sess, false)
	if err != nil {
		return err
	}
	if d.Step != authflow.Consent {
		return p.follow(w, r, id, ar, client, d, false)
	}
	person, err := p.Store.GetPerson(r.Context(), sess.PersonID)
	if err != nil {
		return err
	}
	configured, err := p.Store.GetScopes(r.Context(), ar.Scopes)
	if err != nil {
		return err
	}
	byID := scopes.ByID(configured)
	t, lang := Messages(ar.Language)
	views := make([]scopeView, len(ar.Scopes))
	for i, s := range ar.Scopes {
		desc := scopes.Description(byID[s], ar.Language)
		if desc == "" {
			desc = t["scope."+s] // the standard OpenID Connect scopes have built-in texts
		}
		if desc == "" {
			desc = scopeFallback(t, s)
		}
		views[i] = scopeView{Name: s, Description: desc}
	}
	page := "consent.html"
	if ar.DeviceUserCode != "" {
		page = "device_consent.html"
	}
	p.render(w, http.StatusOK, page, &pageData{Lang: lang, T: t, Action: PathConsent, Request: id,
		CSRF: p.csrfToken(w, r, id), ClientName: displayName(client), PersonEmail: person.Email, Scopes: views,
		UserCode: oauth.FormatUserCode(ar.DeviceUserCode)})
	return nil
}

// Consent is POST /consent: allow issues the code, deny answers access_denied.
func (p *Pages) Consent(w http.ResponseWriter, r *http.Request) error {
	f, err := p.posted(w, r)
	if f == nil {
		return err
	}
	id, ar, client, t, lang := f.id, f.ar, f.client, f.t, f.lang
	sess, ok := p.Session(r)
	if !ok {
		http.Redirect(w, r, oauth.PathLogin+"?request="+url.QueryEscape(id), http.StatusSeeOther)
		return nil
	}
	switch r.PostForm.Get("decision") {
	case "allow":
		// authflow decides again with the consent given: an allow posted
		// before the step-up is done issues nothing.
		return p.next(w, r, id, ar, client, &sess, true)
	case "deny":
		to := p.OAuth.DenyRedirect(r.Context(), p.facts(r), client, ar, sess.PersonID)
		if err := p.OAuth.FinishRequest(r.Context(), id); err != nil {
			return err
		}
		http.Redirect(w, r, to, http.StatusSeeOther)
		return nil
	default:
		p.render(w, http.StatusBadRequest, "error.html", &pageData{Lang: lang, T: t, Message: "Choose allow or deny."})
		return nil
	}
}

// remember stores the consent to the approved scopes that have
// persistent_consent, so the person is not asked again for them.
func (p *Pages) remember(r *http.Request, client store.Client, ar *oauth.AuthorizeRequest, a authflow.Approval) error {
	if ar.DeviceUserCode != "" {
		return nil // asked at every device authorization
	}
	configured, err := p.Store.GetScopes(r.Context(), a.Scopes())
	if err != nil {
		return err
	}
	var cs []store.Consent
	now := p.Now().UTC()
	for _, sc := range configured {
		if sc.PersistentConsent {
			cs = append(cs, store.Consent{PersonID: a.Subject(), ClientID: client.ID, Scope: sc.ID, GrantedAt: now})
		}
	}
	if len(cs) == 0 {
		return nil
	}
	return p.Store.SaveConsents(r.Context(), cs)
}

func (p *Pages) requestError(w http.ResponseWriter, r *http.Request, err error) error {
	if errors.Is(err, oauth.ErrRequestGone) {
		t, lang := Messages(r.URL.Query().Get("language"))
		p.render(w, http.StatusBadRequest, "error.html", &pageData{Lang: lang, T: t, Message: t["error.expired"]})
		return nil
	}
	if errors.Is(err, oauth.ErrRedirectRefused) {
		t, lang := Messages(r.URL.Query().Get("language"))
		p.render(w, http.StatusBadRequest, "error.html", &pageData{Lang: lang, T: t, Message: t["error.redirect"]})
		return nil
	}
	return err
}

// scopeFallback describes a scope that the scope configuration leaves
// undescribed: a person should not have to decide on "vendor_api_admin"
// alone. Its words are split at _ - . : (vendor api admin); a URL keeps
// its form.
func scopeFallback(t map[string]string, scope string) string {
	name := scope
	if !strings.Contains(scope, "/") {
		if words := strings.FieldsFunc(scope, func(r rune) bool { return strings.ContainsRune("_-.:", r) }); len(words) > 0 {
			name = strings.Join(words, " ")
		}
	}
	return fmt.Sprintf(t["scope.fallback"], name)
}

func displayName(c store.Client) string {
	if c.Name != "" {
		return c.Name
	}
	return c.ID
}

// ServerErrorPage is the httpx.Style of the hosted pages: errors become an
// error page, never a JSON body or a stack trace.
func (p *Pages) ServerErrorPage(w http.ResponseWriter, e *httpx.Error) {
	t, lang := Messages("")
	msg := e.Description
	if e.Status >= 500 {
		msg = "The service could not handle the request. Try again in a moment."
	}
	p.render(w, e.Status, "error.html", &pageData{Lang: lang, T: t, Message: msg})
}
