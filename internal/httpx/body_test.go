package httpx

import (
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
)

type unit struct {
	Name  string `json:"name"`
	Count int    `json:"count"`
}

func TestDecodeJSON(t *testing.T) {
	tests := []struct {
		name, ctype, body string
		status            int // 0 = success
	}{
		{"valid body is decoded", "application/json", `{"name":"a","count":2}`, 0},
		{"charset parameter is fine", "application/json; charset=utf-8", `{"name":"a"}`, 0},
		{"unknown member is refused", "application/json", `{"name":"a","extra":1}`, 400},
		{"trailing data is refused", "application/json", `{"name":"a"} {"name":"b"}`, 400},
		{"trailing garbage is refused", "application/json", `{"name":"a"}x`, 400},
		{"malformed json is refused", "application/json", `{"name":`, 400},
		{"empty body is refused", "application/json", ``, 400},
		{"wrong member type is refused", "application/json", `{"count":"two"}`, 400},
		{"wrong media type is refused", "text/plain", `{"name":"a"}`, 415},
		{"missing media type is refused", "", `{"name":"a"}`, 415},
		{"oversized body is refused", "application/json", `{"name":"` + strings.Repeat("a", 2048) + `"}`, 413},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := httptest.NewRequest("POST", "/", strings.NewReader(tt.body))
			if tt.ctype != "" {
				r.Header.Set("Content-Type", tt.ctype)
			}
			var u unit
			err := DecodeJSON(httptest.NewRecorder(), r, &u, 1024)
			if tt.status == 0 {
				if err != nil {
					t.Fatalf("err = %v", err)
				}
				if u.Name != "a" {
					t.Errorf("decoded %+v", u)
				}
				return
			}
			var he *Error
			if !errors.As(err, &he) {
				t.Fatalf("err = %v, want *Error", err)
			}
			if he.Status != tt.status || he.Code != "invalid_request" {
				t.Errorf("got %d %s, want %d invalid_request", he.Status, he.Code, tt.status)
			}
		})
	}
}

func TestParseForm(t *testing.T) {
	post := func(ctype, body string) *http.Request {
		r := httptest.NewRequest("POST", "/", strings.NewReader(body))
		r.Header.Set("Content-Type", ctype)
		return r
	}
	if err := ParseForm(httptest.NewRecorder(), post("application/x-www-form-urlencoded", "a=1&b=2"), 64); err != nil {
		t.Fatalf("valid form: %v", err)
	}
	var he *Error
	err := ParseForm(httptest.NewRecorder(), post("application/json", "{}"), 64)
	if !errors.As(err, &he) || he.Status != 400 {
		t.Errorf("json body: err = %v, want 400", err)
	}
	err = ParseForm(httptest.NewRecorder(), post("application/x-www-form-urlencoded", "a="+strings.Repeat("x", 100)), 64)
	if !errors.As(err, &he) || he.Status != 413 {
		t.Errorf("oversized form: err = %v, want 413", err)
	}
	err = ParseForm(httptest.NewRecorder(), post("application/x-www-form-urlencoded", "a=%zz"), 64)
	if !errors.As(err, &he) || he.Status != 400 {
		t.Errorf("malformed escape: err = %v, want 400", err)
	}
}

func TestSingleRefusesRepeatedParameters(t *testing.T) {
	v := url.Values{"a": {"1"}, "b": {"1", "2"}}
	got, err := Single(v, "a", "c")
	if err != nil || got["a"] != "1" || got["c"] != "" {
		t.Errorf("Single = %v, %v", got, err)
	}
	if _, err := Single(v, "a", "b"); err == nil {
		t.Error("repeated b was accepted (RFC 6749 section 3.1)")
	}
}

func TestHandleHidesCauses(t *testing.T) {
	h := Handle(OAuthStyle, func(w http.ResponseWriter, r *http.Request) error {
		return errors.New("pq: password authentication failed for secret-hunter2")
	})
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest("GET", "/", nil))
	if rec.Code != 500 {
		t.Fatalf("status = %d", rec.Code)
	}
	if strings.Contains(rec.Body.String(), "hunter2") {
		t.Errorf("body leaks the cause: %s", rec.Body)
	}
	var body map[string]string
	if err := json.Unmarshal(rec.Body.Bytes(), &body); err != nil || body["error"] != "server_error" {
		t.Errorf("body = %s", rec.Body)
	}
	if rec.Header().Get("Cache-Control") != "no-store" {
		t.Error("OAuth errors must not be cached")
	}
}

func TestErrorStyles(t *testing.T) {
	e := &Error{Status: 400, Code: "invalid_request", Description: "bad", Details: []string{"scope_id"},
		Header: map[string]string{"WWW-Authenticate": `Basic realm="latchkey"`}}
	for name, tt := range map[string]struct {
		style Style
		body  string
	}{
		"oauth": {OAuthStyle, `{"error":"invalid_request","error_description":"bad"}`},
		"api":   {APIStyle, `{"error":"invalid_request","error_description":"bad","details":["scope_id"]}`},
		"empty": {EmptyStyle, ``},
	} {
		t.Run(name, func(t *testing.T) {
			rec := httptest.NewRecorder()
			Handle(tt.style, func(http.ResponseWriter, *http.Request) error { return e }).
				ServeHTTP(rec, httptest.NewRequest("GET", "/", nil))
			if rec.Code != 400 || rec.Body.String() != tt.body {
				t.Errorf("got %d %q, want 400 %q", rec.Code, rec.Body, tt.body)
			}
			if rec.Header().Get("WWW-Authenticate") == "" {
				t.Error("extra header not written")
			}
		})
	}
}

func FuzzDecodeJSON(f *testing.F) {
	for _, s := range []string{`{"name":"a"}`, `{"name":"a"} x`, `{`, `[]`, `{"count":1e999}`, `null`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, body string) {
		r := httptest.NewRequest("POST", "/", strings.NewReader(body))
		r.Header.Set("Content-Type", "application/json")
		var u unit
		err := DecodeJSON(httptest.NewRecorder(), r, &u, 1024)
		var he *Error
		if err != nil && (!errors.As(err, &he) || he.Status >= 500) {
			t.Fatalf("err = %v, want a 4xx *Error", err)
		}
	})
}
