// Package client owns the OAuth client model (RFC 6749 section 2): the
// grant types and authentication methods a client may register, every rule
// a registration must pass, and the conversion to the stored client. The
// config file's clients (Static) and, later, clients created at run time
// go through the same rules.
package client

import (
	"encoding/json"
	"fmt"
	"net/url"
	"slices"
	"strings"

	"github.com/latchkey/latchkey/internal/store"
)

// Grant types latchkey knows (RFC 6749, RFC 8628).
const (
	GrantAuthorizationCode = "authorization_code"
	GrantRefreshToken      = "refresh_token"
	GrantClientCredentials = "client_credentials"
	GrantDeviceCode        = "urn:ietf:params:oauth:grant-type:device_code"
	GrantPassword          = "password" // deprecated; only for clients that list it
	GrantImplicit          = "implicit" // deprecated; only for clients that list it
)

// GrantTypes are the grant types a client may register.
var GrantTypes = []string{GrantAuthorizationCode, GrantRefreshToken, GrantClientCredentials, GrantDeviceCode,
	GrantPassword, GrantImplicit}

// Client authentication methods (RFC 7591 section 2 names).
const (
	AuthClientSecretBasic = "client_secret_basic"
	AuthClientSecretPost  = "client_secret_post"
	AuthPrivateKeyJWT     = "private_key_jwt"
	AuthNone              = "none"
)

// AuthMethods are the client authentication methods a client may register,
// in the order the metadata lists them.
var AuthMethods = []string{AuthClientSecretBasic, AuthClientSecretPost, AuthPrivateKeyJWT, AuthNone}

// Access token formats (access_token_format): latchkey's opaque tokens, or
// signed JWTs of RFC 9068 that resource servers may verify offline.
const (
	FormatOpaque = "opaque"
	FormatJWT    = "jwt"
)

// IssuesJWTAccessTokens reports whether c asked for RFC 9068 access tokens.
func IssuesJWTAccessTokens(c store.Client) bool { return c.AccessTokenFormat == FormatJWT }

// Platforms of mobile app instances (app_platform).
var Platforms = []string{"ios", "android"}

// IsPublic reports whether c is a public client (RFC 6749 section 2.1):
// it has no credential to authenticate with.
func IsPublic(c store.Client) bool { return c.TokenEndpointAuthMethod == AuthNone }

// AllowsGrant reports whether c registered grant type g.
func AllowsGrant(c store.Client, g string) bool { return slices.Contains(c.GrantTypes, g) }

// Registration is a client as an operator registers it: the stored
// client's members, with the secret in the clear instead of its hash.
// Validate checks it, Stored turns it into the stored client.
type Registration struct {
	// SecretHash is kept when Secret is empty: an update that leaves a
	// stored client's secret as it is.
	store.Client
	Secret string // high-entropy secret, kept only as a keyed hash
}

// FieldError is a rule a registration breaks, naming the member as the
// config file and the admin API spell it.
type FieldError struct {
	Field string
	Msg   string
}

func (e *FieldError) Error() string { return e.Msg }

func fieldErr(field, format string, args ...any) error {
	return &FieldError{Field: field, Msg: fmt.Sprintf(format, args...)}
}

// DefaultAuthMethod is the method of a registration that names none: keys
// mean private_key_jwt, no secret means a public client, else Basic.
func DefaultAuthMethod(hasKeys, hasSecret bool) string {
	switch {
	case hasKeys:
		return AuthPrivateKeyJWT
	case !hasSecret:
		return AuthNone
	}
	return AuthClientSecretBasic
}

// DefaultGrantTypes are the grant types of a registration that lists none.
func DefaultGrantTypes() []string { return []string{GrantAuthorizationCode, GrantRefreshToken} }

// MinSecretLength: secrets are checked with a fast keyed hash, which is
// safe only for high-entropy secrets (docs/DESIGN.md, client authentication).
const MinSecretLength = 16

