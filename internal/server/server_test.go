package server_test

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/latchkey/latchkey/internal/config"
	"github.com/latchkey/latchkey/internal/openapicheck"
	"github.com/latchkey/latchkey/internal/server/servertest"
	"github.com/latchkey/latchkey/internal/store"
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

func TestSweepAppliesEventRetention(t *testing.T) {
	clock := servertest.NewClock()
	cfg := &config.Config{Events: config.Events{Retention: config.Duration(24 * time.Hour)}}
	s := servertest.Start(t, cfg, servertest.Options{Clock: clock})
	var evs []store.Event
	for i := range 2500 {
		evs = append(evs, store.Event{ID: fmt.Sprint("old-", i), Kind: store.EventOAuth, Type: "X", Name: "X", Occurred: clock.Now().Add(-48 * time.Hour)})
	}
	evs = append(evs, store.Event{ID: "new", Kind: store.EventOAuth, Type: "X", Name: "X", Occurred: clock.Now()})
	if err := s.Store.AppendEvents(t.Context(), evs...); err != nil {
		t.Fatal(err)
	}
	n, err := s.App.Sweep(t.Context())
	if err != nil || n != 2500 {
		t.Errorf("sweep removed %d (%v), want the 2,500 old events in batches", n, err)
	}
	left, _ := s.Store.CountEvents(t.Context(), store.EventFilter{Kind: store.EventOAuth}, 10)
	if left != 1 {
		t.Errorf("%d events left, want the new one", left)
	}
}
