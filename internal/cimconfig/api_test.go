package cimconfig_test

import (
	"bytes"
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"math/big"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/latchkey/latchkey/internal/cimconfig"
	"github.com/latchkey/latchkey/internal/config"
	"github.com/latchkey/latchkey/internal/events"
	"github.com/latchkey/latchkey/internal/openapicheck"
	"github.com/latchkey/latchkey/internal/server/servertest"
	"github.com/latchkey/latchkey/internal/store"
	"github.com/latchkey/latchkey/internal/store/postgres/pgtest"
)

const (
	apiUser = "admin"
	apiPass = "admin-password"
)

func configAPI(mod func(*config.Config)) *config.Config {
	cfg := &config.Config{APIUsers: []config.APIUser{{Username: apiUser, Password: apiPass}}}
	if mod != nil {
		mod(cfg)
	}
	return cfg
}

type answer struct {
	status int
	body   []byte
	header http.Header
}

// call sends a request as the API user (user "" sends no credentials) and
// checks the answer against api/openapi.yaml.
func call(t *testing.T, s *servertest.Server, method, path, body, user string) answer {
	t.Helper()
	var rd *bytes.Reader
	if body != "" {
		rd = bytes.NewReader([]byte(body))
	} else {
		rd = bytes.NewReader(nil)
	}
	req, _ := http.NewRequest(method, s.URL+path, rd)
	if body != "" || method == "POST" || method == "PUT" {
		req.Header.Set("Content-Type", "application/json")
	}
	if user != "" {
		req.SetBasicAuth(user, apiPass)
	}
	resp, b := openapicheck.Do(t, s.Client(), req)
	return answer{resp.StatusCode, b, resp.Header}
}

func admin(t *testing.T, s *servertest.Server, method, path, body string) answer {
	t.Helper()
	return call(t, s, method, path, body, apiUser)
}

// sameJSON compares two JSON texts by value.
func sameJSON(t *testing.T, what string, got []byte, want string) {
	t.Helper()
	var g, w any
	if err := json.Unmarshal(got, &g); err != nil {
		t.Fatalf("%s: answer is not JSON: %s", what, got)
	}
	if err := json.Unmarshal([]byte(want), &w); err != nil {
		t.Fatalf("%s: bad test JSON: %v", what, err)
	}
	if d := cmp.Diff(w, g); d != "" {
		t.Errorf("%s (-sent +got):\n%s", what, d)
	}
}

func forEachBackend(t *testing.T, mod func(*config.Config), fn func(t *testing.T, s *servertest.Server)) {
	for _, b := range servertest.Backends {
		t.Run(b, func(t *testing.T) { fn(t, servertest.Start(t, configAPI(mod), servertest.Options{Backend: b})) })
	}
}

