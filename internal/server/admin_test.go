package server_test

import (
	"bytes"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"

	"github.com/latchkey/latchkey/internal/client"
	"github.com/latchkey/latchkey/internal/config"
	"github.com/latchkey/latchkey/internal/server/servertest"
)

func body(t *testing.T, c *http.Client, method, u string, form url.Values) (int, string) {
	t.Helper()
	var rd io.Reader
	if form != nil {
		rd = strings.NewReader(form.Encode())
	}
	req, _ := http.NewRequest(method, u, rd)
	if form != nil {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// With admin_listen, /metrics, the profiler and the API groups named in
// admin_apis answer on the admin address only; the public one answers 404
// for them and keeps every other route.
func TestAdminListenMovesOperatorRoutes(t *testing.T) {
	cfg := &config.Config{AdminListen: "127.0.0.1:0", AdminAPIs: []string{"events", "import", "admin"}}
	s := servertest.Start(t, cfg, servertest.Options{})
	admin := httptest.NewServer(s.App.AdminHandler())
	t.Cleanup(admin.Close)
	c := s.Client()
	for _, tt := range []struct {
		method, path    string
		public, onAdmin int
	}{
		{"GET", "/metrics", 404, 200},
		{"GET", "/debug/pprof/", 404, 200},
		{"GET", "/api/events", 404, 401},
		{"GET", "/oauth/api/v1/events", 404, 401},
		{"POST", "/api/import/persons", 404, 401},
		{"GET", "/api/v1/clients", 404, 401},
		{"DELETE", "/api/v1/persons/p1", 404, 401},
		{"POST", "/oauth/register", 404, 404}, // dynamic registration is the clients', always public (and off here)
		{"GET", "/health/ready", 200, 200},
		{"GET", "/api/config", 401, 404}, // configuration is not in admin_apis: it stays public
		{"GET", "/.well-known/oauth-authorization-server", 200, 404},
	} {
		if got, _ := body(t, c, tt.method, s.URL+tt.path, nil); got != tt.public {
			t.Errorf("public %s %s: %d, want %d", tt.method, tt.path, got, tt.public)
		}
		if got, _ := body(t, c, tt.method, admin.URL+tt.path, nil); got != tt.onAdmin {
			t.Errorf("admin %s %s: %d, want %d", tt.method, tt.path, got, tt.onAdmin)
		}
	}
}

// The metrics answer operators' questions without a label per client by
// default: tokens by grant and outcome, introspections by outcome, throttle
// refusals by kind, store latency and pool use.
func TestMetricsCountOutcomes(t *testing.T) {
	for _, clientLabels := range []bool{false, true} {
		cfg := &config.Config{Metrics: config.Metrics{ClientLabels: clientLabels}, Clients: []config.Client{{
			ClientID: "m2m", ClientSecret: "m2m-secret-m2m-secret", TokenEndpointAuthMethod: client.AuthClientSecretPost,
			GrantTypes: []string{client.GrantClientCredentials}, Scopes: []string{"read"}}}}
		s := servertest.Start(t, cfg, servertest.Options{})
		c := s.Client()
		form := url.Values{"grant_type": {"client_credentials"}, "client_id": {"m2m"}, "client_secret": {"m2m-secret-m2m-secret"}}
		status, tok := body(t, c, "POST", s.URL+"/oauth/token", form)
		if status != 200 {
			t.Fatalf("token: %d %s", status, tok)
		}
		token := tok[strings.Index(tok, "lk_at_"):]
		token = token[:strings.IndexByte(token, '"')]
		body(t, c, "POST", s.URL+"/oauth/api/v2/token/introspect", url.Values{"client_id": {"m2m"},
			"client_secret": {"m2m-secret-m2m-secret"}, "token": {token}})
		body(t, c, "POST", s.URL+"/oauth/api/v2/token/introspect", url.Values{"client_id": {"m2m"},
			"client_secret": {"m2m-secret-m2m-secret"}, "token": {"lk_at_unknown"}})
		wrong := url.Values{"grant_type": {"client_credentials"}, "client_id": {"m2m"}, "client_secret": {"wrong-wrong-wrong-wrong"}}
		for range 60 { // client:ip allows 50 failures per window
			body(t, c, "POST", s.URL+"/oauth/token", wrong)
		}
		_, metrics := body(t, c, "GET", s.URL+"/metrics", nil)
		client := ""
		if clientLabels {
			client = `client_id="m2m",`
		}
		for _, want := range []string{
			`latchkey_token_requests_total{` + client + `grant="client_credentials",outcome="issued"} 1`,
			`latchkey_token_requests_total{` + client + `grant="client_credentials",outcome="invalid_client"}`,
			`latchkey_introspections_total{` + client + `outcome="active"} 1`,
			`latchkey_introspections_total{` + client + `outcome="inactive"} 1`,
			`latchkey_throttle_refusals_total{kind="client:ip"}`,
			`latchkey_store_statement_duration_seconds_count{op="exec"}`,
			`latchkey_store_pool_in_use{pool="write"}`,
			`latchkey_store_pool_max_open{pool="read"}`,
			`latchkey_event_log_backlog`,
		} {
			if !strings.Contains(metrics, want) {
				t.Errorf("client_labels %v: /metrics lacks %s", clientLabels, want)
			}
		}
		if !clientLabels && strings.Contains(metrics, `client_id=`) {
			t.Error("a client_id label without metrics.client_labels")
		}
		if strings.Contains(metrics, "wrong-wrong") || strings.Contains(metrics, token) {
			t.Error("/metrics shows a secret")
		}
	}
}

// A refused request is logged at info level with why, the request id and
// the client id, never the secret it carried; durations are milliseconds.
func TestRefusalsAreLoggedWithWhy(t *testing.T) {
	cfg := &config.Config{Clients: []config.Client{{
		ClientID: "m2m", ClientSecret: "m2m-secret-m2m-secret", TokenEndpointAuthMethod: client.AuthClientSecretPost,
		GrantTypes: []string{client.GrantClientCredentials}, Scopes: []string{"read"}}}}
	s := servertest.Start(t, cfg, servertest.Options{})
	// The error adapter logs through the process logger (serve sets it).
	var buf bytes.Buffer
	defer slog.SetDefault(slog.Default())
	slog.SetDefault(slog.New(slog.NewTextHandler(&syncWriter{w: &buf}, nil)))
	status, _ := body(t, s.Client(), "POST", s.URL+"/oauth/token", url.Values{"grant_type": {"client_credentials"},
		"client_id": {"m2m"}, "client_secret": {"not-the-secret-value"}, "scope": {"read"}})
	if status != 401 {
		t.Fatalf("wrong secret: %d", status)
	}
	logs := s.Log.String() + buf.String()
	var line string
	for _, l := range strings.Split(logs, "\n") {
		if strings.Contains(l, `msg="request refused"`) {
			line = l
		}
	}
	if line == "" || !strings.Contains(line, "level=INFO") || !strings.Contains(line, "client_id=m2m") ||
		!strings.Contains(line, "code=invalid_client") || !strings.Contains(line, "request_id=") || !strings.Contains(line, "why=") {
		t.Errorf("refusal log line %q: want info level, request id, client id, code and why", line)
	}
	if strings.Contains(logs, "not-the-secret-value") {
		t.Error("the log holds the client secret")
	}
	if !strings.Contains(logs, "duration_ms=") {
		t.Error("request lines carry no duration_ms")
	}
}

type syncWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (s *syncWriter) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.w.Write(p)
}
