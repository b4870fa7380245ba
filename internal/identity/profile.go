package identity

import (
	"net/mail"
	"strings"
	"time"
)

// The rules of a person's profile members that the import API and the
// admin API's PATCH share; each caller words its own error.

// ValidEmail accepts a bare addr-spec (no display name) of at most 254
// bytes with a dotted domain.
func ValidEmail(s string) bool {
	if s == "" || len(s) > 254 {
		return false
	}
	a, err := mail.ParseAddress(s)
	if err != nil || a.Address != s || a.Name != "" {
		return false
	}
	at := strings.LastIndexByte(s, '@')
	return at > 0 && strings.Contains(s[at+1:], ".") && !strings.HasSuffix(s, ".")
}

// ValidGender accepts M, F, U or none.
func ValidGender(s string) bool {
	switch s {
	case "", "M", "F", "U":
		return true
	}
	return false
}

// ValidDateOfBirth accepts none or a date YYYY-MM-DD from 1850 up to now.
func ValidDateOfBirth(s string, now time.Time) bool {
	if s == "" {
		return true
	}
	d, err := time.Parse(time.DateOnly, s)
	return err == nil && !d.After(now) && d.Year() >= 1850
}
