// Package cimconfig is the identity-management configuration: the typed
// resources of the spec's configuration API, their validation, their
// storage as one JSON document per unit, and the API that reads and writes
// them. Members are spelled as the spec spells them (stategy, ladp_attributes,
// attentation are the spec's spelling). Scalars are pointers so that a unit
// comes back exactly as it was sent: a member left out stays left out.
package cimconfig

import "encoding/json"

// Configuration is the v1 document (GET /api/config): every member is
// answered, unless the fields parameter names some. password_policy is null
// while no policy is set, as an empty object would be a policy missing
// required members.
type Configuration struct {
	PasswordPolicy *PasswordPolicy              `json:"password_policy" openapi:"nullable"`
	Messages       map[string]map[string]string `json:"messages"`
	Profile        *Profile                     `json:"profile"`
}

// PasswordPolicy: every member is required.
type PasswordPolicy struct {
	MinLength               *int32 `json:"min_length"`
	MaxLength               *int32 `json:"max_length"`
	LowerCaseCharRequired   *bool  `json:"lower_case_char_required"`
	UpperCaseCharRequired   *bool  `json:"upper_case_char_required"`
	SpecialCharRequired     *bool  `json:"special_char_required"`
	BreachedPasswordBlocked *bool  `json:"breached_password_blocked"`
}

// Profile holds the validation rules of required person attributes.
type Profile struct {
	RequiredAttributesValidationRules []AnyOfRule `json:"required_attributes_validation_rules,omitempty"`
}

// AnyOfRule: at least one of the attribute types is required.
type AnyOfRule struct {
	AnyOf []string `json:"any_of"`
}

// CIMConfiguration is GET /api/v2/config. Every member is answered: a
// unit never set is its empty value, so clients need not test for absence.
type CIMConfiguration struct {
	CustomMessages *CustomMessages            `json:"custom_messages"`
	Features       *Features                  `json:"features"`
	Attributes     *Attributes                `json:"attributes"`
	UIExtension    *UIExtension               `json:"ui_extension"`
	StepUp         *StepUp                    `json:"step_up"`
	LoginMethods   *LoginMethodsConfiguration `json:"login_methods"`
	Redirects      *Redirects                 `json:"redirects"`
	Organisations  *Organisation              `json:"organisations"`
	KeyPairs       []KeyPair                  `json:"key_pairs"`
}

// CustomMessages are the texts of the hosted pages: default, and per locale.
type CustomMessages struct {
	Default map[string]string            `json:"default,omitempty"`
	Locales map[string]map[string]string `json:"locales,omitempty"`
}

