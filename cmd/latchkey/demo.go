package main

import (
	"fmt"
	"io"
	"net/url"
	"strings"

	"github.com/latchkey/latchkey/internal/client"
	"github.com/latchkey/latchkey/internal/config"
	"github.com/latchkey/latchkey/internal/oauth"
	"github.com/latchkey/latchkey/internal/token"
)

// The demo clients and person seeded by serve --demo.
const (
	demoConfidentialID = "demo-app"
	demoPublicID       = "demo-spa"
	demoPersonEmail    = "jane@example.com"
	// demoChallenge is the S256 challenge of login.DemoVerifier (RFC 7636
	// appendix B): the demo callback page prints the verifier, so the
	// printed URL can be pasted as it is.
	demoChallenge = "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM"
)

type demoBanner struct {
	secret, password, redirect, nonce string
}

// demoClients are the clients serve --demo adds to cfg; the secret is
// "" where only their shape matters (client list --demo).
func demoClients(issuer, secret string) []config.Client {
	yes := true
	redirect := issuer + "/demo/callback"
	// RP-initiated logout returns to the demo page, which says so.
	loggedOut := []string{redirect}
	// The demo is development: an issuer on cleartext http off loopback
	// (a container's http://localhost:8080) may still receive its codes,
	// with the start-up warning of the config file's switch.
	insecure := client.ValidateRedirectURI(redirect, client.RedirectPolicy{}) != nil
	return []config.Client{
		{
			ClientID:                demoConfidentialID,
			ClientSecret:            secret,
			Name:                    "Demo App (confidential)",
			TokenEndpointAuthMethod: client.AuthClientSecretBasic,
			RedirectURIs:            []string{redirect},
			PostLogoutRedirectURIs:  loggedOut,
			GrantTypes: []string{client.GrantAuthorizationCode, client.GrantRefreshToken,
				client.GrantClientCredentials, client.GrantDeviceCode},
			Scopes:          []string{"read", "write"},
			ConsentRequired: &yes,
			// The demo's resource server: it may introspect the SPA's tokens too.
			IntrospectAnyToken:            true,
			AllowInsecureHTTPRedirectURIs: insecure,
		},
		{
			ClientID:                      demoPublicID,
			Name:                          "Demo SPA (public, PKCE)",
			TokenEndpointAuthMethod:       client.AuthNone,
			RedirectURIs:                  []string{redirect},
			PostLogoutRedirectURIs:        loggedOut,
			GrantTypes:                    []string{client.GrantAuthorizationCode, client.GrantRefreshToken, client.GrantDeviceCode},
			Scopes:                        []string{"read"},
			ConsentRequired:               &yes,
			AllowInsecureHTTPRedirectURIs: insecure,
		},
	}
}

// addDemo adds the demo clients and person to cfg with fresh random secrets,
// unless the config already defines them.
func addDemo(cfg *config.Config) (*demoBanner, error) {
	b := &demoBanner{
		secret:   token.Random(24),
		password: token.Random(12),
		redirect: cfg.Issuer + "/demo/callback",
		nonce:    token.Random(16),
	}
	if err := addDemoClients(cfg, b.secret); err != nil {
		return nil, err
	}
	cfg.Persons = append(cfg.Persons, config.Person{
		Email: demoPersonEmail, Password: b.password, FirstName: "Jane", LastName: "Doe",
	})
	// Fill the defaults of the added clients and check them like any other.
	if err := cfg.Complete(); err != nil {
		return nil, fmt.Errorf("--demo: %w", err)
	}
	return b, nil
}

func addDemoClients(cfg *config.Config, secret string) error {
	for _, c := range cfg.Clients {
		if c.ClientID == demoConfidentialID || c.ClientID == demoPublicID {
			return fmt.Errorf("--demo: the config already defines client %q", c.ClientID)
		}
	}
	cfg.Clients = append(cfg.Clients, demoClients(cfg.Issuer, secret)...)
	return nil
}

// authorizeURL is the OpenID Connect authorization request of the
// public demo client: openid with a nonce, PKCE with the demo's verifier.
func (b *demoBanner) authorizeURL(issuer string) string {
	q := url.Values{
		"response_type":         {"code"},
		"client_id":             {demoPublicID},
		"redirect_uri":          {b.redirect},
		"scope":                 {strings.Join([]string{oauth.ScopeOpenID, oauth.ScopeProfile, oauth.ScopeEmail, "read"}, " ")},
		"state":                 {"demo-state"},
		"nonce":                 {b.nonce},
		"code_challenge":        {demoChallenge},
		"code_challenge_method": {"S256"},
	}
	return issuer + "/oauth/authorize?" + q.Encode()
}

func (b *demoBanner) print(w io.Writer, issuer string) {
	fmt.Fprintf(w, `
latchkey demo data (secrets are new at every start):
  confidential client  %s / %s   (authenticates with %s)
  public client        %s   (authenticates with %s: PKCE, no secret)
  person               %s / %s
  redirect URI and post-logout redirect URI of both clients: %s
  OpenID Connect discovery: %s%s
  (latchkey client list --demo lists these clients; a hosted console and account page do not exist yet)

Get a token (client credentials):
  curl -s -u %s:%s -d grant_type=client_credentials -d scope=read %s/oauth/token

Sign in as the person (OpenID Connect: authorization code with PKCE, nonce %s),
then follow the page you land on:
  %s

`, demoConfidentialID, b.secret, client.AuthClientSecretBasic, demoPublicID, client.AuthNone,
		demoPersonEmail, b.password, b.redirect, issuer, oauth.PathDiscovery,
		demoConfidentialID, b.secret, issuer, b.nonce, b.authorizeURL(issuer))
}
