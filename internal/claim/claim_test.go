package claim

import "testing"

func TestReservedNames(t *testing.T) {
	for _, tc := range []struct {
		name               string
		protocol, reserved bool
	}{
		{"iss", true, true}, {"sub", true, true}, {"aud", true, true}, {"exp", true, true}, {"nbf", true, true},
		{"iat", true, true}, {"jti", true, true}, {"auth_time", true, true}, {"nonce", true, true}, {"acr", true, true},
		{"amr", true, true}, {"azp", true, true}, {"at_hash", true, true}, {"c_hash", true, true}, {"sid", true, true},
		{"cnf", true, true}, {"client_id", true, true}, {"scope", true, true}, {"act", true, true}, {"events", true, true},
		{"_claim_sources", true, true},
		{"urn:vendor.com:oidc:group_policies", true, true}, {"group_permissions", true, true},
		{"name", false, true}, {"given_name", false, true}, {"family_name", false, true}, {"email", false, true},
		{"email_verified", false, true}, {"phone_number", false, true}, {"phone_number_verified", false, true},
		{"address", false, true}, {"updated_at", false, true}, {"preferred_username", false, true}, {"picture", false, true},
		{"locale", false, true}, {"birthdate", false, true}, {"gender", false, true},
		{"id", false, true}, {"first_name", false, true}, {"last_name", false, true}, {"display_name", false, true},
		{"status", false, true},
		// Names of the operator's own: a custom attribute may be released under them.
		{"loyalty_level", false, false}, {"upstream_name", false, false}, {"tier", false, false},
		{"urn:example:claim", false, false}, {"", false, false},
	} {
		if got := Protocol(tc.name); got != tc.protocol {
			t.Errorf("Protocol(%q) = %v, want %v", tc.name, got, tc.protocol)
		}
		if got := Reserved(tc.name); got != tc.reserved {
			t.Errorf("Reserved(%q) = %v, want %v", tc.name, got, tc.reserved)
		}
	}
}
