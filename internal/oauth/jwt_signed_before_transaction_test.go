package oauth_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/url"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"golang.org/x/oauth2"

	"github.com/latchkey/latchkey/internal/client"
	"github.com/latchkey/latchkey/internal/config"
	"github.com/latchkey/latchkey/internal/oauth"
	"github.com/latchkey/latchkey/internal/server/servertest"
	"github.com/latchkey/latchkey/internal/store"
)

// Every grant signs its JWT access token before its transaction, on
// every store (no signature runs inside a transaction); a new grant's
// with the grant id and time the transaction then writes. The transaction takes the token only when the
// claims it would sign are the ones signed. These tests hold the signed
// token to what is stored: the same times and scopes, the hook's claims
// when a hook runs, and an opaque token when a scope counts its uses.

const jwtSecret = "jwt-secret-jwt-secret-jwt"

func jwtConfig() *config.Config {
	cfg := introspectConfig()
	cfg.Clients = append(cfg.Clients, config.Client{ClientID: "jwt-api", ClientSecret: jwtSecret,
		AccessTokenFormat: client.FormatJWT, GrantTypes: []string{"client_credentials"}, Scopes: []string{"read", "write"}})
	return cfg
}

func jwtClaims(t *testing.T, tok string) map[string]any {
	t.Helper()
	parts := strings.Split(tok, ".")
	if len(parts) != 3 {
		t.Fatalf("not a JWT: %q", tok)
	}
	b, err := base64.RawURLEncoding.DecodeString(parts[1])
	if err != nil {
		t.Fatal(err)
	}
	var c map[string]any
	if err := json.Unmarshal(b, &c); err != nil {
		t.Fatal(err)
	}
	return c
}

func jwtToken(t *testing.T, s *servertest.Server, scope string) answer {
	t.Helper()
	return post(t, s, "/oauth/token", url.Values{"grant_type": {"client_credentials"}, "scope": {scope}}, "jwt-api", jwtSecret)
}

func TestJWTAccessTokenIsTheStoredOne(t *testing.T) {
	forEachBackendWith(t, jwtConfig, func(t *testing.T, s *servertest.Server) {
		const n = 12
		toks := make([]answer, n)
		var wg sync.WaitGroup
		for i := range n {
			wg.Go(func() { toks[i] = jwtToken(t, s, "read write") })
		}
		wg.Wait()
		seen := map[string]bool{}
		for _, tok := range toks {
			if tok.status != 200 {
				t.Fatalf("token: %d %s", tok.status, tok.body)
			}
			at := tok.json["access_token"].(string)
			c := jwtClaims(t, at)
			if seen[c["jti"].(string)] {
				t.Errorf("jti %v issued twice", c["jti"])
			}
			seen[c["jti"].(string)] = true
			r := introspect(t, s, at, nil)
			if r.json["active"] != true || r.json["scope"] != "read write" || c["scope"] != "read write" ||
				r.json["iat"] != c["iat"] || r.json["exp"] != c["exp"] || r.json["client_id"] != "jwt-api" || c["sub"] != "jwt-api" {
				t.Errorf("the JWT %v and what its introspection answers %s differ", c, r.body)
			}
			if want := c["exp"].(float64) - c["iat"].(float64); tok.json["expires_in"] != want {
				t.Errorf("expires_in %v, want exp-iat %v", tok.json["expires_in"], want)
			}
		}
		// Revoked, the signed token is refused like the row it was stored as.
		at := toks[0].json["access_token"].(string)
		post(t, s, "/oauth/revoke", url.Values{"token": {at}}, "jwt-api", jwtSecret)
		if r := introspect(t, s, at, nil); r.json["active"] != false {
			t.Errorf("revoked JWT: %s", r.body)
		}
	})
}

