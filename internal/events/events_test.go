package events

import (
	"net/http/httptest"
	"testing"
)

func TestClientIPBelievesOnlyTrustedProxies(t *testing.T) {
	ps := ParseProxies([]string{"10.0.0.0/8", "192.0.2.7"})
	for name, tc := range map[string]struct {
		remote, xff, want string
	}{
		"no proxy":                           {"203.0.113.5:1234", "", "203.0.113.5"},
		"untrusted peer's header is ignored": {"203.0.113.5:1234", "198.51.100.1", "203.0.113.5"},
		"trusted proxy":                      {"10.1.2.3:1234", "198.51.100.1", "198.51.100.1"},
		"chain of trusted proxies":           {"10.1.2.3:1234", "198.51.100.1, 192.0.2.7, 10.9.9.9", "198.51.100.1"},
		"spoofed left part is skipped":       {"10.1.2.3:1234", "1.1.1.1, 198.51.100.1", "198.51.100.1"},
		"garbage header":                     {"10.1.2.3:1234", "not-an-ip", "10.1.2.3"},
	} {
		r := httptest.NewRequest("GET", "/", nil)
		r.RemoteAddr = tc.remote
		if tc.xff != "" {
			r.Header.Set("X-Forwarded-For", tc.xff)
		}
		if got := ps.ClientIP(r); got != tc.want {
			t.Errorf("%s: %s, want %s", name, got, tc.want)
		}
	}
	r := httptest.NewRequest("GET", "/", nil)
	r.RemoteAddr = "10.1.2.3:1"
	r.Header.Set("X-Forwarded-For", "198.51.100.1")
	if got := ClientIP(r); got != "10.1.2.3" {
		t.Errorf("throttling keys ignore X-Forwarded-For: %s", got)
	}
}

func TestDisplayName(t *testing.T) {
	if got := DisplayName("TOKEN_REQUEST_ACCESS_TOKEN_CREATED"); got != "Token Request Access Token Created" {
		t.Errorf("%q", got)
	}
}
