package oauth

import (
	"net/url"
	"slices"
	"strconv"
	"strings"

	"github.com/latchkey/latchkey/internal/client"
	"github.com/latchkey/latchkey/internal/lazyre"
	"github.com/latchkey/latchkey/internal/store"
)

// AuthorizeRequest is a validated authorization request (RFC 6749 section
// 4.1.1 plus PKCE and the spec's extension parameters). It is kept, as JSON,
// with the pending store.AuthRequest until the code is issued.
type AuthorizeRequest struct {
	ClientID            string              `json:"client_id"`
	ResponseType        string              `json:"response_type"`
	RedirectURI         string              `json:"redirect_uri"`      // the URI the answer goes to
	RedirectURISent     bool                `json:"redirect_uri_sent"` // whether the request named it (RFC 6749 4.1.3)
	State               string              `json:"state,omitempty"`
	Scopes              []string            `json:"scopes"`
	CodeChallenge       string              `json:"code_challenge,omitempty"`
	CodeChallengeMethod string              `json:"code_challenge_method,omitempty"`
	IDP                 string              `json:"idp,omitempty"`
	ExternalIDP         string              `json:"external_idp,omitempty"`
	ExternalIDPParams   map[string][]string `json:"external_idp_custom_params,omitempty"`
	AppView             string              `json:"app_view,omitempty"`
	Language            string              `json:"language,omitempty"`
	HookParams          map[string][]string `json:"hook_context_custom_params,omitempty"`
	// DeviceUserCode marks a device verification: the hosted pages approve
	// that device instead of issuing a code.
	DeviceUserCode string `json:"device_user_code,omitempty"`

	// OpenID Connect (OIDC Core section 3.1.2.1).
	Nonce  string   `json:"nonce,omitempty"`
	Prompt []string `json:"prompt,omitempty"` // none | login | consent | select_account
	// MaxAge is max_age in seconds; nil when the request has none.
	MaxAge    *int64 `json:"max_age,omitempty"`
	LoginHint string `json:"login_hint,omitempty"`
	// HintSubject is the sub of a verified id_token_hint.
	HintSubject string `json:"hint_subject,omitempty"`
	// RequestedAt is when the request arrived (Unix seconds): prompt=login
	// wants an authentication at or after it.
	RequestedAt int64 `json:"requested_at,omitempty"`
}

// Prompted reports whether the request's prompt holds v.
func (ar *AuthorizeRequest) Prompted(v string) bool { return slices.Contains(ar.Prompt, v) }

// Prompt values (OIDC Core section 3.1.2.1). select_account is taken as
// login: the login page is where a person chooses the account.
const (
	PromptNone          = "none"
	PromptLogin         = "login"
	PromptConsent       = "consent"
	PromptSelectAccount = "select_account"
)

// PromptValues are the prompt values latchkey answers (discovery).
var PromptValues = []string{PromptNone, PromptLogin, PromptConsent, PromptSelectAccount}

// maxMaxAge bounds max_age (a year): larger values mean "any session".
const maxMaxAge = 365 * 24 * 3600

// Error codes of RFC 6749 sections 4.1.2.1 and 5.2.
const (
	ErrInvalidRequest          = "invalid_request"
	ErrInvalidClient           = "invalid_client"
	ErrInvalidGrant            = "invalid_grant"
	ErrUnauthorizedClient      = "unauthorized_client"
	ErrUnsupportedGrantType    = "unsupported_grant_type"
	ErrUnsupportedResponseType = "unsupported_response_type"
	ErrInvalidScope            = "invalid_scope"
	ErrAccessDenied            = "access_denied"
	ErrServerError             = "server_error"
	// ErrInsufficientUserAuthentication: the authentication behind a
	// request is below what it asks for (RFC 9470 section 3).
	ErrInsufficientUserAuthentication = "insufficient_user_authentication"
)

