package events

// The event catalogue: every event type latchkey records, in one place.
// Names come from the original product's catalogue
// (shared/spec/oauth-event-types.txt) where one means the same thing; those
// marked "latchkey's own" name steps that catalogue has no name for
// (docs/events.md lists each with when it is recorded).
//
// One rule for a failed write (docs/events.md):
//   - An event of an action is written in the action's transaction
//     (RecordOAuth, RecordPerson with the transaction as Appender): a failed
//     write fails the action, so an answered action always has its event.
//   - An event recorded outside a transaction (a refusal, an introspection
//     result, a login attempt) is written with Observe: a failed write is
//     logged with the event type and the answer goes on, since refusing a
//     request because its record could not be written would let a broken
//     event store take the service down. A write cut short because the
//     request was canceled is not logged.

// OAuth events: authorization endpoint and hosted pages.
const (
	AuthzRequestInvalid            = "AUTHZ_REQUEST_INVALID"
	AuthzRequestInvalidClient      = "AUTHZ_REQUEST_INVALID_CLIENT"
	AuthzRequestRedirectURIInvalid = "AUTHZ_REQUEST_REDIRECT_URI_INVALID"
	AuthzRequestScopeInvalid       = "AUTHZ_REQUEST_SCOPE_INVALID"
	AuthzRequestUnauthorizedClient = "AUTHZ_REQUEST_UNAUTHORIZED_CLIENT"
	AuthzRequestInvalidResponse    = "AUTHZ_REQUEST_INVALID_RESPONSE_TYPE"
	AuthzRequestGrantCreated       = "AUTHZ_REQUEST_GRANT_CREATED"
	AuthzRequestTokenCreated       = "AUTHZ_REQUEST_TOKEN_CREATED"
	AuthzRequestDenied             = "AUTHZ_REQUEST_DENIED" // latchkey's own
	AuthnLoginRequired             = "AUTHN_REQUEST_LOGIN_REQUIRED"
	AuthnConsentRequired           = "AUTHN_REQUEST_CONSENT_REQUIRED"
	ConsentGiven                   = "CONSENT_GIVEN"
	LoginSucceeded                 = "LOGIN_SUCCEEDED"                        // latchkey's own
	LoginFailed                    = "LOGIN_FAILED"                           // latchkey's own
	TOTPSucceeded                  = "STEP_UP_TOTP_SUCCEEDED"                 // latchkey's own
	TOTPFailed                     = "OTP_AUTH_NOT_AUTHENTICATED_INVALID_OTP" // also replays and throttled attempts; mailed codes too
	EmailCodeSucceeded             = "STEP_UP_EMAIL_CODE_SUCCEEDED"           // latchkey's own
	LoginThrottled                 = "LOGIN_THROTTLED"                        // latchkey's own

	ClientCredentialsCheckFailed = "CLIENT_CREDENTIALS_CHECK_FAILED"
)

// OAuth events: OpenID Connect.
const (
	IDTokenCreated           = "ID_TOKEN_CREATED"
	OpenIDLogoutSuccess      = "OPENID_SESSION_LOGOUT_SUCCESS"
	OpenIDLogoutConfirmShown = "OPENID_SESSION_LOGOUT_CONFIRM_PAGE_SHOWN"
	OpenIDLogoutRejected     = "OPENID_SESSION_LOGOUT_FAILURE_REJECTED"
)

