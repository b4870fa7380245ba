package oauth

import (
	"context"
	"crypto/sha256"
	"crypto/sha512"
	"encoding/base64"
	"encoding/json"
	"errors"
	"hash"
	"maps"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/latchkey/latchkey/internal/authflow"
	"github.com/latchkey/latchkey/internal/claim"
	"github.com/latchkey/latchkey/internal/client"
	"github.com/latchkey/latchkey/internal/events"
	"github.com/latchkey/latchkey/internal/request"
	"github.com/latchkey/latchkey/internal/store"
	"github.com/latchkey/latchkey/internal/token"
)

// Keys signs latchkey's JWTs and checks the ones presented back to it
// (internal/signing.Keys).
type Keys interface {
	// SignClaims signs what build makes for the algorithm of the key
	// that signs.
	SignClaims(ctx context.Context, typ string, build func(alg string) ([]byte, error)) (string, error)
	// Verify checks a JWT of typ ("" for any) against the published keys
	// and returns its payload; it checks no claims.
	Verify(ctx context.Context, token, typ string) ([]byte, error)
	// PublishedAlgorithms are the algorithms of the published keys.
	PublishedAlgorithms(ctx context.Context) ([]string, error)
	// MaxSignedLifetime is the longest lifetime a signed token may have.
	MaxSignedLifetime() time.Duration
}

// OpenID Connect scopes (OIDC Core sections 5.4 and 11).
const (
	ScopeOpenID        = "openid"
	ScopeProfile       = "profile"
	ScopeEmail         = "email"
	ScopeAddress       = "address"
	ScopePhone         = "phone"
	ScopeOfflineAccess = "offline_access"
)

// OIDCScopes are the standard scopes every client that signs persons in
// may ask for, whether it lists them or not: the claims they release are
// the person's own, and the person sees them on the consent page.
var OIDCScopes = []string{ScopeOpenID, ScopeProfile, ScopeEmail, ScopeAddress, ScopePhone, ScopeOfflineAccess}

// personGrants are the grants through which a person signs in to a client.
var personGrants = []string{client.GrantAuthorizationCode, client.GrantDeviceCode, client.GrantPassword, client.GrantImplicit}

// allowsOIDCScope: c may ask for the standard scope sc.
func allowsOIDCScope(c store.Client, sc string) bool {
	return slices.Contains(OIDCScopes, sc) && slices.ContainsFunc(personGrants, func(g string) bool { return client.AllowsGrant(c, g) })
}

// IDTokenType is the JWS typ of ID tokens.
const IDTokenType = "JWT"

// ClaimsSupported are the claims an ID token or UserInfo may carry
// (discovery's claims_supported).
var ClaimsSupported = []string{"iss", "sub", "aud", "exp", "iat", "auth_time", "nonce", "at_hash", "acr", "amr", "azp",
	"name", "given_name", "family_name", "gender", "birthdate", "locale", "updated_at",
	"email", "email_verified", "phone_number", "phone_number_verified", "address"}

func (s *Service) idTokenLifetime() time.Duration {
	if s.IDTokenLifetime > 0 {
		return s.IDTokenLifetime
	}
	return time.Hour
}

// idTokenClaims are the claims of the ID token of an issuance (OIDC Core
// sections 2 and 3.1.3.6): for the person of g, to client c. fresh marks
// the first issuance of a grant: only its ID token echoes the nonce (a
// refreshed one does not, section 12.2); every one carries the time of
// the original authentication. They are read inside the issuance's
// transaction and signed after it commits (signIDToken).
func (s *Service) idTokenClaims(ctx context.Context, st store.Store, p store.Person, c store.Client, g store.Grant, scopes []string,
	data grantData, fresh bool, now time.Time) (map[string]any, error) {
	// The user details, as introspection answers them: loaded once per
	// grant (the mapping, then the web hook) and kept on it.
	details, err := s.userDetails(ctx, request.Facts{}, st, g, data, false)
	if err != nil {
		return nil, err
	}
	claims := PersonClaims(p, details, scopes)
	authTime := g.CreatedAt
	if data.AuthTime > 0 {
		authTime = time.Unix(data.AuthTime, 0)
	}
	claims["iss"], claims["sub"], claims["aud"], claims["azp"] = s.Issuer, g.Subject, c.ID, c.ID
	claims["iat"], claims["exp"], claims["auth_time"] = now.Unix(), now.Add(s.idTokenLifetime()).Unix(), authTime.Unix()
	claims["acr"] = strconv.Itoa(g.AuthLevel)
	if amr := AMR(g.AMR); len(amr) > 0 {
		claims["amr"] = amr
	}
	if fresh && data.Nonce != "" {
		claims["nonce"] = data.Nonce
	}
	return claims, nil
}