// AuthorizeError is a refused authorization request. When Redirect is true the
// error goes back to the client's redirect URI (RFC 6749 section 4.1.2.1);
// otherwise the redirect URI could not be trusted and the person sees an
// error page instead (never an open redirect).
type AuthorizeError struct {
	Code        string
	Description string
	Redirect    bool
	RedirectURI string
	State       string
	Fragment    bool   // implicit flow answers in the fragment
	EventType   string // what to record
	// VendorCause is vendor_error_cause, the spec's detailed cause of an
	// authorization error (an upstream identity provider's refusal).
	VendorCause string
}

func (e *AuthorizeError) Error() string { return e.Code + ": " + e.Description }

// Limits on authorization request parameters: generous for real clients,
// small enough that a hostile request cannot bloat the pending request.
const (
	maxParamLen     = 2048
	maxCustomParams = 32
	maxScopes       = 64
)

var (
	// RFC 7636 section 4.2: code_challenge is 43-128 unreserved characters.
	pkceChallengeRE = lazyre.New(`^[A-Za-z0-9._~-]{43,128}$`)
	// languageCode, languageCode_countryCode, languageCode_countryCode_variant.
	languageRE = lazyre.New(`^[a-z]{2,3}(_[A-Z]{2}(_[A-Za-z0-9]{1,8})?)?$`)
	// extension parameter keys: hook_context_custom_param.<key>
	customKeyRE = lazyre.New(`^[A-Za-z0-9._~-]{1,64}$`)
)

// responseTypes maps each response_type the authorization endpoint answers
// to the grant a client must list to use it (the metadata lists its keys).
var responseTypes = map[string]string{"code": client.GrantAuthorizationCode, "token": client.GrantImplicit}

// CodeChallengeMethods are the PKCE methods every client may use (RFC 7636
// section 4.2). plain is refused unless a client opts in with
// allow_plain_pkce, so the metadata does not advertise it (RFC 9700 2.1.1).
var CodeChallengeMethods = []string{"S256"}

const pkcePlain = "plain"

// ExternalIDPPrefix starts every external_idp value.
const ExternalIDPPrefix = "urn:com:vendor:saml:idp:"

const (
	hookParamPrefix        = "hook_context_custom_param."
	externalIDPParamPrefix = "external_idp_custom_param."
)

