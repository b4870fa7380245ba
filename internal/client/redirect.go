package client

import (
	"fmt"
	"net/netip"
	"net/url"
	"strconv"
	"strings"

	"github.com/latchkey/latchkey/internal/store"
)

// RedirectPolicy is what ValidateRedirectURI allows beyond its fixed rule.
// The zero value is the rule for everything an API caller or registrant
// sends; only the config file may set InsecureHTTP.
type RedirectPolicy struct {
	// InsecureHTTP also lets http through on any host (the config file's
	// allow_insecure_http_redirect_uris, for development; RFC 9700 section
	// 2.6 forbids cleartext redirects elsewhere).
	InsecureHTTP bool
}

// PolicyOf is the policy c was registered under: the decision points
// (authorize, end-session, a saved request) apply it to what is stored.
func PolicyOf(c store.Client) RedirectPolicy {
	return RedirectPolicy{InsecureHTTP: c.AllowInsecureHTTPRedirectURIs}
}

// MaxRedirectURILength bounds a redirect URI: a longer one is no real
// application's and would bloat every client read.
const MaxRedirectURILength = 2048

// RedirectURIError is a refusal of ValidateRedirectURI: the URI (clipped)
// and what is wrong with it.
type RedirectURIError struct {
	URI    string
	Reason string
}

func (e *RedirectURIError) Error() string {
	if e.URI == "" {
		return "an empty redirect URI"
	}
	return fmt.Sprintf("%q %s", e.URI, e.Reason)
}

// RedirectURIHint names what the rule accepts, for error texts.
const RedirectURIHint = "use https, http on a loopback IP literal (127.0.0.1, [::1]), " +
	"or a private-use scheme with a dot (com.example.app:/cb)"

// ValidateRedirectURI is the one rule for every address latchkey sends a
// browser back to: redirect_uris, post_logout_redirect_uris and the return
// URLs of the configuration API, wherever they are accepted or used. It is
// an allow-list, so script and local schemes (javascript:, data:,
// vbscript:, file:, ...) fail in every spelling:
//   - https with a host;
//   - http only on a loopback IP literal, 127.0.0.0/8 or [::1] (RFC 8252
//     section 7.3; not "localhost", which a resolver may answer otherwise),
//     or on any host when p.InsecureHTTP;
//   - a private-use reverse-domain scheme of a native app, which must hold
//     a dot (RFC 8252 section 7.1: com.example.app:/cb);
//
// and never userinfo (a phishing aid: https://good.example@evil.example),
// a fragment (RFC 6749 section 3.1.2), a relative URI, spaces, control or
// non-ASCII characters, backslashes (browsers read them as '/') or
// percent-encoded control characters, the tricks that make a parser and a
// browser see different targets.
func ValidateRedirectURI(s string, p RedirectPolicy) error {
	refuse := func(format string, args ...any) error {
		return &RedirectURIError{URI: clipURI(s), Reason: fmt.Sprintf(format, args...)}
	}
	if s == "" {
		return &RedirectURIError{}
	}
	if len(s) > MaxRedirectURILength {
		return refuse("is longer than %d bytes", MaxRedirectURILength)
	}
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c <= 0x20 || c == 0x7f:
			return refuse("holds a space or control character")
		case c >= 0x80:
			return refuse("holds a non-ASCII character (percent-encode it)")
		case c == '\\':
			return refuse("holds a backslash")
		case c == '#':
			return refuse("must not have a fragment (RFC 6749 section 3.1.2)")
		case c == '%':
			if i+3 > len(s) {
				return refuse("holds a bad percent-encoding")
			}
			v, err := strconv.ParseUint(s[i+1:i+3], 16, 8)
			if err != nil {
				return refuse("holds a bad percent-encoding")
			}
			if v < 0x20 || v == 0x7f {
				return refuse("holds a percent-encoded control character")
			}
		}
	}
	u, err := url.Parse(s)
	if err != nil {
		return refuse("is not a URI")
	}
	if u.Scheme == "" {
		return refuse("is relative: it needs a scheme; %s", RedirectURIHint)
	}
	if u.User != nil {
		return refuse("must not hold userinfo (user@)")
	}
	if strings.Contains(u.Host, "%") {
		return refuse("holds a percent-encoded host")
	}
	switch scheme := u.Scheme; { // url.Parse lowers the scheme: every spelling is seen as one
	case scheme == "https":
		return checkHost(u, refuse)
	case scheme == "http":
		if err := checkHost(u, refuse); err != nil {
			return err
		}
		if !loopbackLiteral(u.Hostname()) && !p.InsecureHTTP {
			return refuse("uses cleartext http off the loopback interface: use https, or http on 127.0.0.1 or [::1] " +
				"(RFC 8252 section 7.3; RFC 9700 section 2.6)")
		}
		return nil
	case privateUseScheme(scheme):
		if u.Opaque != "" {
			return refuse("needs a path after the scheme (com.example.app:/cb)")
		}
		if u.Host != "" {
			return checkHost(u, refuse)
		}
		return nil
	default:
		return refuse("uses the scheme %q, which is not allowed: %s", clipURI(scheme), RedirectURIHint)
	}
}

