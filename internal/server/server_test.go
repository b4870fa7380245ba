package server_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/latchkey/latchkey/internal/config"
	"github.com/latchkey/latchkey/internal/openapicheck"
	"github.com/latchkey/latchkey/internal/server/servertest"
)

func get(t *testing.T, s *servertest.Server, path string) (*http.Response, []byte) {
	t.Helper()
	req, _ := http.NewRequest("GET", s.URL+path, nil)
	return openapicheck.Do(t, s.Client(), req)
}

func TestOperationsEndpoints(t *testing.T) {
	for _, backend := range servertest.Backends {
		t.Run(backend, func(t *testing.T) {
			s := servertest.Start(t, &config.Config{}, servertest.Options{Backend: backend})
			resp, body := get(t, s, "/health/alive")
			if resp.StatusCode != 200 || !strings.Contains(string(body), `"ok"`) {
				t.Errorf("alive: %d %s", resp.StatusCode, body)
			}
			resp, body = get(t, s, "/health/ready")
			if resp.StatusCode != 200 {
				t.Errorf("ready: %d %s", resp.StatusCode, body)
			}
			for _, h := range []string{"X-Content-Type-Options", "X-Frame-Options", "Content-Security-Policy", "Referrer-Policy", "X-Request-Id"} {
				if resp.Header.Get(h) == "" {
					t.Errorf("response lacks %s", h)
				}
			}
			resp, body = get(t, s, "/metrics")
			if resp.StatusCode != 200 || !strings.Contains(string(body), `latchkey_http_requests_total{method="GET",route="GET /health/ready",status="200"} 1`) {
				t.Errorf("metrics do not count requests by route and status: %d\n%s", resp.StatusCode, body)
			}
			s.Store.Close() // the store goes away: readiness must say so
			resp, _ = get(t, s, "/health/ready")
			if resp.StatusCode != http.StatusServiceUnavailable {
				t.Errorf("ready with a closed store = %d, want 503", resp.StatusCode)
			}
		})
	}
}

func TestLogsHoldNoSecrets(t *testing.T) {
	s := servertest.Start(t, &config.Config{}, servertest.Options{})
	req, _ := http.NewRequest("GET", s.URL+"/health/alive?token=lk_at_supersecret", nil)
	req.Header.Set("Authorization", "Basic c2VjcmV0OnNlY3JldA==")
	resp, err := s.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	logs := s.Log.String()
	for _, secret := range []string{"supersecret", "c2VjcmV0OnNlY3JldA"} {
		if strings.Contains(logs, secret) {
			t.Errorf("the log holds %q:\n%s", secret, logs)
		}
	}
	if !strings.Contains(logs, "path=/health/alive") {
		t.Errorf("the request was not logged:\n%s", logs)
	}
}
