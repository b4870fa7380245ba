package cimconfig

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/mail"
	"net/url"
	"regexp"
	"slices"
	"strings"

	"github.com/latchkey/latchkey/internal/client"
	"github.com/latchkey/latchkey/internal/lazyre"
)

// Bounds of the integer members.
const (
	maxLevel       = 100      // authentication and assurance levels
	maxSeconds     = 31536000 // ttl, expiration and period members: a year
	maxPasswordLen = 4096
	maxMessageKey  = 200
	maxMessageText = 10000
	maxSecretLen   = 1024 // client secrets and bind passwords
)

var (
	localeRE        = lazyre.New(`^[A-Za-z]{2,3}([_-][A-Za-z0-9]{2,8})*$`)
	attributeTypeRE = lazyre.New(`^[A-Z][A-Z0-9_]{0,63}$`)
)

// problems collects every validation failure of a unit, each with the path
// of the member, so that one answer names them all.
type problems []string

func (p *problems) add(path, format string, args ...any) {
	*p = append(*p, path+": "+fmt.Sprintf(format, args...))
}

func (p problems) err() error {
	if len(p) == 0 {
		return nil
	}
	return &ValidationError{Problems: p}
}

// ValidationError lists what is wrong with a unit.
type ValidationError struct{ Problems []string }

func (e *ValidationError) Error() string { return strings.Join(e.Problems, "; ") }

func (p *problems) enum(path string, v *string, allowed []string) {
	if v != nil && !slices.Contains(allowed, *v) {
		p.add(path, "must be one of %s", strings.Join(allowed, ", "))
	}
}

func (p *problems) between(path string, v *int64, lo, hi int64) {
	if v != nil && (*v < lo || *v > hi) {
		p.add(path, "must be between %d and %d", lo, hi)
	}
}

func (p *problems) level(path string, v *int64) { p.between(path, v, 0, maxLevel) }

func (p *problems) seconds(path string, v *int64) { p.between(path, v, 1, maxSeconds) }

// absURL checks an absolute http or https URL.
func (p *problems) absURL(path, s string) {
	u, err := url.Parse(s)
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
		p.add(path, "must be an absolute http or https URL")
	}
}

func (p *problems) url(path string, v *string) {
	if v != nil && *v != "" {
		p.absURL(path, *v)
	}
}

// redirect checks an address the browser is sent back to with the redirect
// URI rule of the clients (client.ValidateRedirectURI), under its zero
// policy: no API caller gets cleartext http off loopback, nor a script or
// local scheme.
func (p *problems) redirect(path, s string) {
	err := client.ValidateRedirectURI(s, client.RedirectPolicy{})
	var re *client.RedirectURIError
	switch {
	case err == nil:
	case errors.As(err, &re) && re.URI != "":
		p.add(path, "%s", re.Reason)
	default:
		p.add(path, "must not be empty")
	}
}

func (p *problems) redirectURL(path string, v *string) {
	if v != nil && *v != "" {
		p.redirect(path, *v)
	}
}

func (p *problems) base64(path string, v *string) {
	if v != nil && *v != "" {
		if _, err := base64.StdEncoding.DecodeString(*v); err != nil {
			p.add(path, "must be base64")
		}
	}
}

func (p *problems) regex(path string, v *string) {
	if v != nil {
		if _, err := regexp.Compile(*v); err != nil {
			p.add(path, "must be a regular expression")
		}
	}
}

func (p *problems) locale(path, v string) {
	if !localeRE.MatchString(v) {
		p.add(path, "must be a locale such as en, nl or en_GB")
	}
}

func (p *problems) messages(path string, m map[string]string) {
	for k, v := range m {
		if k == "" || len(k) > maxMessageKey {
			p.add(path, "message keys must have 1 to %d characters", maxMessageKey)
		}
		if len(v) > maxMessageText {
			p.add(path+"."+k, "must have at most %d characters", maxMessageText)
		}
	}
}

// whitelist checks a list of return URLs (action tokens, redirects).
func (p *problems) whitelist(path string, urls []WhitelistedURL) {
	for i, w := range urls {
		p.redirect(fmt.Sprintf("%s[%d].url", path, i), w.URL)
	}
}

// Validate checks a password policy: every member is required.
func (pp *PasswordPolicy) Validate() error {
	var p problems
	pp.validate(&p, "password_policy")
	return p.err()
}

