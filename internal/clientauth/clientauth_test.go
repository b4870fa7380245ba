package clientauth

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"encoding/base64"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"

	"github.com/latchkey/latchkey/internal/outbound"
	"github.com/latchkey/latchkey/internal/password"
	"github.com/latchkey/latchkey/internal/store"
	"github.com/latchkey/latchkey/internal/token"
)

const issuer = "https://id.example.com"
const endpoint = issuer + "/oauth/token"

var now = time.Now().Truncate(time.Second)

type fakeStore struct {
	clients map[string]store.Client
	mu      sync.Mutex
	jtis    map[string]time.Time
}

func (f *fakeStore) GetClient(_ context.Context, id string) (store.Client, error) {
	c, ok := f.clients[id]
	if !ok {
		return c, store.ErrNotFound
	}
	return c, nil
}

func (f *fakeStore) UseAssertionID(_ context.Context, clientID, jti string, exp, now time.Time) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	k := clientID + "\x00" + jti
	if old, ok := f.jtis[k]; ok && old.After(now) {
		return store.ErrConflict
	}
	f.jtis[k] = exp
	return nil
}

type keys struct {
	rsa, ec, other *jose.JSONWebKey
}

func newKeys(t testing.TB) keys {
	t.Helper()
	rk, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	ek, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	ok, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	return keys{
		rsa:   &jose.JSONWebKey{Key: rk, KeyID: "rsa1", Algorithm: "RS256", Use: "sig"},
		ec:    &jose.JSONWebKey{Key: ek, KeyID: "ec1", Algorithm: "ES256", Use: "sig"},
		other: &jose.JSONWebKey{Key: ok, KeyID: "ec1", Algorithm: "ES256", Use: "sig"}, // same kid, other key
	}
}

func publicSet(ks ...*jose.JSONWebKey) []byte {
	var set jose.JSONWebKeySet
	for _, k := range ks {
		set.Keys = append(set.Keys, k.Public())
	}
	b, _ := json.Marshal(set)
	return b
}

func setup(t testing.TB) (*Authenticator, keys, *httptest.Server) {
	t.Helper()
	h, _ := token.NewHasher(bytes.Repeat([]byte{7}, 32))
	k := newKeys(t)
	phc, err := password.Hash("phc-secret-phc-secret")
	if err != nil {
		t.Fatal(err)
	}
	jwksSrv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Write(publicSet(k.ec))
	}))
	t.Cleanup(jwksSrv.Close)
	fs := &fakeStore{jtis: map[string]time.Time{}, clients: map[string]store.Client{
		"basic":     {ID: "basic", TokenEndpointAuthMethod: "client_secret_basic", SecretHash: h.Hash(token.LabelClientSecret, "s3cret:with%special&chars")},
		"post":      {ID: "post", TokenEndpointAuthMethod: "client_secret_post", SecretHash: h.Hash(token.LabelClientSecret, "post-secret-post-secret")},
		"phc":       {ID: "phc", TokenEndpointAuthMethod: "client_secret_basic", SecretPHC: phc},
		"public":    {ID: "public", TokenEndpointAuthMethod: "none"},
		"jwt":       {ID: "jwt", TokenEndpointAuthMethod: "private_key_jwt", JWKS: publicSet(k.rsa, k.ec)},
		"jwt-uri":   {ID: "jwt-uri", TokenEndpointAuthMethod: "private_key_jwt", JWKSURI: jwksSrv.URL},
		"jwt-nokid": {ID: "jwt-nokid", TokenEndpointAuthMethod: "private_key_jwt", JWKS: publicSet(k.rsa, k.ec)},
	}}
	a := &Authenticator{Clients: fs, Assertions: fs, Secrets: h, Issuer: issuer, Now: func() time.Time { return now },
		Outbound: outbound.MustNew(outbound.Options{Allow: []string{"127.0.0.1"}})}
	return a, k, jwksSrv
}

