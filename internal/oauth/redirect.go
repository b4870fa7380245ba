package oauth

import (
	"errors"
	"slices"

	"github.com/latchkey/latchkey/internal/client"
	"github.com/latchkey/latchkey/internal/store"
)

// ErrRedirectRefused: a saved authorization request's redirect URI is no
// longer one of its client's, or fails the redirect URI rule (a row
// written before the rule). The person sees an error page, never a
// redirect to it.
var ErrRedirectRefused = errors.New("oauth: the request's redirect URI is not allowed")

// redirectAllowed is the decision point's own check of a registered
// address (redirect_uris or post_logout_redirect_uris) about to receive a
// browser: stored rows are not trusted to have passed the rule when they
// were written, so it is applied again, under the client's policy.
func redirectAllowed(c store.Client, registered []string, uri string) bool {
	return slices.Contains(registered, uri) && client.ValidateRedirectURI(uri, client.PolicyOf(c)) == nil
}