// ParseAuthorizeRequest validates q against client. Until the redirect URI is
// established, errors are shown on a page; after that they redirect.
func ParseAuthorizeRequest(client store.Client, q url.Values) (*AuthorizeRequest, *AuthorizeError) {
	page := func(desc string) *AuthorizeError {
		return &AuthorizeError{Code: ErrInvalidRequest, Description: desc, EventType: "AUTHZ_REQUEST_REDIRECT_URI_INVALID"}
	}
	for _, name := range []string{"redirect_uri", "client_id"} {
		if len(q[name]) > 1 {
			return nil, page("The parameter " + name + " is repeated.")
		}
	}
	ar := &AuthorizeRequest{ClientID: client.ID}
	redirect := q.Get("redirect_uri")
	switch {
	case redirect != "":
		// Exact string match (RFC 9700 section 4.1.3): no prefix or pattern matching.
		if !slices.Contains(client.RedirectURIs, redirect) {
			return nil, page("The redirect_uri is not registered for this client.")
		}
		ar.RedirectURI, ar.RedirectURISent = redirect, true
	case len(client.RedirectURIs) == 1:
		ar.RedirectURI = client.RedirectURIs[0]
	default:
		return nil, page("The redirect_uri parameter is required for this client.")
	}
	if !redirectAllowed(client, client.RedirectURIs, ar.RedirectURI) {
		// Registered before the redirect URI rule, or forged in the store:
		// a javascript: or cleartext address never gets a Location.
		return nil, page("The redirect_uri registered for this client is not allowed.")
	}

	// From here on the redirect URI is trusted: errors go back to the client.
	ar.State = q.Get("state")
	fail := func(code, desc, event string) *AuthorizeError {
		return &AuthorizeError{Code: code, Description: desc, Redirect: true, RedirectURI: ar.RedirectURI,
			State: ar.State, EventType: event, Fragment: q.Get("response_type") == "token"}
	}
	for name, vs := range q {
		if len(vs) > 1 && !strings.HasPrefix(name, hookParamPrefix) && !strings.HasPrefix(name, externalIDPParamPrefix) {
			return nil, fail(ErrInvalidRequest, "The parameter "+name+" is repeated.", "AUTHZ_REQUEST_INVALID")
		}
		for _, v := range vs {
			if len(v) > maxParamLen {
				return nil, fail(ErrInvalidRequest, "The parameter "+name+" is too long.", "AUTHZ_REQUEST_INVALID")
			}
		}
	}

	ar.ResponseType = q.Get("response_type")
	grant, known := responseTypes[ar.ResponseType]
	switch {
	case ar.ResponseType == "":
		return nil, fail(ErrInvalidRequest, "The response_type parameter is required.", "AUTHZ_REQUEST_INVALID_RESPONSE_TYPE")
	case !known:
		return nil, fail(ErrUnsupportedResponseType, "The response_type must be code.", "AUTHZ_REQUEST_INVALID_RESPONSE_TYPE")
	case !slices.Contains(client.GrantTypes, grant):
		// The implicit flow is deprecated (RFC 9700 section 2.1.2): only for clients that list it.
		return nil, fail(ErrUnauthorizedClient, "The client may not use the "+grant+" grant.", "AUTHZ_REQUEST_UNAUTHORIZED_CLIENT")
	}

	scopes, err := ParseScope(q.Get("scope"))
	if err != "" {
		return nil, fail(ErrInvalidScope, err, "AUTHZ_REQUEST_SCOPE_INVALID")
	}
	if scopes, err = AllowedScopes(client, scopes); err != "" {
		return nil, fail(ErrInvalidScope, err, "AUTHZ_REQUEST_SCOPE_INVALID")
	}
	ar.Scopes = scopes

	ar.CodeChallenge = q.Get("code_challenge")
	ar.CodeChallengeMethod = q.Get("code_challenge_method")
	public := isPublic(client)
	switch {
	case ar.ResponseType == "token":
		if ar.CodeChallenge != "" {
			return nil, fail(ErrInvalidRequest, "PKCE does not apply to the implicit flow.", "AUTHZ_REQUEST_INVALID")
		}
	case ar.CodeChallenge == "":
		if ar.CodeChallengeMethod != "" {
			return nil, fail(ErrInvalidRequest, "code_challenge_method was sent without code_challenge.", "AUTHZ_REQUEST_INVALID")
		}
		if public {
			return nil, fail(ErrInvalidRequest, "PKCE (code_challenge) is required for public clients.", "AUTHZ_REQUEST_INVALID")
		}
	default:
		if ar.CodeChallengeMethod == "" {
			ar.CodeChallengeMethod = pkcePlain // RFC 7636 section 4.3 default
		}
		switch {
		case slices.Contains(CodeChallengeMethods, ar.CodeChallengeMethod):
		case ar.CodeChallengeMethod == pkcePlain:
			if !client.AllowPlainPKCE {
				return nil, fail(ErrInvalidRequest, "code_challenge_method plain is not allowed; use S256.", "AUTHZ_REQUEST_INVALID")
			}
		default:
			return nil, fail(ErrInvalidRequest, "code_challenge_method must be S256.", "AUTHZ_REQUEST_INVALID")
		}
		if !pkceChallengeRE.MatchString(ar.CodeChallenge) {
			return nil, fail(ErrInvalidRequest, "code_challenge must be 43 to 128 unreserved characters.", "AUTHZ_REQUEST_INVALID")
		}
	}

	ar.IDP = q.Get("idp")
	ar.AppView = q.Get("app_view")
	if v := q.Get("external_idp"); v != "" {
		if !strings.HasPrefix(v, ExternalIDPPrefix) || len(v) == len(ExternalIDPPrefix) {
			return nil, fail(ErrInvalidRequest, "external_idp must start with "+ExternalIDPPrefix+" followed by the provider identifier.", "AUTHZ_REQUEST_INVALID")
		}
		ar.ExternalIDP = v
	}
	if v := q.Get("language"); v != "" {
		if !languageRE.MatchString(v) {
			return nil, fail(ErrInvalidRequest, "language must be languageCode, languageCode_countryCode or languageCode_countryCode_variant.", "AUTHZ_REQUEST_INVALID")
		}
		ar.Language = v
	}
	if desc := ar.parseOIDC(q); desc != "" {
		return nil, fail(ErrInvalidRequest, desc, "AUTHZ_REQUEST_INVALID")
	}
	var desc string
	if ar.HookParams, desc = customParams(q, hookParamPrefix); desc != "" {
		return nil, fail(ErrInvalidRequest, desc, "AUTHZ_REQUEST_INVALID")
	}
	if ar.ExternalIDPParams, desc = customParams(q, externalIDPParamPrefix); desc != "" {
		return nil, fail(ErrInvalidRequest, desc, "AUTHZ_REQUEST_INVALID")
	}
	return ar, nil
}

