package oauth

import (
	"github.com/latchkey/latchkey/internal/claim"
	"github.com/latchkey/latchkey/internal/store"
)

// PersonClaims are the claims UserInfo and an ID token release of person p
// for scopes: the user details (introspection's user_details: the mapping,
// then the web hook), under the standard claims of the scopes (OIDC Core
// section 5.4), which the profile fills and which always win. A protocol
// claim (claim.Protocol) is never taken from the details: the caller sets
// its own (sub, and an ID token's iss, nonce, amr ...) or none.
func PersonClaims(p store.Person, details map[string]any, scopes []string) map[string]any {
	claims := make(map[string]any, len(details)+8)
	for k, v := range details {
		if !claim.Protocol(k) {
			claims[k] = v
		}
	}
	for k, v := range standardClaims(p, scopes) {
		claims[k] = v
	}
	return claims
}
