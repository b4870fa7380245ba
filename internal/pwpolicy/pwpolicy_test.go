package pwpolicy

import (
	"bytes"
	"context"
	"crypto/sha1"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// sha1Hex is computed here rather than with package code so the test does
// not trust what it checks.
func sha1Hex(s string) string {
	sum := sha1.Sum([]byte(s))
	return strings.ToUpper(hex.EncodeToString(sum[:]))
}

// rangeServer is a local Pwned Passwords range API over an in-memory list.
type rangeServer struct {
	*httptest.Server
	breached  map[string]int // password -> count
	zeroCount []string       // passwords whose suffix is served only as padding (count 0)
	lowerHex  bool
	crlf      bool
	handler   http.HandlerFunc // replaces the protocol, for failure modes

	mu       sync.Mutex
	requests []*http.Request
}

var pathRE = regexp.MustCompile(`^/range/[0-9A-F]{5}$`)

func newRangeServer(t *testing.T) *rangeServer {
	t.Helper()
	s := &rangeServer{breached: map[string]int{
		"password1":        123456,
		"Tr0ub4dor&3":      42,
		"Correct Horse 1!": 1,
	}}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		s.requests = append(s.requests, r.Clone(context.Background()))
		s.mu.Unlock()
		if s.handler != nil {
			s.handler(w, r)
			return
		}
		w.Write([]byte(s.answer(strings.TrimPrefix(r.URL.Path, "/range/"))))
	}))
	t.Cleanup(func() {
		s.Close()
		s.mu.Lock()
		defer s.mu.Unlock()
		for _, r := range s.requests {
			if r.Method != http.MethodGet || !pathRE.MatchString(r.URL.Path) || r.URL.RawQuery != "" {
				t.Errorf("server saw %s %s; want GET /range/ and 5 upper-case hex chars", r.Method, r.URL.RequestURI())
			}
			if got := r.Header.Get("Add-Padding"); got != "true" {
				t.Errorf("Add-Padding header = %q, want true", got)
			}
			if got := r.Header.Get("User-Agent"); got != "latchkey" {
				t.Errorf("User-Agent header = %q, want latchkey", got)
			}
		}
	})
	return s
}

func (s *rangeServer) endpoint() string { return s.URL + "/range" }

func (s *rangeServer) count() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.requests)
}

func (s *rangeServer) answer(prefix string) string {
	var lines []string
	for pw, n := range s.breached {
		if h := sha1Hex(pw); h[:5] == prefix {
			lines = append(lines, fmt.Sprintf("%s:%d", h[5:], n))
		}
	}
	for _, pw := range s.zeroCount {
		if h := sha1Hex(pw); h[:5] == prefix {
			lines = append(lines, h[5:]+":0")
		}
	}
	for i := range 20 {
		lines = append(lines, sha1Hex(fmt.Sprint("padding", i))[5:]+":0")
	}
	slices.Sort(lines)
	body := strings.Join(lines, "\n") + "\n"
	if s.crlf {
		body = strings.ReplaceAll(body, "\n", "\r\n")
	}
	if s.lowerHex {
		body = strings.ToLower(body)
	}
	return body
}

// captureLog redirects slog's default logger for the duration of the test.
func captureLog(t *testing.T) *lockedBuffer {
	t.Helper()
	buf := &lockedBuffer{}
	old := slog.Default()
	slog.SetDefault(slog.New(slog.NewTextHandler(buf, nil)))
	t.Cleanup(func() { slog.SetDefault(old) })
	return buf
}

type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

func rules(vs []Violation) []string {
	var out []string
	for _, v := range vs {
		out = append(out, v.Rule)
	}
	return out
}

