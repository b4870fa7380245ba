package config

import (
	"encoding/json"
	"time"

	"github.com/latchkey/latchkey/internal/client"
	"github.com/latchkey/latchkey/internal/store"
)

// Client is a static client, created or updated in the store at start.
type Client struct {
	ClientID                string         `yaml:"client_id"`                  // the client_id clients send (required, unique)
	ClientSecret            string         `yaml:"client_secret"`              // the secret of a confidential client; omit for public clients
	ClientSecretHash        string         `yaml:"client_secret_hash"`         // a PHC hash (bcrypt, argon2id, pbkdf2) instead of client_secret
	Name                    string         `yaml:"name"`                       // the client's display name
	TokenEndpointAuthMethod string         `yaml:"token_endpoint_auth_method"` // client_secret_basic, client_secret_post, private_key_jwt or none (default: private_key_jwt with keys, client_secret_basic with a secret, else none)
	JWKS                    map[string]any `yaml:"jwks"`                       // inline public keys (a JWKS) for private_key_jwt
	JWKSURI                 string         `yaml:"jwks_uri"`                   // where the public keys for private_key_jwt are fetched instead
	RedirectURIs            []string       `yaml:"redirect_uris"`              // the exact redirect URIs an authorization request may name
	GrantTypes              []string       `yaml:"grant_types"`                // the grants this client may use (default: the client package's defaults, shown here)
	Scopes                  []string       `yaml:"scopes"`                     // the scopes this client may be granted
	ConsentRequired         *bool          `yaml:"consent_required"`           // asks the person to consent before a code is issued (default true)
	AllowPlainPKCE          bool           `yaml:"allow_plain_pkce"`           // accepts the plain PKCE method besides S256
	AccessTokenLifetime     Duration       `yaml:"access_token_lifetime"`      // how long this client's access tokens live (default 1h)
	RefreshTokenLifetime    Duration       `yaml:"refresh_token_lifetime"`     // how long this client's refresh tokens live (default 720h)
	AppIdentifier           string         `yaml:"app_identifier"`             // mobile app instance data, answered by introspection
	AppPlatform             string         `yaml:"app_platform"`               // mobile app platform, answered by introspection
	AppVersion              string         `yaml:"app_version"`                // mobile app version, answered by introspection
	// IntrospectAnyToken: this confidential client is a resource server and
	// may introspect tokens issued to other clients (docs/SECURITY.md).
	IntrospectAnyToken bool `yaml:"introspect_any_token"`
	// DeviceApprovalClients: the other clients whose device flows this
	// client's tokens may approve in-app.
	DeviceApprovalClients []string `yaml:"device_approval_clients"`
	// PostLogoutRedirectURIs: where RP-initiated logout may return to.
	PostLogoutRedirectURIs []string `yaml:"post_logout_redirect_uris"`
	// AccessTokenFormat: jwt (RFC 9068) or opaque (the default).
	AccessTokenFormat string `yaml:"access_token_format"`
	// AllowInsecureHTTPRedirectURIs lets this client's redirect URIs use
	// cleartext http on any host, for development (warned about at start;
	// docs/SECURITY.md). No API or registration can set it.
	AllowInsecureHTTPRedirectURIs bool `yaml:"allow_insecure_http_redirect_uris"`
}

// APIUser is an HTTP basic credential for the basic_auth APIs.
type APIUser struct {
	Username     string `yaml:"username"`      // the basic-auth user name (no colon)
	Password     string `yaml:"password"`      // the basic-auth password; or password_hash
	PasswordHash string `yaml:"password_hash"` // a PHC hash instead of password ($argon2id$..., $2b$..., $pbkdf2-sha256$...)
}

// Person is a seed person for development.
type Person struct {
	Email     string `yaml:"email"`      // the person's primary email, their login name
	Password  string `yaml:"password"`   // the person's password
	FirstName string `yaml:"first_name"` // the person's first name
	LastName  string `yaml:"last_name"`  // the person's last name
}

// JWKSJSON returns the client's inline JWKS as JSON, or nil.
func (cl *Client) JWKSJSON() ([]byte, error) {
	if len(cl.JWKS) == 0 {
		return nil, nil
	}
	return json.Marshal(cl.JWKS)
}

func (cl *Client) validate() error {
	r, err := cl.Registration()
	if err != nil {
		return err
	}
	return r.Validate()
}

// Registration is the client as the client package validates and stores it.
func (cl *Client) Registration() (client.Registration, error) {
	jwks, err := cl.JWKSJSON()
	if err != nil {
		return client.Registration{}, err
	}
	r := client.Registration{Secret: cl.ClientSecret, Client: store.Client{
		ID: cl.ClientID, SecretPHC: cl.ClientSecretHash, Name: cl.Name,
		TokenEndpointAuthMethod: cl.TokenEndpointAuthMethod, JWKS: jwks, JWKSURI: cl.JWKSURI, RedirectURIs: cl.RedirectURIs,
		GrantTypes: cl.GrantTypes, Scopes: cl.Scopes, AllowPlainPKCE: cl.AllowPlainPKCE,
		AccessTokenLifetime: time.Duration(cl.AccessTokenLifetime), RefreshTokenLifetime: time.Duration(cl.RefreshTokenLifetime),
		AppIdentifier: cl.AppIdentifier, AppPlatform: cl.AppPlatform, AppVersion: cl.AppVersion,
		IntrospectAnyToken: cl.IntrospectAnyToken, DeviceApprovalClients: cl.DeviceApprovalClients,
		PostLogoutRedirectURIs: cl.PostLogoutRedirectURIs, AccessTokenFormat: cl.AccessTokenFormat,
		AllowInsecureHTTPRedirectURIs: cl.AllowInsecureHTTPRedirectURIs,
	}}
	if cl.ConsentRequired != nil {
		r.ConsentRequired = *cl.ConsentRequired
	}
	return r, nil
}
