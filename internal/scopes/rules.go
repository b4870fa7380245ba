package scopes

import (
	"strings"

	"github.com/latchkey/latchkey/internal/client"
	"github.com/latchkey/latchkey/internal/store"
)

// UsageLimit is the limit a token for these configured scopes gets: the
// smallest non-zero usage_limit, or 0 (unlimited) when none has one.
func UsageLimit(cs []store.Scope) int {
	limit := 0
	for _, s := range cs {
		if s.UsageLimit > 0 && (limit == 0 || s.UsageLimit < limit) {
			limit = s.UsageLimit
		}
	}
	return limit
}

// RequiredLevel is the highest authentication_level among cs, and where to
// send the person when it cannot be met: the verification_failed_endpoint,
// else the service_endpoint, of the scope that asks for it ("" for none).
// The browser goes there, so it must pass the redirect URI rule here, at
// the decision (a row may predate the rule; service_endpoint is not held
// to it when written): one that fails is "" (the client hears
// access_denied instead).
func RequiredLevel(cs []store.Scope) (level int, failURL string) {
	for _, s := range cs {
		if s.AuthenticationLevel > level {
			level = s.AuthenticationLevel
			failURL = s.VerificationFailedEndpoint
			if failURL == "" {
				failURL = s.ServiceEndpoint
			}
		}
	}
	if failURL != "" && client.ValidateRedirectURI(failURL, client.RedirectPolicy{}) != nil {
		failURL = ""
	}
	return level, failURL
}

// Description is the scope's text in language (languageCode[_countryCode[_variant]]):
// the exact locale, then shorter prefixes, then English; "" when none fits.
func Description(s store.Scope, language string) string {
	for cand := strings.ReplaceAll(language, "-", "_"); cand != ""; {
		if d, ok := s.Descriptions[cand]; ok {
			return d
		}
		i := strings.LastIndex(cand, "_")
		if i < 0 {
			break
		}
		cand = cand[:i]
	}
	return s.Descriptions["en"]
}

// ByID indexes configured scopes.
func ByID(cs []store.Scope) map[string]store.Scope {
	m := make(map[string]store.Scope, len(cs))
	for _, s := range cs {
		m[s.ID] = s
	}
	return m
}
