// Package claim names the claims latchkey releases of a person (UserInfo,
// ID tokens, JWT access tokens, introspection's user_details and the web
// hooks' payloads) that only latchkey's own rules may fill: the protocol's,
// the standard profile claims of OpenID Connect, and latchkey's person
// attributes. A custom attribute — whoever wrote it: an upstream identity
// provider, the import API, the admin API — is never released under one of
// these names (docs/SECURITY.md, "What a person's claims are made of").
package claim

import "strings"

// protocol are the claims that say how a token was made, not who the
// person is: RFC 7519 section 4.1, OIDC Core sections 2, 3.1.3.6, 3.3.2.11
// and 5.6.2, RFC 9068 section 2.2, RFC 7800 section 3.1, RFC 8693 section
// 4 and OpenID Connect Back-Channel Logout 1.0 section 2.4. Introspection's
// own members (active, token_type, ...) are not here: user_details is an
// object of its own, and introspection's members win over a web hook's.
var protocol = set("iss", "sub", "aud", "exp", "nbf", "iat", "jti", "auth_time", "nonce", "acr", "amr", "azp",
	"at_hash", "c_hash", "s_hash", "sid", "sub_jwk", "cnf", "client_id", "scope", "act", "may_act", "events",
	"_claim_names", "_claim_sources")

// standard are the standard claims of OIDC Core section 5.1: latchkey
// fills them from the profile (oauth.standardClaims), or leaves them out.
var standard = set("name", "given_name", "family_name", "middle_name", "nickname", "preferred_username", "profile",
	"picture", "website", "email", "email_verified", "gender", "birthdate", "zoneinfo", "locale", "phone_number",
	"phone_number_verified", "address", "updated_at")

// person are the person attributes of the introspection.user_details
// mapping and the keys it gives them by default: the profile's own names.
var person = set("id", "email", "first_name", "last_name", "display_name", "status")

// vendorPrefix starts latchkey's own introspection members (group
// policies); group_permissions is their deprecated form.
const vendorPrefix = "urn:vendor.com:oidc:"

func set(names ...string) map[string]bool {
	m := make(map[string]bool, len(names))
	for _, n := range names {
		m[n] = true
	}
	return m
}

// Protocol reports whether name is a protocol claim: one only the token's
// own rules set (an ID token's iss, nonce, amr ...), never a person's
// attribute or a web hook's answer.
func Protocol(name string) bool {
	return protocol[name] || strings.HasPrefix(name, vendorPrefix) || name == "group_permissions"
}

// Reserved reports whether name may carry nothing but what latchkey's own
// rules put there: a protocol claim, a standard claim of the profile, or a
// person attribute's own name. A custom attribute is never released under
// a reserved name.
func Reserved(name string) bool {
	return Protocol(name) || standard[name] || person[name]
}