// Features are the switches of the identity-management features.
type Features struct {
	LoginEnabled                                             *bool `json:"login_enabled,omitempty"`
	SignUpEnabled                                            *bool `json:"sign_up_enabled,omitempty"`
	AutomatedExternalIdentityCouplingEnabled                 *bool `json:"automated_external_identity_coupling_enabled,omitempty"`
	BindMultipleExternalAccountsWithOneCIMAccount            *bool `json:"bind_multiple_external_accounts_with_one_cim_account,omitempty"`
	AcceptingInvitationEnabled                               *bool `json:"accepting_invitation_enabled,omitempty"`
	PostLoginExtraRegistrationAfterSecondLogin               *bool `json:"post_login_extra_registration_after_second_login,omitempty"`
	PasswordResetEnabled                                     *bool `json:"password_reset_enabled,omitempty"`
	UsernameReminderViaSMSEnabled                            *bool `json:"username_reminder_via_sms_enabled,omitempty"`
	MobileNumberValidationBackendServicesEnabled             *bool `json:"mobile_number_validation_backend_services_enabled,omitempty"`
	MigrationEnabled                                         *bool `json:"migration_enabled,omitempty"`
	UnauthenticatedMigrationEnabled                          *bool `json:"unauthenticated_migration_enabled,omitempty"`
	PersonIdentifierInExternalProfileRequiredForMigration    *bool `json:"person_identifier_in_external_profile_required_for_migration,omitempty"`
	AllowSignUpWithoutInvitationValidation                   *bool `json:"allow_sign_up_without_invitation_validation,omitempty"`
	PinEnabled                                               *bool `json:"pin_enabled,omitempty"`
	SMSEnabled                                               *bool `json:"sms_enabled,omitempty"`
	ProviderAuthenticatorStepUpAuthenticationEnabled         *bool `json:"provider_authenticator_step_up_authentication_enabled,omitempty"`
	MobileAuthenticationEnabled                              *bool `json:"mobile_authentication_enabled,omitempty"`
	StepUpAuthenticationMethodExternallyDeliveredCodeEnabled *bool `json:"step_up_authentication_method_externally_delivered_code_enabled,omitempty"`
	CookieBasedSAMLAuthentication                            *bool `json:"cookie_based_saml_authentication,omitempty"`
	PersonAPIEnabled                                         *bool `json:"person_api_enabled,omitempty"`
	CredentialsAPIEnabled                                    *bool `json:"credentials_api_enabled,omitempty"`
	ConfigurationAPIEnabled                                  *bool `json:"configuration_api_enabled,omitempty"`
	EventsAPIEnabled                                         *bool `json:"events_api_enabled,omitempty"`
	StatisticsAPIEnabled                                     *bool `json:"statistics_api_enabled,omitempty"`
	SessionAPIEnabled                                        *bool `json:"session_api_enabled,omitempty"`
	StorageAPIEnabled                                        *bool `json:"storage_api_enabled,omitempty"`
	ExperimentalFeaturesEnabled                              *bool `json:"experimental_features_enabled,omitempty"`

	ActionToken                    *ActionToken                    `json:"action_token,omitempty"`
	PersonActivation               *PersonActivation               `json:"person_activation,omitempty"`
	CustomEmailValidation          *CustomEmailValidation          `json:"custom_email_validation,omitempty"`
	InvitationVerificationRequired *InvitationVerificationRequired `json:"invitation_verification_required,omitempty"`
}

// ActionToken configures action tokens.
type ActionToken struct {
	Login           *ActionTokenLogin    `json:"login,omitempty"`
	AppToWeb        *ActionTokenAppToWeb `json:"app_to_web,omitempty"`
	Coupling        *ActionTokenCoupling `json:"coupling,omitempty"`
	WhitelistedURLs []WhitelistedURL     `json:"whitelisted_urls,omitempty"`
}

type ActionTokenLogin struct {
	Enabled             *bool  `json:"enabled,omitempty"`
	TTL                 *int64 `json:"ttl,omitempty"`
	AuthenticationLevel *int64 `json:"authentication_level,omitempty"`
	UIGenerationEnabled *bool  `json:"ui_generation_enabled,omitempty"`
}

type ActionTokenAppToWeb struct {
	Enabled             *bool  `json:"enabled,omitempty"`
	TTL                 *int64 `json:"ttl,omitempty"`
	AuthenticationLevel *int64 `json:"authentication_level,omitempty"`
}

type ActionTokenCoupling struct {
	Enabled *bool  `json:"enabled,omitempty"`
	TTL     *int64 `json:"ttl,omitempty"`
}

// Person activation types.
const (
	ActivationEmail                   = "EMAIL"
	ActivationExternallyDeliveredCode = "EXTERNALLY_DELIVERED_CODE"
)

type PersonActivation struct {
	Enabled                 *bool                    `json:"enabled,omitempty"`
	ExpirationTime          *int64                   `json:"expiration_time,omitempty"`
	Type                    *string                  `json:"type,omitempty"`
	ExternallyDeliveredCode *ExternallyDeliveredCode `json:"externally_delivered_code,omitempty"`
}

type ExternallyDeliveredCode struct {
	UnavailabilityTime                      *int64 `json:"unavailability_time,omitempty"`
	ResendCodeMinimumPeriod                 *int64 `json:"resend_code_minimum_period,omitempty"`
	ForceActivationAfterAcceptingInvitation *bool  `json:"force_activation_after_accepting_invitation,omitempty"`
}

type CustomEmailValidation struct {
	Enabled       *bool   `json:"enabled,omitempty"`
	BeforeAtRegex *string `json:"before_at_regex,omitempty"`
	AfterAtRegex  *string `json:"after_at_regex,omitempty"`
}