func TestRulesCheck(t *testing.T) {
	strict := Rules{MinLength: 8, MaxLength: 16, LowerCaseCharRequired: true, UpperCaseCharRequired: true, SpecialCharRequired: true}
	tests := []struct {
		name     string
		rules    Rules
		password string
		want     []string
	}{
		{"good", strict, "Good pass 1", nil},
		{"too short", strict, "Ab!", []string{RuleMinLength}},
		{"too long", strict, "Abcdefghijklmno!x", []string{RuleMaxLength}},
		{"no lower case", strict, "ABCDEFG!", []string{RuleLowerCase}},
		{"no upper case", strict, "abcdefg!", []string{RuleUpperCase}},
		{"no special", strict, "Abcdefgh1", []string{RuleSpecialChar}},
		{"several", strict, "abc", []string{RuleMinLength, RuleUpperCase, RuleSpecialChar}},
		{"empty", strict, "", []string{RuleMinLength, RuleLowerCase, RuleUpperCase, RuleSpecialChar}},
		{"long and plain", strict, strings.Repeat("a", 17), []string{RuleMaxLength, RuleUpperCase, RuleSpecialChar}},
		{"exactly min", strict, "Abcdef1!", nil},
		{"exactly max", strict, "Abcdefghijklmn1!", nil},

		{"min counts runes", Rules{MinLength: 5}, "ééééé", nil},
		{"min counts runes short", Rules{MinLength: 5}, "éééé", []string{RuleMinLength}},
		{"max counts runes", Rules{MaxLength: 5}, "ééééé", nil},
		{"max counts runes long", Rules{MaxLength: 5}, "éééééé", []string{RuleMaxLength}},
		{"emoji is one rune", Rules{MaxLength: 1}, "😀", nil},

		{"zero bounds empty", Rules{}, "", nil},
		{"zero bounds long", Rules{}, strings.Repeat("x", 10000), nil},
		{"negative bounds", Rules{MinLength: -1, MaxLength: -1}, "", nil},

		{"special space", Rules{SpecialCharRequired: true}, "abc def", nil},
		{"special punctuation", Rules{SpecialCharRequired: true}, "abcdef.", nil},
		{"special emoji", Rules{SpecialCharRequired: true}, "abcdef😀", nil},
		{"special symbol", Rules{SpecialCharRequired: true}, "abc€", nil},
		{"digit not special", Rules{SpecialCharRequired: true}, "abc123", []string{RuleSpecialChar}},
		{"unicode digit not special", Rules{SpecialCharRequired: true}, "abc٣", []string{RuleSpecialChar}},
		{"unicode letter not special", Rules{SpecialCharRequired: true}, "abcé日本", []string{RuleSpecialChar}},

		{"unicode lower case", Rules{LowerCaseCharRequired: true}, "ÉÉé", nil},
		{"unicode upper case", Rules{UpperCaseCharRequired: true}, "ééÉ", nil},
		{"caseless script", Rules{LowerCaseCharRequired: true, UpperCaseCharRequired: true}, "日本語", []string{RuleLowerCase, RuleUpperCase}},

		{"breach rule without checker", Rules{BreachedPasswordBlocked: true}, "password1", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			vs, err := tt.rules.Check(t.Context(), tt.password, nil)
			if err != nil {
				t.Fatalf("Check: %v", err)
			}
			if got := rules(vs); !slices.Equal(got, tt.want) {
				t.Errorf("violations = %v, want %v", got, tt.want)
			}
			for _, v := range vs {
				if !strings.HasSuffix(v.Message, ".") || v.Message == "" {
					t.Errorf("message for %s is not a sentence: %q", v.Rule, v.Message)
				}
			}
		})
	}
}

func TestMessages(t *testing.T) {
	vs, _ := Rules{MinLength: 12, MaxLength: 1}.Check(t.Context(), "", nil)
	vs2, _ := Rules{MaxLength: 1}.Check(t.Context(), "ab", nil)
	want := []string{"The password must have at least 12 characters.", "The password must have at most 1 character."}
	if got := []string{vs[0].Message, vs2[0].Message}; !slices.Equal(got, want) {
		t.Errorf("messages = %q, want %q", got, want)
	}
	all, _ := Rules{LowerCaseCharRequired: true}.Check(t.Context(), "A", nil)
	if all[0].Message != "The password must contain a lower-case letter." {
		t.Errorf("lower-case message = %q", all[0].Message)
	}
}

