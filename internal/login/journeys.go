package login

import (
	"errors"
	"net/http"
	"net/url"

	"github.com/latchkey/latchkey/internal/httpx"
	"github.com/latchkey/latchkey/internal/journey"
	"github.com/latchkey/latchkey/internal/oauth"
	"github.com/latchkey/latchkey/internal/store"
)

// The self-service journeys' pages: sign-up, password reset, activation.
// Each is 404 while its switch is off. Forms carry the pending
// authorization request (request) so that the person returns to it, and
// the page language.

// journeyContext is what every journey page knows about its request.
type journeyContext struct {
	t       map[string]string
	lang    string
	request string // pending authorization request; "" when none (or gone)
	client  string // its client's display name
}

// context reads request and language from the query or the posted form. A
// request that is gone is dropped rather than shown as an error: the
// journey goes on without a client to return to.
func (p *Pages) journeyContext(r *http.Request) journeyContext {
	get := func(k string) string {
		if r.Method == http.MethodPost {
			return r.PostForm.Get(k)
		}
		return r.URL.Query().Get(k)
	}
	jc := journeyContext{}
	lang := get("language")
	if id := get("request"); id != "" && len(id) <= 128 {
		if ar, client, err := p.OAuth.LoadRequest(r.Context(), id); err == nil {
			jc.request, jc.client = id, displayName(client)
			if lang == "" {
				lang = ar.Language
			}
		}
	}
	if len(lang) > 16 {
		lang = ""
	}
	jc.t, jc.lang = Messages(lang)
	return jc
}

// query is the request and language of jc as a query string.
func (jc journeyContext) query() string {
	q := url.Values{}
	if jc.request != "" {
		q.Set("request", jc.request)
	}
	if jc.lang != "" && jc.lang != "en" {
		q.Set("language", jc.lang)
	}
	if len(q) == 0 {
		return ""
	}
	return "?" + q.Encode()
}

// loginLink leads back to the login page of the request (or to nothing).
func (jc journeyContext) loginLink() string {
	if jc.request == "" {
		return ""
	}
	return oauth.PathLogin + jc.query()
}

func (p *Pages) notice(w http.ResponseWriter, status int, jc journeyContext, title, msg, link, linkText, errText string) {
	p.render(w, status, "notice.html", &pageData{Lang: jc.lang, T: jc.t, Title: jc.t[title], Message: jc.t[msg],
		Link: link, LinkText: jc.t[linkText], Error: errText})
}

// journeyForm parses a journey form post and checks its CSRF token; false
// means the answer was written.
func (p *Pages) journeyForm(w http.ResponseWriter, r *http.Request, purpose string) (journeyContext, bool) {
	if err := httpx.ParseForm(w, r, httpx.MaxFormBytes); err != nil {
		p.ErrorPage(w, r, http.StatusBadRequest, "The form could not be read.")
		return journeyContext{}, false
	}
	jc := p.journeyContext(r)
	if !p.checkCSRF(r, purpose) {
		p.render(w, http.StatusForbidden, "error.html", &pageData{Lang: jc.lang, T: jc.t, Message: jc.t["error.csrf"]})
		return jc, false
	}
	return jc, true
}

// journeyError writes the page of a journey error; other errors go up.
func (p *Pages) journeyError(w http.ResponseWriter, r *http.Request, jc journeyContext, err error, again string) error {
	var he *httpx.Error
	switch {
	case errors.Is(err, journey.ErrOff):
		p.notFound(w, r)
	case errors.As(err, &he) && he.Status == http.StatusTooManyRequests:
		for k, v := range he.Header {
			w.Header().Set(k, v)
		}
		p.notice(w, http.StatusTooManyRequests, jc, "journey.throttled.title", "journey.throttled", "", "", "")
	case errors.Is(err, journey.ErrLinkExpired):
		p.notice(w, http.StatusGone, jc, "link.expired.title", "link.expired", again+jc.query(), "link.new", "")
	case errors.Is(err, journey.ErrLinkUsed):
		p.notice(w, http.StatusGone, jc, "link.used.title", "link.used", again+jc.query(), "link.new", "")
	case errors.Is(err, journey.ErrLinkInvalid):
		p.notice(w, http.StatusNotFound, jc, "link.invalid.title", "link.invalid", again+jc.query(), "link.new", "")
	default:
		return err
	}
	return nil
}

