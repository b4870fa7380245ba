package oauth

import (
	"maps"
	"net/http"
	"slices"

	"github.com/latchkey/latchkey/internal/client"
	"github.com/latchkey/latchkey/internal/httpx"
)

// Metadata is RFC 8414 authorization server metadata: only what latchkey
// actually supports.
type Metadata struct {
	Issuer                            string   `json:"issuer"`
	AuthorizationEndpoint             string   `json:"authorization_endpoint"`
	TokenEndpoint                     string   `json:"token_endpoint"`
	RevocationEndpoint                string   `json:"revocation_endpoint"`
	IntrospectionEndpoint             string   `json:"introspection_endpoint"`
	DeviceAuthorizationEndpoint       string   `json:"device_authorization_endpoint"` // RFC 8628 section 4
	ResponseTypesSupported            []string `json:"response_types_supported"`
	ResponseModesSupported            []string `json:"response_modes_supported"`
	GrantTypesSupported               []string `json:"grant_types_supported"`
	TokenEndpointAuthMethodsSupported []string `json:"token_endpoint_auth_methods_supported"`
	TokenEndpointAuthSigningAlgs      []string `json:"token_endpoint_auth_signing_alg_values_supported"`
	RevocationEndpointAuthMethods     []string `json:"revocation_endpoint_auth_methods_supported"`
	IntrospectionEndpointAuthMethods  []string `json:"introspection_endpoint_auth_methods_supported"`
	CodeChallengeMethodsSupported     []string `json:"code_challenge_methods_supported"`
	AuthorizationResponseIssParam     bool     `json:"authorization_response_iss_parameter_supported"`
	RegistrationEndpoint              string   `json:"registration_endpoint,omitempty"` // RFC 7591, while it is on
}

// SigningAlgs are the JWS algorithms accepted for private_key_jwt (no "none", no HMAC).
var SigningAlgs = []string{"RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "ES256", "ES384", "ES512", "EdDSA"}

// Metadata answers GET /.well-known/oauth-authorization-server. Every list
// comes from the table the code accepts from, so the two cannot drift.
func (s *Service) Metadata(w http.ResponseWriter, r *http.Request) {
	grantTypes := slices.Sorted(maps.Keys(grants))
	responseTypes := slices.Sorted(maps.Keys(responseTypes))
	if slices.Contains(responseTypes, "token") {
		grantTypes = append(grantTypes, client.GrantImplicit) // RFC 8414 section 2
	}
	w.Header().Set("Cache-Control", "public, max-age=3600")
	httpx.WriteJSON(w, http.StatusOK, Metadata{
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
	})
}

// introspectionAuthMethods leaves out none: public clients may not introspect.
func introspectionAuthMethods() []string {
	return slices.DeleteFunc(slices.Clone(client.AuthMethods), func(m string) bool { return m == client.AuthNone })
}