// Full units, every member set, as a client would send them.
const (
	featuresJSON = `{"login_enabled":true,"sign_up_enabled":false,"automated_external_identity_coupling_enabled":true,
	"bind_multiple_external_accounts_with_one_cim_account":false,"accepting_invitation_enabled":true,
	"post_login_extra_registration_after_second_login":false,"password_reset_enabled":true,"username_reminder_via_sms_enabled":false,
	"mobile_number_validation_backend_services_enabled":false,"migration_enabled":true,"unauthenticated_migration_enabled":false,
	"person_identifier_in_external_profile_required_for_migration":true,"allow_sign_up_without_invitation_validation":false,
	"pin_enabled":true,"sms_enabled":false,"provider_authenticator_step_up_authentication_enabled":true,"mobile_authentication_enabled":false,
	"step_up_authentication_method_externally_delivered_code_enabled":true,"cookie_based_saml_authentication":false,
	"person_api_enabled":true,"credentials_api_enabled":true,"configuration_api_enabled":true,"events_api_enabled":true,
	"statistics_api_enabled":false,"session_api_enabled":true,"storage_api_enabled":false,"experimental_features_enabled":false,
	"action_token":{"login":{"enabled":true,"ttl":300,"authentication_level":2,"ui_generation_enabled":true},
	  "app_to_web":{"enabled":true,"ttl":60,"authentication_level":1},"coupling":{"enabled":false,"ttl":600}},
	"person_activation":{"enabled":true,"expiration_time":86400,"type":"EXTERNALLY_DELIVERED_CODE",
	  "externally_delivered_code":{"unavailability_time":30,"resend_code_minimum_period":60,"force_activation_after_accepting_invitation":true}},
	"custom_email_validation":{"enabled":true,"before_at_regex":"^[a-z.]+$","after_at_regex":"^example\\.com$"},
	"invitation_verification_required":{"via_birthdate_enabled":true,"via_sms_enabled":false,"via_externally_delivered_code_enabled":true}}`
	attributesJSON = `{"person_creation_mandatory_fields":{"first_name_required":true,"last_name_required":true,"mobile_number_required":false},
	"sign_up_form_fields":{"mobile_number_enabled":true,"mobile_number_confirmation_enabled":false,"email_confirmation_enabled":true},
	"verification":{"email_enabled":true,"email_required":true,"mobile_number_enabled":false},"name_visible_on_dashboard":true}`
	emailJSON = `{"administrator_account_blocked":true,"configuration_error_for_account_linking":false,"validation_of_id_card_completed":true,
	"validation_of_id_card_failed":false,"account_invitation":true,"identity_coupled_to_account":false,"password_blocked":true,
	"password_reset":true,"password_reset_for_account_without_password":false,"account_removed":true,"step_up_authentication":false,
	"pin_reset":true,"email_verification":{"on_web_enabled":true,"on_api_enabled":false},
	"welcome":{"on_web_enabled":true,"on_api_enabled":true,"on_migration_enabled":false},
	"attributes_update":{"on_all_updated":false,"on_email_updated":true,"on_password_updated":true,"on_phone_number_updated":false}}`
	redirectsJSON = `{"url_after_login":"https://app.example.com/home","url_after_logout":"https://app.example.com/bye",
	"url_after_sign_up":"https://app.example.com/welcome","url_after_activation":"https://app.example.com/active",
	"default_origin_url":"https://app.example.com"}`
	stepUpJSON = `{"actions":{"default_step_up_authentication_level":2,"dashboard_step_up_authentication_level":2,
	"setup_step_up_methods_authentication_level":3,"change_email_authentication_level":2,"change_password_authentication_level":3,
	"allow_set_initial_step_up_method_enabled":true},"authentication_methods":{"pin_authentication_level":2,"sms_authentication_level":2,
	"email_authentication_level":2,"provider_authenticator_authentication_level":3,"push_authentication_level":3,
	"externally_delivered_code_authentication_level":2},"stategy":"STRONGEST_AVAILABLE"}`
	uiExtensionJSON  = `{"base_url":"https://ui.example.com","enable_login_redirect":true,"login_path":"/sign-in"}`
	loginMethodsJSON = `{"login_methods":[
	  {"id":"corp-saml","name":"Corporate SSO","type":"SAML","authentication_level":2,"identity_assurance_level":1,"removable":true,
	   "enabled":true,"auto_activation_enabled":true,"auto_email_verification":false,"synchronise_attributes":true,
	   "migration_during_sign_up":false,"force_creating_username_and_password_during_sign_up":false,
	   "attribute_mappings":[{"id":"m1","map_to":"email","map_from":"mail","editable":false}],
	   "custom_attribute_mappings":[{"id":"c1","attribute_to_map_from":"dept","attribute_to_map_to":"department"}],
	   "excluded_unmapped_attributes":["objectGUID"],"custom_attribute_fields":[{"id":"f1","name":"department","type":"STRING"}],
	   "saml_mutual_ssl_tls_attributes":{"client_key_pair_id":"k1","server_certificate_id":"k2"},
	   "saml_attributes":{"idp_metadata":"<EntityDescriptor/>","comparison":"MINIMUM",
	     "authentication_level_mappings":[{"authn_context_class_ref_name":"urn:oasis:names:tc:SAML:2.0:ac:classes:Password","authentication_level":1}]}},
	  {"id":"google","name":"Google","type":"GOOGLE","enabled":true,"google_attributes":{"clientId":"g-123","client_secret":"g-secret"}},
	  {"id":"oidc","name":"Partner","type":"OPEN_ID_CONNECT","open_id_connect_attributes":{"client_authentication_method":"PRIVATE_KEY_JWT",
	   "client_id":"latchkey","discovery_url":"https://partner.example.com/.well-known/openid-configuration","manual_metadata_setup":false,
	   "front_channel_logout_enabled":true,"id_token_encryption_required":false,"user_info_encryption_required":false,
	   "metadata_expiration_time_in_seconds":3600,"scopes":["openid","email"],"claims":["email"],"signing_key_id":"k1"}},
	  {"id":"ldap","name":"Directory","type":"LDAP","enabled":false,"ladp_attributes":{"server_urls":"ldaps://ldap.example.com",
	   "base_suffix":"dc=example,dc=com","ip_range_enabled":true,"ip_ranges":["10.0.0.0/8"],"attributes_to_be_fetched":["mail"]}}],
	"mobile_login":{"enabled":true,"show_use_mobile_to_login":true,"authentication_type":"PUSH","login_message":"Approve on your phone",
	  "allowed_login_attempts":3,"step_up_type":"PIN","step_up_message":"Enter your PIN"}}`
	organisationJSON = `{"id":"org-1","name":"Example","landing_page_url":"https://example.com","site_url":"https://example.com",
	"support_url":"https://example.com/help","support_email":"help@example.com","account_link_url":"https://example.com/link",
	"username_for_basic_auth":"org","preferred_language":"nl","message_to_assist_user_during_migration_period_html":"<p>Hi</p>",
	"logo_square_base64":"iVBORw0KGgo=","logo_landscape_base64":"iVBORw0KGgo=","notify_when_user_does_unlink_account":true,
	"is_private":false,"service_providers":{"org-1":{"id":"sp-1","name":"Portal","type":"SAML","saml_metadata":"<x/>",
	"include_unmapped_custom_attributes_within_saml_response":"true","use_trusted_device":"false","required_authentication_level":2,
	"required_identity_assurance_level":1,"identity_attributes":{"email":{"required":true}},
	"custom_attribute_mappings":{"id":"c1","attribute_to_map_from":"a","attribute_to_map_to":"b"}}},
	"user_profile_attributes":{"saml_subject_name_attributes":{"type":"EMAIL","format":"urn:oasis:names:tc:SAML:1.1:nameid-format:emailAddress",
	"default":"email","custom_attribute_key":"uid"},"identity_attributes":{"email":{}},
	"custom_attribute_mappings":{"id":"c2","attribute_to_map_from":"x","attribute_to_map_to":"y"}}}`
	policyJSON   = `{"min_length":10,"max_length":64,"lower_case_char_required":true,"upper_case_char_required":true,"special_char_required":false,"breached_password_blocked":false}`
	messagesJSON = `{"default":{"login.title":"Welcome back"},"locales":{"nl":{"login.title":"Welkom terug"},"en_GB":{"login.title":"Hello again"}}}`
)

func TestUnitRoundTrips(t *testing.T) {
	forEachBackend(t, nil, func(t *testing.T, s *servertest.Server) {
		for _, u := range []struct{ path, body string }{
			{"/api/v2/config/features", featuresJSON},
			{"/api/v2/attributes", attributesJSON},
			{"/api/v2/config/notifications/email", emailJSON},
			{"/api/v2/config/redirects", redirectsJSON},
			{"/api/v2/config/step-up", stepUpJSON},
			{"/api/v2/config/ui-extension", uiExtensionJSON},
		} {
			if a := admin(t, s, "GET", u.path, ""); a.status != 200 || string(a.body) != "{}" {
				t.Errorf("GET %s before any POST: %d %s, want 200 {}", u.path, a.status, a.body)
			}
			if a := admin(t, s, "POST", u.path, u.body); a.status != 204 || len(a.body) != 0 {
				t.Fatalf("POST %s: %d %s", u.path, a.status, a.body)
			}
			sameJSON(t, "GET "+u.path, admin(t, s, "GET", u.path, "").body, u.body)
		}

		// Units without their own POST go through /api/v2/config.
		body := `{"login_methods":` + loginMethodsJSON + `,"organisations":` + organisationJSON + `,"password_policy":` + policyJSON + `}`
		if a := admin(t, s, "POST", "/api/v2/config", body); a.status != 204 {
			t.Fatalf("POST /api/v2/config: %d %s", a.status, a.body)
		}
		sameJSON(t, "login methods", admin(t, s, "GET", "/api/v2/config/login-methods", "").body, loginMethodsJSON)
		sameJSON(t, "organisations", admin(t, s, "GET", "/api/v2/config/organisations", "").body, organisationJSON)
		sameJSON(t, "password policy", admin(t, s, "GET", "/api/config?fields=password_policy", "").body,
			`{"password_policy":`+policyJSON+`}`)
		if a := admin(t, s, "POST", "/api/v2/config/password-policy", strings.Replace(policyJSON, `"min_length":10`, `"min_length":12`, 1)); a.status != 204 {
			t.Fatalf("POST password-policy: %d %s", a.status, a.body)
		}
		sameJSON(t, "password policy", admin(t, s, "GET", "/api/config?fields=password_policy", "").body,
			`{"password_policy":`+strings.Replace(policyJSON, `"min_length":10`, `"min_length":12`, 1)+`}`)

		// Custom messages: whole, then per locale.
		if a := admin(t, s, "PUT", "/api/v2/config/custom-messages", messagesJSON); a.status != 204 {
			t.Fatalf("PUT custom-messages: %d %s", a.status, a.body)
		}
		sameJSON(t, "custom messages", admin(t, s, "GET", "/api/v2/config/custom-messages", "").body, messagesJSON)
		if a := admin(t, s, "PUT", "/api/v2/config/custom-messages/nl/batch", `{"login.submit":"Inloggen","login.title":"Hallo"}`); a.status != 204 {
			t.Fatalf("batch: %d %s", a.status, a.body)
		}
		if a := admin(t, s, "DELETE", "/api/v2/config/custom-messages/en_GB/login.title", ""); a.status != 204 {
			t.Fatalf("delete message: %d %s", a.status, a.body)
		}
		if a := admin(t, s, "DELETE", "/api/v2/config/custom-messages/en_GB/login.title", ""); a.status != 404 {
			t.Errorf("delete a missing message: %d, want 404", a.status)
		}
		sameJSON(t, "custom messages after batch and delete", admin(t, s, "GET", "/api/v2/config/custom-messages", "").body,
			`{"default":{"login.title":"Welcome back"},"locales":{"nl":{"login.title":"Hallo","login.submit":"Inloggen"},"en_GB":{}}}`)
		sameJSON(t, "v1 messages", admin(t, s, "GET", "/api/config?fields=messages", "").body,
			`{"messages":{"default":{"login.title":"Welcome back"},"nl":{"login.title":"Hallo","login.submit":"Inloggen"},"en_GB":{}}}`)

		// GET /api/v2/config holds every unit set so far.
		var all map[string]json.RawMessage
		if err := json.Unmarshal(admin(t, s, "GET", "/api/v2/config", "").body, &all); err != nil {
			t.Fatal(err)
		}
		for _, k := range []string{"custom_messages", "features", "attributes", "ui_extension", "step_up", "login_methods", "redirects", "organisations"} {
			if _, ok := all[k]; !ok {
				t.Errorf("GET /api/v2/config lacks %s", k)
			}
		}
	})
}

