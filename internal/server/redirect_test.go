package server_test

import (
	"strings"
	"testing"

	"golang.org/x/oauth2"

	"github.com/latchkey/latchkey/internal/config"
	"github.com/latchkey/latchkey/internal/server/servertest"
)

// TestInsecureHTTPRedirectSwitch: a config file client with
// allow_insecure_http_redirect_uris is warned about at start and gets its
// cleartext redirect at authorize (the decision point applies the client's
// own policy); a client without the switch is not warned about.
func TestInsecureHTTPRedirectSwitch(t *testing.T) {
	no := false
	const devRedirect = "http://dev.example:3000/cb"
	s := servertest.Start(t, &config.Config{
		Clients: []config.Client{
			{ClientID: "dev", TokenEndpointAuthMethod: "none", RedirectURIs: []string{devRedirect}, AllowInsecureHTTPRedirectURIs: true,
				GrantTypes: []string{"authorization_code"}, Scopes: []string{"read"}, ConsentRequired: &no},
			{ClientID: "prod", TokenEndpointAuthMethod: "none", RedirectURIs: []string{"https://app.example/cb"},
				GrantTypes: []string{"authorization_code"}, Scopes: []string{"read"}, ConsentRequired: &no}},
		Persons: []config.Person{{Email: "jane@example.com", Password: "correct horse battery staple"}},
	}, servertest.Options{})
	var warned []string
	for _, line := range strings.Split(s.Log.String(), "\n") {
		if strings.Contains(line, "level=WARN") && strings.Contains(line, "allow_insecure_http_redirect_uris") {
			warned = append(warned, line)
		}
	}
	if len(warned) != 1 || !strings.Contains(warned[0], "client_id=dev") {
		t.Errorf("start warnings about the switch: %q, want one naming dev", warned)
	}
	oc := &oauth2.Config{ClientID: "dev", RedirectURL: devRedirect, Scopes: []string{"read"},
		Endpoint: oauth2.Endpoint{AuthURL: s.URL + "/oauth/authorize"}}
	f := s.Authorize(t, s.Browser(), oc.AuthCodeURL("st", oauth2.S256ChallengeOption(oauth2.GenerateVerifier())),
		"jane@example.com", "correct horse battery staple", "allow")
	if f.Back == nil || f.Back.Host != "dev.example:3000" || f.Back.Query().Get("code") == "" {
		t.Errorf("the dev client's authorization came back to %v, want its http redirect with a code", f.Back)
	}
}
