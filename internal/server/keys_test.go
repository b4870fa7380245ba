package server_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/go-jose/go-jose/v4"

	"github.com/latchkey/latchkey/internal/openapicheck"
	"github.com/latchkey/latchkey/internal/server/servertest"
	"github.com/latchkey/latchkey/internal/signing"
	"github.com/latchkey/latchkey/internal/store/postgres/pgtest"
)

// The first start creates the signing key; a second instance on the same
// store uses it, and its JWKS verifies what the first one signed.
func TestJWKSAcrossInstances(t *testing.T) {
	for _, backend := range servertest.Backends {
		t.Run(backend, func(t *testing.T) {
			var a, b *servertest.Server
			clock := servertest.NewClock()
			if backend == "postgres" {
				dsn := pgtest.NewDatabase(t)
				a = servertest.Start(t, m2mConfig(), servertest.Options{Backend: backend, PostgresURL: dsn, Clock: clock})
				b = servertest.Start(t, m2mConfig(), servertest.Options{Backend: backend, PostgresURL: dsn, Clock: clock})
			} else {
				a = servertest.Start(t, m2mConfig(), servertest.Options{Clock: clock})
				b = a // SQLite serves one process
			}
			ctx := context.Background()
			keys, err := b.App.Keys().List(ctx)
			if err != nil || len(keys) != 1 || keys[0].State != signing.StateSigning || keys[0].Algorithm != signing.RS256 {
				t.Fatalf("keys after the starts: %+v, %v; want one RS256 key, signing", keys, err)
			}
			tok, err := a.App.Keys().Sign(ctx, fmt.Appendf(nil, `{"sub":"x","exp":%d}`, clock.Now().Add(time.Hour).Unix()), "JWT")
			if err != nil {
				t.Fatal(err)
			}

			req, _ := http.NewRequest("GET", b.URL+signing.PathJWKS, nil)
			resp, body := openapicheck.Do(t, b.Client(), req)
			if resp.StatusCode != http.StatusOK || resp.Header.Get("Cache-Control") != "public, max-age=3600" {
				t.Fatalf("GET %s: %d, Cache-Control %q", signing.PathJWKS, resp.StatusCode, resp.Header.Get("Cache-Control"))
			}
			var set jose.JSONWebKeySet
			if err := json.Unmarshal(body, &set); err != nil {
				t.Fatal(err)
			}
			jws, err := jose.ParseSignedCompact(tok, []jose.SignatureAlgorithm{jose.RS256})
			if err != nil {
				t.Fatal(err)
			}
			found := set.Key(keys[0].KID)
			if len(found) != 1 || jws.Signatures[0].Header.KeyID != keys[0].KID {
				t.Fatalf("the JWKS %s does not hold the signing key %s", body, keys[0].KID)
			}
			if _, err := jws.Verify(found[0]); err != nil {
				t.Errorf("a token of one instance does not verify with the JWKS of the other: %v", err)
			}
		})
	}
}
