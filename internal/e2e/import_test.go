package e2e

import (
	"bytes"
	"context"
	"crypto/pbkdf2"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"golang.org/x/oauth2"

	"github.com/latchkey/latchkey/internal/config"
	"github.com/latchkey/latchkey/internal/server/servertest"
)

// TestImportedPersonLogsInInBrowser: a person imported with the PBKDF2 hash
// of another system signs in on the hosted page with the original password,
// and the client gets tokens; the hash is argon2id afterwards.
func TestImportedPersonLogsInInBrowser(t *testing.T) {
	const (
		email    = "imported@example.com"
		original = "the password of the old system"
		ref      = "5a1c0f2e-8d3b-4c6a-9e7f-1b2d3c4e5f60"
	)
	for _, backend := range servertest.Backends {
		t.Run(backend, func(t *testing.T) {
			ctx := newBrowser(t)
			app := newClientApp(t)
			cfg := testConfig(app.callbackURL())
			cfg.APIUsers = []config.APIUser{{Username: "importer", Password: "importer-password"}}
			s := servertest.Start(t, cfg, servertest.Options{Backend: backend})
			e := &env{backend: backend, s: s, app: app, ctx: ctx}

			salt := []byte("salt of the old system")
			digest, err := pbkdf2.Key(sha256.New, original, salt, 27500, 32)
			if err != nil {
				t.Fatal(err)
			}
			body, _ := json.Marshal(map[string]any{"persons": []any{map[string]any{
				"status": "ACTIVATED",
				"profile": map[string]any{"reference_id": ref, "name": map[string]any{"first_name": "Imre", "last_name": "Ported"},
					"email_addresses": []any{map[string]any{"value": email, "primary": true, "verified": true}}},
				"hashed_password": map[string]any{"digest": base64.StdEncoding.EncodeToString(digest),
					"salt": base64.StdEncoding.EncodeToString(salt), "nr_of_iterations": 27500},
			}}})
			req, _ := http.NewRequest("POST", s.URL+"/api/import/persons", bytes.NewReader(body))
			req.Header.Set("Content-Type", "application/json")
			req.SetBasicAuth("importer", "importer-password")
			resp, err := s.Client().Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != http.StatusCreated {
				t.Fatalf("import: %d", resp.StatusCode)
			}

			oc := e.oauthConfig("web", webSecret, oauth2.AuthStyleInHeader, "read")
			verifier := oauth2.GenerateVerifier()
			const state = "state-imported"
			expectPage(t, navigate(t, ctx, oc.AuthCodeURL(state, oauth2.S256ChallengeOption(verifier))), s.URL, "/login", 200)
			expectPage(t, login(t, ctx, email, original), s.URL, "/consent", 200)
			click(t, ctx, "allow")
			code := e.expectCode(t, app.wait(t), state)
			tok, err := oc.Exchange(e.oauthContext(t), code, oauth2.VerifierOption(verifier))
			if err != nil {
				t.Fatalf("exchange: %v", err)
			}
			expectTokens(t, tok)

			p, err := s.Store.GetPerson(context.Background(), ref)
			if err != nil {
				t.Fatal(err)
			}
			if !strings.HasPrefix(p.PasswordHash, "$argon2id$") {
				t.Errorf("after the first login the hash is %.16s…, want argon2id", p.PasswordHash)
			}
		})
	}
}
