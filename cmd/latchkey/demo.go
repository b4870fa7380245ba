package main

import (
	"fmt"
	"io"
	"net/url"

	"github.com/latchkey/latchkey/internal/client"
	"github.com/latchkey/latchkey/internal/config"
	"github.com/latchkey/latchkey/internal/token"
)

// The demo clients and person seeded by serve --demo.
const (
	demoConfidentialID = "demo-app"
	demoPublicID       = "demo-spa"
	demoPersonEmail    = "jane@example.com"
)

type demoBanner struct {
	secret, password, redirect string
}

// addDemo adds the demo clients and person to cfg with fresh random secrets,
// unless the config already defines them.
func addDemo(cfg *config.Config) (*demoBanner, error) {
	b := &demoBanner{
		secret:   token.Random(24),
		password: token.Random(12),
		redirect: cfg.Issuer + "/demo/callback",
	}
	yes := true
	// The demo is development: an issuer on cleartext http off loopback
	// (a container's http://localhost:8080) may still receive its codes,
	// with the start-up warning of the config file's switch.
	insecure := client.ValidateRedirectURI(b.redirect, client.RedirectPolicy{}) != nil
	for _, c := range cfg.Clients {
		if c.ClientID == demoConfidentialID || c.ClientID == demoPublicID {
			return nil, fmt.Errorf("--demo: the config already defines client %q", c.ClientID)
		}
	}
	cfg.Clients = append(cfg.Clients,
		config.Client{
			ClientID:                demoConfidentialID,
			ClientSecret:            b.secret,
			Name:                    "Demo App (confidential)",
			TokenEndpointAuthMethod: client.AuthClientSecretBasic,
			RedirectURIs:            []string{b.redirect},
			GrantTypes: []string{client.GrantAuthorizationCode, client.GrantRefreshToken,
				client.GrantClientCredentials, client.GrantDeviceCode},
			Scopes:          []string{"read", "write"},
			ConsentRequired: &yes,
			// The demo's resource server: it may introspect the SPA's tokens too.
			IntrospectAnyToken:            true,
			AllowInsecureHTTPRedirectURIs: insecure,
		},
		config.Client{
			ClientID:                      demoPublicID,
			Name:                          "Demo SPA (public, PKCE)",
			TokenEndpointAuthMethod:       client.AuthNone,
			RedirectURIs:                  []string{b.redirect},
			GrantTypes:                    []string{client.GrantAuthorizationCode, client.GrantRefreshToken, client.GrantDeviceCode},
			Scopes:                        []string{"read"},
			ConsentRequired:               &yes,
			AllowInsecureHTTPRedirectURIs: insecure,
		})
	cfg.Persons = append(cfg.Persons, config.Person{
		Email: demoPersonEmail, Password: b.password, FirstName: "Jane", LastName: "Doe",
	})
	// Fill the defaults of the added clients and check them like any other.
	if err := cfg.Complete(); err != nil {
		return nil, fmt.Errorf("--demo: %w", err)
	}
	return b, nil
}

func (b *demoBanner) print(w io.Writer, issuer string) {
	q := url.Values{
		"response_type":         {"code"},
		"client_id":             {demoPublicID},
		"redirect_uri":          {b.redirect},
		"scope":                 {"read"},
		"state":                 {"demo-state"},
		"code_challenge":        {"E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM"}, // S256 of login.DemoVerifier
		"code_challenge_method": {"S256"},
	}
	fmt.Fprintf(w, `
latchkey demo data (secrets are new at every start):
  confidential client  %s / %s
  public client        %s (PKCE)
  person               %s / %s

Get a token (client credentials):
  curl -s -u %s:%s -d grant_type=client_credentials -d scope=read %s/oauth/token

Sign in as the person (authorization code with PKCE), then follow the page you land on:
  %s/oauth/authorize?%s

`, demoConfidentialID, b.secret, demoPublicID, demoPersonEmail, b.password,
		demoConfidentialID, b.secret, issuer, issuer, q.Encode())
}
