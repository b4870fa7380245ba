package server_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/url"
	"strings"
	"testing"

	"github.com/latchkey/latchkey/internal/client"
	"github.com/latchkey/latchkey/internal/config"
	"github.com/latchkey/latchkey/internal/server"
	"github.com/latchkey/latchkey/internal/server/servertest"
	"github.com/latchkey/latchkey/internal/store"
	"github.com/latchkey/latchkey/internal/store/postgres"
	"github.com/latchkey/latchkey/internal/store/postgres/pgtest"
)

func m2mConfig() *config.Config {
	return &config.Config{Clients: []config.Client{{ClientID: "m2m", ClientSecret: "m2m-secret-m2m-secret",
		TokenEndpointAuthMethod: client.AuthClientSecretPost, GrantTypes: []string{client.GrantClientCredentials},
		Scopes: []string{"read"}}}}
}

// An instance with another server key on the database of a running one is
// refused before it writes anything: before the check it re-hashed the
// static clients' secrets under its key, and the running instance answered
// invalid_client to the correct secret.
func TestAnotherServerKeyIsRefused(t *testing.T) {
	for _, backend := range servertest.Backends {
		t.Run(backend, func(t *testing.T) {
			ctx := context.Background()
			var dsn string
			if backend == "postgres" {
				dsn = pgtest.NewDatabase(t)
			}
			a := servertest.Start(t, m2mConfig(), servertest.Options{Backend: backend, PostgresURL: dsn})
			clientCredentials(t, a, 200)

			st := a.Store // SQLite: a second open of the file in this process shares it
			if backend == "postgres" {
				pg, err := postgres.Open(ctx, dsn)
				if err != nil {
					t.Fatal(err)
				}
				defer pg.Close()
				st = pg
			}
			cfg := m2mConfig()
			if err := cfg.Complete(); err != nil {
				t.Fatal(err)
			}
			otherKey := bytes.Repeat([]byte{7}, 32)
			_, err := server.New(ctx, cfg, st, slog.New(slog.NewTextHandler(io.Discard, nil)), otherKey, server.Options{})
			if !errors.Is(err, store.ErrServerKeyMismatch) {
				t.Fatalf("New with another key: %v, want ErrServerKeyMismatch", err)
			}
			// Nothing was written: config clients live in front of the
			// store (client.Static), so no secret hash under the other key
			// reached it.
			if c, err := st.GetClient(ctx, "m2m"); !errors.Is(err, store.ErrNotFound) {
				t.Errorf("after the refused start the store holds client %+v (%v), want none", c, err)
			}
			clientCredentials(t, a, 200)

			// The same key is welcome: a second instance, or a restart.
			if _, err := server.New(ctx, cfg, st, slog.New(slog.NewTextHandler(io.Discard, nil)), servertest.Key, server.Options{}); err != nil {
				t.Errorf("New with the recorded key: %v", err)
			}
			clientCredentials(t, a, 200)
		})
	}
}

// clientCredentials asks for m2m's token, checks the status and returns
// the access token ("" when refused).
func clientCredentials(t *testing.T, s *servertest.Server, want int) string {
	t.Helper()
	form := url.Values{"grant_type": {"client_credentials"}, "scope": {"read"},
		"client_id": {"m2m"}, "client_secret": {"m2m-secret-m2m-secret"}}
	resp, err := s.Client().Post(s.URL+"/oauth/token", "application/x-www-form-urlencoded", strings.NewReader(form.Encode()))
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != want {
		t.Errorf("client credentials: %d %s, want %d", resp.StatusCode, body, want)
	}
	var out struct {
		AccessToken string `json:"access_token"`
	}
	_ = json.Unmarshal(body, &out)
	return out.AccessToken
}