// OAuth events: token endpoint.
const (
	TokenRequestInvalid             = "TOKEN_REQUEST_INVALID"
	TokenRequestInvalidClient       = "TOKEN_REQUEST_INVALID_CLIENT"
	TokenRequestInvalidGrant        = "TOKEN_REQUEST_INVALID_GRANT"
	TokenRequestInvalidRedirectURI  = "TOKEN_REQUEST_INVALID_REDIRECT_URI"
	TokenRequestInvalidPKCEVerifier = "TOKEN_REQUEST_INVALID_PKCE_VERIFIER"
	TokenRequestScopeInvalid        = "TOKEN_REQUEST_SCOPE_INVALID"
	TokenRequestUnsupportedGrant    = "TOKEN_REQUEST_UNSUPPORTED_GRANT_TYPE"
	TokenRequestDisabledGrant       = "TOKEN_REQUEST_DISABLED_GRANT_TYPE"
	TokenRequestInvalidRefreshToken = "TOKEN_REQUEST_INVALID_REFRESH_TOKEN"
	TokenRequestExpiredRefreshToken = "TOKEN_REQUEST_EXPIRED_REFRESH_TOKEN"
	TokenRequestMaxValidityExpired  = "TOKEN_REQUEST_MAX_VALIDITY_EXPIRED_REFRESH_TOKEN"
	TokenRequestAccessTokenCreated  = "TOKEN_REQUEST_ACCESS_TOKEN_CREATED"
	TokenRequestAccessTokenRefresh  = "TOKEN_REQUEST_ACCESS_TOKEN_REFRESHED"
	TokenRequestPasswordCreated     = "TOKEN_REQUEST_PASSWORD_ACCESS_TOKEN_CREATED"
	TokenRequestPasswordInvalid     = "TOKEN_REQUEST_PASSWORD_INVALID_CREDENTIALS"
	TokenRequestCodeReplayDetected  = "TOKEN_REQUEST_CODE_REPLAY_DETECTED"         // latchkey's own
	TokenRequestRefreshReuse        = "TOKEN_REQUEST_REFRESH_TOKEN_REUSE_DETECTED" // latchkey's own
)

// OAuth events: revocation (RFC 7009) and introspection (RFC 7662).
const (
	TokenRevokeInvalidRequest      = "TOKEN_REVOKE_INVALID_REQUEST"
	TokenRevokeClientInvalid       = "TOKEN_REVOKE_CLIENT_INVALID"
	TokenRevokeTokenInvalid        = "TOKEN_REVOKE_TOKEN_INVALID"
	TokenRevokeAccessTokenSuccess  = "TOKEN_REVOKE_ACCESS_TOKEN_SUCCESS"
	TokenRevokeRefreshTokenSuccess = "TOKEN_REVOKE_REFRESH_TOKEN_SUCCESS"

	IntrospectionSuccess   = "TOKEN_INTROSPECTION_SUCCESS"
	IntrospectionFailed    = "TOKEN_INTROSPECTION_FAILED"
	IntrospectionExhausted = "TOKEN_INTROSPECTION_USAGE_LIMIT_EXCEEDED" // latchkey's own
	WebhookFailed          = "WEBHOOK_CALL_FAILED"                      // latchkey's own
	GroupPoliciesFailed    = "GROUP_PERMISSIONS_API_FAILED"             // latchkey's own
)

// OAuth events: device flow (RFC 8628).
const (
	DeviceCodeCreated       = "DEVICE_AUTHZ_REQUEST_DEVICE_CODE_CREATED"
	DeviceRequestInvalid    = "DEVICE_AUTHZ_REQUEST_INVALID"
	DeviceInvalidClient     = "DEVICE_AUTHZ_REQUEST_INVALID_CLIENT"
	DeviceScopeInvalid      = "DEVICE_AUTHZ_REQUEST_SCOPE_INVALID"
	DeviceGrantCreated      = "AUTHZ_REQUEST_DEVICE_GRANT_CREATED"
	DeviceTokenCreated      = "TOKEN_REQUEST_DEVICE_CODE_ACCESS_TOKEN_CREATED"
	DeviceApprovedInApp     = "DEVICE_AUTHZ_APPROVED_IN_APP"     // latchkey's own
	DeviceDenied            = "DEVICE_AUTHZ_DENIED"              // latchkey's own
	DeviceUserCodeWrong     = "DEVICE_AUTHZ_USER_CODE_INVALID"   // latchkey's own
	DeviceUserCodeThrottled = "DEVICE_AUTHZ_USER_CODE_THROTTLED" // latchkey's own
	DeviceExpired           = "DEVICE_AUTHZ_EXPIRED"             // latchkey's own
)

// OAuth events: administration (the scopes and configuration APIs).
const (
	AdminScopeCreated            = "ADMIN_SCOPE_CREATED"
	AdminScopeUpdated            = "ADMIN_SCOPE_UPDATED"
	AdminScopeDeleted            = "ADMIN_SCOPE_DELETED"
	AdminFeaturesUpdated         = "ADMIN_SYSTEM_FEATURE_CONFIG_UPDATED"
	AdminConfigUpdated           = "ADMIN_SYSTEM_GENERAL_CONFIG_UPDATED"
	AdminExtensionEngineReloaded = "ADMIN_SYSTEM_EXTENSION_ENGINE_CONFIG_UPDATED"
)