type InvitationVerificationRequired struct {
	ViaBirthdateEnabled               *bool `json:"via_birthdate_enabled,omitempty"`
	ViaSMSEnabled                     *bool `json:"via_sms_enabled,omitempty"`
	ViaExternallyDeliveredCodeEnabled *bool `json:"via_externally_delivered_code_enabled,omitempty"`
}

// WhitelistedURL is one allowed URL; its id is assigned by the server.
type WhitelistedURL struct {
	ID  string `json:"id,omitempty"`
	URL string `json:"url"`
}

// WhitelistedURLs is the list answer of the whitelisted-URL resources.
type WhitelistedURLs struct {
	WhitelistedURLs []WhitelistedURL `json:"whitelisted_urls"`
}

// Attributes is the attributes unit (/api/v2/attributes).
type Attributes struct {
	PersonCreationMandatoryFields *PersonCreationMandatoryFields `json:"person_creation_mandatory_fields,omitempty"`
	SignUpFormFields              *SignUpFormFields              `json:"sign_up_form_fields,omitempty"`
	Verification                  *AttributeVerification         `json:"verification,omitempty"`
	NameVisibleOnDashboard        *bool                          `json:"name_visible_on_dashboard,omitempty"`
}

type PersonCreationMandatoryFields struct {
	FirstNameRequired    *bool `json:"first_name_required,omitempty"`
	LastNameRequired     *bool `json:"last_name_required,omitempty"`
	MobileNumberRequired *bool `json:"mobile_number_required,omitempty"`
}

type SignUpFormFields struct {
	MobileNumberEnabled             *bool `json:"mobile_number_enabled,omitempty"`
	MobileNumberConfirmationEnabled *bool `json:"mobile_number_confirmation_enabled,omitempty"`
	EmailConfirmationEnabled        *bool `json:"email_confirmation_enabled,omitempty"`
}

type AttributeVerification struct {
	EmailEnabled        *bool `json:"email_enabled,omitempty"`
	EmailRequired       *bool `json:"email_required,omitempty"`
	MobileNumberEnabled *bool `json:"mobile_number_enabled,omitempty"`
}

// UIExtension points the hosted pages at an external UI.
type UIExtension struct {
	BaseURL             *string `json:"base_url,omitempty"`
	EnableLoginRedirect *bool   `json:"enable_login_redirect,omitempty"`
	LoginPath           *string `json:"login_path,omitempty"`
}

// Step-up strategies.
const (
	StrategyUserPreference     = "USER_PREFERENCE"
	StrategyStrongestAvailable = "STRONGEST_AVAILABLE"
)

// StepUp: "stategy" is the spec's spelling.
type StepUp struct {
	Actions               *StepUpActions               `json:"actions,omitempty"`
	AuthenticationMethods *StepUpAuthenticationMethods `json:"authentication_methods,omitempty"`
	Stategy               *string                      `json:"stategy,omitempty"`
}

type StepUpActions struct {
	DefaultStepUpAuthenticationLevel      *int64 `json:"default_step_up_authentication_level,omitempty"`
	DashboardStepUpAuthenticationLevel    *int64 `json:"dashboard_step_up_authentication_level,omitempty"`
	SetupStepUpMethodsAuthenticationLevel *int64 `json:"setup_step_up_methods_authentication_level,omitempty"`
	ChangeEmailAuthenticationLevel        *int64 `json:"change_email_authentication_level,omitempty"`
	ChangePasswordAuthenticationLevel     *int64 `json:"change_password_authentication_level,omitempty"`
	AllowSetInitialStepUpMethodEnabled    *bool  `json:"allow_set_initial_step_up_method_enabled,omitempty"`
}

type StepUpAuthenticationMethods struct {
	PinAuthenticationLevel                     *int64 `json:"pin_authentication_level,omitempty"`
	SMSAuthenticationLevel                     *int64 `json:"sms_authentication_level,omitempty"`
	EmailAuthenticationLevel                   *int64 `json:"email_authentication_level,omitempty"`
	ProviderAuthenticatorAuthenticationLevel   *int64 `json:"provider_authenticator_authentication_level,omitempty"`
	PushAuthenticationLevel                    *int64 `json:"push_authentication_level,omitempty"`
	ExternallyDeliveredCodeAuthenticationLevel *int64 `json:"externally_delivered_code_authentication_level,omitempty"`
}

