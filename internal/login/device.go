package login

import (
	"errors"
	"net/http"
	"net/url"
	"time"

	"github.com/latchkey/latchkey/internal/events"
	"github.com/latchkey/latchkey/internal/httpx"
	"github.com/latchkey/latchkey/internal/oauth"
)

// Wrong user codes are throttled per client address and across the whole
// service, so the 20^8 code space cannot be searched: at the global limit an
// attacker tries 1,000 codes a minute, and with a thousand live codes needs
// on the order of 10^4 years to hit one.
const (
	DeviceThrottleWindow = 5 * time.Minute
	MaxWrongCodesPerIP   = 20
	globalThrottleWindow = time.Minute
	MaxWrongCodesGlobal  = 1000
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
		p.render(w, http.StatusOK, "device_status.html", &pageData{Lang: lang, T: t, Status: st})
		return nil
	}
	code := oauth.NormalizeUserCode(q.Get("user_code"))
	p.render(w, http.StatusOK, "device_code.html", &pageData{Lang: lang, T: t, Action: oauth.PathDeviceVerification,
		CSRF: p.csrfToken(w, r, deviceCSRFPurpose), UserCode: oauth.FormatUserCode(code), Confirm: code != ""})
	return nil
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
	now := p.Now()
	limits := []struct {
		key    string
		window time.Duration
		max    int
	}{
		{"device:ip:" + events.ClientIP(r), DeviceThrottleWindow, MaxWrongCodesPerIP},
		{"device:global", globalThrottleWindow, MaxWrongCodesGlobal},
	}
	for _, l := range limits {
		n, err := p.Store.Count(ctx, l.key, l.window, now)
		if err != nil {
			return err
		}
		if n >= l.max {
			_ = p.OAuth.Events.RecordOAuth(ctx, p.OAuth.EventSink(), r, events.OAuth{Type: oauth.EventDeviceUserCodeThrottle})
			p.render(w, http.StatusTooManyRequests, "device_code.html", &pageData{Lang: lang, T: t,
				Action: oauth.PathDeviceVerification, CSRF: p.csrfToken(w, r, deviceCSRFPurpose), Error: t["device.throttled"]})
			return nil
		}
	}
	code := oauth.NormalizeUserCode(r.PostForm.Get("user_code"))
	d, err := p.OAuth.LookupUserCode(ctx, code)
	switch {
	case errors.Is(err, oauth.ErrUserCodeUnknown):
		for _, l := range limits {
			if _, err := p.Store.Hit(ctx, l.key, l.window, now); err != nil {
				return err
			}
		}
		_ = p.OAuth.Events.RecordOAuth(ctx, p.OAuth.EventSink(), r, events.OAuth{Type: oauth.EventDeviceUserCodeWrong})
		p.render(w, http.StatusBadRequest, "device_status.html", &pageData{Lang: lang, T: t, Status: "invalid"})
		return nil
	case errors.Is(err, oauth.ErrUserCodeExpired):
		p.render(w, http.StatusBadRequest, "device_status.html", &pageData{Lang: lang, T: t, Status: "expired"})
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
