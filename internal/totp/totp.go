// Package totp checks time-based one-time passwords (RFC 6238 with the
// RFC 4226 truncation): HMAC-SHA-1, 30-second steps, 6 digits, the usual
// parameters of authenticator apps.
package totp

import (
	"crypto/hmac"
	"crypto/sha1"
	"crypto/subtle"
	"encoding/base32"
	"encoding/binary"
	"errors"
	"fmt"
	"strings"
	"time"
)

const (
	// Step is the time step (RFC 6238 section 4, X).
	Step = 30 * time.Second
	// Digits is the code length.
	Digits = 6
)

// DecodeSecret reads a base32 secret as authenticator apps show it: case and
// padding do not matter, spaces are ignored. Secrets shorter than 80 bits
// are refused (RFC 4226 section 4, R6: at least 128 bits recommended, 80
// is what many issuers still use).
func DecodeSecret(s string) ([]byte, error) {
	s = strings.ToUpper(strings.ReplaceAll(s, " ", ""))
	s = strings.TrimRight(s, "=")
	b, err := base32.StdEncoding.WithPadding(base32.NoPadding).DecodeString(s)
	if err != nil {
		return nil, errors.New("not valid base32")
	}
	if len(b) < 10 || len(b) > 128 {
		return nil, fmt.Errorf("%d bytes; want between 10 and 128", len(b))
	}
	return b, nil
}

// Code is the code of secret at counter (RFC 4226 section 5.3).
func Code(secret []byte, counter uint64) string {
	var msg [8]byte
	binary.BigEndian.PutUint64(msg[:], counter)
	m := hmac.New(sha1.New, secret)
	m.Write(msg[:])
	sum := m.Sum(nil)
	off := sum[len(sum)-1] & 0x0f
	v := binary.BigEndian.Uint32(sum[off:off+4]) & 0x7fffffff
	return fmt.Sprintf("%0*d", Digits, v%1_000_000)
}

// Counter is the time step of t.
func Counter(t time.Time) uint64 { return uint64(t.Unix() / int64(Step/time.Second)) }

// Verify reports whether code is the code of secret at t or one step either
// side (clock drift, RFC 6238 section 5.2), and at which counter, so that
// the caller can refuse a replay of the same step.
func Verify(secret []byte, code string, t time.Time) (counter uint64, ok bool) {
	if len(code) != Digits {
		return 0, false
	}
	now := Counter(t)
	found := false
	for _, c := range []uint64{now - 1, now, now + 1} {
		// Compare every candidate, so the time taken does not say which matched.
		if subtle.ConstantTimeCompare([]byte(Code(secret, c)), []byte(code)) == 1 && !found {
			counter, found = c, true
		}
	}
	return counter, found
}
