// Package httpx holds the HTTP plumbing several latchkey packages share:
// handlers that return errors, the error styles of the interface, bounded and
// strict body decoding, and response writers.
package httpx

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"strconv"
	"time"
)

// Error is an error a handler answers with. Code and Description go to the
// client; Cause is only logged. err.Error() of a cause never reaches a body.
type Error struct {
	Status      int
	Code        string // e.g. invalid_request, invalid_client, not_found
	Description string
	Details     []string          // per-field problems (scopes API)
	Header      map[string]string // extra response headers (e.g. WWW-Authenticate)
	Cause       error
	// Debug is the reason a generic Description hides (which client
	// authentication method was expected, say): added to the answered
	// description only under WithDebugAnswers; logged always (as the
	// cause when there is none). Only text safe to tell the caller.
	Debug string
}

func (e *Error) Error() string {
	if e.Cause != nil {
		return fmt.Sprintf("%d %s: %s: %v", e.Status, e.Code, e.Description, e.Cause)
	}
	return fmt.Sprintf("%d %s: %s", e.Status, e.Code, e.Description)
}

func (e *Error) Unwrap() error { return e.Cause }

// Errorf returns an *Error with a formatted description.
func Errorf(status int, code, format string, args ...any) *Error {
	return &Error{Status: status, Code: code, Description: fmt.Sprintf(format, args...)}
}

// Style writes an *Error in the error style of one API.
type Style func(w http.ResponseWriter, e *Error)

// OAuthStyle answers RFC 6749 section 5.2 error bodies, also used by RFC 7009,
// 7662 and 8628 endpoints.
func OAuthStyle(w http.ResponseWriter, e *Error) {
	NoStore(w)
	WriteJSON(w, e.Status, oauthError{Error: e.Code, Description: e.Description})
}

type oauthError struct {
	Error       string `json:"error"`
	Description string `json:"error_description,omitempty"`
}

// APIStyle answers {"error", "error_description", "details"} (the scopes API).
func APIStyle(w http.ResponseWriter, e *Error) {
	details := e.Details
	if details == nil {
		details = []string{}
	}
	WriteJSON(w, e.Status, apiError{Error: e.Code, Description: e.Description, Details: details})
}

type apiError struct {
	Error       string   `json:"error"`
	Description string   `json:"error_description"`
	Details     []string `json:"details"`
}

// EmptyStyle answers the status alone (the configuration API: "Error body: no content").
func EmptyStyle(w http.ResponseWriter, e *Error) {
	w.WriteHeader(e.Status)
}

// HandlerFunc is a handler that returns its error instead of writing it.
type HandlerFunc func(w http.ResponseWriter, r *http.Request) error

// ClientIDOf is the client id a request names, for logs: the form's or
// query's client_id, else the user of HTTP Basic (never its password);
// "" when it names none. It never parses a body itself.
func ClientIDOf(r *http.Request) string {
	if r.PostForm != nil {
		if id := r.PostForm.Get("client_id"); id != "" {
			return truncateID(id)
		}
	}
	if id := r.URL.Query().Get("client_id"); id != "" {
		return truncateID(id)
	}
	if user, _, ok := r.BasicAuth(); ok {
		if id, err := url.QueryUnescape(user); err == nil {
			return truncateID(id)
		}
	}
	return ""
}

// truncateID keeps a hostile client id from flooding the log.
func truncateID(id string) string {
	if len(id) > 128 {
		return id[:128] + "..."
	}
	return id
}

// Handle adapts fn to http.Handler: an *Error is written in style; any other
// error is logged with the request id and answered as a 500 server_error
// whose body says nothing about the cause.
func Handle(style Style, fn HandlerFunc) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		err := fn(w, r)
		if err == nil {
			return
		}
		if errors.Is(r.Context().Err(), context.Canceled) {
			// The client went away: nothing to answer, and what failed failed
			// because of it (drivers say context canceled, or bad connection
			// when they dropped the connection of the canceled query).
			slog.DebugContext(r.Context(), "request canceled by the client", "request_id", RequestID(r.Context()),
				"route", r.Pattern, "err", err)
			return
		}
		var he *Error
		if !errors.As(err, &he) {
			he = &Error{Status: http.StatusInternalServerError, Code: "server_error",
				Description: "The server could not handle the request.", Cause: err}
		}
		if he.Debug != "" && DebugAnswers(r.Context()) {
			c := *he
			c.Description += " (" + he.Debug + ")"
			he = &c
		}
		if he.Status >= 500 || errors.Is(err, context.DeadlineExceeded) {
			slog.ErrorContext(r.Context(), "request failed", "request_id", RequestID(r.Context()),
				"route", r.Pattern, "status", he.Status, "err", he.Cause)
		} else {
			// Every refusal says why at info level, for the operator who
			// is asked "why was I refused?": the request id the caller saw,
			// the client it named, the answer and its cause. Never a
			// secret: the client id only, the description the caller got.
			attrs := []any{"request_id", RequestID(r.Context()), "client_id", ClientIDOf(r),
				"route", r.Pattern, "status", he.Status, "code", he.Code, "why", he.Description}
			if he.Cause != nil {
				attrs = append(attrs, "err", he.Cause)
			} else if he.Debug != "" {
				attrs = append(attrs, "err", he.Debug)
			}
			slog.InfoContext(r.Context(), "request refused", attrs...)
		}
		for k, v := range he.Header {
			w.Header().Set(k, v)
		}
		style(w, he)
	})
}

// WriteJSON writes v as the JSON body with status.
func WriteJSON(w http.ResponseWriter, status int, v any) {
	b, err := json.Marshal(v)
	if err != nil { // only for types that cannot be marshalled: a programming error
		slog.Error("httpx: marshal response", "err", err)
		w.WriteHeader(http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json;charset=UTF-8")
	w.WriteHeader(status)
	_, _ = w.Write(b)
}

// NoStore marks a response as not cacheable (RFC 6749 section 5.1).
func NoStore(w http.ResponseWriter) {
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("Pragma", "no-cache")
}

// RetryAfter is the Retry-After value (RFC 9110 section 10.2.3) for d:
// whole seconds, rounded up, at least 1.
func RetryAfter(d time.Duration) string {
	s := int64((d + time.Second - 1) / time.Second)
	if s < 1 {
		s = 1
	}
	return strconv.FormatInt(s, 10)
}

// TooManyRequests is a 429 that says when to come back: every 429 of
// latchkey carries Retry-After (docs/THROTTLES.md).
func TooManyRequests(code, desc string, retryAfter time.Duration) *Error {
	return &Error{Status: http.StatusTooManyRequests, Code: code, Description: desc,
		Header: map[string]string{"Retry-After": RetryAfter(retryAfter)}}
}
