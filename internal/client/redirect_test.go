package client

import (
	"errors"
	"net/netip"
	"net/url"
	"strings"
	"testing"

	"github.com/latchkey/latchkey/internal/store"
)

// redirectCases state the redirect URI rule; dev: allowed only under the
// config file's allow_insecure_http_redirect_uris. Seeds of the fuzz test.
var redirectCases = []struct {
	name, uri string
	ok, dev   bool   // accepted strictly; accepted under RedirectPolicy{InsecureHTTP: true}
	want      string // part of the refusal
}{
	{name: "https with a host", uri: "https://app.example/cb", ok: true, dev: true},
	{name: "https with a port and a query", uri: "https://app.example:8443/cb?x=1", ok: true, dev: true},
	{name: "https in capitals is https", uri: "HTTPS://APP.EXAMPLE/cb", ok: true, dev: true},
	{name: "https on an IPv6 literal", uri: "https://[2001:db8::1]/cb", ok: true, dev: true},
	{name: "http on 127.0.0.1", uri: "http://127.0.0.1:3000/callback", ok: true, dev: true},
	{name: "http anywhere in 127.0.0.0/8", uri: "http://127.8.9.10/cb", ok: true, dev: true},
	{name: "http on [::1]", uri: "http://[::1]:8080/cb", ok: true, dev: true},
	{name: "a private-use reverse-domain scheme", uri: "com.example.app:/oauth2redirect", ok: true, dev: true},
	{name: "a private-use scheme with an authority", uri: "com.example.app://callback", ok: true, dev: true},

	{name: "http on localhost is no loopback literal", uri: "http://localhost:3000/cb", dev: true, want: "cleartext http"},
	{name: "http on another host", uri: "http://app.example/cb", dev: true, want: "cleartext http"},
	{name: "http on an IPv4-mapped loopback is no loopback literal", uri: "http://[::ffff:127.0.0.1]/cb", dev: true, want: "cleartext http"},
	{name: "http on 127.1 is refused even under the dev switch", uri: "http://127.1/cb", want: "neither a DNS name"},
	{name: "http on a hex loopback", uri: "http://0x7f.0.0.1/cb", want: "neither a DNS name"},
	{name: "http on an IPv6 zone", uri: "http://[fe80::1%25eth0]/cb", want: "percent-encoded host"},

	{name: "javascript", uri: "javascript:alert(1)", want: `scheme "javascript"`},
	{name: "JAVASCRIPT with slashes", uri: "JAVASCRIPT://x/%0aalert(1)", want: "control character"},
	{name: "javascript://, encoded newline", uri: "javascript://app.example/%0Aalert(document.domain)", want: "control character"},
	{name: "javascript:// without an encoded newline", uri: "javascript://app.example/cb", want: `scheme "javascript"`},
	{name: "mixed-case javascript", uri: "JaVaScRiPt://app.example/cb", want: `scheme "javascript"`},
	{name: "data", uri: "data:text/html,<script>alert(1)</script>", want: `scheme "data"`},
	{name: "data with slashes", uri: "data://text/html;base64,PHNjcmlwdD4=", want: `scheme "data"`},
	{name: "vbscript", uri: "vbscript://msgbox(1)", want: `scheme "vbscript"`},
	{name: "file", uri: "file:///etc/passwd", want: `scheme "file"`},
	{name: "ftp", uri: "ftp://files.example/x", want: `scheme "ftp"`},
	{name: "a one-word custom scheme", uri: "myapp:/cb", want: `scheme "myapp"`},
	{name: "urn out-of-band", uri: "urn:ietf:wg:oauth:2.0:oob", want: `scheme "urn"`},
	{name: "a leading space", uri: " https://app.example/cb", want: "space or control"},
	{name: "a trailing space", uri: "https://app.example/cb ", want: "space or control"},
	{name: "a tab inside the scheme", uri: "java\tscript:alert(1)", want: "space or control"},
	{name: "a NUL", uri: "https://app.example/\x00", want: "space or control"},
	{name: "a newline", uri: "https://app.example/cb\njavascript:alert(1)", want: "space or control"},
	{name: "DEL", uri: "https://app.example/\x7f", want: "space or control"},
	{name: "non-ASCII", uri: "https://аpp.example/cb", want: "non-ASCII"},
	{name: "a backslash", uri: `https://app.example\@evil.example/cb`, want: "backslash"},
	{name: "a percent-encoded colon is no scheme", uri: "javascript%3Aalert(1)", want: "relative"},
	{name: "a percent-encoded NUL", uri: "https://app.example/%00", want: "control character"},
	{name: "a broken percent-encoding", uri: "https://app.example/%zz", want: "bad percent"},
	{name: "a truncated percent-encoding", uri: "https://app.example/%4", want: "bad percent"},
	{name: "a percent-encoded host", uri: "https://app%2eexample/cb", want: "not a URI"},
	{name: "userinfo", uri: "https://app.example@evil.example/cb", want: "userinfo"},
	{name: "an empty userinfo", uri: "https://@evil.example/cb", want: "userinfo"},
	{name: "a fragment", uri: "https://app.example/cb#x", want: "fragment"},
	{name: "an empty fragment", uri: "https://app.example/cb#", want: "fragment"},
	{name: "a relative path", uri: "/cb", want: "relative"},
	{name: "a scheme-relative URI", uri: "//evil.example/cb", want: "relative"},
	{name: "https with no host", uri: "https:///cb", want: "no host"},
	{name: "https with an opaque part", uri: "https:evil.example", want: "no host"},
	{name: "http with no host", uri: "http://", want: "no host"},
	{name: "an empty port", uri: "https://app.example:/cb", want: "empty port"},
	{name: "port 0", uri: "https://app.example:0/cb", want: "port outside"},
	{name: "a host of sub-delimiters", uri: "https://app.example;evil.example/cb", want: "neither a DNS name"},
	{name: "a private-use scheme without a path", uri: "com.example.app:cb", want: "needs a path"},
	{name: "a private-use scheme with an empty label", uri: "com..app:/cb", want: "not allowed"},
	{name: "a private-use scheme with userinfo", uri: "com.example.app://u@cb", want: "userinfo"},
	{name: "empty", uri: "", want: "empty"},
	{name: "too long", uri: "https://app.example/" + strings.Repeat("a", MaxRedirectURILength), want: "longer than"},
}