// OAuth events: the admin API's clients (docs/ADMIN.md), with the admin as
// event_agent_user, and dynamic client registration (RFC 7591, RFC 7592).
const (
	AdminClientCreated = "ADMIN_CLIENT_CREATED" // latchkey's own: the catalogue's ADMIN_API_CLIENT_CREATED is a client of its admin API
	AdminClientUpdated = "ADMIN_CLIENT_UPDATED" // also a rotated secret
	AdminClientDeleted = "ADMIN_CLIENT_DELETED"

	DynamicRegSuccess         = "DYNAMIC_REG_SUCCESS"
	DynamicRegDisabled        = "DYNAMIC_REG_NEW_REGISTRATIONS_DISABLED"
	DynamicRegInvalidHeader   = "DYNAMIC_REG_INVALID_HEADER" // a missing or wrong initial access or registration access token
	DynamicRegInvalidMetadata = "DYNAMIC_REG_FAILED_INVALID_METADATA"
	DynamicUpdateSuccess      = "DYNAMIC_UP_SUCCESS"
	DynamicUpdateFailed       = "DYNAMIC_UP_FAILED"
)

// Person event types (package.ClassName form of the spec) and their names.
const (
	PersonCreated = "person.PersonCreatedEvent"
	PersonUpdated = "person.PersonUpdatedEvent"
	PersonDeleted = "person.PersonDeletedEvent"
)

var personNames = map[string]string{PersonCreated: "Person Created", PersonUpdated: "Person Updated",
	PersonDeleted: "Person Deleted"}

// OAuth events: sign-in at upstream identity providers (the federation
// issue, docs/FEDERATION.md). IDP_OAUTH_* names come from the catalogue.
const (
	IdPStateMissing        = "IDP_OAUTH_STATE_MISSING"
	IdPStateInvalid        = "IDP_OAUTH_STATE_INVALID" // unknown, used, expired, or another browser's state
	IdPClientAuthFailed    = "IDP_OAUTH_CLIENT_AUTHENTICATION_FAILED"
	IdPMissingAccessToken  = "IDP_OAUTH_MISSING_ACCESS_TOKEN" // the code exchange failed
	IdPMissingIDToken      = "IDP_OAUTH_OIDC_MISSING_ID_TOKEN"
	IdPInvalidIDToken      = "IDP_OAUTH_OIDC_INVALID_ID_TOKEN" // signature, iss, aud, exp or nonce
	IdPMissingUserInfo     = "IDP_OAUTH_MISSING_USER_INFO"
	IdPReceivedError       = "IDP_OAUTH_RECEIVED_ERROR"
	IdPEndSessionFailed    = "IDP_OAUTH_OIDC_FAILED_TO_INITIATE_END_SESSION"
	IdPMetadataFailed      = "IDP_OAUTH_METADATA_FAILED"          // latchkey's own: discovery or the upstream unreachable
	IdPLoginSucceeded      = "IDP_OAUTH_OIDC_LOGIN_SUCCEEDED"     // latchkey's own
	IdPAccountRefused      = "IDP_OAUTH_ACCOUNT_REFUSED"          // latchkey's own: not linked, coupled or created
	IdPEndSessionInitiated = "IDP_OAUTH_OIDC_END_SESSION_STARTED" // latchkey's own
	LDAPLoginSucceeded     = "IDP_LDAP_LOGIN_SUCCEEDED"           // latchkey's own
	LDAPLoginFailed        = "IDP_LDAP_LOGIN_FAILED"              // latchkey's own: unknown login or wrong password
	LDAPLoginThrottled     = "IDP_LDAP_LOGIN_THROTTLED"           // latchkey's own
	LDAPUnavailable        = "IDP_LDAP_UNAVAILABLE"               // latchkey's own: no server of server_urls answered
	LDAPAddressNotAllowed  = "IDP_LDAP_ADDRESS_NOT_ALLOWED"       // latchkey's own: outside ip_ranges
	LDAPAccountRefused     = "IDP_LDAP_ACCOUNT_REFUSED"           // latchkey's own
)

// Person events of federated sign-ins (latchkey's own).
const (
	PersonIdentityCoupled = "person.IdentityCoupledEvent"
	PersonExternalLogin   = "person.ExternalLoginEvent"
)

func init() {
	personNames[PersonIdentityCoupled] = "Identity Coupled"
	personNames[PersonExternalLogin] = "External Login"
}
