package server_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"encoding/json"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"

	"github.com/latchkey/latchkey/internal/client"
	"github.com/latchkey/latchkey/internal/config"
	"github.com/latchkey/latchkey/internal/server/servertest"
	"github.com/latchkey/latchkey/internal/store"
)

// jwksTarget is a local server a jwks_uri may point at: /jwks serves the
// key set of key, /redirect sends to /jwks, /error answers 500; hits
// counts the requests it got.
type jwksTarget struct {
	*httptest.Server
	key  *jose.JSONWebKey
	hits atomic.Int32
}

func newJWKSTarget(t *testing.T) *jwksTarget {
	t.Helper()
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	jt := &jwksTarget{key: &jose.JSONWebKey{Key: k, KeyID: "k1", Algorithm: "ES256", Use: "sig"}}
	set, _ := json.Marshal(jose.JSONWebKeySet{Keys: []jose.JSONWebKey{jt.key.Public()}})
	mux := http.NewServeMux()
	mux.HandleFunc("/jwks", func(w http.ResponseWriter, r *http.Request) {
		jt.hits.Add(1)
		w.Header().Set("Content-Type", "application/json")
		w.Write(set)
	})
	mux.HandleFunc("/redirect", func(w http.ResponseWriter, r *http.Request) {
		jt.hits.Add(1)
		http.Redirect(w, r, "/jwks", http.StatusFound)
	})
	mux.HandleFunc("/error", func(w http.ResponseWriter, r *http.Request) {
		jt.hits.Add(1)
		http.Error(w, `{"internal":"details"}`, http.StatusInternalServerError)
	})
	jt.Server = httptest.NewServer(mux)
	t.Cleanup(jt.Close)
	return jt
}

// closedPort is an address on which nothing listens.
func closedPort(t *testing.T) string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	return addr
}

// tokenWithAssertion asks for a client_credentials token as clientID,
// authenticating with a private_key_jwt assertion signed by key.
func tokenWithAssertion(t *testing.T, s *servertest.Server, clientID string, key *jose.JSONWebKey) (int, string) {
	t.Helper()
	signer, err := jose.NewSigner(jose.SigningKey{Algorithm: jose.ES256, Key: key.Key},
		(&jose.SignerOptions{}).WithType("JWT").WithHeader("kid", key.KeyID))
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	assertion, err := jwt.Signed(signer).Claims(jwt.Claims{Issuer: clientID, Subject: clientID,
		Audience: jwt.Audience{s.URL + "/oauth/token"}, Expiry: jwt.NewNumericDate(now.Add(time.Minute)),
		IssuedAt: jwt.NewNumericDate(now), ID: clientID + now.String()}).Serialize()
	if err != nil {
		t.Fatal(err)
	}
	return body(t, s.Client(), "POST", s.URL+"/oauth/token", url.Values{"grant_type": {"client_credentials"},
		"client_assertion_type": {"urn:ietf:params:oauth:client-assertion-type:jwt-bearer"}, "client_assertion": {assertion}})
}

// keyClient stores a private_key_jwt client with jwks_uri uri straight
// into the store, as a client registered before the registration rules
// refused such URIs would be: the fetch itself must refuse.
func keyClient(t *testing.T, s *servertest.Server, id, uri string) {
	t.Helper()
	if err := s.Store.CreateClient(context.Background(), store.Client{ID: id, TokenEndpointAuthMethod: client.AuthPrivateKeyJWT,
		JWKSURI: uri, GrantTypes: []string{client.GrantClientCredentials}, AccessTokenLifetime: time.Hour,
		RefreshTokenLifetime: time.Hour}); err != nil {
		t.Fatal(err)
	}
}