func sign(t testing.TB, k *jose.JSONWebKey, alg jose.SignatureAlgorithm, c jwt.Claims, kid bool) string {
	t.Helper()
	opts := (&jose.SignerOptions{}).WithType("JWT")
	if kid {
		opts = opts.WithHeader("kid", k.KeyID)
	}
	s, err := jose.NewSigner(jose.SigningKey{Algorithm: alg, Key: k.Key}, opts)
	if err != nil {
		t.Fatal(err)
	}
	out, err := jwt.Signed(s).Claims(c).Serialize()
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func good(sub string) jwt.Claims {
	return jwt.Claims{Issuer: sub, Subject: sub, Audience: jwt.Audience{endpoint}, Expiry: jwt.NewNumericDate(now.Add(time.Minute)),
		IssuedAt: jwt.NewNumericDate(now), ID: "jti-" + sub}
}

func req(form url.Values, basicUser, basicPass string) *http.Request {
	r := httptest.NewRequest("POST", "/oauth/token", strings.NewReader(form.Encode()))
	r.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	if basicUser != "" || basicPass != "" {
		r.SetBasicAuth(url.QueryEscape(basicUser), url.QueryEscape(basicPass))
	}
	if err := r.ParseForm(); err != nil {
		panic(err)
	}
	return r
}

func assertionForm(a string) url.Values {
	return url.Values{"client_assertion_type": {AssertionType}, "client_assertion": {a}}
}

func TestAuthenticate(t *testing.T) {
	a, k, _ := setup(t)
	noneHeader := base64.RawURLEncoding.EncodeToString([]byte(`{"alg":"none","typ":"JWT"}`))
	noneBody, _ := json.Marshal(good("jwt"))
	algNone := noneHeader + "." + base64.RawURLEncoding.EncodeToString(noneBody) + "."
	hsSigner, _ := jose.NewSigner(jose.SigningKey{Algorithm: jose.HS256, Key: []byte("a-shared-secret-of-32-bytes-long")}, nil)
	hs256, _ := jwt.Signed(hsSigner).Claims(good("jwt")).Serialize()

	mod := func(sub string, f func(*jwt.Claims)) jwt.Claims { c := good(sub); f(&c); return c }
	tests := []struct {
		name   string
		r      *http.Request
		client string // expected client on success
		method Method
		code   string // expected error code
		basic  bool   // expected WWW-Authenticate: Basic
	}{
		{"basic with the right secret", req(nil, "basic", "s3cret:with%special&chars"), "basic", MethodBasic, "", false},
		{"basic with a wrong secret", req(nil, "basic", "wrong"), "", "", "invalid_client", true},
		{"basic for an unknown client", req(nil, "nobody", "whatever"), "", "", "invalid_client", true},
		{"basic with a PHC-hashed secret", req(nil, "phc", "phc-secret-phc-secret"), "phc", MethodBasic, "", false},
		{"basic with a wrong PHC secret", req(nil, "phc", "nope"), "", "", "invalid_client", true},
		{"basic and post at once are refused", req(url.Values{"client_secret": {"x"}, "client_id": {"basic"}}, "basic", "s3cret:with%special&chars"), "", "", "invalid_request", true},
		{"basic and an assertion at once are refused", req(assertionForm("x"), "basic", "s3cret:with%special&chars"), "", "", "invalid_request", true},
		{"client_id differing from basic user", req(url.Values{"client_id": {"post"}}, "basic", "s3cret:with%special&chars"), "", "", "invalid_client", true},
		{"post with the right secret", req(url.Values{"client_id": {"post"}, "client_secret": {"post-secret-post-secret"}}, "", ""), "post", MethodPost, "", false},
		{"post with a wrong secret", req(url.Values{"client_id": {"post"}, "client_secret": {"nope"}}, "", ""), "", "", "invalid_client", false},
		{"post for a client registered for basic", req(url.Values{"client_id": {"basic"}, "client_secret": {"s3cret:with%special&chars"}}, "", ""), "", "", "invalid_client", false},
		{"basic for a client registered for post", req(nil, "post", "post-secret-post-secret"), "", "", "invalid_client", true},
		{"missing credentials", req(nil, "", ""), "", "", "invalid_client", true},
		{"public client with client_id only", req(url.Values{"client_id": {"public"}}, "", ""), "public", MethodNone, "", false},
		{"confidential client with client_id only", req(url.Values{"client_id": {"basic"}}, "", ""), "", "", "invalid_client", true},
		{"public client sending a secret", req(url.Values{"client_id": {"public"}, "client_secret": {"x"}}, "", ""), "", "", "invalid_client", false},
		{"repeated client_id", req(url.Values{"client_id": {"public", "public"}}, "", ""), "", "", "invalid_request", false},
		{"private_key_jwt RS256 with kid", req(assertionForm(sign(t, k.rsa, jose.RS256, good("jwt"), true)), "", ""), "jwt", MethodPrivateKey, "", false},
		{"private_key_jwt ES256 without kid", req(assertionForm(sign(t, k.ec, jose.ES256, mod("jwt-nokid", func(c *jwt.Claims) {}), false)), "", ""), "jwt-nokid", MethodPrivateKey, "", false},
		{"private_key_jwt via jwks_uri", req(assertionForm(sign(t, k.ec, jose.ES256, good("jwt-uri"), true)), "", ""), "jwt-uri", MethodPrivateKey, "", false},
		{"private_key_jwt with issuer as aud", req(assertionForm(sign(t, k.rsa, jose.RS256, mod("jwt", func(c *jwt.Claims) { c.Audience = jwt.Audience{issuer}; c.ID = "aud-issuer" }), true)), "", ""), "jwt", MethodPrivateKey, "", false},
		{"private_key_jwt expired", req(assertionForm(sign(t, k.rsa, jose.RS256, mod("jwt", func(c *jwt.Claims) { c.Expiry = jwt.NewNumericDate(now.Add(-time.Minute)); c.ID = "e1" }), true)), "", ""), "", "", "invalid_client", false},
		{"private_key_jwt exp too far ahead", req(assertionForm(sign(t, k.rsa, jose.RS256, mod("jwt", func(c *jwt.Claims) { c.Expiry = jwt.NewNumericDate(now.Add(time.Hour)); c.ID = "e2" }), true)), "", ""), "", "", "invalid_client", false},
		{"private_key_jwt without exp", req(assertionForm(sign(t, k.rsa, jose.RS256, mod("jwt", func(c *jwt.Claims) { c.Expiry = nil; c.ID = "e3" }), true)), "", ""), "", "", "invalid_client", false},
		{"private_key_jwt without jti", req(assertionForm(sign(t, k.rsa, jose.RS256, mod("jwt", func(c *jwt.Claims) { c.ID = "" }), true)), "", ""), "", "", "invalid_client", false},
		{"private_key_jwt wrong aud", req(assertionForm(sign(t, k.rsa, jose.RS256, mod("jwt", func(c *jwt.Claims) { c.Audience = jwt.Audience{"https://other.example"}; c.ID = "e4" }), true)), "", ""), "", "", "invalid_client", false},
		{"private_key_jwt signed by another key", req(assertionForm(sign(t, k.other, jose.ES256, mod("jwt", func(c *jwt.Claims) { c.ID = "e5" }), true)), "", ""), "", "", "invalid_client", false},
		{"private_key_jwt iss differs from sub", req(assertionForm(sign(t, k.rsa, jose.RS256, mod("jwt", func(c *jwt.Claims) { c.Issuer = "evil"; c.ID = "e6" }), true)), "", ""), "", "", "invalid_client", false},
		{"private_key_jwt not before in the future", req(assertionForm(sign(t, k.rsa, jose.RS256, mod("jwt", func(c *jwt.Claims) { c.NotBefore = jwt.NewNumericDate(now.Add(time.Minute)); c.ID = "e7" }), true)), "", ""), "", "", "invalid_client", false},
		{"private_key_jwt for a secret client", req(assertionForm(sign(t, k.rsa, jose.RS256, good("basic"), true)), "", ""), "", "", "invalid_client", false},
		{"private_key_jwt unknown client", req(assertionForm(sign(t, k.rsa, jose.RS256, good("nobody"), true)), "", ""), "", "", "invalid_client", false},
		{"alg none is refused", req(assertionForm(algNone), "", ""), "", "", "invalid_client", false},
		{"HS256 is refused", req(assertionForm(hs256), "", ""), "", "", "invalid_client", false},
		{"garbage assertion", req(assertionForm("not.a.jwt"), "", ""), "", "", "invalid_client", false},
		{"wrong assertion type", req(url.Values{"client_assertion_type": {"urn:other"}, "client_assertion": {"x"}}, "", ""), "", "", "invalid_request", false},
		{"client_id differing from the assertion", req(func() url.Values {
			v := assertionForm(sign(t, k.rsa, jose.RS256, mod("jwt", func(c *jwt.Claims) { c.ID = "e8" }), true))
			v.Set("client_id", "public")
			return v
		}(), "", ""), "", "", "invalid_client", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, m, err := a.Authenticate(tt.r, endpoint)
			if tt.code == "" {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				if c.ID != tt.client || m != tt.method {
					t.Errorf("got %s/%s, want %s/%s", c.ID, m, tt.client, tt.method)
				}
				return
			}
			var ce *Error
			if !errors.As(err, &ce) {
				t.Fatalf("err = %v, want *Error %s", err, tt.code)
			}
			if ce.Code != tt.code || ce.Basic != tt.basic {
				t.Errorf("got %s basic=%v (%s), want %s basic=%v", ce.Code, ce.Basic, ce, tt.code, tt.basic)
			}
			if strings.Contains(ce.Description, "s3cret") || strings.Contains(ce.Description, "eyJ") {
				t.Errorf("description leaks input: %s", ce.Description)
			}
		})
	}
}