// Redirects: where people go after login, logout, sign-up and activation,
// and which URLs a redirect may lead to.
type Redirects struct {
	URLAfterLogin      *string          `json:"url_after_login,omitempty"`
	URLAfterLogout     *string          `json:"url_after_logout,omitempty"`
	URLAfterSignUp     *string          `json:"url_after_sign_up,omitempty"`
	URLAfterActivation *string          `json:"url_after_activation,omitempty"`
	DefaultOriginURL   *string          `json:"default_origin_url,omitempty"`
	URLWhitelist       []WhitelistedURL `json:"url_whitelist,omitempty"`
}

// Organisation is the organisations unit.
type Organisation struct {
	ID                                           *string                    `json:"id,omitempty"`
	Name                                         *string                    `json:"name,omitempty"`
	LandingPageURL                               *string                    `json:"landing_page_url,omitempty"`
	SiteURL                                      *string                    `json:"site_url,omitempty"`
	SupportURL                                   *string                    `json:"support_url,omitempty"`
	SupportEmail                                 *string                    `json:"support_email,omitempty"`
	AccountLinkURL                               *string                    `json:"account_link_url,omitempty"`
	UsernameForBasicAuth                         *string                    `json:"username_for_basic_auth,omitempty"`
	PreferredLanguage                            *string                    `json:"preferred_language,omitempty"`
	MessageToAssistUserDuringMigrationPeriodHTML *string                    `json:"message_to_assist_user_during_migration_period_html,omitempty"`
	LogoSquareBase64                             *string                    `json:"logo_square_base64,omitempty"`
	LogoLandscapeBase64                          *string                    `json:"logo_landscape_base64,omitempty"`
	NotifyWhenUserDoesUnlinkAccount              *bool                      `json:"notify_when_user_does_unlink_account,omitempty"`
	IsPrivate                                    *bool                      `json:"is_private,omitempty"`
	ServiceProviders                             map[string]ServiceProvider `json:"service_providers,omitempty"`
	UserProfileAttributes                        *UserProfileAttributes     `json:"user_profile_attributes,omitempty"`
}

// IdentityAttribute's members are not shown in the spec: any JSON object.
type IdentityAttribute = json.RawMessage

type ServiceProvider struct {
	ID                                                *string                      `json:"id,omitempty"`
	Name                                              *string                      `json:"name,omitempty"`
	Type                                              *string                      `json:"type,omitempty"`
	SAMLMetadata                                      *string                      `json:"saml_metadata,omitempty"`
	IncludeUnmappedCustomAttributesWithinSAMLResponse *string                      `json:"include_unmapped_custom_attributes_within_saml_response,omitempty"`
	UseTrustedDevice                                  *string                      `json:"use_trusted_device,omitempty"`
	RequiredAuthenticationLevel                       *int64                       `json:"required_authentication_level,omitempty"`
	RequiredIdentityAssuranceLevel                    *int64                       `json:"required_identity_assurance_level,omitempty"`
	IdentityAttributes                                map[string]IdentityAttribute `json:"identity_attributes,omitempty"`
	CustomAttributeMappings                           *CustomAttributeMapping      `json:"custom_attribute_mappings,omitempty"`
}

type UserProfileAttributes struct {
	SAMLSubjectNameAttributes *SAMLSubjectNameAttributes   `json:"saml_subject_name_attributes,omitempty"`
	IdentityAttributes        map[string]IdentityAttribute `json:"identity_attributes,omitempty"`
	CustomAttributeMappings   *CustomAttributeMapping      `json:"custom_attribute_mappings,omitempty"`
}

type SAMLSubjectNameAttributes struct {
	Type               *string `json:"type,omitempty"`
	Format             *string `json:"format,omitempty"`
	Default            *string `json:"default,omitempty"`
	CustomAttributeKey *string `json:"custom_attribute_key,omitempty"`
}

type CustomAttributeMapping struct {
	ID                 *string `json:"id,omitempty"`
	AttributeToMapFrom *string `json:"attribute_to_map_from,omitempty"`
	AttributeToMapTo   *string `json:"attribute_to_map_to,omitempty"`
}

