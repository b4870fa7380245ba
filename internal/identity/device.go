package identity

import (
	"crypto/rand"
	"encoding/base64"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// DeviceCookie marks a browser where an account signed in with its password
// (OWASP's "device cookie"): logins from it are counted on a counter of
// their own instead of the per-account back-off, so an attacker who fails
// against the account from elsewhere does not lock its owner out. The value
// is id.expiry.mac, the MAC (server key) binding the id and expiry to the
// account's email; it grants nothing but that separate counter.
const (
	DeviceCookie   = "latchkey_device"
	deviceLifetime = 90 * 24 * time.Hour
	deviceLabel    = "known-device"
)

// RememberDevice sets the known-device cookie for email after a successful
// password login. One cookie per browser: the account that signed in last.
func (s *Service) RememberDevice(w http.ResponseWriter, email string, secure bool) {
	if s.Devices == nil {
		return
	}
	var id [16]byte
	if _, err := rand.Read(id[:]); err != nil {
		return // no cookie: the owner is merely counted like anyone else
	}
	idText := base64.RawURLEncoding.EncodeToString(id[:])
	exp := strconv.FormatInt(s.Now().Add(deviceLifetime).Unix(), 10)
	mac := base64.RawURLEncoding.EncodeToString(s.Devices.Hash(deviceLabel, deviceMessage(email, idText, exp)))
	http.SetCookie(w, &http.Cookie{Name: DeviceCookie, Value: idText + "." + exp + "." + mac, Path: "/",
		HttpOnly: true, Secure: secure, SameSite: http.SameSiteLaxMode, MaxAge: int(deviceLifetime / time.Second)})
}

// knownDevice is the id of a known-device cookie's value when it is valid
// for email (lower case), or "".
func (s *Service) knownDevice(cookie, email string) string {
	if s.Devices == nil || cookie == "" {
		return ""
	}
	parts := strings.Split(cookie, ".")
	if len(parts) != 3 || len(parts[0]) != 22 {
		return ""
	}
	exp, err := strconv.ParseInt(parts[1], 10, 64)
	if err != nil || !s.Now().Before(time.Unix(exp, 0)) {
		return ""
	}
	mac, err := base64.RawURLEncoding.DecodeString(parts[2])
	if err != nil || !s.Devices.Verify(deviceLabel, deviceMessage(email, parts[0], parts[1]), mac) {
		return ""
	}
	return parts[0]
}

func deviceMessage(email, id, exp string) string {
	return strings.ToLower(strings.TrimSpace(email)) + "\x00" + id + "\x00" + exp
}