// signIDToken signs the ID token claims of an issuance, bound to its
// access token by at_hash.
func (s *Service) signIDToken(ctx context.Context, claims map[string]any, accessToken string) (string, error) {
	return s.Keys.SignClaims(ctx, IDTokenType, func(alg string) ([]byte, error) {
		h, ok := hashOf(alg)
		if !ok {
			return nil, errors.New("oauth: no at_hash hash for " + alg)
		}
		claims["at_hash"] = halfHash(h, accessToken)
		return json.Marshal(claims)
	})
}

// AccessTokenType is the JWS typ of JWT access tokens (RFC 9068 section 2.1).
const AccessTokenType = "at+jwt"

// accessJWTClaims are the claims of an RFC 9068 access token for c, but
// its jti. It is stored like an opaque one (under the keyed hash of its
// value), so introspection, revocation and bearer authentication treat
// both alike. Its audience is the issuer (the default resource
// indicator: latchkey has no resource parameter), and it expires no later
// than a signed token may (c.ExpiresAt is moved in when it would).
func (s *Service) accessJWTClaims(c *token.Claims, g store.Grant, data grantData) map[string]any {
	if limit := c.IssuedAt.Add(s.Keys.MaxSignedLifetime()); c.ExpiresAt.After(limit) {
		c.ExpiresAt = limit
	}
	claims := make(map[string]any, len(data.AdditionalClaims)+11)
	for k, v := range data.AdditionalClaims { // the access token hook's claims, never a protocol claim
		if !claim.Protocol(k) {
			claims[k] = v
		}
	}
	sub := c.Subject
	if sub == "" {
		sub = c.ClientID // client credentials: the client is the subject (RFC 9068 section 2.2)
	}
	claims["iss"], claims["aud"], claims["sub"], claims["client_id"] = s.Issuer, s.Issuer, sub, c.ClientID
	claims["iat"], claims["exp"] = c.IssuedAt.Unix(), c.ExpiresAt.Unix()
	claims["scope"] = joinScopes(c.Scopes)
	if c.Subject != "" {
		claims["auth_time"] = g.CreatedAt.Unix()
		if data.AuthTime > 0 {
			claims["auth_time"] = data.AuthTime
		}
		claims["acr"] = strconv.Itoa(g.AuthLevel)
		if amr := AMR(g.AMR); len(amr) > 0 {
			claims["amr"] = amr
		}
	}
	return claims
}

// signAccessJWT signs claims (accessJWTClaims) with a new jti, leaving
// claims as they were.
func (s *Service) signAccessJWT(ctx context.Context, claims map[string]any) (string, error) {
	withID := maps.Clone(claims)
	withID["jti"] = token.Random(16)
	payload, err := json.Marshal(withID)
	if err != nil {
		return "", err
	}
	return s.Keys.SignClaims(ctx, AccessTokenType, func(string) ([]byte, error) { return payload, nil })
}

// hashOf is the hash of a JWS algorithm that at_hash uses (OIDC Core
// section 3.1.3.6; SHA-512 for EdDSA with Ed25519, as relying parties
// such as go-oidc compute it).
func hashOf(alg string) (hash.Hash, bool) {
	switch alg {
	case "RS256", "ES256", "PS256":
		return sha256.New(), true
	case "EdDSA":
		return sha512.New(), true
	}
	return nil, false
}

// halfHash is the base64url of the left half of the hash of v.
func halfHash(h hash.Hash, v string) string {
	h.Write([]byte(v))
	sum := h.Sum(nil)
	return base64.RawURLEncoding.EncodeToString(sum[:len(sum)/2])
}

