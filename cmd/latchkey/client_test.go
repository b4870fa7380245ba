package main

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/latchkey/latchkey/internal/client"
	"github.com/latchkey/latchkey/internal/config"
	"github.com/latchkey/latchkey/internal/server/servertest"
	"github.com/latchkey/latchkey/internal/store"
	"github.com/latchkey/latchkey/internal/store/postgres/pgtest"
)

// cliConfig writes a config file with one client and the given database,
// and a server key file; it returns the config's path.
func cliConfig(t *testing.T, database string) string {
	t.Helper()
	dir := t.TempDir()
	key := filepath.Join(dir, "secret.key")
	if err := os.WriteFile(key, servertest.Key, 0o600); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "latchkey.yaml")
	yaml := "database: " + database + "\nsecret_key_file: " + key + `
clients:
  - client_id: from-file
    client_secret: "from-file-secret-from-file"
    grant_types: [client_credentials]
`
	if err := os.WriteFile(path, []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

var secretLine = regexp.MustCompile(`(?m)^[A-Za-z0-9_-]{40,}$`)

// TestClientCommands runs the client commands against an embedded store
// that no server has open.
func TestClientCommands(t *testing.T) {
	db := filepath.Join(t.TempDir(), "latchkey.db")
	cfg := cliConfig(t, "sqlite:"+db)
	code, out, errs := runCLI("client", "create", "--config", cfg, "--id", "svc", "--auth-method", "client_secret_basic",
		"--grant-types", "client_credentials", "--scopes", "read,write")
	secret := secretLine.FindString(out)
	if code != 0 || !strings.Contains(out, "created client svc") || secret == "" {
		t.Fatalf("create: exit %d, stdout %q, stderr %q", code, out, errs)
	}
	body := filepath.Join(t.TempDir(), "client.json")
	if err := os.WriteFile(body, []byte(`{"client_id":"app","redirect_uris":["https://app.example/cb"]}`), 0o600); err != nil {
		t.Fatal(err)
	}
	if code, out, errs := runCLI("client", "create", "--config", cfg, "--file", body); code != 0 ||
		!strings.Contains(out, "created client app (none") || strings.Contains(out, "client_secret") {
		t.Errorf("create from a file: exit %d, stdout %q, stderr %q", code, out, errs)
	}
	code, out, errs = runCLI("client", "list", "--config", cfg)
	if code != 0 || !regexp.MustCompile(`(?m)^from-file\s+config\s`).MatchString(out) ||
		!regexp.MustCompile(`(?m)^svc\s+api\s+client_secret_basic\s+client_credentials\s+read,write`).MatchString(out) {
		t.Errorf("list: exit %d, stdout %q, stderr %q", code, out, errs)
	}
	code, out, _ = runCLI("client", "show", "svc", "--config", cfg)
	var shown map[string]any
	if code != 0 || json.Unmarshal([]byte(out), &shown) != nil || shown["client_id"] != "svc" || strings.Contains(out, secret) {
		t.Errorf("show: exit %d, stdout %q", code, out)
	}
	code, out, errs = runCLI("client", "rotate-secret", "svc", "--config", cfg)
	fresh := secretLine.FindString(out)
	if code != 0 || fresh == "" || fresh == secret {
		t.Errorf("rotate-secret: exit %d, stdout %q, stderr %q", code, out, errs)
	}

	// What the commands wrote serves: a token for the new secret.
	s := startOn(t, "sqlite:"+db)
	if tok := tokenFor(t, s, client.AuthClientSecretBasic, "svc", fresh); tok == "" {
		t.Error("no token for the rotated secret")
	}
	if tok := tokenFor(t, s, client.AuthClientSecretBasic, "svc", secret); tok != "" {
		t.Error("a token for the old secret")
	}

	if code, out, errs := runCLI("client", "delete", "svc", "--config", cfg); code != 0 || !strings.Contains(out, "deleted client svc: revoked 1 grant(s)") {
		t.Errorf("delete: exit %d, stdout %q, stderr %q", code, out, errs)
	}
	for name, tc := range map[string]struct {
		args []string
		code int
		msg  string
	}{
		"unknown client":    {[]string{"client", "delete", "svc", "--config", cfg}, 1, `no client with id "svc"`},
		"a file's client":   {[]string{"client", "rotate-secret", "from-file", "--config", cfg}, 1, "defined in the config file"},
		"a taken id":        {[]string{"client", "create", "--id", "app", "--redirect-uris", "https://x.example/cb", "--config", cfg}, 1, "taken"},
		"a bad member":      {[]string{"client", "create", "--id", "x", "--grant-types", "magic", "--config", cfg}, 1, "grant_types:"},
		"no id":             {[]string{"client", "show", "--config", cfg}, 2, "want the CLIENT_ID"},
		"unknown command":   {[]string{"client", "frobnicate"}, 2, "unknown subcommand"},
		"unknown show flag": {[]string{"client", "show", "app", "--force"}, 2, "force"},
	} {
		code, _, errs := runCLI(tc.args...)
		if code != tc.code || !strings.Contains(errs, tc.msg) || strings.Count(errs, "\n") != 1 {
			t.Errorf("%s: exit %d, stderr %q", name, code, errs)
		}
	}
}

// startOn serves the database of a config with the test key.
func startOn(t *testing.T, database string) *servertest.Server {
	t.Helper()
	cfg := &config.Config{Clients: []config.Client{{ClientID: "from-file", ClientSecret: "from-file-secret-from-file",
		GrantTypes: []string{"client_credentials"}}}}
	opts := servertest.Options{Backend: "postgres", PostgresURL: database}
	if path, ok := strings.CutPrefix(database, "sqlite:"); ok {
		opts = servertest.Options{Backend: "sqlite", SQLitePath: path}
	}
	return servertest.Start(t, cfg, opts)
}

// tokenFor answers a client-credentials access token, "" when refused. The
// client authenticates with method: client_secret_basic or
// client_secret_post.
func tokenFor(t *testing.T, s *servertest.Server, method, id, secret string) string {
	t.Helper()
	form := url.Values{"grant_type": {"client_credentials"}}
	if method == client.AuthClientSecretPost {
		form.Set("client_id", id)
		form.Set("client_secret", secret)
	}
	req, _ := http.NewRequest("POST", s.URL+"/oauth/token", strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	if method == client.AuthClientSecretBasic {
		req.SetBasicAuth(id, secret)
	}
	resp, err := s.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var v map[string]any
	_ = json.NewDecoder(resp.Body).Decode(&v)
	tok, _ := v["access_token"].(string)
	return tok
}

// TestClientCommandsBesideRunningServers: on PostgreSQL the commands run
// beside a serving instance that has the client cached, and it answers
// every change at once.
func TestClientCommandsBesideRunningServers(t *testing.T) {
	dsn := pgtest.NewDatabase(t)
	cfg := cliConfig(t, dsn)
	s := startOn(t, dsn)
	code, out, errs := runCLI("client", "create", "--config", cfg, "--id", "svc", "--auth-method", "client_secret_post",
		"--grant-types", "client_credentials")
	secret := secretLine.FindString(out)
	if code != 0 || secret == "" {
		t.Fatalf("create: exit %d, stdout %q, stderr %q", code, out, errs)
	}
	token := func(secret string) string { return tokenFor(t, s, client.AuthClientSecretPost, "svc", secret) }
	for range 2 { // the second answer from the server's cache
		if token(secret) == "" {
			t.Fatal("the created client gets no token")
		}
	}
	code, out, errs = runCLI("client", "rotate-secret", "svc", "--config", cfg)
	fresh := secretLine.FindString(out)
	if code != 0 || fresh == "" {
		t.Fatalf("rotate-secret: exit %d, stdout %q, stderr %q", code, out, errs)
	}
	if token(secret) != "" {
		t.Error("the serving instance takes the old secret after the rotation")
	}
	if token(fresh) == "" {
		t.Error("the serving instance refuses the new secret")
	}
	if code, _, errs := runCLI("client", "delete", "svc", "--config", cfg); code != 0 {
		t.Fatalf("delete: exit %d, stderr %q", code, errs)
	}
	if token(fresh) != "" {
		t.Error("the serving instance issues tokens to the deleted client")
	}
	if _, err := s.Store.GetClient(context.Background(), "svc"); err == nil || !strings.Contains(err.Error(), store.ErrNotFound.Error()) {
		t.Errorf("the deleted client: %v", err)
	}
}

// The CLI refuses an internal jwks_uri as the admin API does (the server
// would never fetch it), and lets outbound.allow's hosts through.
func TestClientCreateRefusesInternalJWKSURI(t *testing.T) {
	db := filepath.Join(t.TempDir(), "latchkey.db")
	cfg := cliConfig(t, "sqlite:"+db)
	body := func(id, uri string) string {
		p := filepath.Join(t.TempDir(), id+".json")
		if err := os.WriteFile(p, []byte(`{"client_id":"`+id+`","token_endpoint_auth_method":"private_key_jwt",`+
			`"grant_types":["client_credentials"],"jwks_uri":"`+uri+`"}`), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	code, _, errs := runCLI("client", "create", "--config", cfg, "--file", body("meta", "http://169.254.169.254/keys"))
	if code != 1 || !strings.Contains(errs, "jwks_uri:") {
		t.Fatalf("create with the metadata address: exit %d, stderr %q", code, errs)
	}
	b, err := os.ReadFile(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(cfg, append(b, "outbound:\n  allow: [keys.internal]\n"...), 0o600); err != nil {
		t.Fatal(err)
	}
	if code, out, errs := runCLI("client", "create", "--config", cfg, "--file", body("inner", "http://keys.internal/jwks")); code != 0 {
		t.Fatalf("create with an allowed host: exit %d, stdout %q, stderr %q", code, out, errs)
	}
}
