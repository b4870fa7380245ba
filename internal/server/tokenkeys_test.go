package server_test

import (
	"encoding/json"
	"net/url"
	"strings"
	"testing"

	"github.com/latchkey/latchkey/internal/config"
	"github.com/latchkey/latchkey/internal/server/servertest"
	"github.com/latchkey/latchkey/internal/store/postgres/pgtest"
)

// Stamped token values are minted by default only where no older release
// can be serving the same database (SQLite), and on PostgreSQL once the
// operator says so; every instance reads both kinds. Two instances on one
// PostgreSQL database, one of each kind, accept each other's tokens.
func TestTokenKeys(t *testing.T) {
	const plain, stamped = 43, 51 // characters after the prefix
	for _, tc := range []struct {
		backend, keys string
		want          int
	}{
		{"sqlite", "", stamped},
		{"sqlite", config.TokenKeysPlain, plain},
		{"postgres", "", plain},
		{"postgres", config.TokenKeysStamped, stamped},
	} {
		t.Run(tc.backend+"/"+tc.keys, func(t *testing.T) {
			var dsn string
			if tc.backend == "postgres" {
				dsn = pgtest.NewDatabase(t)
			}
			cfg := tokenKeysConfig(tc.keys)
			s := servertest.Start(t, cfg, servertest.Options{Backend: tc.backend, PostgresURL: dsn})
			tok := clientCredentials(t, s, 200)
			if got := len(strings.TrimPrefix(tok, "lk_at_")); got != tc.want {
				t.Errorf("token %q: %d characters after the prefix, want %d", tok, got, tc.want)
			}
			if !introspectActive(t, s, tok) {
				t.Errorf("token %q is not active at the instance that minted it", tok)
			}
			if tc.backend != "postgres" {
				return
			}
			other := config.TokenKeysStamped
			if tc.keys == config.TokenKeysStamped {
				other = config.TokenKeysPlain
			}
			o := servertest.Start(t, tokenKeysConfig(other), servertest.Options{Backend: "postgres", PostgresURL: dsn})
			if !introspectActive(t, o, tok) {
				t.Errorf("token %q of a %q instance is not active at a %q one", tok, tc.keys, other)
			}
			if tok2 := clientCredentials(t, o, 200); !introspectActive(t, s, tok2) {
				t.Errorf("token %q of a %q instance is not active at a %q one", tok2, other, tc.keys)
			}
		})
	}
}

func tokenKeysConfig(keys string) *config.Config {
	cfg := m2mConfig()
	cfg.TokenKeys = keys
	cfg.Clients[0].Scopes = append(cfg.Clients[0].Scopes, "introspect")
	cfg.Clients[0].IntrospectAnyToken = true
	return cfg
}

func introspectActive(t *testing.T, s *servertest.Server, tok string) bool {
	t.Helper()
	status, b := body(t, s.Client(), "POST", s.URL+"/oauth/api/v2/token/introspect",
		url.Values{"token": {tok}, "client_id": {"m2m"}, "client_secret": {"m2m-secret-m2m-secret"}})
	var out struct {
		Active bool `json:"active"`
	}
	if err := json.Unmarshal([]byte(b), &out); err != nil {
		t.Fatalf("introspection: %d %s", status, b)
	}
	return out.Active
}
