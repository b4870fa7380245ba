// Package clientauth authenticates OAuth clients (RFC 6749 section 2.3,
// RFC 7521/7523 private_key_jwt) for every endpoint that needs it, and checks
// the HTTP basic API users.
package clientauth

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/latchkey/latchkey/internal/client"
	"github.com/latchkey/latchkey/internal/outbound"
	"github.com/latchkey/latchkey/internal/password"
	"github.com/latchkey/latchkey/internal/store"
	"github.com/latchkey/latchkey/internal/throttle"
	"github.com/latchkey/latchkey/internal/token"
)

// Method is how a client authenticated.
type Method string

// Methods, named as in RFC 7591 section 2.
const (
	MethodBasic      Method = client.AuthClientSecretBasic
	MethodPost       Method = client.AuthClientSecretPost
	MethodPrivateKey Method = client.AuthPrivateKeyJWT
	MethodNone       Method = client.AuthNone
)

// AssertionType is the client_assertion_type of RFC 7523 section 2.2.
const AssertionType = "urn:ietf:params:oauth:client-assertion-type:jwt-bearer"

// ClientSource looks up clients.
type ClientSource interface {
	GetClient(ctx context.Context, id string) (store.Client, error)
}

// AssertionIDs remembers used assertion jti values.
type AssertionIDs interface {
	UseAssertionID(ctx context.Context, clientID, jti string, expiresAt, now time.Time) error
}

// Authenticator authenticates clients.
type Authenticator struct {
	Clients    ClientSource
	Assertions AssertionIDs
	Secrets    *token.Hasher
	Issuer     string           // accepted as an assertion audience
	Now        func() time.Time // time.Now when nil
	// Outbound fetches jwks_uri (the registrant's URL: guarded); nil, a
	// guard without exceptions.
	Outbound *outbound.Client
	// Operator reports whether a client is the config file's: its
	// jwks_uri is the operator's, fetched without the guard (still
	// bounded, no redirects). nil: every client is guarded.
	Operator func(clientID string) bool

	// MaxAssertionLifetime bounds exp - now of an assertion (default 5 min):
	// a short life keeps the set of remembered jti values small.
	MaxAssertionLifetime time.Duration

	// Throttle counts failed client secrets (throttle.go); nil: none.
	Throttle store.Throttle
	refused  throttle.Memo // counters the store refused, until their windows end
	known    throttle.Memo // client id and address pairs that authenticated

	jwksMu    sync.Mutex
	jwksCache map[string]cachedJWKS
}

// Error is a refused client authentication.
type Error struct {
	Code        string // invalid_client | invalid_request
	Description string // safe to show
	Basic       bool   // Basic was tried: answer with WWW-Authenticate: Basic
	Cause       error  // for the log only
	// Debug is the reason a generic Description hides, safe to answer
	// when the operator turned debug answers on (httpx.WithDebugAnswers):
	// never a secret, never what a fetched URL answered.
	Debug string
	// RetryAfter is set when the caller is throttled (429, ErrThrottled).
	RetryAfter time.Duration
	guess      int // what a failed secret counts as (throttle.go)
}

func (e *Error) Error() string {
	if e.Cause != nil {
		return e.Code + ": " + e.Description + ": " + e.Cause.Error()
	}
	return e.Code + ": " + e.Description
}

func (e *Error) Unwrap() error { return e.Cause }

// Status is 401 for invalid_client and 400 for invalid_request (RFC 6749
// section 5.2); 429 for a throttled caller.
func (e *Error) Status() int {
	if e.RetryAfter > 0 {
		return http.StatusTooManyRequests
	}
	if e.Code == "invalid_client" {
		return http.StatusUnauthorized
	}
	return http.StatusBadRequest
}

func invalidClient(desc string, basic bool, cause error) *Error {
	return &Error{Code: "invalid_client", Description: desc, Basic: basic, Cause: cause}
}

// failed is errAuthFailed for why: logged always, answered in debug mode.
func failed(basic bool, why string) *Error {
	return &Error{Code: "invalid_client", Description: errAuthFailed, Basic: basic, Cause: errors.New(why), Debug: why}
}

var errAuthFailed = "Client authentication failed."

func (a *Authenticator) now() time.Time {
	if a.Now != nil {
		return a.Now()
	}
	return time.Now()
}