// Validate applies every rule of a registration; the error names the
// member (as the config file spells it) and what is wrong.
func (r Registration) Validate() error {
	if r.ID == "" || len(r.ID) > 255 || !printableASCII(r.ID) || strings.Contains(r.ID, ":") {
		// ':' would make client_secret_basic ambiguous (RFC 6749 section 2.3.1).
		return fieldErr("client_id", "client_id %q must be 1-255 printable ASCII characters without ':'", r.ID)
	}
	if err := r.validateCredentials(); err != nil {
		return err
	}
	for _, g := range r.GrantTypes {
		if !slices.Contains(GrantTypes, g) {
			return fieldErr("grant_types", "grant_types: %q is not a known grant type", g)
		}
		if g == GrantClientCredentials && r.TokenEndpointAuthMethod == AuthNone {
			return fieldErr("grant_types", "grant_types: a public client cannot use client_credentials (RFC 6749 section 4.4)")
		}
	}
	if r.IntrospectAnyToken && r.TokenEndpointAuthMethod == AuthNone {
		return fieldErr("introspect_any_token", "introspect_any_token: a public client cannot introspect (RFC 7662 section 2.1)")
	}
	for _, id := range r.DeviceApprovalClients {
		if id == "" || id == r.ID {
			return fieldErr("device_approval_clients", "device_approval_clients: %q must name another client", id)
		}
	}
	for _, u := range r.RedirectURIs {
		if err := ValidateRedirectURI(u, PolicyOf(r.Client)); err != nil {
			return fieldErr("redirect_uris", "redirect_uris: %v", err)
		}
	}
	for _, u := range r.PostLogoutRedirectURIs {
		if err := ValidateRedirectURI(u, PolicyOf(r.Client)); err != nil {
			return fieldErr("post_logout_redirect_uris", "post_logout_redirect_uris: %v", err)
		}
	}
	if f := r.AccessTokenFormat; f != "" && f != FormatOpaque && f != FormatJWT {
		return fieldErr("access_token_format", "access_token_format %q is not one of %s, %s", f, FormatOpaque, FormatJWT)
	}
	needsRedirect := slices.Contains(r.GrantTypes, GrantAuthorizationCode) || slices.Contains(r.GrantTypes, GrantImplicit)
	if needsRedirect && len(r.RedirectURIs) == 0 {
		return fieldErr("redirect_uris", "redirect_uris: the authorization_code grant needs at least one redirect URI")
	}
	for _, s := range r.Scopes {
		if !ValidScopeToken(s) {
			return fieldErr("scopes", "scopes: %q is not a valid scope token (RFC 6749 section 3.3)", s)
		}
	}
	if r.AccessTokenLifetime <= 0 {
		return fieldErr("access_token_lifetime", "access_token_lifetime: token lifetimes must be positive")
	}
	if r.RefreshTokenLifetime <= 0 {
		return fieldErr("refresh_token_lifetime", "refresh_token_lifetime: token lifetimes must be positive")
	}
	if r.AppPlatform != "" && !slices.Contains(Platforms, r.AppPlatform) {
		return fieldErr("app_platform", "app_platform %q is not one of %s", r.AppPlatform, strings.Join(Platforms, ", "))
	}
	return nil
}

// validateCredentials: exactly the credential the method uses.
func (r Registration) validateCredentials() error {
	secret := r.Secret != "" || r.SecretPHC != "" || len(r.SecretHash) > 0
	if r.Secret != "" && r.SecretPHC != "" {
		return fieldErr("client_secret", "set client_secret or client_secret_hash, not both")
	}
	if r.SecretPHC != "" && !strings.HasPrefix(r.SecretPHC, "$") {
		return fieldErr("client_secret_hash", "client_secret_hash must be a PHC string ($argon2id$..., $2b$..., $pbkdf2-sha256$...)")
	}
	if r.Secret != "" && len(r.Secret) < MinSecretLength {
		return fieldErr("client_secret", "client_secret must be at least %d characters (use a long random value)", MinSecretLength)
	}
	keys := len(r.JWKS) > 0 || r.JWKSURI != ""
	if len(r.JWKS) > 0 && r.JWKSURI != "" {
		return fieldErr("jwks", "set jwks or jwks_uri, not both")
	}
	switch r.TokenEndpointAuthMethod {
	case AuthClientSecretBasic, AuthClientSecretPost:
		if !secret {
			return fieldErr("token_endpoint_auth_method", "token_endpoint_auth_method %s needs client_secret or client_secret_hash", r.TokenEndpointAuthMethod)
		}
		if keys {
			return fieldErr("token_endpoint_auth_method", "token_endpoint_auth_method %s does not use jwks", r.TokenEndpointAuthMethod)
		}
	case AuthPrivateKeyJWT:
		if !keys {
			return fieldErr("token_endpoint_auth_method", "token_endpoint_auth_method private_key_jwt needs jwks or jwks_uri")
		}
		if secret {
			return fieldErr("token_endpoint_auth_method", "token_endpoint_auth_method private_key_jwt does not use a client secret")
		}
	case AuthNone:
		if secret || keys {
			return fieldErr("token_endpoint_auth_method", "token_endpoint_auth_method none (public client) takes no secret and no jwks")
		}
	default:
		return fieldErr("token_endpoint_auth_method", "token_endpoint_auth_method %q is not one of %s", r.TokenEndpointAuthMethod, strings.Join(AuthMethods, ", "))
	}
	if r.JWKSURI != "" {
		if u, err := url.Parse(r.JWKSURI); err != nil || u.Scheme != "https" && u.Scheme != "http" || u.Host == "" {
			return fieldErr("jwks_uri", "jwks_uri %q is not an absolute http(s) URL", r.JWKSURI)
		}
	}
	if len(r.JWKS) > 0 {
		var set struct {
			Keys []json.RawMessage `json:"keys"`
		}
		if err := json.Unmarshal(r.JWKS, &set); err != nil || len(set.Keys) == 0 {
			return fieldErr("jwks", `jwks must be a JSON Web Key Set with a non-empty "keys" list`)
		}
	}
	return nil
}

// Stored is the client the store keeps for r; hashSecret turns the secret
// into its keyed hash (the secret itself is never stored).
func (r Registration) Stored(hashSecret func(secret string) []byte) store.Client {
	c := r.Client
	if r.Secret != "" {
		c.SecretHash = hashSecret(r.Secret)
	}
	return c
}

// ValidScopeToken reports whether s is a scope-token of RFC 6749 section 3.3:
// 1*( %x21 / %x23-5B / %x5D-7E ).
func ValidScopeToken(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < 0x21 || c == 0x22 || c == 0x5C || c > 0x7E {
			return false
		}
	}
	return true
}

func printableASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < 0x21 || s[i] > 0x7E {
			return false
		}
	}
	return true
}
