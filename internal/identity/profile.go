package identity

import (
	"net/mail"
	"strings"
	"time"

	"golang.org/x/text/unicode/norm"
)

// The rules of a person's profile members that the import API and the
// admin API's PATCH share; each caller words its own error.

// ValidEmail accepts a bare addr-spec (no display name) of at most 254
// bytes with a dotted domain, written in NFKC (NormalEmail).
func ValidEmail(s string) bool {
	if s == "" || len(s) > 254 || !NormalEmail(s) {
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

// NormalEmail reports whether an email address is its own Unicode NFKC
// form (UAX #15). An address in fullwidth or other compatibility
// characters ("ｃase@example.com"), or with decomposed accents, looks like
// another account's address yet is another key, and mail servers do not
// normalise local parts (RFC 6531 leaves them to the receiving server), so
// such an address is refused wherever an email is created or changed —
// sign-up, import, admin API, federation, seed persons — rather than
// normalised into an address its owner never wrote. See
// docs/decisions/0002-email-addresses-in-nfkc.md.
func NormalEmail(s string) bool { return norm.NFKC.IsNormalString(s) }

// EmailProblemNFKC is the reason given for an address that is not
// NormalEmail, after the address: callers word the rest of their error.
const EmailProblemNFKC = "is written with fullwidth or other compatibility characters (or decomposed accents), so it would look like another address; type it in plain characters"
