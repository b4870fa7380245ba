package login

import (
	"errors"
	"net/http"
	"net/url"
	"slices"
	"strings"

	"github.com/latchkey/latchkey/internal/authflow"
	"github.com/latchkey/latchkey/internal/httpx"
	"github.com/latchkey/latchkey/internal/identity"
	"github.com/latchkey/latchkey/internal/journey"
	"github.com/latchkey/latchkey/internal/oauth"
	"github.com/latchkey/latchkey/internal/store"
)

// Paths of the step-up pages.
const (
	PathTOTP      = "/login/totp"    // a code of the authenticator app
	PathStepUp    = "/login/step-up" // the choice of method (USER_PREFERENCE with several)
	PathEmailCode = "/login/email"   // a code mailed to the person
)

type methodView struct{ Name, Path, Label string }

var methodPaths = map[string]string{authflow.MethodTOTP: PathTOTP, authflow.MethodEmail: PathEmailCode}

// stepUpPath is the page of a StepUp decision: the choice when it offers
// several methods, else its method's page.
func stepUpPath(d authflow.Decision) string {
	if len(d.Methods) > 1 {
		return PathStepUp
	}
	if p, ok := methodPaths[d.Method]; ok {
		return p
	}
	return PathTOTP
}

// stepUpState is a step-up page's request: the pending authorization
// request, the browser session, and the level the method reaches.
type stepUpState struct {
	id     string
	ar     *oauth.AuthorizeRequest
	client store.Client
	sess   store.Session
	level  int
	d      authflow.Decision
}

// atStepUp asks authflow whether the flow of request id is at a step-up
// that offers method ("" for any). When it is not, the answer was written
// (the login page, or wherever the decision leads) and the state is nil:
// a page of a method never raises a session that authflow did not offer it
// for, whatever a client posts.
func (p *Pages) atStepUp(w http.ResponseWriter, r *http.Request, id string, ar *oauth.AuthorizeRequest, client store.Client, method string) (*stepUpState, error) {
	sess, ok := p.Session(r)
	if !ok {
		http.Redirect(w, r, oauth.PathLogin+"?request="+url.QueryEscape(id), http.StatusSeeOther)
		return nil, nil
	}
	d, err := p.OAuth.Next(r.Context(), client, ar, &sess, false)
	if err != nil {
		return nil, err
	}
	level, offered := d.Offers(method)
	if method == "" {
		offered = d.Step == authflow.StepUp && len(d.Methods) > 1
	}
	if !offered {
		// Elsewhere: the page the decision names (never this one, which
		// does not offer the method).
		return nil, p.follow(w, r, id, ar, client, d, false)
	}
	return &stepUpState{id: id, ar: ar, client: client, sess: sess, level: level, d: d}, nil
}

// otherMethods links the step-up's choice page when the person may choose.
func (p *Pages) otherMethods(d *pageData, st *stepUpState) {
	if len(st.d.Methods) > 1 {
		d.Link, d.LinkText = PathStepUp+"?request="+url.QueryEscape(st.id), d.T["stepup.other"]
	}
}

// StepUpPage is GET /login/step-up?request=ID: the methods the person may
// choose from (step_up.stategy USER_PREFERENCE), strongest first.
func (p *Pages) StepUpPage(w http.ResponseWriter, r *http.Request) error {
	id := r.URL.Query().Get("request")
	ar, client, err := p.OAuth.LoadRequest(r.Context(), id)
	if err != nil {
		return p.requestError(w, r, err)
	}
	st, err := p.atStepUp(w, r, id, ar, client, "")
	if st == nil {
		return err
	}
	t, lang := Messages(ar.Language)
	d := &pageData{Lang: lang, T: t, ClientName: displayName(client)}
	for _, m := range st.d.Methods {
		d.Methods = append(d.Methods, methodView{Name: m.Name, Path: methodPaths[m.Name] + "?request=" + url.QueryEscape(id),
			Label: t["stepup."+m.Name]})
	}
	p.render(w, http.StatusOK, "stepup.html", d)
	return nil
}

// TOTPPage is GET /login/totp?request=ID: the code form of the TOTP step-up.
func (p *Pages) TOTPPage(w http.ResponseWriter, r *http.Request) error {
	id := r.URL.Query().Get("request")
	ar, client, err := p.OAuth.LoadRequest(r.Context(), id)
	if err != nil {
		return p.requestError(w, r, err)
	}
	st, err := p.atStepUp(w, r, id, ar, client, authflow.MethodTOTP)
	if st == nil {
		return err
	}
	t, lang := Messages(ar.Language)
	d := &pageData{Lang: lang, T: t, Action: PathTOTP, Request: id, CSRF: p.csrfToken(w, r, id), ClientName: displayName(client)}
	p.otherMethods(d, st)
	p.render(w, http.StatusOK, "totp.html", d)
	return nil
}

// TOTP is POST /login/totp: a right code raises the session to the level
// TOTP reaches and the flow goes on; a wrong one shows the form again.
func (p *Pages) TOTP(w http.ResponseWriter, r *http.Request) error {
	f, err := p.posted(w, r)
	if f == nil {
		return err
	}
	// A code is taken only when the flow is at a step-up that offers TOTP.
	st, err := p.atStepUp(w, r, f.id, f.ar, f.client, authflow.MethodTOTP)
	if st == nil {
		return err
	}
	person, err := p.Store.GetPerson(r.Context(), st.sess.PersonID)
	if err != nil {
		return err
	}
	if err := p.Identity.CheckTOTP(r.Context(), p.facts(r), person, r.PostForm.Get("code")); err != nil {
		if !errors.Is(err, identity.ErrBadTOTP) {
			return err
		}
		d := &pageData{Lang: f.lang, T: f.t, Action: PathTOTP, Request: f.id, CSRF: p.csrfToken(w, r, f.id),
			ClientName: displayName(f.client), Error: f.t["totp.wrong"]}
		p.otherMethods(d, st)
		p.render(w, http.StatusUnauthorized, "totp.html", d)
		return nil
	}
	return p.steppedUp(w, r, st, person, f.lang, []string{journey.AMROTP})
}