// KeyPair is a certificate or key pair. PrivateKey is accepted on input
// and never answered.
type KeyPair struct {
	ID         string `json:"id,omitempty"`
	Name       string `json:"name"`
	KeyType    string `json:"key_type"`
	PrivateKey string `json:"private_key,omitempty"`
	PublicKey  string `json:"public_key"`
}

// EmailNotificationConfiguration says which emails are sent.
type EmailNotificationConfiguration struct {
	AdministratorAccountBlocked            *bool             `json:"administrator_account_blocked,omitempty"`
	ConfigurationErrorForAccountLinking    *bool             `json:"configuration_error_for_account_linking,omitempty"`
	ValidationOfIDCardCompleted            *bool             `json:"validation_of_id_card_completed,omitempty"`
	ValidationOfIDCardFailed               *bool             `json:"validation_of_id_card_failed,omitempty"`
	AccountInvitation                      *bool             `json:"account_invitation,omitempty"`
	IdentityCoupledToAccount               *bool             `json:"identity_coupled_to_account,omitempty"`
	PasswordBlocked                        *bool             `json:"password_blocked,omitempty"`
	PasswordReset                          *bool             `json:"password_reset,omitempty"`
	PasswordResetForAccountWithoutPassword *bool             `json:"password_reset_for_account_without_password,omitempty"`
	AccountRemoved                         *bool             `json:"account_removed,omitempty"`
	StepUpAuthentication                   *bool             `json:"step_up_authentication,omitempty"`
	PinReset                               *bool             `json:"pin_reset,omitempty"`
	EmailVerification                      *OnWebOnAPI       `json:"email_verification,omitempty"`
	Welcome                                *Welcome          `json:"welcome,omitempty"`
	AttributesUpdate                       *AttributesUpdate `json:"attributes_update,omitempty"`
}

type OnWebOnAPI struct {
	OnWebEnabled *bool `json:"on_web_enabled,omitempty"`
	OnAPIEnabled *bool `json:"on_api_enabled,omitempty"`
}

type Welcome struct {
	OnWebEnabled       *bool `json:"on_web_enabled,omitempty"`
	OnAPIEnabled       *bool `json:"on_api_enabled,omitempty"`
	OnMigrationEnabled *bool `json:"on_migration_enabled,omitempty"`
}

type AttributesUpdate struct {
	OnAllUpdated         *bool `json:"on_all_updated,omitempty"`
	OnEmailUpdated       *bool `json:"on_email_updated,omitempty"`
	OnPasswordUpdated    *bool `json:"on_password_updated,omitempty"`
	OnPhoneNumberUpdated *bool `json:"on_phone_number_updated,omitempty"`
}

// IdentityProviderConfigResultSet is GET /api/config/identity-providers.
type IdentityProviderConfigResultSet struct {
	Result []IdentityProviderConfig `json:"result"`
}

type IdentityProviderConfig struct {
	ID             string          `json:"id"`
	Name           string          `json:"name"`
	Type           string          `json:"type"`
	SAMLProperties *SAMLProperties `json:"saml_properties,omitempty"`
}

type SAMLProperties struct {
	AuthnContext string `json:"authn_context"`
}

// LoginMethodsConfiguration is the login_methods unit.
type LoginMethodsConfiguration struct {
	LoginMethods []LoginMethod `json:"login_methods,omitempty"`
	MobileLogin  *MobileLogin  `json:"mobile_login,omitempty"`
}

type MobileLogin struct {
	Enabled              *bool   `json:"enabled,omitempty"`
	ShowUseMobileToLogin *bool   `json:"show_use_mobile_to_login,omitempty"`
	AuthenticationType   *string `json:"authentication_type,omitempty"`
	LoginMessage         *string `json:"login_message,omitempty"`
	AllowedLoginAttempts *int64  `json:"allowed_login_attempts,omitempty"`
	StepUpType           *string `json:"step_up_type,omitempty"`
	StepUpMessage        *string `json:"step_up_message,omitempty"`
}