func TestJWTAccessTokenCarriesTheHooksClaims(t *testing.T) {
	hook := newHook(t, hookSecret, `{"removeScopes":["write"],"additionalClaims":{"tier":"gold"}}`)
	cfg := jwtConfig()
	cfg.Webhooks.AccessToken = config.Webhook{URL: hook.URL, Secret: hookSecret}
	s := servertest.Start(t, cfg, servertest.Options{})
	tok := jwtToken(t, s, "read write")
	if tok.status != 200 {
		t.Fatalf("token: %d %s", tok.status, tok.body)
	}
	c := jwtClaims(t, tok.json["access_token"].(string))
	if c["tier"] != "gold" || c["scope"] != "read" || tok.json["scope"] != "read" {
		t.Errorf("the hook narrowed the scopes and added a claim: JWT %v, answer %s", c, tok.body)
	}
	if r := introspect(t, s, tok.json["access_token"].(string), nil); r.json["scope"] != "read" || r.json["tier"] != "gold" {
		t.Errorf("introspection: %s", r.body)
	}
}

// The access token hook adds claims of its own, never a protocol claim
// (claim.Protocol): a client credentials token has no amr, acr, auth_time,
// nbf, cnf or sid of latchkey's, and the hook cannot give it one either
// (RFC 9068 section 2.2, RFC 7800 section 3.1).
func TestJWTAccessTokenTakesNoProtocolClaimFromTheHook(t *testing.T) {
	hook := newHook(t, hookSecret, `{"additionalClaims":{"tier":"gold","nbf":1,"cnf":{"jkt":"forged"},"sid":"forged",
		"amr":["hwk"],"acr":"3","auth_time":1,"nonce":"forged","azp":"forged","act":{"sub":"forged"},"may_act":{"sub":"forged"}}}`)
	cfg := jwtConfig()
	cfg.Webhooks.AccessToken = config.Webhook{URL: hook.URL, Secret: hookSecret}
	s := servertest.Start(t, cfg, servertest.Options{})
	tok := jwtToken(t, s, "read")
	if tok.status != 200 {
		t.Fatalf("token: %d %s", tok.status, tok.body)
	}
	c := jwtClaims(t, tok.json["access_token"].(string))
	if c["tier"] != "gold" || c["sub"] != "jwt-api" || c["client_id"] != "jwt-api" {
		t.Errorf("JWT %v: want the hook's tier and the client as subject", c)
	}
	for _, k := range []string{"nbf", "cnf", "sid", "amr", "acr", "auth_time", "nonce", "azp", "act", "may_act"} {
		if v, ok := c[k]; ok {
			t.Errorf("JWT carries the hook's %s = %v", k, v)
		}
	}
}

func TestJWTClientGetsAnOpaqueTokenForACountedScope(t *testing.T) {
	forEachBackendWith(t, jwtConfig, func(t *testing.T, s *servertest.Server) {
		if err := s.Store.CreateScope(t.Context(), store.Scope{ID: "write", UsageLimit: 2}); err != nil {
			t.Fatal(err)
		}
		tok := jwtToken(t, s, "write")
		at, _ := tok.json["access_token"].(string)
		if tok.status != 200 || strings.Count(at, ".") == 2 {
			t.Fatalf("a token whose uses are counted stays opaque: %d %s", tok.status, tok.body)
		}
		if r := introspect(t, s, at, nil); r.json["active"] != true || r.json["usage_count"] != float64(1) {
			t.Errorf("introspection: %s", r.body)
		}
		if c := jwtClaims(t, jwtToken(t, s, "read").json["access_token"].(string)); c["scope"] != "read" {
			t.Errorf("without the counted scope: %v", c)
		}
	})
}

// heldKeys are signing keys whose next access token signature can be held.
type heldKeys struct {
	oauth.Keys
	hold    atomic.Bool
	arrived chan struct{}
	release chan struct{}
	signed  atomic.Int32 // access tokens signed
}

func (k *heldKeys) SignClaims(ctx context.Context, typ string, build func(alg string) ([]byte, error)) (string, error) {
	if typ == oauth.AccessTokenType {
		k.signed.Add(1)
		if k.hold.CompareAndSwap(true, false) {
			k.arrived <- struct{}{}
			<-k.release
		}
	}
	return k.Keys.SignClaims(ctx, typ, build)
}