// Authenticate authenticates the client of r, whose form the caller has
// parsed (r.PostForm). endpoint is the absolute URL of the endpoint called,
// accepted as an assertion audience beside the issuer.
func (a *Authenticator) Authenticate(r *http.Request, endpoint string) (store.Client, Method, error) {
	ctx := r.Context()
	form := r.PostForm
	for _, p := range []string{"client_id", "client_secret", "client_assertion", "client_assertion_type"} {
		if len(form[p]) > 1 {
			return store.Client{}, "", &Error{Code: "invalid_request", Description: "The parameter " + p + " is repeated."}
		}
	}
	user, pass, hasBasic, err := basicCredentials(r)
	if err != nil {
		return store.Client{}, "", invalidClient("The Authorization header is malformed.", true, err)
	}
	formID := form.Get("client_id")
	secret := form.Get("client_secret")
	assertion := form.Get("client_assertion")
	assertionType := form.Get("client_assertion_type")

	methods := 0
	for _, used := range []bool{hasBasic, secret != "", assertion != "" || assertionType != ""} {
		if used {
			methods++
		}
	}
	if methods > 1 {
		// RFC 6749 section 2.3: a client MUST NOT use more than one method per request.
		return store.Client{}, "", &Error{Code: "invalid_request", Description: "Use exactly one client authentication method.", Basic: hasBasic}
	}

	switch {
	case hasBasic:
		if formID != "" && formID != user {
			return store.Client{}, "", invalidClient("The client_id parameter does not match the authenticated client.", true, nil)
		}
		c, err := a.guardedSecret(ctx, r, user, pass, MethodBasic)
		if err != nil {
			if ce := (*Error)(nil); errors.As(err, &ce) {
				ce.Basic = true
			}
			return store.Client{}, "", err
		}
		return c, MethodBasic, nil
	case secret != "":
		if formID == "" {
			return store.Client{}, "", failed(false, "client_secret without client_id")
		}
		c, err := a.guardedSecret(ctx, r, formID, secret, MethodPost)
		return c, MethodPost, err
	case assertion != "" || assertionType != "":
		if assertionType != AssertionType {
			return store.Client{}, "", &Error{Code: "invalid_request", Description: "client_assertion_type must be " + AssertionType + "."}
		}
		if assertion == "" {
			return store.Client{}, "", &Error{Code: "invalid_request", Description: "client_assertion is missing."}
		}
		c, err := a.checkAssertion(ctx, assertion, formID, endpoint)
		return c, MethodPrivateKey, err
	case formID != "":
		c, err := a.lookup(ctx, formID)
		if err != nil {
			return store.Client{}, "", err
		}
		if Method(c.TokenEndpointAuthMethod) != MethodNone {
			// golang.org/x/oauth2's device flow sends no secret (docs/OIDC.md).
			return store.Client{}, "", failed(true, fmt.Sprintf("the client is registered for %s and sent no credentials",
				c.TokenEndpointAuthMethod))
		}
		return c, MethodNone, nil
	default:
		return store.Client{}, "", invalidClient("Client authentication is required.", true, nil)
	}
}

// basicCredentials reads Authorization: Basic, whose id and secret are each
// form-urlencoded (RFC 6749 section 2.3.1).
func basicCredentials(r *http.Request) (user, pass string, ok bool, err error) {
	h := r.Header.Get("Authorization")
	if h == "" {
		return "", "", false, nil
	}
	if len(h) < 6 || !strings.EqualFold(h[:6], "basic ") {
		return "", "", false, nil // another scheme (Bearer): not client authentication
	}
	u, p, ok := r.BasicAuth()
	if !ok {
		return "", "", true, errors.New("undecodable basic credentials")
	}
	if user, err = url.QueryUnescape(u); err != nil {
		return "", "", true, err
	}
	if pass, err = url.QueryUnescape(p); err != nil {
		return "", "", true, err
	}
	if user == "" {
		return "", "", true, errors.New("empty client id")
	}
	return user, pass, true, nil
}

// lookup finds a client; an unknown one is invalid_client.
func (a *Authenticator) lookup(ctx context.Context, id string) (store.Client, error) {
	if len(id) > 255 {
		return store.Client{}, failed(false, "client id too long")
	}
	c, err := a.Clients.GetClient(ctx, id)
	if errors.Is(err, store.ErrNotFound) {
		return store.Client{}, failed(false, "unknown client")
	}
	return c, err
}

// checkSecret verifies a client secret in constant time. An unknown client
// costs the same keyed hash, so timing does not tell which ids exist.
func (a *Authenticator) checkSecret(ctx context.Context, id, secret string, m Method) (store.Client, error) {
	c, err := a.lookup(ctx, id)
	if err != nil {
		a.Secrets.Verify(token.LabelClientSecret, secret, make([]byte, 32))
		if ce := (*Error)(nil); errors.As(err, &ce) {
			ce.guess = guessUnknownClient
		}
		return store.Client{}, err
	}
	if Method(c.TokenEndpointAuthMethod) != m {
		// The registered method is the only one accepted (docs/DESIGN.md).
		return store.Client{}, failed(false, fmt.Sprintf("the client is registered for %s and used %s", c.TokenEndpointAuthMethod, m))
	}
	switch {
	case c.SecretHash != nil:
		if a.Secrets.Verify(token.LabelClientSecret, secret, c.SecretHash) {
			return c, nil
		}
	case c.SecretPHC != "":
		ok, err := password.Verify(c.SecretPHC, secret)
		if err != nil {
			return store.Client{}, fmt.Errorf("client %s: stored secret hash: %w", c.ID, err)
		}
		if ok {
			return c, nil
		}
	}
	e := failed(false, "wrong secret")
	e.guess = guessWrongSecret
	return store.Client{}, e
}
