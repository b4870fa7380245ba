package oauth

import (
	"errors"
	"net/http"
	"slices"
	"strings"

	"github.com/latchkey/latchkey/internal/httpx"
	"github.com/latchkey/latchkey/internal/identity"
	"github.com/latchkey/latchkey/internal/store"
	"github.com/latchkey/latchkey/internal/token"
)

// PathUserInfo is the OpenID Connect UserInfo endpoint.
const PathUserInfo = "/oauth/userinfo"

// bearerToken is the access token of an Authorization: Bearer header (RFC
// 6750 section 2.1), or "".
func bearerToken(r *http.Request) string {
	if h := r.Header.Get("Authorization"); len(h) > 7 && strings.EqualFold(h[:7], "bearer ") {
		return strings.TrimSpace(h[7:])
	}
	return ""
}

// bearerMissing is RFC 6750 section 3.1's answer to a request without a
// token: 401 and a challenge without an error code.
func bearerMissing() *httpx.Error {
	e := oauthError(http.StatusUnauthorized, ErrInvalidRequest, "An access token is required (Authorization: Bearer).")
	e.Header = map[string]string{"WWW-Authenticate": `Bearer realm="latchkey"`}
	return e
}

// bearerInvalid answers a token that is not active.
func bearerInvalid() *httpx.Error {
	e := oauthError(http.StatusUnauthorized, "invalid_token", "The access token is not active.")
	e.Header = map[string]string{"WWW-Authenticate": `Bearer realm="latchkey", error="invalid_token"`}
	return e
}

// UserInfo is GET and POST /oauth/userinfo (OIDC Core section 5.3): the
// claims of the person of an access token that carries openid, by its
// scopes, and the user details introspection answers (the user_details
// mapping and web hook).
func (s *Service) UserInfo(w http.ResponseWriter, r *http.Request) error {
	ctx := r.Context()
	f := s.facts(r)
	value := bearerToken(r)
	if r.Method == http.MethodPost && strings.HasPrefix(r.Header.Get("Content-Type"), "application/x-www-form-urlencoded") {
		if err := httpx.ParseForm(w, r, httpx.MaxFormBytes); err != nil {
			return err
		}
		if v := r.PostForm["access_token"]; len(v) > 0 {
			if value != "" || len(v) > 1 {
				// RFC 6750 section 2: one method per request.
				return oauthError(http.StatusBadRequest, ErrInvalidRequest, "Send the access token once.")
			}
			value = v[0] // RFC 6750 section 2.2
		}
	}
	if value == "" {
		return bearerMissing()
	}
	found, err := token.Active(ctx, s.tokens(), s.Store, token.AccessToken, value, f.Time)
	if errors.Is(err, token.ErrInactive) {
		return bearerInvalid()
	}
	if err != nil {
		return err
	}
	t, g := found.Token, found.Grant
	if !slices.Contains(t.Scopes, ScopeOpenID) || t.Subject == "" {
		e := oauthError(http.StatusForbidden, "insufficient_scope", "The access token does not carry openid for a person.")
		e.Header = map[string]string{"WWW-Authenticate": `Bearer realm="latchkey", error="insufficient_scope", scope="openid"`}
		return e
	}
	p, err := s.Store.GetPerson(ctx, t.Subject)
	if errors.Is(err, store.ErrNotFound) || err == nil && !identity.MaySignIn(p.Status) {
		return bearerInvalid()
	}
	if err != nil {
		return err
	}
	if _, err := token.Spend(ctx, s.Store, found); errors.Is(err, token.ErrExhausted) {
		return bearerInvalid()
	} else if err != nil {
		return err
	}
	var data grantData
	if err := decodeGrantData(g.Data, &data); err != nil {
		return err
	}
	details, err := s.userDetails(ctx, f, s.Store, g, data, false)
	if err != nil {
		return err
	}
	claims := PersonClaims(p, details, t.Scopes)
	claims["sub"] = t.Subject
	httpx.NoStore(w)
	httpx.WriteJSON(w, http.StatusOK, claims)
	return nil
}