// allJWTConfig is issuingConfig with JWT access tokens for every client.
func allJWTConfig() *config.Config {
	cfg := issuingConfig()
	for i := range cfg.Clients {
		cfg.Clients[i].AccessTokenFormat = client.FormatJWT
	}
	return cfg
}

func TestJWTSignaturesHoldNoWriter(t *testing.T) {
	for _, backend := range servertest.Backends {
		for _, g := range everyGrant() {
			t.Run(backend+"/"+g.name, func(t *testing.T) {
				keys := &heldKeys{arrived: make(chan struct{}, 1), release: make(chan struct{})}
				s := servertest.Start(t, allJWTConfig(), servertest.Options{Backend: backend,
					WrapKeys: func(k oauth.Keys) oauth.Keys { keys.Keys = k; return keys }})
				var before int32
				hold := func() { before = keys.signed.Load(); keys.hold.Store(true) }
				got := heldWhileAnotherWrites(t, s, g, hold, keys.arrived, func() { close(keys.release) })
				// On PostgreSQL the revocation moves the token generation
				// that the held request decided on without reading it. A
				// grant whose first write is its transaction's commit
				// fails that commit's check and runs again, signing again
				// (client.Optimistically): one signature a run. The
				// password grant writes before it signs (the password
				// check), which confirms the generations first; the
				// implicit flow's page reads them.
				want := int32(1)
				if backend == "postgres" && !slices.Contains([]string{"password", "implicit"}, g.name) {
					want = 2
				}
				if n := keys.signed.Load() - before; n != want {
					t.Errorf("%d access tokens signed for one issuance, want %d", n, want)
				}
				c := jwtClaims(t, got.access)
				r := introspect(t, s, got.access, nil)
				if r.json["active"] != true || r.json["iat"] != c["iat"] || r.json["exp"] != c["exp"] || r.json["scope"] != c["scope"] {
					t.Errorf("the JWT %v and what its introspection answers %s differ", c, r.body)
				}
			})
		}
	}
}

// A token signed before the transaction is taken only when the transaction would sign the
// same claims: here the access token hook answers the transaction
// otherwise than it answered before it (the person was renamed between),
// and the token carries the second answer, signed inside.
func TestJWTSignedAgainWhenTheClaimsChanged(t *testing.T) {
	for _, backend := range servertest.Backends {
		t.Run(backend, func(t *testing.T) {
			access := newHeldHook(t, func(n int) string { return fmt.Sprintf(`{"additionalClaims":{"call":%d}}`, n) })
			user := newHeldHook(t, always(`{}`))
			cfg := hooksConfig(access, user)
			for i := range cfg.Clients {
				cfg.Clients[i].AccessTokenFormat = client.FormatJWT
			}
			keys := &heldKeys{}
			s := servertest.Start(t, cfg, servertest.Options{Backend: backend,
				WrapKeys: func(k oauth.Keys) oauth.Keys { keys.Keys = k; return keys }})
			oc := oauthConfig(s, "web", webSecret, oauth2.AuthStyleInHeader)
			code, verifier := codeFor(t, s, browser(t, s), oc)
			access.hold.Store(true)
			answered := make(chan *oauth2.Token, 1)
			go func() {
				tok, err := oc.Exchange(clientCtx(s), code, oauth2.VerifierOption(verifier))
				if err != nil {
					t.Error(err)
				}
				answered <- tok
			}()
			<-access.arrived
			rename(t, s, "Janet")
			before := keys.signed.Load()
			close(access.release)
			tok := <-answered
			if tok == nil {
				return
			}
			if c := jwtClaims(t, tok.AccessToken); c["call"] != float64(2) {
				t.Errorf("the JWT %v, want the second answer's claim", c)
			}
			want := int32(2) // before the transaction, then inside
			if n := keys.signed.Load() - before; n != want {
				t.Errorf("%d access tokens signed for the exchange, want %d", n, want)
			}
			if r := introspect(t, s, tok.AccessToken, nil); r.json["active"] != true || r.json["call"] != float64(2) {
				t.Errorf("introspection: %s", r.body)
			}
		})
	}
}