func TestGetConfigFields(t *testing.T) {
	forEachBackend(t, nil, func(t *testing.T, s *servertest.Server) {
		admin(t, s, "POST", "/api/v2/config", `{"password_policy":`+policyJSON+`,"profile":{"required_attributes_validation_rules":[{"any_of":["BIRTH_DATE","PHONE"]}]}}`)
		sameJSON(t, "all", admin(t, s, "GET", "/api/config", "").body, `{"password_policy":`+policyJSON+
			`,"messages":{},"profile":{"required_attributes_validation_rules":[{"any_of":["BIRTH_DATE","PHONE"]}]}}`)
		sameJSON(t, "profile only", admin(t, s, "GET", "/api/config?fields=profile", "").body,
			`{"profile":{"required_attributes_validation_rules":[{"any_of":["BIRTH_DATE","PHONE"]}]}}`)
		sameJSON(t, "two, comma-separated", admin(t, s, "GET", "/api/config?fields=profile,password_policy", "").body,
			`{"password_policy":`+policyJSON+`,"profile":{"required_attributes_validation_rules":[{"any_of":["BIRTH_DATE","PHONE"]}]}}`)
		if a := admin(t, s, "GET", "/api/config?fields=secrets", ""); a.status != 400 {
			t.Errorf("unknown field: %d, want 400", a.status)
		}
	})
}

// The members shared/spec/interface.md gives the two configuration documents.
var specMembers = map[string][]string{
	"CIMConfiguration": {"custom_messages", "features", "attributes", "ui_extension", "step_up", "login_methods",
		"redirects", "organisations", "key_pairs"},
	"Configuration": {"password_policy", "messages", "profile"},
}

// TestConfigAnswersHoldEveryMember: clients read members without checking
// that they exist, so GET /api/v2/config and GET /api/config answer every
// member of their schema in api/openapi.yaml, stored or not (the types of
// the empty values are checked against the document by call).
func TestConfigAnswersHoldEveryMember(t *testing.T) {
	for schema, want := range specMembers {
		got := openapicheck.Members(t, schema)
		if d := cmp.Diff(slices.Sorted(slices.Values(want)), got); d != "" {
			t.Errorf("api/openapi.yaml's %s differs from the spec's members (-spec +document):\n%s", schema, d)
		}
	}
	forEachBackend(t, nil, func(t *testing.T, s *servertest.Server) {
		check := func(state string) {
			t.Helper()
			for _, c := range []struct{ path, schema string }{{"/api/v2/config", "CIMConfiguration"}, {"/api/config", "Configuration"}} {
				a := admin(t, s, "GET", c.path, "")
				var got map[string]json.RawMessage
				if a.status != 200 || json.Unmarshal(a.body, &got) != nil {
					t.Fatalf("GET %s %s: %d %s", c.path, state, a.status, a.body)
				}
				for _, m := range openapicheck.Members(t, c.schema) {
					if _, ok := got[m]; !ok {
						t.Errorf("GET %s %s lacks %s: %s", c.path, state, m, a.body)
					}
				}
			}
		}
		check("with nothing stored")
		sameJSON(t, "v2 with nothing stored", admin(t, s, "GET", "/api/v2/config", "").body,
			`{"custom_messages":{},"features":{},"attributes":{},"ui_extension":{},"step_up":{},"login_methods":{},
			"redirects":{},"organisations":{},"key_pairs":[]}`)
		// No policy is not an empty policy: PasswordPolicy's members are all required.
		sameJSON(t, "v1 with nothing stored", admin(t, s, "GET", "/api/config", "").body,
			`{"password_policy":null,"messages":{},"profile":{}}`)
		sameJSON(t, "a named field with nothing stored", admin(t, s, "GET", "/api/config?fields=profile", "").body, `{"profile":{}}`)

		admin(t, s, "POST", "/api/v2/config/features", `{"pin_enabled":true}`)
		check("with one unit stored")
	})
}