func (pp *PasswordPolicy) validate(p *problems, path string) {
	if pp.MinLength == nil || pp.MaxLength == nil || pp.LowerCaseCharRequired == nil || pp.UpperCaseCharRequired == nil ||
		pp.SpecialCharRequired == nil || pp.BreachedPasswordBlocked == nil {
		p.add(path, "every member is required: min_length, max_length, lower_case_char_required, "+
			"upper_case_char_required, special_char_required, breached_password_blocked")
		return
	}
	if *pp.MinLength < 1 || *pp.MinLength > maxPasswordLen {
		p.add(path+".min_length", "must be between 1 and %d", maxPasswordLen)
	}
	if *pp.MaxLength < *pp.MinLength || *pp.MaxLength > maxPasswordLen {
		p.add(path+".max_length", "must be between min_length and %d", maxPasswordLen)
	}
}

func (pr *Profile) validate(p *problems, path string) {
	for i, r := range pr.RequiredAttributesValidationRules {
		rp := fmt.Sprintf("%s.required_attributes_validation_rules[%d].any_of", path, i)
		if len(r.AnyOf) == 0 {
			p.add(rp, "must name at least one attribute type")
		}
		for _, a := range r.AnyOf {
			if !attributeTypeRE.MatchString(a) {
				p.add(rp, "%q is not an attribute type name (upper case, such as BIRTH_DATE)", a)
			}
		}
	}
}

func (c *CustomMessages) validate(p *problems, path string) {
	p.messages(path+".default", c.Default)
	for loc, m := range c.Locales {
		p.locale(path+".locales", loc)
		p.messages(path+".locales."+loc, m)
	}
}

func (f *Features) validate(p *problems, path string) {
	if a := f.ActionToken; a != nil {
		ap := path + ".action_token"
		if a.Login != nil {
			p.seconds(ap+".login.ttl", a.Login.TTL)
			p.level(ap+".login.authentication_level", a.Login.AuthenticationLevel)
		}
		if a.AppToWeb != nil {
			p.seconds(ap+".app_to_web.ttl", a.AppToWeb.TTL)
			p.level(ap+".app_to_web.authentication_level", a.AppToWeb.AuthenticationLevel)
		}
		if a.Coupling != nil {
			p.seconds(ap+".coupling.ttl", a.Coupling.TTL)
		}
		p.whitelist(ap+".whitelisted_urls", a.WhitelistedURLs)
	}
	if a := f.PersonActivation; a != nil {
		ap := path + ".person_activation"
		p.seconds(ap+".expiration_time", a.ExpirationTime)
		p.enum(ap+".type", a.Type, []string{ActivationEmail, ActivationExternallyDeliveredCode})
		if c := a.ExternallyDeliveredCode; c != nil {
			p.between(ap+".externally_delivered_code.unavailability_time", c.UnavailabilityTime, 0, maxSeconds)
			p.between(ap+".externally_delivered_code.resend_code_minimum_period", c.ResendCodeMinimumPeriod, 0, maxSeconds)
		}
	}
	if c := f.CustomEmailValidation; c != nil {
		p.regex(path+".custom_email_validation.before_at_regex", c.BeforeAtRegex)
		p.regex(path+".custom_email_validation.after_at_regex", c.AfterAtRegex)
	}
}

func (u *UIExtension) validate(p *problems, path string) {
	p.redirectURL(path+".base_url", u.BaseURL) // the login redirect goes there
	if u.LoginPath != nil && *u.LoginPath != "" && !strings.HasPrefix(*u.LoginPath, "/") {
		p.add(path+".login_path", "must be a path starting with /")
	}
	if u.EnableLoginRedirect != nil && *u.EnableLoginRedirect && (u.BaseURL == nil || *u.BaseURL == "") {
		p.add(path+".base_url", "is required when enable_login_redirect is true")
	}
}

func (s *StepUp) validate(p *problems, path string) {
	if a := s.Actions; a != nil {
		ap := path + ".actions"
		p.level(ap+".default_step_up_authentication_level", a.DefaultStepUpAuthenticationLevel)
		p.level(ap+".dashboard_step_up_authentication_level", a.DashboardStepUpAuthenticationLevel)
		p.level(ap+".setup_step_up_methods_authentication_level", a.SetupStepUpMethodsAuthenticationLevel)
		p.level(ap+".change_email_authentication_level", a.ChangeEmailAuthenticationLevel)
		p.level(ap+".change_password_authentication_level", a.ChangePasswordAuthenticationLevel)
	}
	if m := s.AuthenticationMethods; m != nil {
		mp := path + ".authentication_methods"
		p.level(mp+".pin_authentication_level", m.PinAuthenticationLevel)
		p.level(mp+".sms_authentication_level", m.SMSAuthenticationLevel)
		p.level(mp+".email_authentication_level", m.EmailAuthenticationLevel)
		p.level(mp+".provider_authenticator_authentication_level", m.ProviderAuthenticatorAuthenticationLevel)
		p.level(mp+".push_authentication_level", m.PushAuthenticationLevel)
		p.level(mp+".externally_delivered_code_authentication_level", m.ExternallyDeliveredCodeAuthenticationLevel)
	}
	p.enum(path+".stategy", s.Stategy, []string{StrategyUserPreference, StrategyStrongestAvailable})
}

