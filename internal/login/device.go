package login

import (
	"errors"
	"net/http"
	"net/url"

	"github.com/latchkey/latchkey/internal/events"
	"github.com/latchkey/latchkey/internal/httpx"
	"github.com/latchkey/latchkey/internal/oauth"
	"github.com/latchkey/latchkey/internal/throttle"
)

const deviceCSRFPurpose = "device-verification"

var deviceStatuses = map[string]bool{"approved": true, "denied": true, "expired": true, "invalid": true, "authorized": true}

// DevicePage is GET /oauth/device_authorization/verification: the code entry
// page; with user_code, the code shown for confirmation; with status, the
// result page.
func (p *Pages) DevicePage(w http.ResponseWriter, r *http.Request) error {
	q := r.URL.Query()
	t, lang := Messages(q.Get("language"))
	if st := q.Get("status"); deviceStatuses[st] {
		d := &pageData{Lang: lang, T: t, Status: st}
		if st == "invalid" || st == "expired" {
			// A way on: enter the (new) code shown on the device.
			d.Link, d.LinkText = p.deviceAction(r), t["device.try_again"]
		}
		p.render(w, http.StatusOK, "device_status.html", d)
		return nil
	}
	code := oauth.NormalizeUserCode(q.Get("user_code"))
	p.render(w, http.StatusOK, "device_code.html", &pageData{Lang: lang, T: t, Action: oauth.PathDeviceVerification,
		CSRF: p.csrfToken(w, r, deviceCSRFPurpose), UserCode: oauth.FormatUserCode(code), Confirm: code != ""})
	return nil
}

// deviceRetry shows the code entry form again, empty and editable, with
// why the last code was not taken: a mistyped or expired code is tried
// again here, not at a dead end.
func (p *Pages) deviceRetry(w http.ResponseWriter, r *http.Request, status int, lang string, t map[string]string, msg string) {
	p.render(w, status, "device_code.html", &pageData{Lang: lang, T: t, Action: p.deviceAction(r),
		CSRF: p.csrfToken(w, r, deviceCSRFPurpose), Error: msg})
}

// deviceAction keeps the page language across a retry.
func (p *Pages) deviceAction(r *http.Request) string {
	if lang := r.URL.Query().Get("language"); lang != "" {
		return oauth.PathDeviceVerification + "?" + url.Values{"language": {lang}}.Encode()
	}
	return oauth.PathDeviceVerification
}

// DeviceSubmit is POST /oauth/device_authorization/verification: a valid code
// continues to login and consent; the result ends on the status page.
func (p *Pages) DeviceSubmit(w http.ResponseWriter, r *http.Request) error {
	ctx := r.Context()
	if err := httpx.ParseForm(w, r, httpx.MaxFormBytes); err != nil {
		p.ErrorPage(w, r, http.StatusBadRequest, "The form could not be read.")
		return nil
	}
	t, lang := Messages(r.URL.Query().Get("language"))
	if !p.checkCSRF(r, deviceCSRFPurpose) {
		p.render(w, http.StatusForbidden, "error.html", &pageData{Lang: lang, T: t, Message: t["error.csrf"]})
		return nil
	}
	code := oauth.NormalizeUserCode(r.PostForm.Get("user_code"))
	// The guessing throttle of every user code entry (oauth.GuessUserCode):
	// wrong codes are counted per address, a valid one is never refused
	// for the misses of others.
	d, err := p.OAuth.GuessUserCode(ctx, p.facts(r), code)
	var refused *throttle.Refused
	switch {
	case errors.As(err, &refused):
		w.Header().Set("Retry-After", httpx.RetryAfter(refused.RetryAfter))
		p.deviceRetry(w, r, http.StatusTooManyRequests, lang, t, t["device.throttled"])
		return nil
	case errors.Is(err, oauth.ErrUserCodeUnknown):
		p.OAuth.Events.ObserveOAuth(ctx, p.Store.EventSink(), p.facts(r), events.OAuth{Type: events.DeviceUserCodeWrong})
		p.deviceRetry(w, r, http.StatusBadRequest, lang, t, t["device.retry.invalid"])
		return nil
	case errors.Is(err, oauth.ErrUserCodeExpired):
		p.deviceRetry(w, r, http.StatusBadRequest, lang, t, t["device.retry.expired"])
		return nil
	case errors.Is(err, oauth.ErrUserCodeDecided):
		p.render(w, http.StatusBadRequest, "device_status.html", &pageData{Lang: lang, T: t, Status: "authorized"})
		return nil
	case err != nil:
		return err
	}
	id, err := p.OAuth.SaveRequest(ctx, &oauth.AuthorizeRequest{ClientID: d.ClientID, ResponseType: "device",
		Scopes: d.Scopes, IDP: d.IDP, DeviceUserCode: d.UserCode, Language: r.URL.Query().Get("language")})
	if err != nil {
		return err
	}
	http.Redirect(w, r, oauth.PathLogin+"?request="+url.QueryEscape(id), http.StatusSeeOther)
	return nil
}