// TestValidation: each enum, type, range and URL check, unknown members,
// malformed and oversized bodies. A refused unit changes nothing.
func TestValidation(t *testing.T) {
	big := `{"default":{"k":"` + strings.Repeat("x", 1<<20) + `"}}`
	for _, c := range []struct {
		name, method, path, body string
		status                   int
		detail                   string // a part of one of the details
	}{
		{"unknown member", "POST", "/api/v2/config/features", `{"login_enabled":true,"logon_enabled":true}`, 400, ""},
		{"wrong spelling of stategy", "POST", "/api/v2/config/step-up", `{"strategy":"USER_PREFERENCE"}`, 400, ""},
		{"stategy enum", "POST", "/api/v2/config/step-up", `{"stategy":"FASTEST"}`, 400, "step_up.stategy: must be one of USER_PREFERENCE, STRONGEST_AVAILABLE"},
		{"level range", "POST", "/api/v2/config/step-up", `{"actions":{"default_step_up_authentication_level":-1}}`, 400, "default_step_up_authentication_level: must be between 0 and 100"},
		{"activation type enum", "POST", "/api/v2/config/features", `{"person_activation":{"type":"SMS"}}`, 400, "person_activation.type: must be one of EMAIL, EXTERNALLY_DELIVERED_CODE"},
		{"ttl range", "POST", "/api/v2/config/features", `{"action_token":{"login":{"ttl":0}}}`, 400, "action_token.login.ttl: must be between 1 and 31536000"},
		{"bad regex", "POST", "/api/v2/config/features", `{"custom_email_validation":{"before_at_regex":"(["}}`, 400, "before_at_regex: must be a regular expression"},
		{"whitelisted URL", "POST", "/api/v2/config/features", `{"action_token":{"whitelisted_urls":[{"url":"javascript:alert(1)"}]}}`, 400, `whitelisted_urls[0].url: uses the scheme "javascript", which is not allowed`},
		{"whitelisted URL in capitals with an encoded newline", "POST", "/api/v2/config/features", `{"action_token":{"whitelisted_urls":[{"url":"JAVASCRIPT://x/%0aalert(1)"}]}}`, 400, "whitelisted_urls[0].url: holds a percent-encoded control character"},
		{"whitelisted URL over cleartext http", "POST", "/api/v2/config/redirects", `{"url_whitelist":[{"url":"https://app.example.com/ok"},{"url":"http://app.example.com/x"}]}`, 400, "url_whitelist[1].url: uses cleartext http off the loopback interface"},
		{"logout URL of data", "POST", "/api/v2/config/redirects", `{"url_after_logout":"data:text/html,x"}`, 400, `redirects.url_after_logout: uses the scheme "data"`},
		{"origin URL with userinfo", "POST", "/api/v2/config/redirects", `{"default_origin_url":"https://app.example.com@evil.example"}`, 400, "redirects.default_origin_url: must not hold userinfo"},
		{"whitelisted URL empty", "POST", "/api/v2/config/features", `{"action_token":{"whitelisted_urls":[{"url":""}]}}`, 400, "whitelisted_urls[0].url: must not be empty"},
		{"boolean as string", "POST", "/api/v2/config/features", `{"login_enabled":"yes"}`, 400, ""},
		{"integer as string", "POST", "/api/v2/config/step-up", `{"actions":{"change_email_authentication_level":"2"}}`, 400, ""},
		{"integer out of int64", "POST", "/api/v2/config/step-up", `{"actions":{"change_email_authentication_level":1e30}}`, 400, ""},
		{"redirect URL", "POST", "/api/v2/config/redirects", `{"url_after_login":"/relative"}`, 400, "redirects.url_after_login: is relative"},
		{"ui login path", "POST", "/api/v2/config/ui-extension", `{"base_url":"https://ui.example.com","login_path":"sign-in"}`, 400, "login_path: must be a path starting with /"},
		{"ui redirect without base", "POST", "/api/v2/config/ui-extension", `{"enable_login_redirect":true}`, 400, "base_url: is required when enable_login_redirect is true"},
		{"policy member missing", "POST", "/api/v2/config/password-policy", `{"min_length":8,"max_length":64}`, 400, "every member is required"},
		{"policy max below min", "POST", "/api/v2/config/password-policy", strings.Replace(policyJSON, `"max_length":64`, `"max_length":5`, 1), 400, "max_length: must be between min_length and 4096"},
		{"policy int32 overflow", "POST", "/api/v2/config/password-policy", strings.Replace(policyJSON, `"max_length":64`, `"max_length":4294967296`, 1), 400, ""},
		{"login method type enum", "POST", "/api/v2/config", `{"login_methods":{"login_methods":[{"id":"x","type":"MYSPACE"}]}}`, 400, "login_methods[0].type: must be one of"},
		{"login method id required", "POST", "/api/v2/config", `{"login_methods":{"login_methods":[{"type":"SAML"}]}}`, 400, "login_methods[0].id: is required"},
		{"login method duplicate ids", "POST", "/api/v2/config", `{"login_methods":{"login_methods":[{"id":"a","type":"SAML"},{"id":"A","type":"LDAP"}]}}`, 400, `"A" is used by another login method`},
		{"attributes of another type", "POST", "/api/v2/config", `{"login_methods":{"login_methods":[{"id":"a","type":"SAML","ladp_attributes":{}}]}}`, 400, "holds ladp_attributes, which belong to login methods of type LDAP"},
		{"saml comparison enum", "POST", "/api/v2/config", `{"login_methods":{"login_methods":[{"id":"a","type":"SAML","saml_attributes":{"comparison":"ABOUT"}}]}}`, 400, "comparison: must be one of EXACT, MINIMUM, MAXIMUM, BETTER"},
		{"oidc auth method enum", "POST", "/api/v2/config", `{"login_methods":{"login_methods":[{"id":"a","type":"OPEN_ID_CONNECT","open_id_connect_attributes":{"client_authentication_method":"NONE"}}]}}`, 400, "client_authentication_method: must be one of CLIENT_SECRET_BASIC, PRIVATE_KEY_JWT"},
		{"ldap ip range", "POST", "/api/v2/config", `{"login_methods":{"login_methods":[{"id":"a","type":"LDAP","ladp_attributes":{"ip_ranges":["10.0.0.0/33"]}}]}}`, 400, "ip_ranges[0]: must be an IP address or CIDR range"},
		{"organisation email", "POST", "/api/v2/config", `{"organisations":{"support_email":"not an email"}}`, 400, "organisations.support_email: must be an email address"},
		{"organisation logo", "POST", "/api/v2/config", `{"organisations":{"logo_square_base64":"%%%"}}`, 400, "logo_square_base64: must be base64"},
		{"identity attribute not an object", "POST", "/api/v2/config", `{"organisations":{"user_profile_attributes":{"identity_attributes":{"email":3}}}}`, 400, "must be a JSON object"},
		{"profile rule empty", "POST", "/api/v2/config", `{"profile":{"required_attributes_validation_rules":[{"any_of":[]}]}}`, 400, "must name at least one attribute type"},
		{"messages and custom_messages", "POST", "/api/v2/config", `{"messages":{"default":{}},"custom_messages":{}}`, 400, "send either messages or custom_messages"},
		{"no unit", "POST", "/api/v2/config", `{}`, 400, ""},
		{"bad locale", "PUT", "/api/v2/config/custom-messages", `{"locales":{"../../etc":{"a":"b"}}}`, 400, "must be a locale"},
		{"bad locale variant", "PUT", "/api/v2/config/custom-messages/x%20y/batch", `{"a":"b"}`, 400, "must be a locale"},
		{"attributes unknown member", "POST", "/api/v2/attributes", `{"verification":{"phone_enabled":true}}`, 400, ""},
		{"attributes wrong type", "POST", "/api/v2/attributes", `{"name_visible_on_dashboard":1}`, 400, ""},
		{"email notifications wrong type", "POST", "/api/v2/config/notifications/email", `{"welcome":{"on_web_enabled":"true"}}`, 400, ""},
		{"email notifications unknown member", "POST", "/api/v2/config/notifications/email", `{"sms_sent":true}`, 400, ""},
		{"malformed JSON", "POST", "/api/v2/config/features", `{"login_enabled":`, 400, ""},
		{"trailing data", "POST", "/api/v2/config/features", `{} {}`, 400, ""},
		{"not an object", "POST", "/api/v2/config/features", `[]`, 400, ""},
		{"oversized", "PUT", "/api/v2/config/custom-messages", big, 413, ""},
		{"one URL not a URL", "POST", "/api/v2/config/redirects/whitelisted-urls", `{"url":"ftp://x"}`, 400, `url: uses the scheme "ftp"`},
		{"one URL over cleartext http", "POST", "/api/v2/config/features/action-token/whitelisted-urls", `{"url":"http://app.example.com/x"}`, 400, "url: uses cleartext http"},
		{"one URL of vbscript", "POST", "/api/v2/config/redirects/whitelisted-urls", `{"url":"vbscript://msgbox(1)"}`, 400, `url: uses the scheme "vbscript"`},
	} {
		t.Run(c.name, func(t *testing.T) {
			s := servertest.Start(t, configAPI(nil), servertest.Options{})
			before, _ := s.Store.GetConfigUnits(context.Background())
			a := admin(t, s, c.method, c.path, c.body)
			if a.status != c.status {
				t.Fatalf("%s %s: %d %s, want %d", c.method, c.path, a.status, a.body, c.status)
			}
			var e struct {
				Error   string   `json:"error"`
				Details []string `json:"details"`
			}
			if err := json.Unmarshal(a.body, &e); err != nil || e.Error != "invalid_request" {
				t.Errorf("error body %s: want invalid_request", a.body)
			}
			if c.detail != "" && !strings.Contains(strings.Join(e.Details, "\n"), c.detail) {
				t.Errorf("details %q lack %q", e.Details, c.detail)
			}
			after, _ := s.Store.GetConfigUnits(context.Background())
			if d := cmp.Diff(before, after); d != "" {
				t.Errorf("a refused request changed the configuration:\n%s", d)
			}
		})
	}
}