func (r *Redirects) validate(p *problems, path string) {
	p.redirectURL(path+".url_after_login", r.URLAfterLogin)
	p.redirectURL(path+".url_after_logout", r.URLAfterLogout)
	p.redirectURL(path+".url_after_sign_up", r.URLAfterSignUp)
	p.redirectURL(path+".url_after_activation", r.URLAfterActivation)
	p.redirectURL(path+".default_origin_url", r.DefaultOriginURL)
	p.whitelist(path+".url_whitelist", r.URLWhitelist)
}

func (o *Organisation) validate(p *problems, path string) {
	p.url(path+".landing_page_url", o.LandingPageURL)
	p.url(path+".site_url", o.SiteURL)
	p.url(path+".support_url", o.SupportURL)
	p.url(path+".account_link_url", o.AccountLinkURL)
	if o.SupportEmail != nil && *o.SupportEmail != "" {
		if a, err := mail.ParseAddress(*o.SupportEmail); err != nil || a.Address != *o.SupportEmail {
			p.add(path+".support_email", "must be an email address")
		}
	}
	if o.PreferredLanguage != nil && *o.PreferredLanguage != "" {
		p.locale(path+".preferred_language", *o.PreferredLanguage)
	}
	p.base64(path+".logo_square_base64", o.LogoSquareBase64)
	p.base64(path+".logo_landscape_base64", o.LogoLandscapeBase64)
	for k, sp := range o.ServiceProviders {
		sp := sp
		spp := path + ".service_providers." + k
		p.level(spp+".required_authentication_level", sp.RequiredAuthenticationLevel)
		p.level(spp+".required_identity_assurance_level", sp.RequiredIdentityAssuranceLevel)
		p.identityAttributes(spp+".identity_attributes", sp.IdentityAttributes)
	}
	if u := o.UserProfileAttributes; u != nil {
		p.identityAttributes(path+".user_profile_attributes.identity_attributes", u.IdentityAttributes)
	}
}

// identityAttributes: the spec does not show their members; each must be
// a JSON object.
func (p *problems) identityAttributes(path string, m map[string]IdentityAttribute) {
	for k, v := range m {
		var obj map[string]any
		if err := json.Unmarshal(v, &obj); err != nil || obj == nil {
			p.add(path+"."+k, "must be a JSON object")
		}
	}
}

func (l *LoginMethodsConfiguration) validate(p *problems, path string) {
	ids := map[string]bool{}
	for i, m := range l.LoginMethods {
		mp := fmt.Sprintf("%s.login_methods[%d]", path, i)
		m.validate(p, mp)
		if m.ID != nil {
			if ids[strings.ToLower(*m.ID)] {
				p.add(mp+".id", "%q is used by another login method", *m.ID)
			}
			ids[strings.ToLower(*m.ID)] = true
		}
	}
	if ml := l.MobileLogin; ml != nil {
		p.between(path+".mobile_login.allowed_login_attempts", ml.AllowedLoginAttempts, 1, 100)
	}
}

// attributeObjects names each present <type>_attributes member by its type.
func (m *LoginMethod) attributeObjects() map[string]bool {
	present := map[string]bool{}
	for typ, set := range map[string]bool{
		"SAML": m.SAMLAttributes != nil, "OPEN_ID_CONNECT": m.OpenIDConnectAttributes != nil,
		"EIDAS": m.EIDASAttributes != nil, "KERBEROS": m.KerberosAttributes != nil, "LDAP": m.LDAPAttributes != nil,
		"QR_CODE": m.QRCodeAttributes != nil, "FACEBOOK": m.FacebookAttributes != nil, "GOOGLE": m.GoogleAttributes != nil,
		"LINKEDIN": m.LinkedInAttributes != nil, "TWITTER": m.TwitterAttributes != nil, "PAYPAL": m.PayPalAttributes != nil,
		"AZURE_AD_B2C": m.AzureADB2CAttributes != nil, "DIGID": m.DigiDAttributes != nil, "IDIN": m.IDINAttributes != nil,
		"ITSME": m.ItsmeAttributes != nil, "APPLE": m.AppleAttributes != nil,
	} {
		if set {
			present[typ] = true
		}
	}
	return present
}