// steppedUp raises the session to the level of the method just proved,
// adds its amr values, and goes on with the flow. The journeys mail the
// step_up_authentication notification in the same transaction.
func (p *Pages) steppedUp(w http.ResponseWriter, r *http.Request, st *stepUpState, person store.Person, lang string, amr []string) error {
	var sess store.Session
	var err error
	if p.Journeys != nil {
		sess, err = p.Journeys.SteppedUp(r.Context(), st.sess.Hash, person, st.level, amr, lang)
	} else {
		err = p.Store.UpdateSession(r.Context(), st.sess.Hash, func(s store.Session) (store.Session, error) {
			s.AuthLevel = max(s.AuthLevel, st.level)
			for _, v := range amr {
				if !slices.Contains(s.AMR, v) {
					s.AMR = append(s.AMR, v)
				}
			}
			sess = s
			return s, nil
		})
	}
	if err != nil {
		return err
	}
	return p.next(w, r, st.id, st.ar, st.client, &sess, false)
}

// EmailCodePage is GET /login/email?request=ID: the step-up by a code
// mailed to the person. The GET only shows the page (mail scanners and
// prefetchers open links); a button sends the code; once sent
// (sent=1) the page asks for it.
func (p *Pages) EmailCodePage(w http.ResponseWriter, r *http.Request) error {
	if p.Journeys == nil {
		http.NotFound(w, r)
		return nil
	}
	id := r.URL.Query().Get("request")
	ar, client, err := p.OAuth.LoadRequest(r.Context(), id)
	if err != nil {
		return p.requestError(w, r, err)
	}
	st, err := p.atStepUp(w, r, id, ar, client, authflow.MethodEmail)
	if st == nil {
		return err
	}
	person, err := p.Store.GetPerson(r.Context(), st.sess.PersonID)
	if err != nil {
		return err
	}
	t, lang := Messages(ar.Language)
	p.emailCodeForm(w, r, st, person, t, lang, http.StatusOK, r.URL.Query().Get("sent") == "1", "")
	return nil
}

func (p *Pages) emailCodeForm(w http.ResponseWriter, r *http.Request, st *stepUpState, person store.Person, t map[string]string,
	lang string, status int, sent bool, msg string) {
	d := &pageData{Lang: lang, T: t, Action: PathEmailCode, Request: st.id, CSRF: p.csrfToken(w, r, st.id),
		ClientName: displayName(st.client), PersonEmail: maskEmail(person.Email), Confirm: sent, Error: msg}
	p.otherMethods(d, st)
	p.render(w, status, "email_code.html", d)
}

// EmailCode is POST /login/email: action=send mails a new code (then the
// page asks for it); action=verify spends the code typed, and a right one
// raises the session to email_authentication_level.
func (p *Pages) EmailCode(w http.ResponseWriter, r *http.Request) error {
	if p.Journeys == nil {
		http.NotFound(w, r)
		return nil
	}
	f, err := p.posted(w, r)
	if f == nil {
		return err
	}
	st, err := p.atStepUp(w, r, f.id, f.ar, f.client, authflow.MethodEmail)
	if st == nil {
		return err
	}
	person, err := p.Store.GetPerson(r.Context(), st.sess.PersonID)
	if err != nil {
		return err
	}
	var he *httpx.Error
	switch r.PostForm.Get("action") {
	case "send":
		err := p.Journeys.SendEmailCode(r.Context(), p.facts(r), person, st.sess.Hash, f.lang)
		if errors.As(err, &he) && errors.Is(he.Cause, journey.ErrEmailCodeThrottled) {
			w.Header().Set("Retry-After", he.Header["Retry-After"])
			p.emailCodeForm(w, r, st, person, f.t, f.lang, http.StatusTooManyRequests, false, f.t["email_code.throttled"])
			return nil
		}
		if err != nil {
			return err
		}
		http.Redirect(w, r, PathEmailCode+"?"+url.Values{"request": {f.id}, "sent": {"1"}}.Encode(), http.StatusSeeOther)
		return nil
	case "verify":
		err := p.Journeys.CheckEmailCode(r.Context(), p.facts(r), person, st.sess.Hash, strings.TrimSpace(r.PostForm.Get("code")))
		switch {
		case errors.As(err, &he) && errors.Is(he.Cause, journey.ErrEmailCodeThrottled):
			w.Header().Set("Retry-After", he.Header["Retry-After"])
			p.emailCodeForm(w, r, st, person, f.t, f.lang, http.StatusTooManyRequests, true, f.t["email_code.throttled"])
			return nil
		case errors.Is(err, journey.ErrBadEmailCode):
			p.emailCodeForm(w, r, st, person, f.t, f.lang, http.StatusUnauthorized, true, f.t["email_code.wrong"])
			return nil
		case err != nil:
			return err
		}
		return p.steppedUp(w, r, st, person, f.lang, []string{journey.AMROTP, journey.AMREmail})
	}
	p.render(w, http.StatusBadRequest, "error.html", &pageData{Lang: f.lang, T: f.t, Message: "The form could not be read."})
	return nil
}

// maskEmail shows enough of an address for its owner to recognise it:
// the first letter of the local part and the domain.
func maskEmail(a string) string {
	at := strings.LastIndexByte(a, '@')
	if at < 1 {
		return a
	}
	return a[:1] + "•••" + a[at:]
}