func TestNotJSONIsRefused(t *testing.T) {
	s := servertest.Start(t, configAPI(nil), servertest.Options{})
	req, _ := http.NewRequest("POST", s.URL+"/api/v2/config/features", strings.NewReader("login_enabled=true"))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.SetBasicAuth(apiUser, apiPass)
	if resp, body := openapicheck.Do(t, s.Client(), req); resp.StatusCode != 415 {
		t.Errorf("form body: %d %s, want 415", resp.StatusCode, body)
	}
}

// TestSeveralProblemsReportedTogether: one answer names every problem.
func TestSeveralProblemsReportedTogether(t *testing.T) {
	s := servertest.Start(t, configAPI(nil), servertest.Options{})
	a := admin(t, s, "POST", "/api/v2/config", `{"step_up":{"stategy":"X"},"redirects":{"url_after_logout":"nope"},"features":{"person_activation":{"type":"Y"}}}`)
	var e struct{ Details []string }
	_ = json.Unmarshal(a.body, &e)
	if a.status != 400 || len(e.Details) != 3 {
		t.Errorf("%d %s: want 400 with three details", a.status, a.body)
	}
}

func TestWhitelistedURLs(t *testing.T) {
	forEachBackend(t, nil, func(t *testing.T, s *servertest.Server) {
		for _, l := range []struct {
			path   string
			status int
		}{
			{"/api/v2/config/features/action-token/whitelisted-urls", 201},
			{"/api/v2/config/redirects/whitelisted-urls", 200},
		} {
			sameJSON(t, "empty list", admin(t, s, "GET", l.path, "").body, `{"whitelisted_urls":[]}`)
			var first, second, again cimconfig.WhitelistedURL
			a := admin(t, s, "POST", l.path, `{"id":"chosen-by-client","url":"https://a.example.com/x"}`)
			if a.status != l.status || json.Unmarshal(a.body, &first) != nil || len(first.ID) != 36 || first.ID == "chosen-by-client" {
				t.Fatalf("POST %s: %d %s, want %d with a server-assigned UUID", l.path, a.status, a.body, l.status)
			}
			_ = json.Unmarshal(admin(t, s, "POST", l.path, `{"url":"https://b.example.com/"}`).body, &second)
			_ = json.Unmarshal(admin(t, s, "POST", l.path, `{"url":"https://a.example.com/x"}`).body, &again)
			if again.ID != first.ID {
				t.Errorf("adding a listed URL again gave id %s, want %s", again.ID, first.ID)
			}
			sameJSON(t, "list", admin(t, s, "GET", l.path, "").body, fmt.Sprintf(
				`{"whitelisted_urls":[{"id":%q,"url":"https://a.example.com/x"},{"id":%q,"url":"https://b.example.com/"}]}`, first.ID, second.ID))
			if a := admin(t, s, "DELETE", l.path+"/"+first.ID, ""); a.status != 204 {
				t.Errorf("DELETE: %d", a.status)
			}
			if a := admin(t, s, "DELETE", l.path+"/"+first.ID, ""); a.status != 404 {
				t.Errorf("DELETE again: %d, want 404", a.status)
			}
			sameJSON(t, "after delete", admin(t, s, "GET", l.path, "").body,
				fmt.Sprintf(`{"whitelisted_urls":[{"id":%q,"url":"https://b.example.com/"}]}`, second.ID))
		}
		// Posting the unit keeps the ids of URLs it still lists.
		var list cimconfig.WhitelistedURLs
		_ = json.Unmarshal(admin(t, s, "GET", "/api/v2/config/redirects/whitelisted-urls", "").body, &list)
		admin(t, s, "POST", "/api/v2/config/redirects", `{"url_whitelist":[{"url":"https://b.example.com/"},{"url":"https://c.example.com/"}]}`)
		var unit cimconfig.Redirects
		_ = json.Unmarshal(admin(t, s, "GET", "/api/v2/config/redirects", "").body, &unit)
		if len(unit.URLWhitelist) != 2 || unit.URLWhitelist[0].ID != list.WhitelistedURLs[0].ID || unit.URLWhitelist[1].ID == "" {
			t.Errorf("ids after posting the unit: %+v (had %+v)", unit.URLWhitelist, list.WhitelistedURLs)
		}
	})
}

