package servertest

import (
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"regexp"
	"strings"
	"testing"
)

// Browser is a cookie-keeping client that does not follow redirects, so a
// test sees each step of a flow through the hosted pages.
func (s *Server) Browser() *http.Client {
	jar, _ := cookiejar.New(nil)
	return &http.Client{Jar: jar, Transport: s.Client().Transport,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
}

// CSRFRE finds the CSRF token of a hosted form.
var CSRFRE = regexp.MustCompile(`name="csrf_token" value="([^"]+)"`)

// Flow is what a browserless run through the hosted pages saw.
type Flow struct {
	Back         *url.URL // the final redirect to the client
	LoginPages   int      // login pages shown
	ConsentPages []string // the HTML of each consent page shown
}

// Authorize follows authURL through the hosted login (with email and
// password) and consent pages (answering decision: "allow" or "deny") until
// the browser is sent back to the client.
func (s *Server) Authorize(t testing.TB, b *http.Client, authURL, email, password, decision string) Flow {
	t.Helper()
	var f Flow
	resp, err := b.Get(authURL)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	for range 8 {
		if resp.StatusCode != http.StatusFound && resp.StatusCode != http.StatusSeeOther {
			t.Fatalf("authorize: status %d", resp.StatusCode)
		}
		loc, err := resp.Location()
		if err != nil {
			t.Fatal(err)
		}
		if loc.Host != strings.TrimPrefix(s.URL, "http://") {
			f.Back = loc
			return f
		}
		request := loc.Query().Get("request")
		switch loc.Path {
		case "/login":
			page := Get(t, b, loc.String())
			if !strings.Contains(page, `id="email"`) {
				// Already logged in: the login page moved on by itself.
				resp, err = b.Get(loc.String())
				break
			}
			f.LoginPages++
			resp, err = b.PostForm(s.URL+"/login", url.Values{"csrf_token": {csrf(t, page)}, "request": {request},
				"email": {email}, "password": {password}})
		case "/consent":
			page := Get(t, b, loc.String())
			f.ConsentPages = append(f.ConsentPages, page)
			resp, err = b.PostForm(s.URL+"/consent", url.Values{"csrf_token": {csrf(t, page)}, "request": {request},
				"decision": {decision}})
		default:
			resp, err = b.Get(loc.String())
		}
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
	}
	t.Fatal("too many redirects")
	return f
}

func csrf(t testing.TB, page string) string {
	t.Helper()
	m := CSRFRE.FindStringSubmatch(page)
	if m == nil {
		t.Fatalf("no CSRF token on the page:\n%s", page)
	}
	return m[1]
}

// Get returns the body of a GET.
func Get(t testing.TB, c *http.Client, u string) string {
	t.Helper()
	resp, err := c.Get(u)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return string(b)
}