type fakeChecker struct {
	calls    int
	breached bool
	err      error
}

func (f *fakeChecker) Breached(context.Context, string) (bool, error) {
	f.calls++
	return f.breached, f.err
}

func TestCheckCallsCheckerOnlyWhenNeeded(t *testing.T) {
	r := Rules{MinLength: 8, BreachedPasswordBlocked: true}
	f := &fakeChecker{breached: true}
	vs, err := r.Check(t.Context(), "short", f)
	if err != nil || !slices.Equal(rules(vs), []string{RuleMinLength}) || f.calls != 0 {
		t.Errorf("other rule failing: violations %v, err %v, calls %d; want only min_length and no call", rules(vs), err, f.calls)
	}
	vs, err = r.Check(t.Context(), "long enough", f)
	if err != nil || !slices.Equal(rules(vs), []string{RuleBreached}) || f.calls != 1 {
		t.Errorf("violations %v, err %v, calls %d; want breached after one call", rules(vs), err, f.calls)
	}
	f = &fakeChecker{breached: true}
	if vs, _ := (Rules{}).Check(t.Context(), "x", f); len(vs) != 0 || f.calls != 0 {
		t.Errorf("rule off: violations %v, calls %d", rules(vs), f.calls)
	}
	f = &fakeChecker{err: fmt.Errorf("%w: boom", ErrUnavailable)}
	if vs, err := r.Check(t.Context(), "long enough", f); !errors.Is(err, ErrUnavailable) || vs != nil {
		t.Errorf("checker error: violations %v, err %v; want ErrUnavailable", rules(vs), err)
	}
}

func TestRangeChecker(t *testing.T) {
	for _, variant := range []struct {
		name            string
		lowerHex, crlf  bool
		trailingSlash   bool
		useServerClient bool
	}{
		{name: "plain"},
		{name: "lower-case hex", lowerHex: true},
		{name: "crlf", crlf: true},
		{name: "lower-case hex crlf", lowerHex: true, crlf: true},
		{name: "trailing slash and own client", trailingSlash: true, useServerClient: true},
	} {
		t.Run(variant.name, func(t *testing.T) {
			srv := newRangeServer(t)
			srv.lowerHex, srv.crlf = variant.lowerHex, variant.crlf
			srv.zeroCount = []string{"padded only"}
			c := &RangeChecker{Endpoint: srv.endpoint(), FailClosed: true}
			if variant.trailingSlash {
				c.Endpoint += "/"
			}
			if variant.useServerClient {
				c.Client = srv.Client()
			}
			for pw, want := range map[string]bool{
				"password1":        true,
				"Tr0ub4dor&3":      true,
				"Correct Horse 1!": true,
				"PASSWORD1":        false,
				"padded only":      false, // listed with count 0
				"unbreached pw 7?": false,
				"":                 false,
			} {
				got, err := c.Breached(t.Context(), pw)
				if err != nil {
					t.Fatalf("Breached(%q): %v", pw, err)
				}
				if got != want {
					t.Errorf("Breached(%q) = %v, want %v", pw, got, want)
				}
			}
			if srv.count() != 7 {
				t.Errorf("server saw %d requests, want 7", srv.count())
			}
		})
	}
}

func TestCheckWithRangeChecker(t *testing.T) {
	srv := newRangeServer(t)
	c := &RangeChecker{Endpoint: srv.endpoint()}
	r := Rules{MinLength: 8, BreachedPasswordBlocked: true}
	vs, err := r.Check(t.Context(), "password1", c)
	if err != nil || !slices.Equal(rules(vs), []string{RuleBreached}) {
		t.Fatalf("breached: violations %v, err %v", rules(vs), err)
	}
	if want := "This password appears in a list of breached passwords; choose another one."; vs[0].Message != want {
		t.Errorf("message = %q, want %q", vs[0].Message, want)
	}
	vs, err = r.Check(t.Context(), "a fine unlisted passphrase", c)
	if err != nil || len(vs) != 0 {
		t.Errorf("unbreached: violations %v, err %v", rules(vs), err)
	}
	if _, err := r.Check(t.Context(), "short", c); err != nil || srv.count() != 2 {
		t.Errorf("short password: err %v, requests %d; want no request", err, srv.count())
	}
}

