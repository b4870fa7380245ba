package login_test

import (
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/latchkey/latchkey/internal/server/servertest"
)

// A wrong or expired user code on the verification page gives the code
// form again, empty and editable, with the reason: the person tries again
// there, and the right code then goes on to the login.
func TestDeviceCodeTryAgain(t *testing.T) {
	for _, backend := range servertest.Backends {
		t.Run(backend, func(t *testing.T) {
			s := stepUpServer(t, backend)
			b := s.Browser()
			page := servertest.Get(t, b, s.URL+"/oauth/device_authorization/verification")
			csrf := servertest.CSRFRE.FindStringSubmatch(page)[1]
			submit := func(code string) (*http.Response, string) {
				t.Helper()
				resp, err := b.PostForm(s.URL+"/oauth/device_authorization/verification", url.Values{"csrf_token": {csrf}, "user_code": {code}})
				if err != nil {
					t.Fatal(err)
				}
				defer resp.Body.Close()
				body, _ := io.ReadAll(resp.Body)
				return resp, string(body)
			}
			retryForm := func(what, body, reason string) {
				t.Helper()
				if !strings.Contains(body, `id="user_code"`) || strings.Contains(body, "readonly") ||
					!strings.Contains(body, `id="error"`) || !strings.Contains(body, reason) {
					t.Errorf("%s: no editable code form with %q:\n%s", what, reason, body)
				}
				if m := servertest.CSRFRE.FindStringSubmatch(body); m == nil || m[1] != csrf {
					t.Errorf("%s: the retry form's CSRF token is not the browser's", what)
				}
			}

			resp, body := submit("BBBB-BBBB")
			if resp.StatusCode != http.StatusBadRequest {
				t.Errorf("wrong code: %d, want 400", resp.StatusCode)
			}
			retryForm("wrong code", body, "not valid")

			old := deviceAuthorization(t, s, "tv", "profile")
			s.Clock.Advance(11 * time.Minute)
			resp, body = submit(old["user_code"].(string))
			if resp.StatusCode != http.StatusBadRequest {
				t.Errorf("expired code: %d, want 400", resp.StatusCode)
			}
			retryForm("expired code", body, "expired")

			fresh := deviceAuthorization(t, s, "tv", "profile")
			resp, _ = submit(fresh["user_code"].(string))
			if loc := location(t, resp); loc.Path != "/login" {
				t.Errorf("right code after the retries: %s, want /login", loc)
			}

			// The status pages of an unknown or expired code link the form.
			for _, st := range []string{"invalid", "expired"} {
				page := servertest.Get(t, b, s.URL+"/oauth/device_authorization/verification?status="+st)
				if !strings.Contains(page, `id="retry" class="button"`) || !strings.Contains(page, `href="/oauth/device_authorization/verification"`) {
					t.Errorf("status %s: no way to try again:\n%s", st, page)
				}
			}
			if page := servertest.Get(t, b, s.URL+"/oauth/device_authorization/verification?status=approved"); strings.Contains(page, `id="retry"`) {
				t.Error("the approved page offers to try again")
			}
		})
	}
}