func TestValidateRedirectURI(t *testing.T) {
	for _, tc := range redirectCases {
		t.Run(tc.name, func(t *testing.T) {
			err := ValidateRedirectURI(tc.uri, RedirectPolicy{})
			switch {
			case tc.ok && err != nil:
				t.Errorf("ValidateRedirectURI(%q) = %v, want accepted", tc.uri, err)
			case !tc.ok && err == nil:
				t.Errorf("ValidateRedirectURI(%q) accepted", tc.uri)
			case !tc.ok && !strings.Contains(err.Error(), tc.want):
				t.Errorf("ValidateRedirectURI(%q) = %v, want it to say %q", tc.uri, err, tc.want)
			case !tc.ok && !errors.As(err, new(*RedirectURIError)):
				t.Errorf("ValidateRedirectURI(%q) = %v, not a *RedirectURIError", tc.uri, err)
			}
			if err := ValidateRedirectURI(tc.uri, RedirectPolicy{InsecureHTTP: true}); (err == nil) != tc.dev {
				t.Errorf("under the dev switch ValidateRedirectURI(%q) = %v, want accepted %v", tc.uri, err, tc.dev)
			}
		})
	}
}

func TestPolicyOfIsTheClientsSwitch(t *testing.T) {
	if PolicyOf(store.Client{}).InsecureHTTP || !PolicyOf(store.Client{AllowInsecureHTTPRedirectURIs: true}).InsecureHTTP {
		t.Error("PolicyOf does not follow AllowInsecureHTTPRedirectURIs")
	}
	r := valid()
	r.RedirectURIs = []string{"http://dev.example:3000/cb"}
	r.PostLogoutRedirectURIs = []string{"http://dev.example:3000/bye"}
	if err := r.Validate(); err == nil || !strings.Contains(err.Error(), "redirect_uris") {
		t.Errorf("Validate without the switch = %v, want a redirect_uris refusal", err)
	}
	r.AllowInsecureHTTPRedirectURIs = true
	if err := r.Validate(); err != nil {
		t.Errorf("Validate with the switch = %v", err)
	}
	r.RedirectURIs = []string{"javascript://dev.example/cb"}
	if err := r.Validate(); err == nil {
		t.Error("the switch let javascript: through")
	}
}

// FuzzValidateRedirectURI: whatever is accepted is an absolute URI that a
// browser reads as written — an allowed scheme, a host where one is
// needed, no userinfo, fragment, whitespace or control character, even
// percent-encoded — and the dev switch only ever adds http.
func FuzzValidateRedirectURI(f *testing.F) {
	for _, tc := range redirectCases {
		f.Add(tc.uri)
	}
	f.Fuzz(func(t *testing.T, s string) {
		strictErr := ValidateRedirectURI(s, RedirectPolicy{})
		devErr := ValidateRedirectURI(s, RedirectPolicy{InsecureHTTP: true})
		if strictErr == nil && devErr != nil {
			t.Fatalf("%q: accepted strictly, refused under the dev switch: %v", s, devErr)
		}
		if devErr != nil {
			if !errors.As(devErr, new(*RedirectURIError)) {
				t.Fatalf("%q: refusal %v is not a *RedirectURIError", s, devErr)
			}
			return
		}
		u, err := url.Parse(s)
		if err != nil {
			t.Fatalf("%q: accepted but url.Parse says %v", s, err)
		}
		if strings.ContainsAny(s, "#\\ \t\r\n") || u.User != nil || u.Fragment != "" {
			t.Fatalf("%q: accepted with a fragment, userinfo, backslash or space", s)
		}
		low := strings.ToLower(s)
		for _, bad := range []string{"javascript:", "data:", "vbscript:", "file:", "blob:", "about:"} {
			if strings.HasPrefix(low, bad) {
				t.Fatalf("%q: accepted a %s URI", s, bad)
			}
		}
		if dec, err := url.PathUnescape(s); err == nil && strings.ContainsFunc(dec, func(r rune) bool { return r < 0x20 || r == 0x7f }) {
			t.Fatalf("%q: accepted a percent-encoded control character", s)
		}
		switch u.Scheme {
		case "https":
			if u.Host == "" {
				t.Fatalf("%q: accepted https without a host", s)
			}
		case "http":
			if u.Host == "" {
				t.Fatalf("%q: accepted http without a host", s)
			}
			a, err := netip.ParseAddr(u.Hostname())
			if strictErr == nil && (err != nil || !a.IsLoopback() || a.Is4In6()) {
				t.Fatalf("%q: accepted cleartext http off a loopback literal", s)
			}
		default:
			if !strings.Contains(u.Scheme, ".") || u.Opaque != "" {
				t.Fatalf("%q: accepted scheme %q", s, u.Scheme)
			}
		}
	})
}