// LoginMethod is one way to sign in (an identity provider). Exactly the
// attribute object of its type may be present.
type LoginMethod struct {
	ID                                           *string                  `json:"id,omitempty"`
	Name                                         *string                  `json:"name,omitempty"`
	Type                                         *string                  `json:"type,omitempty"`
	AuthenticationLevel                          *int64                   `json:"authentication_level,omitempty"`
	IdentityAssuranceLevel                       *int64                   `json:"identity_assurance_level,omitempty"`
	Removable                                    *bool                    `json:"removable,omitempty"`
	Enabled                                      *bool                    `json:"enabled,omitempty"`
	AutoActivationEnabled                        *bool                    `json:"auto_activation_enabled,omitempty"`
	AutoEmailVerification                        *bool                    `json:"auto_email_verification,omitempty"`
	SynchroniseAttributes                        *bool                    `json:"synchronise_attributes,omitempty"`
	MigrationDuringSignUp                        *bool                    `json:"migration_during_sign_up,omitempty"`
	ForceCreatingUsernameAndPasswordDuringSignUp *bool                    `json:"force_creating_username_and_password_during_sign_up,omitempty"`
	AttributeMappings                            []AttributeMapping       `json:"attribute_mappings,omitempty"`
	CustomAttributeMappings                      []CustomAttributeMapping `json:"custom_attribute_mappings,omitempty"`
	ExcludedUnmappedAttributes                   []string                 `json:"excluded_unmapped_attributes,omitempty"`
	CustomAttributeFields                        []CustomAttributeField   `json:"custom_attribute_fields,omitempty"`
	SAMLMutualSSLTLSAttributes                   *SAMLMutualTLS           `json:"saml_mutual_ssl_tls_attributes,omitempty"`

	SAMLAttributes          *SAMLAttributes          `json:"saml_attributes,omitempty"`
	OpenIDConnectAttributes *OpenIDConnectAttributes `json:"open_id_connect_attributes,omitempty"`
	EIDASAttributes         *EIDASAttributes         `json:"eidas_attributes,omitempty"`
	KerberosAttributes      *KerberosAttributes      `json:"kerberos_attributes,omitempty"`
	LDAPAttributes          *LDAPAttributes          `json:"ladp_attributes,omitempty"`
	QRCodeAttributes        *QRCodeAttributes        `json:"qr_code_attributes,omitempty"`
	FacebookAttributes      *ClientIDSecret          `json:"facebook_attributes,omitempty"`
	GoogleAttributes        *ClientIDSecret          `json:"google_attributes,omitempty"`
	LinkedInAttributes      *ClientIDSecret          `json:"linkedin_attributes,omitempty"`
	TwitterAttributes       *ClientIDSecret          `json:"twitter_attributes,omitempty"`
	PayPalAttributes        *ClientIDSecret          `json:"paypal_attributes,omitempty"`
	AzureADB2CAttributes    *AzureADB2CAttributes    `json:"azure_ad_b2c_attributes,omitempty"`
	DigiDAttributes         *DigiDAttributes         `json:"digid_attributes,omitempty"`
	IDINAttributes          *IDINAttributes          `json:"idin_attributes,omitempty"`
	ItsmeAttributes         *ItsmeAttributes         `json:"itsme_attributes,omitempty"`
	AppleAttributes         *AppleAttributes         `json:"apple_attributes,omitempty"`
}

type AttributeMapping struct {
	ID       *string `json:"id,omitempty"`
	MapTo    *string `json:"map_to,omitempty"`
	MapFrom  *string `json:"map_from,omitempty"`
	Editable *bool   `json:"editable,omitempty"`
}

type CustomAttributeField struct {
	ID   *string `json:"id,omitempty"`
	Name *string `json:"name,omitempty"`
	Type *string `json:"type,omitempty"`
}

type SAMLMutualTLS struct {
	ClientKeyPairID     *string `json:"client_key_pair_id,omitempty"`
	ServerCertificateID *string `json:"server_certificate_id,omitempty"`
}

// SAML comparisons.
var samlComparisons = []string{"EXACT", "MINIMUM", "MAXIMUM", "BETTER"}

type SAMLAttributes struct {
	IDPMetadata                 *string                      `json:"idp_metadata,omitempty"`
	Comparison                  *string                      `json:"comparison,omitempty"`
	AuthenticationLevelMappings []AuthenticationLevelMapping `json:"authentication_level_mappings,omitempty"`
}