// AMR maps the session's authentication methods to RFC 8176 values: a
// password (latchkey's or a directory's) is pwd, a one-time code otp (from
// an app or mailed: RFC 8176 has no value for the channel), a sign-in at an
// upstream OpenID Provider fed, and a code on top of either mfa.
func AMR(methods []string) []string {
	var out []string
	add := func(v string) {
		if !slices.Contains(out, v) {
			out = append(out, v)
		}
	}
	for _, m := range methods {
		switch m {
		case "DEFAULT", "PASSWORD":
			add("pwd")
		case "OTP", "TOTP":
			add("otp")
		case "FEDERATED":
			// An upstream OpenID Provider signed the person in. RFC 8176
			// has no value for it; "fed" is latchkey's (docs/FEDERATION.md).
			add("fed")
		case "LDAP":
			add("pwd") // a password, checked by the directory
		}
	}
	if (slices.Contains(out, "pwd") || slices.Contains(out, "fed")) && slices.Contains(out, "otp") {
		add("mfa")
	}
	return out
}

// standardClaims are the claims the standard scopes release (OIDC Core
// section 5.4) from the person's profile; empty values are left out.
func standardClaims(p store.Person, scopes []string) map[string]any {
	out := map[string]any{}
	set := func(k, v string) {
		if v != "" {
			out[k] = v
		}
	}
	if slices.Contains(scopes, ScopeProfile) {
		name := p.Profile.DisplayName
		if name == "" {
			name = strings.TrimSpace(p.FirstName + " " + p.LastName)
		}
		set("name", name)
		set("given_name", p.FirstName)
		set("family_name", p.LastName)
		set("gender", strings.ToLower(p.Profile.Gender))
		set("birthdate", p.Profile.DateOfBirth)
		set("locale", strings.ReplaceAll(p.Profile.PreferredLocale, "_", "-"))
		if !p.UpdatedAt.IsZero() {
			out["updated_at"] = p.UpdatedAt.Unix()
		}
	}
	if slices.Contains(scopes, ScopeEmail) && p.Email != "" {
		out["email"] = p.Email
		verified := false
		for _, e := range p.Profile.Emails {
			if strings.EqualFold(e.Value, p.Email) {
				verified = e.Verified
			}
		}
		out["email_verified"] = verified
	}
	if slices.Contains(scopes, ScopePhone) {
		if ph, ok := primary(p.Profile.Phones); ok {
			out["phone_number"], out["phone_number_verified"] = ph.Value, ph.Verified
		}
	}
	if slices.Contains(scopes, ScopeAddress) && len(p.Profile.Addresses) > 0 {
		a := p.Profile.Addresses[0]
		street := strings.TrimSpace(strings.Join(slices.DeleteFunc([]string{a.StreetName, houseNumber(a)},
			func(s string) bool { return s == "" }), " "))
		addr := map[string]string{}
		for k, v := range map[string]string{"street_address": street, "locality": a.City, "region": a.Region,
			"postal_code": a.PostalCode, "country": a.CountryCode} {
			if v != "" {
				addr[k] = v
			}
		}
		if len(addr) > 0 {
			out["address"] = addr
		}
	}
	return out
}

func houseNumber(a store.PostalAddress) string {
	if a.HouseNumber == 0 {
		return a.HouseNumberAddition
	}
	return strconv.Itoa(a.HouseNumber) + a.HouseNumberAddition
}

// primary is the primary contact point, or the first.
func primary(cs []store.ContactPoint) (store.ContactPoint, bool) {
	for _, c := range cs {
		if c.Primary {
			return c, true
		}
	}
	if len(cs) > 0 {
		return cs[0], true
	}
	return store.ContactPoint{}, false
}

// OpenID Connect errors of the authorization endpoint (OIDC Core section 3.1.2.6).
const (
	ErrLoginRequired       = "login_required"
	ErrConsentRequired     = "consent_required"
	ErrInteractionRequired = "interaction_required"
)