// parseOIDC reads the OpenID Connect parameters of q (OIDC Core section
// 3.1.2.1); it answers a description when one is malformed. id_token_hint
// and ui_locales need the service: Service.oidcRequest reads them.
func (ar *AuthorizeRequest) parseOIDC(q url.Values) string {
	ar.Nonce = q.Get("nonce")
	ar.LoginHint = q.Get("login_hint")
	if v := q.Get("prompt"); v != "" {
		for _, p := range strings.Fields(v) {
			if !slices.Contains(PromptValues, p) {
				return "The prompt value " + strconv.Quote(truncate(p, 32)) + " is not supported."
			}
			if !slices.Contains(ar.Prompt, p) {
				ar.Prompt = append(ar.Prompt, p)
			}
		}
		if ar.Prompted(PromptNone) && len(ar.Prompt) > 1 {
			return "prompt=none cannot be combined with other prompt values."
		}
	}
	if v, ok := q["max_age"]; ok {
		n, err := strconv.ParseInt(v[0], 10, 64)
		if err != nil || n < 0 {
			return "max_age must be a non-negative number of seconds."
		}
		n = min(n, maxMaxAge)
		ar.MaxAge = &n
	}
	return ""
}

func truncate(s string, n int) string {
	if len(s) > n {
		return s[:n]
	}
	return s
}

// customParams collects prefix<key>=value parameters; a repeated key keeps
// the list of its values in order.
func customParams(q url.Values, prefix string) (map[string][]string, string) {
	var out map[string][]string
	for name, vs := range q {
		key, ok := strings.CutPrefix(name, prefix)
		if !ok {
			continue
		}
		if !customKeyRE.MatchString(key) {
			return nil, "The parameter " + prefix + "<key> has an invalid key."
		}
		if out == nil {
			out = map[string][]string{}
		}
		if len(out) >= maxCustomParams || len(vs) > maxCustomParams {
			return nil, "Too many " + prefix + "<key> parameters."
		}
		out[key] = append([]string(nil), vs...)
	}
	return out, ""
}

// ParseScope splits a scope parameter (RFC 6749 section 3.3) into distinct
// scope tokens, in order. It answers a description when the value is malformed.
func ParseScope(s string) ([]string, string) {
	if s == "" {
		return nil, ""
	}
	fields := strings.Split(s, " ")
	out := make([]string, 0, len(fields))
	for _, f := range fields {
		if f == "" {
			continue // tolerate doubled spaces
		}
		if !client.ValidScopeToken(f) {
			return nil, "The scope parameter holds an invalid scope token."
		}
		if !slices.Contains(out, f) {
			out = append(out, f)
		}
	}
	if len(out) > maxScopes {
		return nil, "Too many scopes were requested."
	}
	return out, ""
}

// AllowedScopes checks requested ⊆ the client's scopes. An empty request
// means every scope of the client (the documented default of RFC 6749 3.3).
func AllowedScopes(client store.Client, requested []string) ([]string, string) {
	if len(requested) == 0 {
		return slices.Clone(client.Scopes), ""
	}
	for _, s := range requested {
		if !slices.Contains(client.Scopes, s) && !allowsOIDCScope(client, s) {
			return nil, "The scope " + s + " is not allowed for this client."
		}
	}
	return requested, ""
}