// checkHost: an authority of a DNS name or an IP literal, with a port of
// 1-65535 when one is given; nothing else a browser might read otherwise.
func checkHost(u *url.URL, refuse func(string, ...any) error) error {
	if u.Opaque != "" || u.Host == "" {
		return refuse("has no host")
	}
	if strings.HasSuffix(u.Host, ":") {
		return refuse("has an empty port")
	}
	if port := u.Port(); port != "" {
		if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 {
			return refuse("has a port outside 1-65535")
		}
	}
	host := u.Hostname()
	if strings.HasPrefix(u.Host, "[") {
		if a, err := netip.ParseAddr(host); err != nil || !a.Is6() || a.Zone() != "" {
			return refuse("has a bad IPv6 literal")
		}
		return nil
	}
	if !dnsName(host) {
		return refuse("has a host that is neither a DNS name nor an IP literal")
	}
	return nil
}

// dnsName: labels of letters, digits and '-', 1-63 long, 253 in all, or
// a dotted-decimal IPv4 literal. A host ending in a numeric label that is
// no such literal (127.1, 0x7f.1) is refused: browsers read it as an IPv4
// address (WHATWG URL), so it would not mean what it says.
func dnsName(h string) bool {
	if h == "" || len(h) > 253 {
		return false
	}
	labels := strings.Split(h, ".")
	if last := strings.ToLower(labels[len(labels)-1]); strings.Trim(last, "0123456789") == "" ||
		strings.HasPrefix(last, "0x") {
		a, err := netip.ParseAddr(h)
		return err == nil && a.Is4()
	}
	for _, l := range labels {
		if l == "" || len(l) > 63 || l[0] == '-' || l[len(l)-1] == '-' {
			return false
		}
		for i := 0; i < len(l); i++ {
			c := l[i]
			if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-') {
				return false
			}
		}
	}
	return true
}

// loopbackLiteral: an IP literal of 127.0.0.0/8 or ::1, nothing a resolver
// answers (RFC 8252 section 8.3 prefers the literal to "localhost").
func loopbackLiteral(host string) bool {
	a, err := netip.ParseAddr(host)
	if err != nil || a.Zone() != "" {
		return false
	}
	return a.Is4() && a.As4()[0] == 127 || a == netip.IPv6Loopback()
}

// privateUseScheme: a reverse domain name (RFC 8252 section 7.1), two or
// more labels of lower-case letters, digits and '-', the first starting
// with a letter (RFC 3986 section 3.1). No script or local scheme of a
// browser holds a dot.
func privateUseScheme(scheme string) bool {
	labels := strings.Split(scheme, ".")
	if len(labels) < 2 || scheme[0] < 'a' || scheme[0] > 'z' {
		return false
	}
	for _, l := range labels {
		if l == "" {
			return false
		}
		for i := 0; i < len(l); i++ {
			c := l[i]
			if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-') {
				return false
			}
		}
	}
	return true
}

// clipURI keeps error texts short: the start of a refused value is enough
// to find it.
func clipURI(s string) string {
	if len(s) > 100 {
		return s[:100] + "..."
	}
	return s
}
