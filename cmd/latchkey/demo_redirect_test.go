package main

import (
	"testing"

	"github.com/latchkey/latchkey/internal/config"
)

// TestDemoClientsOnACleartextIssuer: the demo's clients come back to the
// issuer; on an http issuer off loopback (a container's localhost) they
// take the config file's development switch, elsewhere they do not.
func TestDemoClientsOnACleartextIssuer(t *testing.T) {
	for _, tc := range []struct {
		issuer   string
		insecure bool
	}{{"http://127.0.0.1:8080", false}, {"https://login.example.com", false}, {"http://localhost:8080", true}} {
		cfg := &config.Config{Issuer: tc.issuer}
		if _, err := addDemo(cfg); err != nil {
			t.Fatalf("%s: %v", tc.issuer, err)
		}
		for _, c := range cfg.Clients {
			if c.AllowInsecureHTTPRedirectURIs != tc.insecure {
				t.Errorf("%s: demo client %s allow_insecure_http_redirect_uris = %v, want %v", tc.issuer, c.ClientID,
					c.AllowInsecureHTTPRedirectURIs, tc.insecure)
			}
		}
	}
}