func TestRangeCheckerFailures(t *testing.T) {
	validLine := sha1Hex("password1")[5:] + ":3\r\n"
	malformed := map[string]string{
		"short suffix":       "ABC:1\n",
		"long suffix":        sha1Hex("x") + ":1\n",
		"non-hex suffix":     strings.Repeat("G", 35) + ":1\n",
		"missing colon":      strings.Repeat("A", 35) + "1\n",
		"missing count":      strings.Repeat("A", 35) + ":\n",
		"negative count":     strings.Repeat("A", 35) + ":-1\n",
		"spaces":             strings.Repeat("A", 35) + ": 1\n",
		"blank line":         validLine + "\n" + validLine,
		"html":               "<html><body>Welcome to the captive portal</body></html>",
		"bare carriage ret":  validLine + "\r",
		"valid then garbage": validLine + "oops\n",
	}
	type failure struct {
		name    string
		handler http.HandlerFunc
		tweak   func(*RangeChecker)
	}
	failures := []failure{
		{name: "server 500", handler: func(w http.ResponseWriter, r *http.Request) {
			http.Error(w, "boom", http.StatusInternalServerError)
		}},
		{name: "server 404", handler: http.NotFound},
		{name: "slower than timeout", handler: func(w http.ResponseWriter, r *http.Request) {
			select {
			case <-r.Context().Done():
			case <-time.After(10 * time.Second):
			}
		}, tweak: func(c *RangeChecker) { c.Timeout = 100 * time.Millisecond }},
		{name: "slow body", handler: func(w http.ResponseWriter, r *http.Request) {
			w.Write([]byte(validLine))
			w.(http.Flusher).Flush()
			select {
			case <-r.Context().Done():
			case <-time.After(10 * time.Second):
			}
		}, tweak: func(c *RangeChecker) { c.Timeout = 100 * time.Millisecond }},
		{name: "body over MaxBody", handler: func(w http.ResponseWriter, r *http.Request) {
			w.Write([]byte(strings.Repeat(validLine, 10)))
		}, tweak: func(c *RangeChecker) { c.MaxBody = int64(len(validLine)) * 9 }},
		{name: "body over default MaxBody", handler: func(w http.ResponseWriter, r *http.Request) {
			w.Write([]byte(strings.Repeat(validLine, (1<<20)/len(validLine)+1)))
		}},
		{name: "no endpoint", tweak: func(c *RangeChecker) { c.Endpoint = "" }},
	}
	for name, body := range malformed {
		failures = append(failures, failure{name: "malformed " + name, handler: func(w http.ResponseWriter, r *http.Request) {
			w.Write([]byte(body))
		}})
	}
	const password = "password1"
	hash := sha1Hex(password)
	for _, f := range failures {
		for _, failClosed := range []bool{true, false} {
			t.Run(fmt.Sprintf("%s/failClosed=%v", f.name, failClosed), func(t *testing.T) {
				logs := captureLog(t)
				srv := newRangeServer(t)
				srv.handler = f.handler
				c := &RangeChecker{Endpoint: srv.endpoint(), FailClosed: failClosed}
				if f.tweak != nil {
					f.tweak(c)
				}
				start := time.Now()
				got, err := c.Breached(t.Context(), password)
				if d := time.Since(start); d > 2*time.Second {
					t.Errorf("Breached took %v", d)
				}
				if got {
					t.Errorf("Breached = true on failure")
				}
				r := Rules{BreachedPasswordBlocked: true}
				vs, checkErr := r.Check(t.Context(), password, c)
				if failClosed {
					if !errors.Is(err, ErrUnavailable) || !errors.Is(checkErr, ErrUnavailable) {
						t.Errorf("errors = %v, %v; want ErrUnavailable", err, checkErr)
					}
					if msg := err.Error(); strings.Contains(msg, hash[5:]) || strings.Contains(msg, password) {
						t.Errorf("error leaks the password or hash: %q", msg)
					}
				} else {
					if err != nil || checkErr != nil || len(vs) != 0 {
						t.Errorf("failing open: err %v, Check err %v, violations %v; want none", err, checkErr, rules(vs))
					}
					out := logs.String()
					if !strings.Contains(out, "level=WARN") || !strings.Contains(out, "hash_prefix="+hash[:5]) {
						t.Errorf("missing warning with prefix in log: %q", out)
					}
					if strings.Contains(out, hash[5:]) || strings.Contains(out, password) {
						t.Errorf("log leaks the password or hash: %q", out)
					}
				}
			})
		}
	}
}

