package httpx

import (
	"net/http"
	"net/http/httptest"
	"slices"
	"testing"
)

// TestSecurityHeadersAreEachResponsesOwn: the header values are shared by
// every response, so a handler that adds to one or replaces one must leave
// the next response's as they were.
func TestSecurityHeadersAreEachResponsesOwn(t *testing.T) {
	for _, hsts := range []bool{false, true} {
		first := true
		h := SecurityHeaders(hsts)(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if first {
				w.Header().Add("X-Frame-Options", "SAMEORIGIN")
				w.Header().Set("Content-Security-Policy", "default-src 'self'")
				w.Header().Del("Referrer-Policy")
				first = false
			}
		}))
		want := map[string][]string{
			"X-Content-Type-Options":     {"nosniff"},
			"X-Frame-Options":            {"DENY"},
			"Referrer-Policy":            {"no-referrer"},
			"Content-Security-Policy":    {"default-src 'none'; frame-ancestors 'none'"},
			"Cross-Origin-Opener-Policy": {"same-origin"},
		}
		if hsts {
			want["Strict-Transport-Security"] = []string{"max-age=31536000"}
		}
		for i := range 3 {
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/", nil))
			got := rec.Result().Header
			if i == 0 {
				if v := got.Values("X-Frame-Options"); !slices.Equal(v, []string{"DENY", "SAMEORIGIN"}) {
					t.Errorf("the handler's Add gave %q", v)
				}
				continue
			}
			for name, v := range want {
				if !slices.Equal(got.Values(name), v) {
					t.Errorf("hsts %v, response %d: %s = %q, want %q", hsts, i, name, got.Values(name), v)
				}
			}
			if _, ok := got["Strict-Transport-Security"]; ok != hsts {
				t.Errorf("hsts %v: Strict-Transport-Security present %v", hsts, ok)
			}
		}
	}
}

func TestSecurityHeaderNamesAreCanonical(t *testing.T) {
	for _, h := range securityHeaders {
		if http.CanonicalHeaderKey(h.name) != h.name {
			t.Errorf("%q is not in canonical form: Header.Get would not find it", h.name)
		}
	}
}
