package client

import (
	"strings"
	"testing"
	"time"

	"github.com/latchkey/latchkey/internal/store"
)

// valid is a confidential code-flow client that passes every rule.
func valid() Registration {
	return Registration{Secret: "a-long-random-secret", Client: store.Client{ID: "web",
		TokenEndpointAuthMethod: AuthClientSecretBasic, RedirectURIs: []string{"https://web.example/cb"},
		GrantTypes: DefaultGrantTypes(), Scopes: []string{"read"}, AccessTokenLifetime: time.Hour,
		RefreshTokenLifetime: 24 * time.Hour}}
}

func TestRegistrationRules(t *testing.T) {
	const jwks = `{"keys":[{"kty":"EC","crv":"P-256","x":"x","y":"y"}]}`
	for _, tc := range []struct {
		name string
		edit func(*Registration)
		want string // part of the error; "" for valid
	}{
		{name: "a confidential code-flow client is valid", edit: func(*Registration) {}},
		{name: "a public client with PKCE needs no credential", edit: func(r *Registration) { r.Secret, r.TokenEndpointAuthMethod = "", AuthNone }},
		{name: "private_key_jwt with inline keys is valid", edit: func(r *Registration) {
			r.Secret, r.TokenEndpointAuthMethod, r.JWKS = "", AuthPrivateKeyJWT, []byte(jwks)
		}},
		{name: "client_id must not hold ':'", edit: func(r *Registration) { r.ID = "a:b" }, want: "client_id"},
		{name: "client_id must not be empty", edit: func(r *Registration) { r.ID = "" }, want: "client_id"},
		{name: "a short secret is refused", edit: func(r *Registration) { r.Secret = "short" }, want: "at least 16"},
		{name: "a secret and a secret hash are refused together", edit: func(r *Registration) { r.SecretPHC = "$argon2id$x" },
			want: "not both"},
		{name: "a secret hash must be a PHC string", edit: func(r *Registration) { r.Secret, r.SecretPHC = "", "plain" },
			want: "PHC"},
		{name: "Basic needs a secret", edit: func(r *Registration) { r.Secret = "" }, want: "needs client_secret"},
		{name: "Basic takes no keys", edit: func(r *Registration) { r.JWKSURI = "https://keys.example/jwks" }, want: "does not use jwks"},
		{name: "private_key_jwt needs keys", edit: func(r *Registration) { r.Secret, r.TokenEndpointAuthMethod = "", AuthPrivateKeyJWT },
			want: "needs jwks"},
		{name: "private_key_jwt takes no secret", edit: func(r *Registration) { r.TokenEndpointAuthMethod, r.JWKS = AuthPrivateKeyJWT, []byte(jwks) },
			want: "does not use a client secret"},
		{name: "jwks and jwks_uri are refused together", edit: func(r *Registration) {
			r.Secret, r.TokenEndpointAuthMethod, r.JWKS, r.JWKSURI = "", AuthPrivateKeyJWT, []byte(jwks), "https://keys.example/jwks"
		}, want: "not both"},
		{name: "a key set without keys is refused", edit: func(r *Registration) {
			r.Secret, r.TokenEndpointAuthMethod, r.JWKS = "", AuthPrivateKeyJWT, []byte(`{"keys":[]}`)
		}, want: "non-empty"},
		{name: "a jwks_uri must be absolute http(s)", edit: func(r *Registration) {
			r.Secret, r.TokenEndpointAuthMethod, r.JWKSURI = "", AuthPrivateKeyJWT, "ftp://keys.example/jwks"
		}, want: "jwks_uri"},
		{name: "a public client takes no secret", edit: func(r *Registration) { r.TokenEndpointAuthMethod = AuthNone }, want: "public client"},
		{name: "an unknown auth method is refused, naming the known ones", edit: func(r *Registration) { r.TokenEndpointAuthMethod = "tls_client_auth" },
			want: strings.Join(AuthMethods, ", ")},
		{name: "an unknown grant type is refused", edit: func(r *Registration) { r.GrantTypes = []string{"magic"} }, want: "grant_types"},
		{name: "a public client cannot use client_credentials", edit: func(r *Registration) {
			r.Secret, r.TokenEndpointAuthMethod, r.GrantTypes = "", AuthNone, []string{GrantClientCredentials}
		}, want: "RFC 6749 section 4.4"},
		{name: "a public client cannot introspect any token", edit: func(r *Registration) {
			r.Secret, r.TokenEndpointAuthMethod, r.IntrospectAnyToken = "", AuthNone, true
		}, want: "introspect_any_token"},
		{name: "device_approval_clients must name another client", edit: func(r *Registration) {
			r.DeviceApprovalClients = []string{"web"}
		}, want: "device_approval_clients"},
		{name: "the code flow needs a redirect URI", edit: func(r *Registration) { r.RedirectURIs = nil }, want: "redirect_uris"},
		{name: "a redirect URI with a fragment is refused", edit: func(r *Registration) {
			r.RedirectURIs = []string{"https://web.example/cb#x"}
		}, want: "fragment"},
		{name: "client credentials alone need no redirect URI", edit: func(r *Registration) {
			r.RedirectURIs, r.GrantTypes = nil, []string{GrantClientCredentials}
		}},
		{name: "a scope must be a scope token", edit: func(r *Registration) { r.Scopes = []string{"a b"} }, want: "scopes"},
		{name: "token lifetimes must be positive", edit: func(r *Registration) { r.AccessTokenLifetime = 0 }, want: "lifetimes"},
		{name: "post_logout_redirect_uris are absolute", edit: func(r *Registration) {
			r.PostLogoutRedirectURIs = []string{"/bye"}
		}, want: "post_logout_redirect_uris"},
		{name: "post_logout_redirect_uris have no fragment", edit: func(r *Registration) {
			r.PostLogoutRedirectURIs = []string{"https://app.example/bye#x"}
		}, want: "post_logout_redirect_uris"},
		{name: "access_token_format is jwt or opaque", edit: func(r *Registration) { r.AccessTokenFormat = "paseto" },
			want: "access_token_format"},
		{name: "app_platform is ios or android", edit: func(r *Registration) { r.AppPlatform = "windows" }, want: "app_platform"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := valid()
			tc.edit(&r)
			err := r.Validate()
			switch {
			case tc.want == "" && err != nil:
				t.Errorf("Validate: %v, want valid", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Errorf("Validate: %v, want an error naming %q", err, tc.want)
			}
		})
	}
}

func TestDefaults(t *testing.T) {
	for _, tc := range []struct {
		keys, secret bool
		want         string
	}{{true, false, AuthPrivateKeyJWT}, {false, false, AuthNone}, {false, true, AuthClientSecretBasic}} {
		if got := DefaultAuthMethod(tc.keys, tc.secret); got != tc.want {
			t.Errorf("DefaultAuthMethod(keys %v, secret %v) = %s, want %s", tc.keys, tc.secret, got, tc.want)
		}
	}
}

func TestStoredKeepsOnlyTheSecretsHash(t *testing.T) {
	r := valid()
	c := r.Stored(func(s string) []byte { return []byte("hash of " + s) })
	if string(c.SecretHash) != "hash of "+r.Secret || c.TokenEndpointAuthMethod != AuthClientSecretBasic || c.ID != "web" {
		t.Errorf("Stored = %+v", c)
	}
	if !AllowsGrant(c, GrantRefreshToken) || AllowsGrant(c, GrantPassword) || IsPublic(c) {
		t.Errorf("grant and public rules on %+v", c)
	}
	if !IsPublic(store.Client{TokenEndpointAuthMethod: AuthNone}) {
		t.Error("a client of method none is not public")
	}
}