// oidcRequest reads what of an authorization request needs the service:
// id_token_hint (verified against the published keys) and ui_locales.
func (s *Service) oidcRequest(ctx context.Context, c store.Client, ar *AuthorizeRequest, q url.Values) *AuthorizeError {
	if hint := q.Get("id_token_hint"); hint != "" {
		claims, err := s.VerifyIDTokenHint(ctx, hint)
		if err != nil || !claims.hasAudience(c.ID) {
			return &AuthorizeError{Code: ErrInvalidRequest, Description: "The id_token_hint is not an ID token this server issued to this client.",
				Redirect: true, RedirectURI: ar.RedirectURI, State: ar.State, EventType: events.AuthzRequestInvalid}
		}
		ar.HintSubject = claims.Subject
	}
	if ar.Language == "" {
		ar.Language = PickLanguage(q.Get("ui_locales"), s.PageLanguages)
	}
	return nil
}

// PickLanguage is the language code of the first of ui_locales (BCP 47
// tags, OIDC Core section 3.1.2.1) that supported holds, or "".
func PickLanguage(uiLocales string, supported []string) string {
	for _, tag := range strings.Fields(uiLocales) {
		code := strings.ToLower(strings.SplitN(tag, "-", 2)[0])
		if slices.Contains(supported, code) {
			return code
		}
	}
	return ""
}

// authNotBefore is the earliest authentication the request accepts from
// the session of person: prompt=login (and select_account) and max_age
// count from when the request arrived, so the login the request leads to
// always satisfies it; an id_token_hint of another person asks for a login
// too (the person chooses the account on the login page).
func (ar *AuthorizeRequest) authNotBefore(person string) time.Time {
	if ar.RequestedAt == 0 {
		return time.Time{}
	}
	requested := time.Unix(ar.RequestedAt, 0)
	switch {
	case ar.Prompted(PromptLogin), ar.Prompted(PromptSelectAccount), ar.HintSubject != "" && ar.HintSubject != person:
		return requested
	case ar.MaxAge != nil:
		return requested.Add(-time.Duration(*ar.MaxAge) * time.Second)
	}
	return time.Time{}
}

// promptNoneError is the answer to prompt=none when the flow needs a page
// (d is the zero decision when there is no session).
func promptNoneError(ar *AuthorizeRequest, d authflow.Decision) *AuthorizeError {
	e := &AuthorizeError{Code: ErrLoginRequired, Description: "The person must sign in.", Redirect: true,
		RedirectURI: ar.RedirectURI, State: ar.State, EventType: events.AuthnLoginRequired}
	switch {
	case d.Step == authflow.Consent:
		e.Code, e.Description, e.EventType = ErrConsentRequired, "The person must consent.", events.AuthnConsentRequired
	case d.Step == authflow.StepUp, d.Step == authflow.Refuse && d.Reason == authflow.ReasonLevel:
		e.Code, e.Description = ErrInteractionRequired, "The person must raise the authentication level."
	}
	return e
}

// IDTokenClaims are the claims of a presented ID token that latchkey reads.
type IDTokenClaims struct {
	Issuer   string          `json:"iss"`
	Subject  string          `json:"sub"`
	Audience json.RawMessage `json:"aud"`
}

func (c IDTokenClaims) hasAudience(clientID string) bool {
	return slices.Contains(c.Audiences(), clientID)
}

// Audiences returns the aud claim as a list.
func (c IDTokenClaims) Audiences() []string {
	var one string
	if json.Unmarshal(c.Audience, &one) == nil {
		return []string{one}
	}
	var many []string
	_ = json.Unmarshal(c.Audience, &many)
	return many
}

// errBadHint: a presented ID token is not one of ours.
var errBadHint = errors.New("oauth: not an ID token of this server")

// VerifyIDTokenHint checks an ID token presented back to latchkey
// (id_token_hint of the authorization and end-session endpoints): signed
// by a published key, issued here, for a person. Its expiry is not
// checked: a relying party hints with the last ID token it has, expired or
// not (OIDC Core section 3.1.2.1).
func (s *Service) VerifyIDTokenHint(ctx context.Context, hint string) (IDTokenClaims, error) {
	if s.Keys == nil || len(hint) > 8192 {
		return IDTokenClaims{}, errBadHint
	}
	payload, err := s.Keys.Verify(ctx, hint, IDTokenType)
	if err != nil {
		return IDTokenClaims{}, errBadHint
	}
	var c IDTokenClaims
	if json.Unmarshal(payload, &c) != nil || c.Issuer != s.Issuer || c.Subject == "" || len(c.Audiences()) == 0 {
		return IDTokenClaims{}, errBadHint
	}
	return c, nil
}