// TestConcurrentWhitelistAdds: 20 URLs added at once are all kept.
func TestConcurrentWhitelistAdds(t *testing.T) {
	forEachBackend(t, nil, func(t *testing.T, s *servertest.Server) {
		var wg sync.WaitGroup
		for i := range 20 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				body, _ := json.Marshal(map[string]string{"url": fmt.Sprintf("https://%d.example.com/", i)})
				req, _ := http.NewRequest("POST", s.URL+"/api/v2/config/redirects/whitelisted-urls", bytes.NewReader(body))
				req.Header.Set("Content-Type", "application/json")
				req.SetBasicAuth(apiUser, apiPass)
				resp, err := s.Client().Do(req)
				if err != nil {
					t.Error(err)
					return
				}
				resp.Body.Close()
				if resp.StatusCode != 200 {
					t.Errorf("add %d: %d", i, resp.StatusCode)
				}
			}()
		}
		wg.Wait()
		var list cimconfig.WhitelistedURLs
		_ = json.Unmarshal(admin(t, s, "GET", "/api/v2/config/redirects/whitelisted-urls", "").body, &list)
		if len(list.WhitelistedURLs) != 20 {
			t.Errorf("%d URLs listed after 20 concurrent adds", len(list.WhitelistedURLs))
		}
	})
}

func TestAuthenticationAndMethods(t *testing.T) {
	s := servertest.Start(t, configAPI(nil), servertest.Options{})
	for _, path := range []string{"/api/config", "/api/config/identity-providers", "/api/v2/config", "/api/v2/attributes",
		"/api/v2/config/features", "/api/v2/config/custom-messages", "/api/v2/config/login-methods", "/api/v2/config/organisations",
		"/api/v2/config/redirects", "/api/v2/config/step-up", "/api/v2/config/ui-extension", "/api/v2/config/notifications/email",
		"/api/v2/config/redirects/whitelisted-urls", "/api/v2/config/features/action-token/whitelisted-urls", "/v2/config/certificates"} {
		if a := call(t, s, "GET", path, "", ""); a.status != 401 || len(a.body) != 0 || a.header.Get("WWW-Authenticate") == "" {
			t.Errorf("GET %s without credentials: %d %q, want 401 with a challenge and no body", path, a.status, a.body)
		}
		if a := call(t, s, "GET", path, "", "intruder"); a.status != 401 {
			t.Errorf("GET %s with wrong credentials: %d, want 401", path, a.status)
		}
	}
	if a := call(t, s, "POST", "/api/v2/config/features", "{}", ""); a.status != 401 {
		t.Errorf("POST without credentials: %d", a.status)
	}
	for _, c := range []struct{ method, path string }{
		{"DELETE", "/api/config"}, {"GET", "/api/config/extension/reload"}, {"POST", "/api/config/identity-providers"},
		{"PUT", "/api/v2/config"}, {"DELETE", "/api/v2/config/features"}, {"POST", "/api/v2/config/login-methods"},
		{"GET", "/api/v2/config/password-policy"}, {"PATCH", "/api/v2/config/step-up"}, {"POST", "/api/v2/config/custom-messages"},
		{"PUT", "/v2/config/certificates"},
	} {
		req, _ := http.NewRequest(c.method, s.URL+c.path, nil)
		req.SetBasicAuth(apiUser, apiPass)
		resp, err := s.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != 405 || resp.Header.Get("Allow") == "" {
			t.Errorf("%s %s: %d, want 405 with Allow", c.method, c.path, resp.StatusCode)
		}
	}
}

// TestDisabledAPI: with configuration_api_enabled off, v2 paths answer 409
// and v1 paths 500; the operator file turns it back on at the next start.
func TestDisabledAPI(t *testing.T) {
	for _, b := range servertest.Backends {
		t.Run(b, func(t *testing.T) {
			opts := servertest.Options{Backend: b}
			if b == "postgres" {
				opts.PostgresURL = pgtest.NewDatabase(t)
			}
			s := servertest.Start(t, configAPI(nil), opts)
			if a := admin(t, s, "POST", "/api/v2/config/features", `{"configuration_api_enabled":false}`); a.status != 204 {
				t.Fatalf("switch off: %d", a.status)
			}
			for _, c := range []struct {
				method, path string
				want         int
			}{
				{"GET", "/api/v2/config", 409}, {"POST", "/api/v2/config/features", 409}, {"GET", "/api/v2/attributes", 409},
				{"PUT", "/api/v2/config/custom-messages/nl/batch", 409}, {"GET", "/v2/config/certificates", 409},
				{"GET", "/api/config", 500}, {"POST", "/api/config/extension/reload", 500}, {"GET", "/api/config/identity-providers", 500},
			} {
				body := ""
				if c.method != "GET" {
					body = `{"configuration_api_enabled":true}`
				}
				if a := admin(t, s, c.method, c.path, body); a.status != c.want || len(a.body) != 0 {
					t.Errorf("%s %s while disabled: %d %q, want %d without a body", c.method, c.path, a.status, a.body, c.want)
				}
			}
			if b != "postgres" {
				return
			}
			on := true
			s2 := servertest.Start(t, configAPI(func(c *config.Config) { c.Features.ConfigurationAPIEnabled = &on }), opts)
			if a := admin(t, s2, "GET", "/api/v2/config/features", ""); a.status != 200 {
				t.Errorf("after a start with features.configuration_api_enabled: true: %d", a.status)
			}
		})
	}
}

func TestIdentityProviders(t *testing.T) {
	forEachBackend(t, nil, func(t *testing.T, s *servertest.Server) {
		sameJSON(t, "built-in only", admin(t, s, "GET", "/api/config/identity-providers", "").body,
			`{"result":[{"id":"6f1c2a9e-3b7d-4e58-9a40-2d8c5b1e7f03","name":"Username and password","type":"USERNAME_AND_PASSWORD"}]}`)
		admin(t, s, "POST", "/api/v2/config", `{"login_methods":`+loginMethodsJSON+`}`)
		sameJSON(t, "with login methods", admin(t, s, "GET", "/api/config/identity-providers", "").body,
			`{"result":[{"id":"6f1c2a9e-3b7d-4e58-9a40-2d8c5b1e7f03","name":"Username and password","type":"USERNAME_AND_PASSWORD"},
			{"id":"corp-saml","name":"Corporate SSO","type":"SAML","saml_properties":{"authn_context":"urn:oasis:names:tc:SAML:2.0:ac:classes:Password"}},
			{"id":"google","name":"Google","type":"GOOGLE"},{"id":"oidc","name":"Partner","type":"OPEN_ID_CONNECT"}]}`)

		// The import API links persons to configured identity providers.
		imp := `{"persons":[{"status":"ACTIVATED","profile":{"reference_id":"0b7c7d4e-1f2a-4b3c-8d9e-0f1a2b3c4d5e",
			"email_addresses":[{"value":"g@example.com","primary":true}]},"identities":{"idp_id":"google","external_person_id":"g-42"}}]}`
		req, _ := http.NewRequest("POST", s.URL+"/api/import/persons", strings.NewReader(imp))
		req.Header.Set("Content-Type", "application/json")
		req.SetBasicAuth(apiUser, apiPass)
		resp, body := openapicheck.Do(t, s.Client(), req)
		if resp.StatusCode != 201 {
			t.Errorf("import linked to the google login method: %d %s", resp.StatusCode, body)
		}
	})
}

