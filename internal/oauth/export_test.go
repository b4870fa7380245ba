package oauth

import (
	"context"
	"time"

	"github.com/latchkey/latchkey/internal/store"
)

// IDTokenClaimsOver is idTokenClaims for the tests of oauth_test: the
// claims of the first ID token of a grant of person p to client web for
// scopes, whose user details (cached on the grant) are details.
func (s *Service) IDTokenClaimsOver(p store.Person, details map[string]any, scopes []string) (map[string]any, error) {
	now := time.Now()
	g := store.Grant{ID: "g-test", ClientID: "web", Subject: p.ID, Scopes: scopes, AuthLevel: 1, AMR: []string{"FEDERATED"},
		CreatedAt: now}
	return s.idTokenClaims(context.Background(), nil, p, store.Client{ID: "web"}, g, scopes,
		grantData{UserDetails: details, Nonce: "nonce-of-the-request"}, true, now)
}
