package oauth

import (
	"context"
	"maps"
	"net/http"
	"slices"

	"github.com/latchkey/latchkey/internal/client"
	"github.com/latchkey/latchkey/internal/httpx"
	"github.com/latchkey/latchkey/internal/signing"
)

// Metadata is RFC 8414 authorization server metadata and OpenID Connect
// Discovery 1.0 provider metadata in one document: only what latchkey
// actually supports. Both well-known paths answer it, so the endpoints
// they share cannot differ.
type Metadata struct {
	Issuer                            string   `json:"issuer"`
	AuthorizationEndpoint             string   `json:"authorization_endpoint"`
	TokenEndpoint                     string   `json:"token_endpoint"`
	UserInfoEndpoint                  string   `json:"userinfo_endpoint,omitempty"`
	JWKSURI                           string   `json:"jwks_uri,omitempty"`
	EndSessionEndpoint                string   `json:"end_session_endpoint,omitempty"`
	RevocationEndpoint                string   `json:"revocation_endpoint"`
	IntrospectionEndpoint             string   `json:"introspection_endpoint"`
	DeviceAuthorizationEndpoint       string   `json:"device_authorization_endpoint"` // RFC 8628 section 4
	ScopesSupported                   []string `json:"scopes_supported,omitempty"`
	ResponseTypesSupported            []string `json:"response_types_supported"`
	ResponseModesSupported            []string `json:"response_modes_supported"`
	GrantTypesSupported               []string `json:"grant_types_supported"`
	SubjectTypesSupported             []string `json:"subject_types_supported,omitempty"`
	IDTokenSigningAlgs                []string `json:"id_token_signing_alg_values_supported,omitempty"`
	ClaimsSupported                   []string `json:"claims_supported,omitempty"`
	PromptValuesSupported             []string `json:"prompt_values_supported,omitempty"`
	UILocalesSupported                []string `json:"ui_locales_supported,omitempty"`
	TokenEndpointAuthMethodsSupported []string `json:"token_endpoint_auth_methods_supported"`
	TokenEndpointAuthSigningAlgs      []string `json:"token_endpoint_auth_signing_alg_values_supported"`
	RevocationEndpointAuthMethods     []string `json:"revocation_endpoint_auth_methods_supported"`
	IntrospectionEndpointAuthMethods  []string `json:"introspection_endpoint_auth_methods_supported"`
	CodeChallengeMethodsSupported     []string `json:"code_challenge_methods_supported"`
	AuthorizationResponseIssParam     bool     `json:"authorization_response_iss_parameter_supported"`
	// Discovery's defaults are true for request_uri_parameter_supported:
	// say plainly that none of these is supported.
	ClaimsParameterSupported     *bool  `json:"claims_parameter_supported,omitempty"`
	RequestParameterSupported    *bool  `json:"request_parameter_supported,omitempty"`
	RequestURIParameterSupported *bool  `json:"request_uri_parameter_supported,omitempty"`
	RegistrationEndpoint         string `json:"registration_endpoint,omitempty"` // RFC 7591, while it is on
}

// SigningAlgs are the JWS algorithms accepted for private_key_jwt (no "none", no HMAC).
var SigningAlgs = []string{"RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "ES256", "ES384", "ES512", "EdDSA"}

// OpenID Connect paths, relative to the issuer.
const (
	PathDiscovery  = "/.well-known/openid-configuration"
	PathEndSession = "/oauth/end_session"
)

// Metadata answers GET /.well-known/oauth-authorization-server and
// GET /.well-known/openid-configuration.
func (s *Service) Metadata(w http.ResponseWriter, r *http.Request) error {
	m, err := s.BuildMetadata(r.Context())
	if err != nil {
		return err
	}
	w.Header().Set("Cache-Control", "public, max-age=3600")
	httpx.WriteJSON(w, http.StatusOK, m)
	return nil
}

// BuildMetadata is the metadata document. Every list comes from the table
// the code accepts from, so the two cannot drift.
func (s *Service) BuildMetadata(ctx context.Context) (Metadata, error) {
	grantTypes := slices.Sorted(maps.Keys(grants))
	responseTypes := slices.Sorted(maps.Keys(responseTypes))
	if slices.Contains(responseTypes, "token") {
		grantTypes = append(grantTypes, client.GrantImplicit) // RFC 8414 section 2
	}
	m := Metadata{
		Issuer:                            s.Issuer,
		AuthorizationEndpoint:             s.Issuer + PathAuthorize,
		TokenEndpoint:                     s.Issuer + PathToken,
		RevocationEndpoint:                s.Issuer + PathRevoke,
		IntrospectionEndpoint:             s.Issuer + PathIntrospect,
		DeviceAuthorizationEndpoint:       s.Issuer + PathDevice,
		ResponseTypesSupported:            responseTypes,
		ResponseModesSupported:            []string{"query", "fragment"},
		GrantTypesSupported:               grantTypes,
		TokenEndpointAuthMethodsSupported: client.AuthMethods,
		TokenEndpointAuthSigningAlgs:      SigningAlgs,
		RevocationEndpointAuthMethods:     client.AuthMethods,
		IntrospectionEndpointAuthMethods:  introspectionAuthMethods(),
		CodeChallengeMethodsSupported:     CodeChallengeMethods,
		AuthorizationResponseIssParam:     true,
		RegistrationEndpoint:              s.RegistrationEndpoint,
	}
	if s.Keys != nil {
		algs, err := s.Keys.PublishedAlgorithms(ctx)
		if err != nil {
			return Metadata{}, err
		}
		no := false
		m.UserInfoEndpoint = s.Issuer + PathUserInfo
		m.JWKSURI = s.Issuer + signing.PathJWKS
		m.EndSessionEndpoint = s.Issuer + PathEndSession
		m.ScopesSupported = OIDCScopes
		m.SubjectTypesSupported = []string{"public"}
		m.IDTokenSigningAlgs = algs
		m.ClaimsSupported = ClaimsSupported
		m.PromptValuesSupported = PromptValues
		m.UILocalesSupported = s.PageLanguages
		m.ClaimsParameterSupported, m.RequestParameterSupported, m.RequestURIParameterSupported = &no, &no, &no
	}
	return m, nil
}

// introspectionAuthMethods leaves out none: public clients may not introspect.
func introspectionAuthMethods() []string {
	return slices.DeleteFunc(slices.Clone(client.AuthMethods), func(m string) bool { return m == client.AuthNone })
}