type AuthenticationLevelMapping struct {
	AuthnContextClassRefName *string `json:"authn_context_class_ref_name,omitempty"`
	AuthenticationLevel      *int64  `json:"authentication_level,omitempty"`
}

// OpenID Connect client authentication methods.
var oidcClientAuthMethods = []string{"CLIENT_SECRET_BASIC", "PRIVATE_KEY_JWT"}

type OpenIDConnectAttributes struct {
	ClientAuthenticationMethod      *string  `json:"client_authentication_method,omitempty"`
	ClientID                        *string  `json:"client_id,omitempty"`
	DiscoveryURL                    *string  `json:"discovery_url,omitempty"`
	AuthorizationURL                *string  `json:"authorization_url,omitempty"`
	IDTokenURL                      *string  `json:"id_token_url,omitempty"`
	UserInfoURL                     *string  `json:"user_info_url,omitempty"`
	JWKSURL                         *string  `json:"jwks_url,omitempty"`
	Issuer                          *string  `json:"issuer,omitempty"`
	EndSessionURL                   *string  `json:"end_session_url,omitempty"`
	ManualMetadataSetup             *bool    `json:"manual_metadata_setup,omitempty"`
	FrontChannelLogoutEnabled       *bool    `json:"front_channel_logout_enabled,omitempty"`
	IDTokenEncryptionRequired       *bool    `json:"id_token_encryption_required,omitempty"`
	UserInfoEncryptionRequired      *bool    `json:"user_info_encryption_required,omitempty"`
	MetadataExpirationTimeInSeconds *int64   `json:"metadata_expiration_time_in_seconds,omitempty"`
	Scopes                          []string `json:"scopes,omitempty"`
	Claims                          []string `json:"claims,omitempty"`
	// ClientSecret (CLIENT_SECRET_BASIC) is latchkey's own member (the
	// spec's shape has none): write-only, kept sealed, never answered. An
	// update that leaves it out keeps the stored one; "" removes it.
	ClientSecret *string `json:"client_secret,omitempty"`
	// SigningKeyID (PRIVATE_KEY_JWT) names the key pair of the
	// certificates API whose private key signs the client assertion
	// (latchkey's own member, spelled as apple_attributes spells it).
	SigningKeyID *string `json:"signing_key_id,omitempty"`
	// SealedClientSecret is the stored form of ClientSecret: never
	// accepted, never answered.
	SealedClientSecret []byte `json:"sealed_client_secret,omitempty" openapi:"-"`
}

type EIDASAttributes struct {
	AuthenticationService            *string `json:"authentication_service,omitempty"`
	AuthenticationServiceCustomValue *string `json:"authentication_service_custom_value,omitempty"`
	RequiredLevelOfAssurance         *string `json:"required_level_of_assurance,omitempty"`
	EntityID                         *string `json:"entity_id,omitempty"`
	BSNVerificationPoint             *string `json:"bsn_verification_point,omitempty"`
	PseudoIDVerificationPoint        *string `json:"pseudo_id_verification_point,omitempty"`
	EncryptionKeyID                  *string `json:"encryption_key_id,omitempty"`
	SigningKeyID                     *string `json:"signing_key_id,omitempty"`
	BSNDecryptionKeyID               *string `json:"bsn_decryption_key_id,omitempty"`
	PseudoIDDecryptionKeyID          *string `json:"pseudo_id_decryption_key_id,omitempty"`
	PseudoIDClosingKeyID             *string `json:"pseudo_id_closing_key_id,omitempty"`
	IDPMetadata                      *string `json:"idp_metadata,omitempty"`
}

type KerberosAttributes struct {
	AutoLoginEnabled *bool `json:"auto_login_enabled,omitempty"`
}

// LDAPAttributes: "ladp_attributes" is the spec's spelling.
type LDAPAttributes struct {
	ServerURLs               *string  `json:"server_urls,omitempty"`
	BaseSuffix               *string  `json:"base_suffix,omitempty"`
	UserDistinguishedName    *string  `json:"user_distinguished_name,omitempty"`
	Password                 *string  `json:"password,omitempty"`
	AuthenticationDNTemplate *string  `json:"authentication_dn_template,omitempty"`
	MatchPattern             *string  `json:"match_pattern,omitempty"`
	IPRangeEnabled           *bool    `json:"ip_range_enabled,omitempty"`
	IPRanges                 []string `json:"ip_ranges,omitempty"`
	AttributesToBeFetched    []string `json:"attributes_to_be_fetched,omitempty"`
	// SealedPassword is the stored form of Password (the search account's
	// password), which is write-only as client_secret is: never accepted,
	// never answered.
	SealedPassword []byte `json:"sealed_password,omitempty" openapi:"-"`
}