func (m *LoginMethod) validate(p *problems, path string) {
	if m.ID == nil || *m.ID == "" {
		p.add(path+".id", "is required")
	}
	if m.Type == nil {
		p.add(path+".type", "is required")
	}
	p.enum(path+".type", m.Type, loginMethodTypes)
	p.level(path+".authentication_level", m.AuthenticationLevel)
	p.level(path+".identity_assurance_level", m.IdentityAssuranceLevel)
	for typ := range m.attributeObjects() {
		if m.Type == nil || *m.Type != typ {
			p.add(path, "holds %s_attributes, which belong to login methods of type %s", attributeName(typ), typ)
		}
	}
	if a := m.SAMLAttributes; a != nil {
		p.enum(path+".saml_attributes.comparison", a.Comparison, samlComparisons)
		for i, lm := range a.AuthenticationLevelMappings {
			p.level(fmt.Sprintf("%s.saml_attributes.authentication_level_mappings[%d].authentication_level", path, i),
				lm.AuthenticationLevel)
		}
	}
	if a := m.OpenIDConnectAttributes; a != nil {
		ap := path + ".open_id_connect_attributes"
		p.enum(ap+".client_authentication_method", a.ClientAuthenticationMethod, oidcClientAuthMethods)
		for name, u := range map[string]*string{"discovery_url": a.DiscoveryURL, "authorization_url": a.AuthorizationURL,
			"id_token_url": a.IDTokenURL, "user_info_url": a.UserInfoURL, "jwks_url": a.JWKSURL, "issuer": a.Issuer,
			"end_session_url": a.EndSessionURL} {
			p.url(ap+"."+name, u)
		}
		p.between(ap+".metadata_expiration_time_in_seconds", a.MetadataExpirationTimeInSeconds, 0, maxSeconds)
		if a.SealedClientSecret != nil {
			p.add(ap+".sealed_client_secret", "is kept by the server; send client_secret")
		}
		if a.ClientSecret != nil && len(*a.ClientSecret) > maxSecretLen {
			p.add(ap+".client_secret", "must have at most %d characters", maxSecretLen)
		}
		if a.ClientAuthenticationMethod != nil && *a.ClientAuthenticationMethod == "PRIVATE_KEY_JWT" &&
			(a.SigningKeyID == nil || *a.SigningKeyID == "") {
			p.add(ap+".signing_key_id", "is required for PRIVATE_KEY_JWT: the id of a key pair of /v2/config/certificates")
		}
		for i, sc := range a.Scopes {
			if sc == "" || strings.ContainsAny(sc, " \"\\") {
				p.add(fmt.Sprintf("%s.scopes[%d]", ap, i), "must be a scope token (no spaces)")
			}
		}
	}
	if a := m.LDAPAttributes; a != nil {
		if a.SealedPassword != nil {
			p.add(path+".ladp_attributes.sealed_password", "is kept by the server; send password")
		}
		if a.Password != nil && len(*a.Password) > maxSecretLen {
			p.add(path+".ladp_attributes.password", "must have at most %d characters", maxSecretLen)
		}
		for i, r := range a.IPRanges {
			if _, _, err := net.ParseCIDR(r); err != nil && net.ParseIP(r) == nil {
				p.add(fmt.Sprintf("%s.ladp_attributes.ip_ranges[%d]", path, i), "must be an IP address or CIDR range")
			}
		}
	}
	if a := m.QRCodeAttributes; a != nil {
		p.url(path+".qr_code_attributes.provider_play_link", a.ProviderPlayLink)
		p.url(path+".qr_code_attributes.app_store_link", a.AppStoreLink)
		p.url(path+".qr_code_attributes.deep_linking_redirect_url", a.DeepLinkingRedirectURL)
	}
	if a := m.IDINAttributes; a != nil {
		p.url(path+".idin_attributes.directory_url", a.DirectoryURL)
		p.url(path+".idin_attributes.transaction_url", a.TransactionURL)
		p.url(path+".idin_attributes.status_url", a.StatusURL)
	}
	if a := m.ItsmeAttributes; a != nil {
		p.url(path+".itsme_attributes.discovery_url", a.DiscoveryURL)
		p.between(path+".itsme_attributes.metadata_expiration_time_in_seconds", a.MetadataExpirationTimeInSeconds, 0, maxSeconds)
	}
	if a := m.AppleAttributes; a != nil {
		p.url(path+".apple_attributes.jwks_uri", a.JWKSURI)
	}
}

func attributeName(typ string) string {
	if typ == "LDAP" {
		return "ladp" // the spec's spelling
	}
	return strings.ToLower(typ)
}