// notFound is the page of an address that is not there, or of a journey
// that is switched off.
func (p *Pages) notFound(w http.ResponseWriter, r *http.Request) {
	t, lang := Messages(r.URL.Query().Get("language"))
	if len(lang) > 16 {
		t, lang = Messages("")
	}
	p.render(w, http.StatusNotFound, "error.html", &pageData{Lang: lang, T: t, Message: "There is no page at this address."})
}

// SignUpOn and PasswordResetOn are the switches of the journeys (Switched).
func SignUpOn(st journey.Settings) bool        { return st.SignUp }
func PasswordResetOn(st journey.Settings) bool { return st.PasswordReset }

// Switched guards every page of a journey — its form posts and its "done"
// pages too — by its switch: while off, the 404 page, before a form or a
// CSRF token is read. (Activation pages stay: invitations use them
// whatever person_activation says.)
func (p *Pages) Switched(on func(journey.Settings) bool, h func(http.ResponseWriter, *http.Request) error) func(http.ResponseWriter, *http.Request) error {
	return func(w http.ResponseWriter, r *http.Request) error {
		if p.Journeys == nil {
			p.notFound(w, r)
			return nil
		}
		st, err := p.Journeys.Settings(r.Context())
		if err != nil {
			return err
		}
		if !on(st) {
			p.notFound(w, r)
			return nil
		}
		return h(w, r)
	}
}

// --- password reset ---

// ForgotPage is GET /password/forgot.
func (p *Pages) ForgotPage(w http.ResponseWriter, r *http.Request) error {
	st, err := p.Journeys.Settings(r.Context())
	if err != nil {
		return err
	}
	jc := p.journeyContext(r)
	if !st.PasswordReset {
		p.notFound(w, r)
		return nil
	}
	p.forgotForm(w, r, http.StatusOK, jc, journey.PathForgot, "forgot.title", "forgot.lead", "forgot.submit", "", "")
	return nil
}

func (p *Pages) forgotForm(w http.ResponseWriter, r *http.Request, status int, jc journeyContext, action, title, lead, submit, email, errText string) {
	d := &pageData{Lang: jc.lang, T: jc.t, Action: action, CSRF: p.csrfToken(w, r, action), Request: jc.request,
		Email: email, Error: errText, Submit: jc.t[submit], Link: jc.loginLink(), LinkText: jc.t["journey.back"]}
	if title != "forgot.title" { // the same page asks for a new activation link
		d.T = cloneWith(jc.t, map[string]string{"forgot.title": jc.t[title], "forgot.lead": jc.t[lead]})
	}
	p.render(w, status, "forgot.html", d)
}

// Forgot is POST /password/forgot: the same answer for every email.
func (p *Pages) Forgot(w http.ResponseWriter, r *http.Request) error {
	jc, ok := p.journeyForm(w, r, journey.PathForgot)
	if !ok {
		return nil
	}
	email := r.PostForm.Get("email")
	if len(email) > 1024 {
		email = ""
	}
	if err := p.Journeys.RequestPasswordReset(r.Context(), p.facts(r), email, jc.lang, jc.request); err != nil {
		return p.journeyError(w, r, jc, err, journey.PathForgot)
	}
	http.Redirect(w, r, journey.PathForgot+"/sent"+jc.query(), http.StatusSeeOther)
	return nil
}

