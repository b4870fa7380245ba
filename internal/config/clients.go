package config

import (
	"encoding/json"
	"time"

	"github.com/latchkey/latchkey/internal/client"
	"github.com/latchkey/latchkey/internal/store"
)

// Client is a static client, created or updated in the store at start.
type Client struct {
	ClientID                string         `yaml:"client_id"`
	ClientSecret            string         `yaml:"client_secret"`
	ClientSecretHash        string         `yaml:"client_secret_hash"`
	Name                    string         `yaml:"name"`
	TokenEndpointAuthMethod string         `yaml:"token_endpoint_auth_method"`
	JWKS                    map[string]any `yaml:"jwks"`
	JWKSURI                 string         `yaml:"jwks_uri"`
	RedirectURIs            []string       `yaml:"redirect_uris"`
	GrantTypes              []string       `yaml:"grant_types"`
	Scopes                  []string       `yaml:"scopes"`
	ConsentRequired         *bool          `yaml:"consent_required"`
	AllowPlainPKCE          bool           `yaml:"allow_plain_pkce"`
	AccessTokenLifetime     Duration       `yaml:"access_token_lifetime"`
	RefreshTokenLifetime    Duration       `yaml:"refresh_token_lifetime"`
	AppIdentifier           string         `yaml:"app_identifier"`
	AppPlatform             string         `yaml:"app_platform"`
	AppVersion              string         `yaml:"app_version"`
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
	Username     string `yaml:"username"`
	Password     string `yaml:"password"`
	PasswordHash string `yaml:"password_hash"`
}

// Person is a seed person for development.
type Person struct {
	Email     string `yaml:"email"`
	Password  string `yaml:"password"`
	FirstName string `yaml:"first_name"`
	LastName  string `yaml:"last_name"`
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