// A jwks_uri on loopback or the metadata address is never fetched, and the
// token endpoint answers the same whether the port is open or closed.
func TestJWKSURIOnInternalAddressesIsNotFetched(t *testing.T) {
	s := servertest.Start(t, &config.Config{}, servertest.Options{})
	target := newJWKSTarget(t)
	uris := map[string]string{
		"open-http":    target.URL + "/jwks",
		"open-https":   "https://" + target.Listener.Addr().String() + "/jwks",
		"open-mapped":  "http://[::ffff:127.0.0.1]:" + port(t, target.URL) + "/jwks",
		"open-redir":   target.URL + "/redirect",
		"closed-http":  "http://" + closedPort(t) + "/jwks",
		"closed-https": "https://" + closedPort(t) + "/jwks",
		"metadata":     "http://169.254.169.254/latest/meta-data/",
		"localhost":    "http://localhost:" + port(t, target.URL) + "/jwks",
	}
	answers := map[string]string{}
	for id, uri := range uris {
		keyClient(t, s, id, uri)
		status, b := tokenWithAssertion(t, s, id, target.key)
		if status != http.StatusUnauthorized {
			t.Errorf("%s (%s): status %d, want 401: %s", id, uri, status, b)
		}
		answers[id] = b
	}
	for id, b := range answers {
		if b != answers["closed-http"] {
			t.Errorf("%s answered %s\nclosed port answered %s", id, b, answers["closed-http"])
		}
	}
	if n := target.hits.Load(); n != 0 {
		t.Fatalf("the internal server got %d requests", n)
	}
}

// With the target's address on outbound.allow (an operator's test server),
// the key set is fetched; a redirect is still not followed, and a 500, a
// redirect and a closed port read alike.
func TestJWKSURIOnAllowedAddress(t *testing.T) {
	s := servertest.Start(t, &config.Config{Outbound: config.Outbound{Allow: []string{"127.0.0.1"}}}, servertest.Options{})
	target := newJWKSTarget(t)
	keyClient(t, s, "direct", target.URL+"/jwks")
	if status, b := tokenWithAssertion(t, s, "direct", target.key); status != http.StatusOK {
		t.Fatalf("allowed jwks_uri: status %d: %s", status, b)
	}
	if n := target.hits.Load(); n != 1 {
		t.Fatalf("hits = %d, want 1", n)
	}

	answers := map[string]string{}
	for id, uri := range map[string]string{
		"redirect": target.URL + "/redirect",
		"error":    target.URL + "/error",
		"closed":   "http://" + closedPort(t) + "/jwks",
	} {
		keyClient(t, s, id, uri)
		status, b := tokenWithAssertion(t, s, id, target.key)
		if status != http.StatusUnauthorized {
			t.Errorf("%s: status %d, want 401: %s", id, status, b)
		}
		answers[id] = b
	}
	if n := target.hits.Load(); n != 3 { // /jwks once, /redirect and /error once each: the redirect not followed
		t.Fatalf("hits = %d, want 3", n)
	}
	for id, b := range answers {
		if b != answers["closed"] {
			t.Errorf("%s answered %s\nclosed port answered %s", id, b, answers["closed"])
		}
	}
}

func port(t *testing.T, raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		t.Fatal(err)
	}
	return u.Port()
}

// A config file client's jwks_uri is the operator's: fetched on any
// address, over http too, without outbound.allow. A registrant's client
// naming the same URI is still refused (and not served the operator's
// cached key set).
func TestConfigFileJWKSURIKeepsFreedom(t *testing.T) {
	target := newJWKSTarget(t)
	s := servertest.Start(t, &config.Config{Clients: []config.Client{{ClientID: "file", TokenEndpointAuthMethod: client.AuthPrivateKeyJWT,
		JWKSURI: target.URL + "/jwks", GrantTypes: []string{client.GrantClientCredentials}}}}, servertest.Options{})
	if status, b := tokenWithAssertion(t, s, "file", target.key); status != http.StatusOK {
		t.Fatalf("config file client: status %d: %s", status, b)
	}
	keyClient(t, s, "stored", target.URL+"/jwks")
	if status, b := tokenWithAssertion(t, s, "stored", target.key); status != http.StatusUnauthorized {
		t.Fatalf("stored client with the same jwks_uri: status %d, want 401: %s", status, b)
	}
	if n := target.hits.Load(); n != 1 {
		t.Fatalf("hits = %d, want 1 (the config file client's fetch only)", n)
	}
}