// ForgotSent is GET /password/forgot/sent.
func (p *Pages) ForgotSent(w http.ResponseWriter, r *http.Request) error {
	jc := p.journeyContext(r)
	p.notice(w, http.StatusOK, jc, "forgot.sent.title", "forgot.sent", jc.loginLink(), "journey.back", "")
	return nil
}

// ResetPage is GET /password/reset?token=…: the link is checked, not spent
// (mail scanners open links), and the new-password form is shown.
func (p *Pages) ResetPage(w http.ResponseWriter, r *http.Request) error {
	st, err := p.Journeys.Settings(r.Context())
	if err != nil {
		return err
	}
	if !st.PasswordReset {
		p.notFound(w, r)
		return nil
	}
	jc := p.journeyContext(r)
	link := r.URL.Query().Get("token")
	if _, err := p.Journeys.CheckLink(r.Context(), store.PersonTokenPasswordReset, link); err != nil {
		return p.journeyError(w, r, jc, err, journey.PathForgot)
	}
	p.resetForm(w, r, http.StatusOK, jc, link, "")
	return nil
}

func (p *Pages) resetForm(w http.ResponseWriter, r *http.Request, status int, jc journeyContext, link, errText string) {
	p.render(w, status, "reset.html", &pageData{Lang: jc.lang, T: jc.t, Action: journey.PathReset,
		CSRF: p.csrfToken(w, r, journey.PathReset), Request: jc.request, Token: link, Error: errText, AskPassword: true,
		Title: jc.t["reset.title"], Message: jc.t["reset.lead"], Submit: jc.t["reset.submit"]})
}

// Reset is POST /password/reset.
func (p *Pages) Reset(w http.ResponseWriter, r *http.Request) error {
	jc, ok := p.journeyForm(w, r, journey.PathReset)
	if !ok {
		return nil
	}
	link, pw := r.PostForm.Get("token"), r.PostForm.Get("password")
	if pw != r.PostForm.Get("password_confirm") {
		p.resetForm(w, r, http.StatusBadRequest, jc, link, jc.t["reset.mismatch"])
		return nil
	}
	_, err := p.Journeys.ResetPassword(r.Context(), p.facts(r), link, pw, jc.lang)
	var pe *journey.PasswordError
	if errors.As(err, &pe) {
		p.resetForm(w, r, http.StatusBadRequest, jc, link, pe.Message)
		return nil
	}
	if err != nil {
		return p.journeyError(w, r, jc, err, journey.PathForgot)
	}
	// Every session of the person ended with the reset, this one too.
	http.SetCookie(w, &http.Cookie{Name: SessionCookie, Value: "", Path: "/", MaxAge: -1, HttpOnly: true, Secure: p.Secure,
		SameSite: http.SameSiteLaxMode})
	http.Redirect(w, r, journey.PathReset+"/done"+jc.query(), http.StatusSeeOther)
	return nil
}

// ResetDone is GET /password/reset/done.
func (p *Pages) ResetDone(w http.ResponseWriter, r *http.Request) error {
	jc := p.journeyContext(r)
	p.notice(w, http.StatusOK, jc, "reset.done.title", "reset.done", jc.loginLink(), "journey.signin", "")
	return nil
}

func cloneWith(t map[string]string, over map[string]string) map[string]string {
	out := make(map[string]string, len(t)+len(over))
	for k, v := range t {
		out[k] = v
	}
	for k, v := range over {
		out[k] = v
	}
	return out
}

// --- sign-up ---

type formField struct {
	Name, Label, Type, Autocomplete, Value, Problem string
	Required                                        bool
	Max                                             int
}

// SignUpPage is GET /signup.
func (p *Pages) SignUpPage(w http.ResponseWriter, r *http.Request) error {
	st, err := p.Journeys.Settings(r.Context())
	if err != nil {
		return err
	}
	if !st.SignUp {
		p.notFound(w, r)
		return nil
	}
	p.signUpForm(w, r, http.StatusOK, p.journeyContext(r), st, journey.SignUpForm{}, nil)
	return nil
}