func TestAssertionReplayIsRefused(t *testing.T) {
	a, k, _ := setup(t)
	assertion := sign(t, k.rsa, jose.RS256, good("jwt"), true)
	if _, _, err := a.Authenticate(req(assertionForm(assertion), "", ""), endpoint); err != nil {
		t.Fatalf("first use: %v", err)
	}
	_, _, err := a.Authenticate(req(assertionForm(assertion), "", ""), endpoint)
	var ce *Error
	if !errors.As(err, &ce) || ce.Code != "invalid_client" || !strings.Contains(ce.Description, "already used") {
		t.Errorf("replay: %v, want invalid_client (already used)", err)
	}
}

func TestBasicUsers(t *testing.T) {
	h, _ := password.Hash("change-me")
	b, err := NewBasicUsers(map[string]string{"admin": h})
	if err != nil {
		t.Fatal(err)
	}
	check := func(user, pass string) bool {
		r := httptest.NewRequest("GET", "/api/events", nil)
		if user != "" {
			r.SetBasicAuth(user, pass)
		}
		_, ok := b.Check(r)
		return ok
	}
	for range 2 { // the second round goes through the cache
		if !check("admin", "change-me") {
			t.Error("right credentials refused")
		}
	}
	for _, c := range [][2]string{{"admin", "wrong"}, {"nobody", "change-me"}, {"", ""}} {
		if check(c[0], c[1]) {
			t.Errorf("accepted %q/%q", c[0], c[1])
		}
	}
}

func FuzzBasicHeader(f *testing.F) {
	for _, s := range []string{"Basic YTpi", "Basic %%%", "Basic " + base64.StdEncoding.EncodeToString([]byte("a%zz:b")), "Bearer x", "basic"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, h string) {
		r := httptest.NewRequest("POST", "/", nil)
		r.Header.Set("Authorization", h)
		_, _, _, _ = basicCredentials(r) // must not panic
	})
}
