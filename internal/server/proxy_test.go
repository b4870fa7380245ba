package server_test

import (
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/latchkey/latchkey/internal/client"
	"github.com/latchkey/latchkey/internal/clientauth"
	"github.com/latchkey/latchkey/internal/config"
	"github.com/latchkey/latchkey/internal/openapicheck"
	"github.com/latchkey/latchkey/internal/server/servertest"
	"github.com/latchkey/latchkey/internal/store"
)

// Behind the documented load balancer every request comes from its
// address: throttles must key on the client address it forwards, or one
// client's failures lock out everyone.
func TestThrottlesKeyOnTheClientBehindTrustedProxies(t *testing.T) {
	for _, backend := range servertest.Backends {
		t.Run(backend, func(t *testing.T) {
			cfg := &config.Config{
				TrustedProxies: []string{"127.0.0.1", "::1"}, // the test's loopback is the load balancer
				Clients: []config.Client{{ClientID: "svc", ClientSecret: "svc-secret-svc-secret",
					GrantTypes: []string{client.GrantClientCredentials}, Scopes: []string{"read"}}},
			}
			s := servertest.Start(t, cfg, servertest.Options{Backend: backend})
			token := func(client, secret string) *http.Response {
				req, _ := http.NewRequest("POST", s.URL+"/oauth/token", strings.NewReader(url.Values{"grant_type": {"client_credentials"}}.Encode()))
				req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
				req.Header.Set("X-Forwarded-For", client)
				req.SetBasicAuth("svc", secret)
				resp, _ := openapicheck.Do(t, s.Client(), req)
				return resp
			}
			for i := range clientauth.MaxClientFailsPerIP {
				if resp := token("198.51.100.1", "wrong"); resp.StatusCode != http.StatusUnauthorized {
					t.Fatalf("failure %d: %d", i+1, resp.StatusCode)
				}
			}
			resp := token("198.51.100.1", "wrong")
			if resp.StatusCode != http.StatusTooManyRequests || resp.Header.Get("Retry-After") == "" {
				t.Errorf("the failing client past its limit: %d, Retry-After %q; want 429 with Retry-After",
					resp.StatusCode, resp.Header.Get("Retry-After"))
			}
			if resp := token("198.51.100.2", "svc-secret-svc-secret"); resp.StatusCode != http.StatusOK {
				t.Errorf("another client behind the same load balancer: %d, want 200", resp.StatusCode)
			}
			evs, err := s.Store.SearchEvents(t.Context(), store.EventFilter{Kind: store.EventOAuth, ClientID: "svc"}, 0, 1)
			if err != nil || len(evs) != 1 || evs[0].ClientIP != "198.51.100.2" {
				t.Errorf("events record the same client address: %+v, %v", evs, err)
			}
		})
	}
}