func (p *Pages) signUpForm(w http.ResponseWriter, r *http.Request, status int, jc journeyContext, st journey.Settings,
	f journey.SignUpForm, problems journey.FieldErrors) {
	ff := st.FormFields()
	t := jc.t
	fields := []formField{
		{Name: "email", Label: t["login.email"], Type: "email", Autocomplete: "email", Value: f.Email, Required: true, Max: 254},
	}
	if ff.EmailConfirm {
		fields = append(fields, formField{Name: "email_confirm", Label: t["signup.email_confirm"], Type: "email",
			Autocomplete: "email", Value: f.EmailConfirm, Required: true, Max: 254})
	}
	if ff.Password { // with activation on, the activation page asks for it
		fields = append(fields, formField{Name: "password", Label: t["login.password"], Type: "password",
			Autocomplete: "new-password", Required: true, Max: 4096})
	}
	fields = append(fields, profileFields(t, ff, f)...)
	errText := ""
	for i := range fields {
		fields[i].Problem = problems[fields[i].Name]
		if fields[i].Problem != "" && errText == "" {
			errText = t["signup.fix"]
		}
	}
	if msg := problems["profile"]; msg != "" {
		errText = msg
	}
	if msg := problems["password"]; msg != "" && errText == "" {
		errText = t["signup.fix"]
	}
	p.render(w, status, "signup.html", &pageData{Lang: jc.lang, T: t, Action: journey.PathSignUp,
		CSRF: p.csrfToken(w, r, journey.PathSignUp), Request: jc.request, ClientName: jc.client, Fields: fields,
		Error: errText, Link: jc.loginLink(), LinkText: t["journey.signin"]})
}

// profileFields are the profile fields of the sign-up form, which the
// activation page shows again for the link holder to confirm.
func profileFields(t map[string]string, ff journey.Fields, f journey.SignUpForm) []formField {
	fields := []formField{
		{Name: "first_name", Label: t["signup.first_name"], Type: "text", Autocomplete: "given-name", Value: f.FirstName,
			Required: ff.FirstNameRequired, Max: 100},
		{Name: "last_name", Label: t["signup.last_name"], Type: "text", Autocomplete: "family-name", Value: f.LastName,
			Required: ff.LastNameRequired, Max: 100}}
	if ff.Phone {
		fields = append(fields, formField{Name: "phone", Label: t["signup.phone"], Type: "tel", Autocomplete: "tel",
			Value: f.Phone, Required: ff.PhoneRequired, Max: 20})
	}
	if ff.PhoneConfirm {
		fields = append(fields, formField{Name: "phone_confirm", Label: t["signup.phone_confirm"], Type: "tel",
			Autocomplete: "tel", Value: f.PhoneConfirm, Required: ff.PhoneRequired, Max: 20})
	}
	if ff.BirthDate {
		fields = append(fields, formField{Name: "birth_date", Label: t["signup.birth_date"], Type: "date",
			Autocomplete: "bday", Value: f.BirthDate, Max: 10})
	}
	return fields
}

