package server_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"sync"
	"testing"

	"golang.org/x/oauth2"

	"github.com/latchkey/latchkey/internal/client"
	"github.com/latchkey/latchkey/internal/config"
	"github.com/latchkey/latchkey/internal/server/servertest"
)

const refusalSecret = "basic-secret-0123456789abcdef"

// syncBuffer is a buffer the server's goroutines may write while a test reads.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}
func (s *syncBuffer) String() string { s.mu.Lock(); defer s.mu.Unlock(); return s.b.String() }

func refusalConfig(level string) *config.Config {
	yes := true
	return &config.Config{
		Log: config.Log{Level: level},
		Clients: []config.Client{
			{ClientID: "basic", ClientSecret: refusalSecret, TokenEndpointAuthMethod: client.AuthClientSecretBasic,
				RedirectURIs: []string{"http://127.0.0.1:9/cb"}, ConsentRequired: &yes,
				GrantTypes: []string{client.GrantClientCredentials, client.GrantDeviceCode, client.GrantAuthorizationCode},
				Scopes:     []string{"read"}},
		},
	}
}

// oauthAnswer posts form to path and returns the status, the OAuth error
// body and the X-Request-Id.
func oauthAnswer(t *testing.T, s *servertest.Server, path string, form url.Values) (int, map[string]string, string) {
	t.Helper()
	resp, err := s.Client().PostForm(s.URL+path, form)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var b map[string]string
	raw, _ := io.ReadAll(resp.Body)
	if err := json.Unmarshal(raw, &b); err != nil {
		t.Fatalf("%s: %d %s", path, resp.StatusCode, raw)
	}
	return resp.StatusCode, b, resp.Header.Get("X-Request-Id")
}

// TestRefusalReasons: with log.level debug the error_description of a
// refused client authentication carries the reason the log has; at the
// default level it says only "Client authentication failed." (the same
// for an unknown client, a wrong secret or a wrong method). The log has
// the reason in both modes, with the request id the caller saw.
func TestRefusalReasons(t *testing.T) {
	tests := []struct {
		name, path, why string
		form            url.Values
	}{
		{"a client_secret_basic client sends client_secret_post", "/oauth/token",
			"the client is registered for client_secret_basic and used client_secret_post",
			url.Values{"grant_type": {"client_credentials"}, "client_id": {"basic"}, "client_secret": {refusalSecret}}},
		{"a confidential client sends no credentials to the device endpoint", "/oauth/device_authorization",
			"the client is registered for client_secret_basic and sent no credentials",
			url.Values{"client_id": {"basic"}, "scope": {"read"}}},
		{"an unknown client", "/oauth/token", "unknown client",
			url.Values{"grant_type": {"client_credentials"}, "client_id": {"nobody"}, "client_secret": {refusalSecret}}},
	}
	// The adapter logs refusals to the default logger (serve sets it to
	// the server's).
	logged := &syncBuffer{}
	defer slog.SetDefault(slog.Default())
	slog.SetDefault(slog.New(slog.NewTextHandler(logged, nil)))
	for _, level := range []string{"info", "debug"} {
		s := servertest.Start(t, refusalConfig(level), servertest.Options{})
		for _, tt := range tests {
			t.Run(level+"/"+tt.name, func(t *testing.T) {
				status, b, id := oauthAnswer(t, s, tt.path, tt.form)
				want := "Client authentication failed."
				if level == "debug" {
					want += " (" + tt.why + ")"
				}
				if status != http.StatusUnauthorized || b["error"] != "invalid_client" || b["error_description"] != want {
					t.Errorf("%d %v; want 401 invalid_client %q", status, b, want)
				}
				if strings.Contains(b["error_description"], refusalSecret) {
					t.Error("the secret is in the answer")
				}
				line := logLine(t, logged.String(), "request refused", "request_id="+id)
				if !strings.Contains(line, tt.why) {
					t.Errorf("the log line of the refusal lacks %q: %s", tt.why, line)
				}
				if access := logLine(t, s.Log.String(), "request_id="+id); !strings.Contains(access, `route="POST `+tt.path+`"`) {
					t.Errorf("the access log line lost the route: %s", access)
				}
				if strings.Contains(s.Log.String()+logged.String(), refusalSecret) {
					t.Error("the secret is in the log")
				}
			})
		}
	}
}

// logLine is the log line that contains every one of parts.
func logLine(t *testing.T, log string, parts ...string) string {
	t.Helper()
	for _, l := range strings.Split(log, "\n") {
		ok := true
		for _, p := range parts {
			ok = ok && strings.Contains(l, p)
		}
		if ok {
			return l
		}
	}
	t.Fatalf("no log line with %q:\n%s", parts, log)
	return ""
}

