package server_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/latchkey/latchkey/internal/config"
	"github.com/latchkey/latchkey/internal/server/servertest"
)

// Once a graceful stop begins, readiness answers 503 so the load balancer
// takes the instance out of rotation, every other route still answers, and
// each response closes its connection so that the balancer keeps no idle
// connection it could reuse as the listener closes.
func TestDrainTurnsReadinessOffAndClosesConnections(t *testing.T) {
	s := servertest.Start(t, &config.Config{}, servertest.Options{})
	resp, _ := get(t, s, "/health/ready")
	if resp.StatusCode != 200 || resp.Close {
		t.Fatalf("before the drain: ready %d, close %v; want 200 on a kept-alive connection", resp.StatusCode, resp.Close)
	}
	s.App.StartDrain()
	resp, body := get(t, s, "/health/ready")
	if resp.StatusCode != http.StatusServiceUnavailable || !strings.Contains(string(body), `"draining"`) {
		t.Errorf("ready while draining: %d %s, want 503 draining", resp.StatusCode, body)
	}
	for _, path := range []string{"/health/alive", "/.well-known/oauth-authorization-server"} {
		resp, _ := get(t, s, path)
		if resp.StatusCode != 200 {
			t.Errorf("%s while draining: %d, want 200 (the instance still serves)", path, resp.StatusCode)
		}
		if !resp.Close {
			t.Errorf("%s while draining: the response keeps its connection open", path)
		}
	}
	if finished, inFlight := s.App.DrainStats(); finished != 3 || inFlight != 0 {
		t.Errorf("drain stats: %d finished, %d in flight; want 3 and 0", finished, inFlight)
	}
}
