package oauth

import (
	"errors"
	"net/http"

	"github.com/latchkey/latchkey/internal/client"
	"github.com/latchkey/latchkey/internal/clientauth"
	"github.com/latchkey/latchkey/internal/httpx"
)

// Error is an OAuth error of the rules (RFC 6749 section 5.2, RFC 7009,
// RFC 8628 section 3.5): a code and a description safe to answer. The
// rules return it and know nothing of HTTP; the handlers answer it
// (answer). Cause is logged, never answered.
type Error struct {
	Code        string
	Description string
	Cause       error
}

func (e *Error) Error() string { return e.Code + ": " + e.Description }
func (e *Error) Unwrap() error { return e.Cause }

// newError is an *Error without a cause.
func newError(code, desc string) *Error { return &Error{Code: code, Description: desc} }

// answer maps the rules' errors to HTTP (RFC 6749 section 5.2): 400, 401
// for invalid_client, 500 for server_error. Any other error goes on as it
// is: an *httpx.Error of a handler, or a 500 the adapter logs.
func answer(err error) error {
	if errors.Is(err, client.ErrGone) {
		// Deleted while its token was being issued (client.Static.CreateGrant).
		return &httpx.Error{Status: http.StatusUnauthorized, Code: ErrInvalidClient,
			Description: "The client does not exist.", Cause: err}
	}
	var e *Error
	if err == nil || !errors.As(err, &e) {
		return err
	}
	status := http.StatusBadRequest
	switch e.Code {
	case ErrInvalidClient:
		status = http.StatusUnauthorized
	case ErrServerError:
		status = http.StatusInternalServerError
	}
	return &httpx.Error{Status: status, Code: e.Code, Description: e.Description, Cause: e.Cause}
}

// oauthError is an OAuth error answered with a status other than the one
// answer gives its code (the bearer-token answers of RFC 6750).
func oauthError(status int, code, desc string) *httpx.Error {
	return &httpx.Error{Status: status, Code: code, Description: desc}
}

// clientError turns a client authentication failure into the RFC 6749
// answer: 401 invalid_client (with a Basic challenge when Basic was tried)
// or 400 invalid_request; 429 with Retry-After for a throttled caller.
func clientError(err error) error {
	var ce *clientauth.Error
	if !errors.As(err, &ce) {
		return err // store trouble: a 500, logged
	}
	if ce.RetryAfter > 0 {
		he := httpx.TooManyRequests(ce.Code, ce.Description, ce.RetryAfter)
		he.Cause = ce.Cause
		return he
	}
	he := &httpx.Error{Status: ce.Status(), Code: ce.Code, Description: ce.Description, Cause: ce.Cause, Debug: ce.Debug}
	if ce.Basic || ce.Status() == http.StatusUnauthorized {
		he.Header = map[string]string{"WWW-Authenticate": `Basic realm="latchkey"`}
	}
	return he
}