// SignUp is POST /signup. Success and an email that has an account get the
// same page.
func (p *Pages) SignUp(w http.ResponseWriter, r *http.Request) error {
	jc, ok := p.journeyForm(w, r, journey.PathSignUp)
	if !ok {
		return nil
	}
	st, err := p.Journeys.Settings(r.Context())
	if err != nil {
		return err
	}
	pf := r.PostForm
	f := journey.SignUpForm{Email: pf.Get("email"), EmailConfirm: pf.Get("email_confirm"), Password: pf.Get("password"),
		FirstName: pf.Get("first_name"), LastName: pf.Get("last_name"), Phone: pf.Get("phone"),
		PhoneConfirm: pf.Get("phone_confirm"), BirthDate: pf.Get("birth_date")}
	err = p.Journeys.SignUp(r.Context(), p.facts(r), f, jc.lang, jc.request)
	var fe journey.FieldErrors
	var pe *journey.PasswordError
	switch {
	case errors.As(err, &fe):
		p.signUpForm(w, r, http.StatusBadRequest, jc, st, f, fe)
		return nil
	case errors.As(err, &pe):
		p.signUpForm(w, r, http.StatusBadRequest, jc, st, f, journey.FieldErrors{"password": pe.Message})
		return nil
	case err != nil:
		return p.journeyError(w, r, jc, err, journey.PathSignUp)
	}
	http.Redirect(w, r, journey.PathSignUp+"/done"+jc.query(), http.StatusSeeOther)
	return nil
}

// SignUpDone is GET /signup/done.
func (p *Pages) SignUpDone(w http.ResponseWriter, r *http.Request) error {
	st, err := p.Journeys.Settings(r.Context())
	if err != nil {
		return err
	}
	jc := p.journeyContext(r)
	if st.Activation {
		p.notice(w, http.StatusOK, jc, "signup.check_mail.title", "signup.check_mail", "", "", "")
		return nil
	}
	p.notice(w, http.StatusOK, jc, "signup.done.title", "signup.done", jc.loginLink(), "journey.signin", "")
	return nil
}

// --- activation and invitation ---

// ActivatePage is GET /activate?token=…: the link holder chooses the
// password (and, for an activation, confirms the profile fields);
// opening the link alone does not spend it.
func (p *Pages) ActivatePage(w http.ResponseWriter, r *http.Request) error {
	jc := p.journeyContext(r)
	link := r.URL.Query().Get("token")
	kind, f, err := p.Journeys.ActivationForm(r.Context(), link)
	if err != nil {
		return p.journeyError(w, r, jc, err, PathActivateResend)
	}
	return p.activateForm(w, r, http.StatusOK, jc, link, kind, f, nil)
}

// PathActivateResend asks for a new activation or invitation link.
const PathActivateResend = "/activate/resend"

func (p *Pages) activateForm(w http.ResponseWriter, r *http.Request, status int, jc journeyContext, link, kind string,
	f journey.SignUpForm, problems journey.FieldErrors) error {
	title, lead, submit := "activate.title", "activate.lead", "activate.submit"
	var fields []formField
	errText := problems["password"]
	if kind == store.PersonTokenInvitation {
		title, lead, submit = "invitation.title", "invitation.lead", "invitation.submit"
	} else {
		st, err := p.Journeys.Settings(r.Context())
		if err != nil {
			return err
		}
		fields = profileFields(jc.t, st.FormFields(), f)
		for i := range fields {
			fields[i].Problem = problems[fields[i].Name]
			if fields[i].Problem != "" && errText == "" {
				errText = jc.t["signup.fix"]
			}
		}
		if msg := problems["profile"]; msg != "" && errText == "" {
			errText = msg
		}
	}
	p.render(w, status, "reset.html", &pageData{Lang: jc.lang, T: jc.t, Action: journey.PathActivate,
		CSRF: p.csrfToken(w, r, journey.PathActivate), Request: jc.request, Token: link, Error: errText, Fields: fields,
		AskPassword: true, Title: jc.t[title], Message: jc.t[lead], Submit: jc.t[submit]})
	return nil
}

