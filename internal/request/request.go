// Package request carries what the rules may know of an HTTP request, so
// that services take a small value instead of *http.Request and are tested
// without HTTP.
package request

import (
	"net/http"
	"time"

	"github.com/latchkey/latchkey/internal/clientaddr"
)

// maxUserAgent bounds the user agent an event keeps.
const maxUserAgent = 512

// Facts are the facts of one request that rules and events use.
type Facts struct {
	// Addr is the client's address as resolved through the trusted
	// proxies (clientaddr): throttles count by it, events record it.
	Addr      string
	UserAgent string
	// DeviceCookie is the value of the known-device cookie
	// (identity.DeviceCookie) when the hosted login page read it; ""
	// elsewhere (the password grant has no cookies).
	DeviceCookie string
	// Time is when the request is being answered.
	Time time.Time
	// GrantType is the token endpoint's grant_type once its form was
	// parsed (the metrics label token events by it); "" elsewhere.
	GrantType string
}

// Of returns the facts of r, without a time (At sets it). A nil r (a
// command, a background job) has no address or agent.
func Of(r *http.Request) Facts {
	var f Facts
	if r == nil {
		return f
	}
	f.Addr = clientaddr.Of(r)
	f.UserAgent = r.UserAgent()
	if len(f.UserAgent) > maxUserAgent {
		f.UserAgent = f.UserAgent[:maxUserAgent]
	}
	if r.PostForm != nil { // never parse here: only what a handler parsed
		f.GrantType = r.PostForm.Get("grant_type")
	}
	return f
}

// At returns f answered at t.
func (f Facts) At(t time.Time) Facts {
	f.Time = t
	return f
}

// AddrKey is Addr as a throttling key (clientaddr.KeyOf: IPv6 by its /64).
func (f Facts) AddrKey() string { return clientaddr.KeyOf(f.Addr) }