func TestMaxBodyBoundary(t *testing.T) {
	srv := newRangeServer(t)
	body := srv.answer(sha1Hex("password1")[:5])
	srv.handler = func(w http.ResponseWriter, r *http.Request) { w.Write([]byte(body)) }
	c := &RangeChecker{Endpoint: srv.endpoint(), FailClosed: true, MaxBody: int64(len(body))}
	if got, err := c.Breached(t.Context(), "password1"); err != nil || !got {
		t.Errorf("body of exactly MaxBody: got %v, err %v; want breached", got, err)
	}
}

func TestParseRange(t *testing.T) {
	suffix := sha1Hex("password1")[5:]
	other := sha1Hex("other")[5:]
	tests := []struct {
		name    string
		body    string
		want    bool
		wantErr bool
	}{
		{"empty", "", false, false},
		{"only newline", "\n", false, false},
		{"match", other + ":1\n" + suffix + ":10\n", true, false},
		{"no trailing newline", suffix + ":10", true, false},
		{"crlf", other + ":1\r\n" + suffix + ":10\r\n", true, false},
		{"lower case", strings.ToLower(suffix) + ":2\n", true, false},
		{"zero count", suffix + ":0\n", false, false},
		{"zero padded count", suffix + ":000\n", false, false},
		{"leading zeros", suffix + ":007\n", true, false},
		{"huge count", suffix + ":99999999999999999999999999\n", true, false},
		{"no match", other + ":5\n", false, false},
		{"malformed after match", suffix + ":1\nnope\n", false, true},
		{"two trailing newlines", suffix + ":1\n\n", false, true},
		{"leading space", " " + suffix + ":1\n", false, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := parseRange([]byte(tt.body), suffix)
			if got != tt.want || (err != nil) != tt.wantErr {
				t.Errorf("parseRange = %v, %v; want %v, error %v", got, err, tt.want, tt.wantErr)
			}
		})
	}
}

func FuzzParseRange(f *testing.F) {
	suffix := sha1Hex("password1")[5:]
	f.Add([]byte(suffix+":3\r\n"+strings.Repeat("A", 35)+":0\r\n"), suffix)
	f.Add([]byte(strings.ToLower(suffix)+":3\n"), suffix)
	f.Add([]byte(suffix+":0"), suffix)
	f.Add([]byte(""), suffix)
	f.Add([]byte("\n\r\n:"), "")
	f.Add([]byte("<html>"), suffix)
	f.Fuzz(func(t *testing.T, body []byte, suffix string) {
		found, err := parseRange(body, suffix)
		if err != nil && found {
			t.Fatal("found with an error")
		}
		if !found {
			return
		}
		if len(suffix) != 35 || strings.IndexFunc(suffix, func(r rune) bool { return !strings.ContainsRune("0123456789abcdefABCDEF", r) }) >= 0 {
			t.Fatalf("found a non-hex suffix %q", suffix)
		}
		if !bytes.Contains(bytes.ToUpper(body), []byte(strings.ToUpper(suffix)+":")) {
			t.Fatalf("found %q, which the body does not contain", suffix)
		}
	})
}