// keyPair makes a certificate and its private key, base64 of DER or of PEM.
func keyPair(t *testing.T, kind string, asPEM bool) (certB64, keyB64 string, key crypto.Signer) {
	t.Helper()
	var err error
	if kind == "rsa" {
		key, err = rsa.GenerateKey(rand.Reader, 2048)
	} else {
		key, err = ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	}
	if err != nil {
		t.Fatal(err)
	}
	tpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "latchkey test"},
		NotBefore: time.Now(), NotAfter: time.Now().Add(time.Hour)}
	cert, err := x509.CreateCertificate(rand.Reader, tpl, tpl, key.Public(), key)
	if err != nil {
		t.Fatal(err)
	}
	der, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	if asPEM {
		cert = pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: cert})
		der = pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der})
	}
	return base64.StdEncoding.EncodeToString(cert), base64.StdEncoding.EncodeToString(der), key
}

func pairJSON(name, typ, cert, key string) string {
	b, _ := json.Marshal(map[string]any{"key_pair": map[string]string{"name": name, "key_type": typ, "public_key": cert, "private_key": key}})
	return string(b)
}

func TestCertificates(t *testing.T) {
	forEachBackend(t, nil, func(t *testing.T, s *servertest.Server) {
		rsaCert, rsaKey, _ := keyPair(t, "rsa", false)
		ecCert, ecKey, _ := keyPair(t, "ec", true)
		otherCert, _, _ := keyPair(t, "ec", false)

		a := admin(t, s, "POST", "/v2/config/certificates", pairJSON("saml-signing", "CERTIFICATE_RSA_PRIVATE_KEY", rsaCert, rsaKey))
		var added struct {
			KeyPair cimconfig.KeyPair `json:"key_pair"`
		}
		if a.status != 200 || json.Unmarshal(a.body, &added) != nil || added.KeyPair.ID == "" || added.KeyPair.PrivateKey != "" {
			t.Fatalf("add: %d %s: want 200 with an id and no private key", a.status, a.body)
		}
		if a := admin(t, s, "POST", "/v2/config/certificates", pairJSON("saml-signing", "CERTIFICATE_RSA_PRIVATE_KEY", rsaCert, rsaKey)); a.status != 409 {
			t.Errorf("same name again: %d, want 409", a.status)
		}
		id := added.KeyPair.ID
		a = admin(t, s, "GET", "/v2/config/certificates/"+id, "")
		if a.status != 200 || strings.Contains(string(a.body), "private") || strings.Contains(string(a.body), rsaKey[:40]) {
			t.Errorf("GET one: %d %s: must not show the private key", a.status, a.body)
		}

		// At rest, the private key is sealed.
		units, _ := s.Store.GetConfigUnits(context.Background())
		if strings.Contains(units["key_pairs"], rsaKey[:40]) || !strings.Contains(units["key_pairs"], "sealed_private_key") {
			t.Errorf("stored key pairs hold the private key in clear: %.200s", units["key_pairs"])
		}

		// Update, batch (adds one, updates one by name), list, delete.
		if a := admin(t, s, "POST", "/v2/config/certificates/"+id, pairJSON("saml-signing", "CERTIFICATE_EC_PRIVATE_KEY", ecCert, ecKey)); a.status != 200 {
			t.Errorf("update: %d %s", a.status, a.body)
		}
		batch, _ := json.Marshal(map[string]any{"key_pairs": []map[string]string{
			{"name": "saml-signing", "key_type": "CERTIFICATE_RSA_PRIVATE_KEY", "public_key": rsaCert, "private_key": rsaKey},
			{"name": "partner", "key_type": "CERTIFICATE", "public_key": otherCert},
		}})
		if a := admin(t, s, "POST", "/v2/config/certificates/batch", string(batch)); a.status != 200 {
			t.Errorf("batch: %d %s", a.status, a.body)
		}
		var list struct {
			KeyPairs []cimconfig.KeyPair `json:"key_pairs"`
		}
		_ = json.Unmarshal(admin(t, s, "GET", "/v2/config/certificates", "").body, &list)
		if len(list.KeyPairs) != 2 || list.KeyPairs[0].ID != id || list.KeyPairs[0].KeyType != "CERTIFICATE_RSA_PRIVATE_KEY" {
			t.Errorf("list after batch: %+v", list.KeyPairs)
		}
		if a := admin(t, s, "DELETE", "/v2/config/certificates/"+id, ""); a.status != 200 {
			t.Errorf("delete: %d", a.status)
		}
		for _, m := range []string{"GET", "DELETE"} {
			if a := admin(t, s, m, "/v2/config/certificates/"+id, ""); a.status != 404 {
				t.Errorf("%s a deleted key pair: %d, want 404", m, a.status)
			}
		}
	})
}

func TestCertificateValidation(t *testing.T) {
	rsaCert, rsaKey, _ := keyPair(t, "rsa", false)
	ecCert, ecKey, _ := keyPair(t, "ec", false)
	_, otherKey, _ := keyPair(t, "rsa", false)
	s := servertest.Start(t, configAPI(nil), servertest.Options{})
	for _, c := range []struct{ name, body, detail string }{
		{"no key_pair", `{}`, ""},
		{"unknown key type", pairJSON("a", "PGP", rsaCert, rsaKey), "key_type: must be one of"},
		{"name missing", pairJSON("", "CERTIFICATE_RSA_PRIVATE_KEY", rsaCert, rsaKey), "name: is required"},
		{"public key not base64", pairJSON("a", "CERTIFICATE_RSA_PRIVATE_KEY", "***", rsaKey), "public_key: is not base64"},
		{"public key not a certificate", pairJSON("a", "CERTIFICATE_RSA_PRIVATE_KEY", base64.StdEncoding.EncodeToString([]byte("hello")), rsaKey), "public_key: is neither an X.509 certificate nor a public key"},
		{"private key missing", pairJSON("a", "CERTIFICATE_RSA_PRIVATE_KEY", rsaCert, ""), "private_key: is required"},
		{"private key garbage", pairJSON("a", "CERTIFICATE_RSA_PRIVATE_KEY", rsaCert, base64.StdEncoding.EncodeToString([]byte("nope"))), "private_key: is not a PKCS"},
		{"private key of another pair", pairJSON("a", "CERTIFICATE_RSA_PRIVATE_KEY", rsaCert, otherKey), "does not belong to public_key"},
		{"EC key said to be RSA", pairJSON("a", "CERTIFICATE_RSA_PRIVATE_KEY", ecCert, ecKey), "is an EC key"},
		{"certificate-only with a key", pairJSON("a", "CERTIFICATE", rsaCert, rsaKey), "must be absent"},
	} {
		t.Run(c.name, func(t *testing.T) {
			a := admin(t, s, "POST", "/v2/config/certificates", c.body)
			var e struct{ Details []string }
			_ = json.Unmarshal(a.body, &e)
			if a.status != 400 || !strings.Contains(strings.Join(e.Details, "\n"), c.detail) {
				t.Errorf("%d %s: want 400 naming %q", a.status, a.body, c.detail)
			}
		})
	}
	var list struct {
		KeyPairs []cimconfig.KeyPair `json:"key_pairs"`
	}
	_ = json.Unmarshal(admin(t, s, "GET", "/v2/config/certificates", "").body, &list)
	if len(list.KeyPairs) != 0 {
		t.Errorf("refused key pairs were stored: %+v", list.KeyPairs)
	}
}

