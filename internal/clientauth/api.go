package clientauth

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"net/http"
	"slices"
	"strings"

	"github.com/latchkey/latchkey/internal/store"
	"github.com/latchkey/latchkey/internal/token"
)

// TokenSource finds access tokens, and their grants, by key, and counts
// the uses of those with a usage limit.
type TokenSource interface {
	token.TokenGrants
	token.TokenUses
}

// Errors of APICaller.
var (
	// ErrUnauthenticated: no credential, or a bad one (401).
	ErrUnauthenticated = errors.New("clientauth: the API caller is not authenticated")
	// ErrForbidden: an authenticated client without the API's scope (403).
	ErrForbidden = errors.New("clientauth: the API client lacks the required scope")
)

// APICaller authenticates the caller of a client API (the scopes API, the
// OAuth events API): client_secret_basic; a private_key_jwt client assertion
// sent as a bearer credential; or a client-credentials access token sent as
// a bearer credential. The client must be allowed scope (for a token: the
// token must carry it).
func (a *Authenticator) APICaller(r *http.Request, endpoint, scope string, tokens TokenSource) (store.Client, error) {
	ctx := r.Context()
	h := r.Header.Get("Authorization")
	if h == "" {
		return store.Client{}, ErrUnauthenticated
	}
	if len(h) > 7 && strings.EqualFold(h[:7], "bearer ") {
		cred := strings.TrimSpace(h[7:])
		if strings.HasPrefix(cred, token.AccessToken.Prefix) || isJWTAccessToken(cred) {
			return a.apiToken(ctx, cred, scope, tokens)
		}
		c, err := a.checkAssertion(ctx, cred, "", endpoint)
		if err != nil {
			return store.Client{}, errors.Join(ErrUnauthenticated, err)
		}
		return allowed(c, scope)
	}
	c, _, err := a.Authenticate(r, endpoint)
	if err != nil {
		var ce *Error
		if errors.As(err, &ce) && ce.RetryAfter > 0 {
			return store.Client{}, err // ErrThrottled: 429, RetryAfter
		}
		if errors.As(err, &ce) {
			return store.Client{}, errors.Join(ErrUnauthenticated, err)
		}
		return store.Client{}, err
	}
	return allowed(c, scope)
}

// isJWTAccessToken tells an RFC 9068 access token (typ at+jwt, section
// 2.1) from a private_key_jwt client assertion by its header. The header is
// not trusted: a token found under the keyed hash of the whole value was
// issued here, and anything else is not found.
func isJWTAccessToken(v string) bool {
	head, _, ok := strings.Cut(v, ".")
	if !ok || len(head) > 512 {
		return false
	}
	b, err := base64.RawURLEncoding.DecodeString(head)
	if err != nil {
		return false
	}
	var h struct {
		Typ string `json:"typ"`
	}
	return json.Unmarshal(b, &h) == nil && strings.EqualFold(h.Typ, "at+jwt")
}

func allowed(c store.Client, scope string) (store.Client, error) {
	if !slices.Contains(c.Scopes, scope) {
		return store.Client{}, ErrForbidden
	}
	return c, nil
}

func (a *Authenticator) apiToken(ctx context.Context, value, scope string, tokens TokenSource) (store.Client, error) {
	found, err := token.Active(ctx, token.Opaque{Hasher: a.Secrets}, tokens, token.AccessToken, value, a.now())
	if errors.Is(err, token.ErrInactive) {
		return store.Client{}, ErrUnauthenticated
	}
	if err != nil {
		return store.Client{}, err
	}
	t := found.Token
	if t.Subject != "" {
		// Only a live client-credentials token speaks for a client.
		return store.Client{}, ErrUnauthenticated
	}
	c, err := a.Clients.GetClient(ctx, t.ClientID)
	if errors.Is(err, store.ErrNotFound) {
		return store.Client{}, ErrUnauthenticated
	}
	if err != nil {
		return store.Client{}, err
	}
	if !slices.Contains(t.Scopes, scope) {
		return store.Client{}, ErrForbidden
	}
	if _, err := token.Spend(ctx, tokens, found); errors.Is(err, token.ErrExhausted) {
		return store.Client{}, ErrUnauthenticated
	} else if err != nil {
		return store.Client{}, err
	}
	return c, nil
}