// EndSession is a validated RP-initiated logout request (OpenID Connect
// RP-Initiated Logout 1.0 section 2).
type EndSession struct {
	ClientID string
	// ClientName is the name of the known client of ClientID, for the
	// confirmation page; "" when the client is not known.
	ClientName string
	// Subject is the sub of a valid id_token_hint: the relying party
	// proved which person it signs out.
	Subject string
	// Target is post_logout_redirect_uri with state, or "" for the
	// signed-out page.
	Target string
}

// ParseEndSession validates a logout request. post_logout_redirect_uri
// must be one of the client's post_logout_redirect_uris exactly, and the
// client must be named by the id_token_hint or client_id: otherwise the
// endpoint would redirect anywhere. A refusal is an *Error for the page;
// nothing redirects before the request is valid.
func (s *Service) ParseEndSession(ctx context.Context, f request.Facts, q url.Values) (EndSession, error) {
	refuse := func(desc string) (EndSession, error) {
		s.record(ctx, f, events.OAuth{Type: events.OpenIDLogoutRejected, ClientID: truncateID(q.Get("client_id"))})
		return EndSession{}, newError(ErrInvalidRequest, desc)
	}
	for name, vs := range q {
		if len(vs) > 1 {
			return refuse("The parameter " + truncate(name, 64) + " is repeated.")
		}
		if len(vs[0]) > 8192 {
			return refuse("The parameter " + truncate(name, 64) + " is too long.")
		}
	}
	var es EndSession
	es.ClientID = q.Get("client_id")
	if hint := q.Get("id_token_hint"); hint != "" {
		claims, err := s.VerifyIDTokenHint(ctx, hint)
		if err != nil {
			return refuse("The id_token_hint is not an ID token of this server.")
		}
		auds := claims.Audiences()
		switch {
		case es.ClientID == "":
			es.ClientID = auds[0]
		case !slices.Contains(auds, es.ClientID):
			return refuse("The client_id is not the audience of the id_token_hint.")
		}
		es.Subject = claims.Subject
	}
	target := q.Get("post_logout_redirect_uri")
	if target != "" && es.ClientID == "" {
		return refuse("A post_logout_redirect_uri needs the id_token_hint or client_id of its client.")
	}
	var c store.Client
	if es.ClientID != "" {
		var err error
		c, err = s.Store.GetClient(ctx, es.ClientID)
		switch {
		case errors.Is(err, store.ErrNotFound) && target != "":
			return refuse("The client is not known.")
		case err == nil:
			// Only a known client is named to the person: a client_id
			// alone is any text a link's author chose.
			es.ClientName = c.Name
			if es.ClientName == "" {
				es.ClientName = c.ID
			}
		case !errors.Is(err, store.ErrNotFound):
			return EndSession{}, err
		}
	}
	if target == "" {
		return es, nil
	}
	if !slices.Contains(c.PostLogoutRedirectURIs, target) {
		return refuse("The post_logout_redirect_uri is not registered for this client.")
	}
	if !redirectAllowed(c, c.PostLogoutRedirectURIs, target) {
		// Registered before the redirect URI rule, or forged in the store.
		return refuse("The post_logout_redirect_uri registered for this client is not allowed.")
	}
	es.Target = target
	if st := q.Get("state"); st != "" {
		es.Target = addQuery(target, url.Values{"state": {st}})
	}
	return es, nil
}

// RecordLogout records an RP-initiated logout step (events.OpenIDLogout*).
func (s *Service) RecordLogout(ctx context.Context, f request.Facts, eventType string, es EndSession) {
	s.record(ctx, f, events.OAuth{Type: eventType, ClientID: truncateID(es.ClientID), UserID: es.Subject})
}