// TestAuthorizeRefusalsAreLoggedWithTheRequestID: every refused
// authorization request logs why, with the request id that the error
// page shows (or the redirect's response carries).
func TestAuthorizeRefusalsAreLoggedWithTheRequestID(t *testing.T) {
	s := servertest.Start(t, refusalConfig("info"), servertest.Options{})
	b := s.Browser()
	good := url.Values{"response_type": {"code"}, "client_id": {"basic"}, "redirect_uri": {"http://127.0.0.1:9/cb"},
		"scope": {"read"}, "state": {"s"}, "code_challenge": {"E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM"},
		"code_challenge_method": {"S256"}}
	with := func(k, v string) url.Values {
		q := url.Values{}
		for k, vs := range good {
			q[k] = vs
		}
		if v == "" {
			q.Del(k)
		} else {
			q.Set(k, v)
		}
		return q
	}
	tests := []struct {
		name  string
		q     url.Values
		page  bool   // an error page, else a redirect to the client
		logs  string // in the log line
		shown string // on the page or in the redirect
	}{
		{"no client_id", with("client_id", ""), true, "no client_id", "names no client"},
		{"an unknown client", with("client_id", "nobody"), true, "unknown client", "not known"},
		{"an unregistered redirect_uri", with("redirect_uri", "http://127.0.0.1:9/other"), true, "redirect_uri", "redirect_uri"},
		{"an unknown scope", with("scope", "delete-everything"), false, "scope", "scope"},
		{"no PKCE", with("code_challenge", ""), false, "code_challenge", "code_challenge"},
	}
	idRE := regexp.MustCompile(`id="request-id">[^<]*<code>([0-9a-f]+)</code>`)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp, err := b.Get(s.URL + "/oauth/authorize?" + tt.q.Encode())
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			id := resp.Header.Get("X-Request-Id")
			if tt.page {
				m := idRE.FindSubmatch(body)
				if resp.StatusCode != http.StatusBadRequest || m == nil || string(m[1]) != id || !strings.Contains(string(body), tt.shown) {
					t.Fatalf("%d, want an error page with %q and the request id %s:\n%s", resp.StatusCode, tt.shown, id, body)
				}
			} else {
				loc, err := resp.Location()
				if err != nil || loc.Query().Get("error") == "" || !strings.Contains(loc.Query().Get("error_description"), tt.shown) {
					t.Fatalf("%d to %v, want an error redirect about %q", resp.StatusCode, loc, tt.shown)
				}
			}
			line := logLine(t, s.Log.String(), "authorization request refused", "request_id="+id)
			if !strings.Contains(line, tt.logs) {
				t.Errorf("the log line lacks %q: %s", tt.logs, line)
			}
		})
	}
}

// TestDeviceAuthWithGolangOAuth2 backs docs/OIDC.md: golang.org/x/oauth2's
// DeviceAuth sends no client secret, so a confidential client is refused
// unless the secret is put in the request; in the form, that works only
// for a client registered for client_secret_post.
func TestDeviceAuthWithGolangOAuth2(t *testing.T) {
	cfg := refusalConfig("info")
	cfg.Clients = append(cfg.Clients, config.Client{ClientID: "post", ClientSecret: refusalSecret,
		TokenEndpointAuthMethod: client.AuthClientSecretPost, GrantTypes: []string{client.GrantDeviceCode}, Scopes: []string{"read"}},
		config.Client{ClientID: "public", TokenEndpointAuthMethod: client.AuthNone,
			GrantTypes: []string{client.GrantDeviceCode}, Scopes: []string{"read"}})
	s := servertest.Start(t, cfg, servertest.Options{})
	ctx := context.WithValue(context.Background(), oauth2.HTTPClient, s.Client())
	oc := func(id string) *oauth2.Config {
		return &oauth2.Config{ClientID: id, ClientSecret: refusalSecret, Scopes: []string{"read"}, Endpoint: oauth2.Endpoint{
			DeviceAuthURL: s.URL + "/oauth/device_authorization", TokenURL: s.URL + "/oauth/token",
			AuthStyle: oauth2.AuthStyleInParams}}
	}
	secret := oauth2.SetAuthURLParam("client_secret", refusalSecret)
	tests := []struct {
		name, client string
		opts         []oauth2.AuthCodeOption
		ok           bool
	}{
		{"a public client as it is", "public", nil, true},
		{"a client_secret_post client without the secret", "post", nil, false},
		{"a client_secret_post client with the secret in the request", "post", []oauth2.AuthCodeOption{secret}, true},
		{"a client_secret_basic client with the secret in the form", "basic", []oauth2.AuthCodeOption{secret}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			da, err := oc(tt.client).DeviceAuth(ctx, tt.opts...)
			var re *oauth2.RetrieveError
			switch {
			case tt.ok && (err != nil || da.DeviceCode == ""):
				t.Errorf("DeviceAuth: %v", err)
			case !tt.ok && (!errors.As(err, &re) || re.ErrorCode != "invalid_client"):
				t.Errorf("DeviceAuth: %v (%+v), want invalid_client", err, da)
			}
		})
	}
}