// spki is base64 of a key's SubjectPublicKeyInfo, DER or PEM.
func spki(t *testing.T, key crypto.Signer, asPEM bool) string {
	t.Helper()
	der, err := x509.MarshalPKIXPublicKey(key.Public())
	if err != nil {
		t.Fatal(err)
	}
	if asPEM {
		der = pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der})
	}
	return base64.StdEncoding.EncodeToString(der)
}

// TestCertificateBarePublicKey: public_key may be the private key's bare
// public key (SubjectPublicKeyInfo, DER or PEM) instead of a certificate,
// and is answered as sent; another key's is refused with 400.
func TestCertificateBarePublicKey(t *testing.T) {
	s := servertest.Start(t, configAPI(nil), servertest.Options{})
	types := map[string]string{"rsa": "CERTIFICATE_RSA_PRIVATE_KEY", "ec": "CERTIFICATE_EC_PRIVATE_KEY"}
	for _, kind := range []string{"rsa", "ec"} {
		for _, asPEM := range []bool{false, true} {
			name := fmt.Sprintf("%s-pem-%v", kind, asPEM)
			_, keyB64, key := keyPair(t, kind, asPEM)
			pub := spki(t, key, asPEM)
			a := admin(t, s, "POST", "/v2/config/certificates", pairJSON(name, types[kind], pub, keyB64))
			var added struct {
				KeyPair cimconfig.KeyPair `json:"key_pair"`
			}
			if a.status != 200 || json.Unmarshal(a.body, &added) != nil || added.KeyPair.PublicKey != pub {
				t.Errorf("%s: %d %s, want 200 answering public_key as sent", name, a.status, a.body)
			}
		}
		_, keyB64, _ := keyPair(t, kind, false)
		_, _, other := keyPair(t, kind, false)
		a := admin(t, s, "POST", "/v2/config/certificates", pairJSON(kind+"-mismatch", types[kind], spki(t, other, true), keyB64))
		var e struct{ Details []string }
		_ = json.Unmarshal(a.body, &e)
		if a.status != 400 || !strings.Contains(strings.Join(e.Details, "\n"), "does not belong to public_key") {
			t.Errorf("%s: another key's public key: %d %s, want 400", kind, a.status, a.body)
		}
	}
}

// TestCustomMessagesDriveHostedPages: configured texts replace a hosted
// page's, per language with the default map as fallback, at once.
func TestCustomMessagesDriveHostedPages(t *testing.T) {
	s := servertest.Start(t, configAPI(nil), servertest.Options{})
	admin(t, s, "PUT", "/api/v2/config/custom-messages", `{"default":{"device.title":"Sign in to Example"},"locales":{"nl":{"device.title":"Log in bij Voorbeeld"}}}`)
	page := func(lang string) string {
		resp, err := s.Client().Get(s.URL + "/oauth/device_authorization/verification?language=" + lang)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var b bytes.Buffer
		_, _ = b.ReadFrom(resp.Body)
		return b.String()
	}
	if p := page("en"); !strings.Contains(p, "Sign in to Example") {
		t.Errorf("English device page lacks the default custom title")
	}
	if p := page("nl"); !strings.Contains(p, "Log in bij Voorbeeld") {
		t.Errorf("Dutch device page lacks the Dutch custom title")
	}
	admin(t, s, "DELETE", "/api/v2/config/custom-messages/nl/device.title", "")
	if p := page("nl"); !strings.Contains(p, "Sign in to Example") {
		t.Errorf("after removing the Dutch text the page should fall back to the default custom title")
	}
}

// TestConfigurationEvents: changes are recorded with the API user as agent.
func TestConfigurationEvents(t *testing.T) {
	s := servertest.Start(t, configAPI(nil), servertest.Options{})
	admin(t, s, "POST", "/api/v2/config/features", `{"pin_enabled":true}`)
	admin(t, s, "POST", "/api/v2/config/step-up", `{"stategy":"USER_PREFERENCE"}`)
	admin(t, s, "POST", "/api/config/extension/reload", "")
	for _, typ := range []string{events.AdminFeaturesUpdated, events.AdminConfigUpdated, events.AdminExtensionEngineReloaded} {
		var evs []store.Event
		deadline := time.Now().Add(5 * time.Second)
		for len(evs) == 0 && time.Now().Before(deadline) {
			evs, _ = s.Store.SearchEvents(context.Background(), store.EventFilter{Kind: store.EventOAuth, Types: []string{typ}}, 0, 10)
			if len(evs) == 0 {
				time.Sleep(20 * time.Millisecond)
			}
		}
		if len(evs) != 1 || evs[0].AgentUser != apiUser {
			t.Errorf("%s events: %+v, want one with agent %s", typ, evs, apiUser)
		}
	}
}

// TestInstancesShareTheConfiguration: two instances on one PostgreSQL
// database; what one stores the other answers (after its short cache).
func TestInstancesShareTheConfiguration(t *testing.T) {
	dsn := pgtest.NewDatabase(t)
	a := servertest.Start(t, configAPI(nil), servertest.Options{Backend: "postgres", PostgresURL: dsn})
	b := servertest.Start(t, configAPI(nil), servertest.Options{Backend: "postgres", PostgresURL: dsn})
	for _, pin := range []string{"true", "false"} {
		admin(t, a, "POST", "/api/v2/config/features", `{"pin_enabled":`+pin+`}`)
		deadline := time.Now().Add(5 * time.Second)
		for {
			got := admin(t, b, "GET", "/api/v2/config/features", "")
			if string(got.body) == `{"pin_enabled":`+pin+`}` {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("instance b still answers %s, want pin_enabled %s", got.body, pin)
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
}
