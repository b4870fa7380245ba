package clientaddr

import (
	"net/http"
	"net/http/httptest"
	"testing"
)

func TestResolveBelievesOnlyTrustedProxies(t *testing.T) {
	res := New([]string{"10.0.0.0/8", "192.0.2.7", "2001:db8:ffff::/48"})
	for name, tc := range map[string]struct {
		peer, xff, want string
	}{
		"direct client, header ignored":          {"198.51.100.1:1", "203.0.113.9", "198.51.100.1"},
		"trusted proxy: right-most hop":          {"10.1.2.3:1", "203.0.113.9, 198.51.100.2", "198.51.100.2"},
		"trusted proxies chained":                {"10.1.2.3:1", "203.0.113.9, 192.0.2.7", "203.0.113.9"},
		"trusted proxy without header":           {"10.1.2.3:1", "", "10.1.2.3"},
		"garbage hop stops the walk":             {"10.1.2.3:1", "203.0.113.9, junk", "10.1.2.3"},
		"single address entry":                   {"192.0.2.7:1", "203.0.113.9", "203.0.113.9"},
		"IPv6 proxy":                             {"[2001:db8:ffff::1]:1", "2001:db8:1:2::5", "2001:db8:1:2::5"},
		"IPv4-mapped peer is IPv4":               {"[::ffff:198.51.100.1]:1", "", "198.51.100.1"},
		"IPv4-mapped proxy is the IPv4 proxy":    {"[::ffff:10.0.0.1]:1", "203.0.113.9", "203.0.113.9"},
		"spoofed header from an untrusted peer":  {"198.51.100.1:1", "10.0.0.1", "198.51.100.1"},
		"client-written hops left of the client": {"10.0.0.1:1", "1.1.1.1, 203.0.113.9", "203.0.113.9"},
	} {
		r := httptest.NewRequest("GET", "/", nil)
		r.RemoteAddr = tc.peer
		if tc.xff != "" {
			r.Header.Set("X-Forwarded-For", tc.xff)
		}
		if got := res.Resolve(r); got != tc.want {
			t.Errorf("%s: %q, want %q", name, got, tc.want)
		}
	}
}

func TestOfIsWhatTheMiddlewareResolved(t *testing.T) {
	res := New([]string{"10.0.0.0/8"})
	var got, key string
	h := res.Middleware(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { got, key = Of(r), Key(r) }))
	r := httptest.NewRequest("GET", "/", nil)
	r.RemoteAddr = "10.0.0.1:4242"
	r.Header.Set("X-Forwarded-For", "2001:db8:1:2:aaaa::1")
	h.ServeHTTP(httptest.NewRecorder(), r)
	if got != "2001:db8:1:2:aaaa::1" || key != "2001:db8:1:2::/64" {
		t.Errorf("Of = %q, Key = %q", got, key)
	}
	// Without the middleware nothing but the socket peer is believed.
	if a := Of(r); a != "10.0.0.1" {
		t.Errorf("Of without middleware = %q, want the peer", a)
	}
}

func TestKeyGroupsIPv6By64(t *testing.T) {
	for in, want := range map[string]string{
		"198.51.100.7":          "198.51.100.7",
		"2001:db8:1:2::1":       "2001:db8:1:2::/64",
		"2001:db8:1:2:ffff::9":  "2001:db8:1:2::/64",
		"2001:db8:1:3::1":       "2001:db8:1:3::/64",
		"not an address at all": "not an address at all",
	} {
		if got := KeyOf(in); got != want {
			t.Errorf("KeyOf(%q) = %q, want %q", in, got, want)
		}
	}
}