type QRCodeAttributes struct {
	MobileAuthenticationType *string `json:"mobile_authentication_type,omitempty"`
	ProviderPlayLink         *string `json:"provider_play_link,omitempty"`
	AppStoreLink             *string `json:"app_store_link,omitempty"`
	DeepLinkingRedirectURL   *string `json:"deep_linking_redirect_url,omitempty"`
	DeepLinkingEnabled       *bool   `json:"deep_linking_enabled,omitempty"`
}

// ClientIDSecret: the social networks and the payment provider ("clientId"
// is camel case in the spec).
type ClientIDSecret struct {
	ClientID     *string `json:"clientId,omitempty"`
	ClientSecret *string `json:"client_secret,omitempty"`
}

type AzureADB2CAttributes struct {
	TenantID                  *string `json:"tenant_id,omitempty"`
	ApplicationID             *string `json:"application_id,omitempty"`
	Policy                    *string `json:"policy,omitempty"`
	FrontChannelLogoutEnabled *bool   `json:"front_channel_logout_enabled,omitempty"`
}

type DigiDAttributes struct {
	IDPMetadata                 *string `json:"idp_metadata,omitempty"`
	RequiredAuthenticationLevel *string `json:"required_authentication_level,omitempty"`
}

type IDINAttributes struct {
	DirectoryURL                *string `json:"directory_url,omitempty"`
	TransactionURL              *string `json:"transaction_url,omitempty"`
	StatusURL                   *string `json:"status_url,omitempty"`
	AcquirerPublicCertificateID *string `json:"acquirer_public_certificate_id,omitempty"`
	MerchantID                  *string `json:"merchant_id,omitempty"`
	SubID                       *string `json:"sub_id,omitempty"`
	MerchantReturnHostName      *string `json:"merchant_return_host_name,omitempty"`
	MerchantCertificatePairID   *string `json:"merchant_certificate_pair_id,omitempty"`
	SAMLCertificatePairID       *string `json:"saml_certificate_pair_id,omitempty"`
}

type ItsmeAttributes struct {
	ClientID                        *string  `json:"client_id,omitempty"`
	LoginServiceCode                *string  `json:"login_service_code,omitempty"`
	SecurityLevel                   *string  `json:"security_level,omitempty"`
	DiscoveryURL                    *string  `json:"discovery_url,omitempty"`
	FrontChannelLogoutEnabled       *bool    `json:"front_channel_logout_enabled,omitempty"`
	MetadataExpirationTimeInSeconds *int64   `json:"metadata_expiration_time_in_seconds,omitempty"`
	Scopes                          []string `json:"scopes,omitempty"`
	Claims                          []string `json:"claims,omitempty"`
}

type AppleAttributes struct {
	ClientID                      *string  `json:"client_id,omitempty"`
	TeamID                        *string  `json:"team_id,omitempty"`
	KeyID                         *string  `json:"key_id,omitempty"`
	JWKSURI                       *string  `json:"jwks_uri,omitempty"`
	DomainVerificationFileContent *string  `json:"domain_verification_file_content,omitempty"`
	SigningKeyID                  *string  `json:"signing_key_id,omitempty"`
	Scopes                        []string `json:"scopes,omitempty"`
}

// Login method types: the eight the spec names, and ten named after the
// third-party providers it describes.
var loginMethodTypes = []string{
	"BANK_ID", "EIDAS", "KERBEROS", "LDAP", "OPEN_ID_CONNECT", "QR_CODE", "SAML", "USERNAME_AND_PASSWORD",
	"AZURE_AD_B2C", "DIGID", "IDIN", "FACEBOOK", "GOOGLE", "LINKEDIN", "TWITTER", "PAYPAL", "ITSME", "APPLE",
}