// Activate is POST /activate.
func (p *Pages) Activate(w http.ResponseWriter, r *http.Request) error {
	jc, ok := p.journeyForm(w, r, journey.PathActivate)
	if !ok {
		return nil
	}
	pf := r.PostForm
	link := pf.Get("token")
	kind, f, err := p.Journeys.ActivationForm(r.Context(), link)
	if err != nil {
		return p.journeyError(w, r, jc, err, PathActivateResend)
	}
	// A field the form did not post (a template of the operator's without
	// it) keeps what the account holds rather than being emptied.
	for name, v := range map[string]*string{"first_name": &f.FirstName, "last_name": &f.LastName, "phone": &f.Phone,
		"phone_confirm": &f.PhoneConfirm, "birth_date": &f.BirthDate} {
		if pf.Has(name) {
			*v = pf.Get(name)
		}
	}
	f.Password = pf.Get("password")
	if f.Password != pf.Get("password_confirm") {
		return p.activateForm(w, r, http.StatusBadRequest, jc, link, kind, f, journey.FieldErrors{"password": jc.t["reset.mismatch"]})
	}
	_, err = p.Journeys.Activate(r.Context(), p.facts(r), link, f, jc.lang)
	var pe *journey.PasswordError
	var fe journey.FieldErrors
	switch {
	case errors.As(err, &pe):
		return p.activateForm(w, r, http.StatusBadRequest, jc, link, kind, f, journey.FieldErrors{"password": pe.Message})
	case errors.As(err, &fe):
		return p.activateForm(w, r, http.StatusBadRequest, jc, link, kind, f, fe)
	case err != nil:
		return p.journeyError(w, r, jc, err, PathActivateResend)
	}
	http.Redirect(w, r, journey.PathActivate+"/done"+jc.query(), http.StatusSeeOther)
	return nil
}

// ActivateDone is GET /activate/done.
func (p *Pages) ActivateDone(w http.ResponseWriter, r *http.Request) error {
	jc := p.journeyContext(r)
	p.notice(w, http.StatusOK, jc, "activate.done.title", "activate.done", jc.loginLink(), "journey.signin", "")
	return nil
}

// ResendPage is GET /activate/resend.
func (p *Pages) ResendPage(w http.ResponseWriter, r *http.Request) error {
	p.forgotForm(w, r, http.StatusOK, p.journeyContext(r), PathActivateResend, "resend.title", "resend.lead", "resend.submit", "", "")
	return nil
}

// Resend is POST /activate/resend: the same answer for every email.
func (p *Pages) Resend(w http.ResponseWriter, r *http.Request) error {
	jc, ok := p.journeyForm(w, r, PathActivateResend)
	if !ok {
		return nil
	}
	email := r.PostForm.Get("email")
	if len(email) > 1024 {
		email = ""
	}
	if err := p.Journeys.ResendActivation(r.Context(), p.facts(r), email, jc.lang, jc.request); err != nil {
		return p.journeyError(w, r, jc, err, PathActivateResend)
	}
	p.notice(w, http.StatusOK, jc, "resend.sent.title", "resend.sent", jc.loginLink(), "journey.back", "")
	return nil
}

// Home is GET /: a small page that links the discovery documents.
func (p *Pages) Home(w http.ResponseWriter, r *http.Request) error {
	if r.URL.Path != "/" {
		t, lang := Messages("")
		p.render(w, http.StatusNotFound, "error.html", &pageData{Lang: lang, T: t, Message: "There is no page at this address."})
		return nil
	}
	t, lang := Messages(r.URL.Query().Get("language"))
	p.render(w, http.StatusOK, "home.html", &pageData{Lang: lang, T: t})
	return nil
}

// journeyLinks adds the sign-up and forgotten-password links of the login
// page, each when its journey is on.
func (p *Pages) journeyLinks(r *http.Request, d *pageData) {
	if p.Journeys == nil {
		return
	}
	st, err := p.Journeys.Settings(r.Context())
	if err != nil {
		return // the page works without them
	}
	jc := journeyContext{request: d.Request, lang: d.Lang}
	if st.SignUp {
		d.SignUpLink = journey.PathSignUp + jc.query()
	}
	if st.PasswordReset {
		d.ForgotLink = journey.PathForgot + jc.query()
	}
	if st.Activation {
		d.Link, d.LinkText = PathActivateResend+jc.query(), d.T["resend.title"]
	}
}
