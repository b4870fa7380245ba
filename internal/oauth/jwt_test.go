package oauth_test

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"encoding/json"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"
	"golang.org/x/oauth2"
	"golang.org/x/oauth2/clientcredentials"

	"github.com/latchkey/latchkey/internal/clientauth"
	"github.com/latchkey/latchkey/internal/config"
	"github.com/latchkey/latchkey/internal/server/servertest"
)

// A client authenticating with private_key_jwt through golang.org/x/oauth2:
// the assertion goes in the endpoint parameters.
func TestClientCredentialsWithPrivateKeyJWT(t *testing.T) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	jwk := jose.JSONWebKey{Key: key, KeyID: "k1", Algorithm: "ES256", Use: "sig"}
	pub, _ := json.Marshal(jose.JSONWebKeySet{Keys: []jose.JSONWebKey{jwk.Public()}})
	var jwks map[string]any
	_ = json.Unmarshal(pub, &jwks)
	cfg := testConfig()
	cfg.Clients = append(cfg.Clients, config.Client{ClientID: "signer", TokenEndpointAuthMethod: "private_key_jwt",
		JWKS: jwks, GrantTypes: []string{"client_credentials"}, Scopes: []string{"read"}})
	for _, backend := range servertest.Backends {
		t.Run(backend, func(t *testing.T) {
			s := servertest.Start(t, cfg, servertest.Options{Backend: backend})
			signer, _ := jose.NewSigner(jose.SigningKey{Algorithm: jose.ES256, Key: jwk}, (&jose.SignerOptions{}).WithType("JWT"))
			assertion := func(jti string) string {
				a, err := jwt.Signed(signer).Claims(jwt.Claims{Issuer: "signer", Subject: "signer",
					Audience: jwt.Audience{s.URL + "/oauth/token"}, ID: jti,
					IssuedAt: jwt.NewNumericDate(time.Now()), Expiry: jwt.NewNumericDate(time.Now().Add(time.Minute))}).Serialize()
				if err != nil {
					t.Fatal(err)
				}
				return a
			}
			first := assertion("jti-1")
			cc := clientcredentials.Config{ClientID: "signer", TokenURL: s.URL + "/oauth/token", AuthStyle: oauth2.AuthStyleInParams,
				EndpointParams: url.Values{"client_assertion_type": {clientauth.AssertionType}, "client_assertion": {first}}}
			tok, err := cc.Token(clientCtx(s))
			if err != nil {
				t.Fatal(err)
			}
			if !strings.HasPrefix(tok.AccessToken, "lk_at_") {
				t.Errorf("token %+v", tok)
			}
			// The same assertion again is a replay.
			_, err = cc.Token(clientCtx(s))
			if re, ok := err.(*oauth2.RetrieveError); !ok || re.ErrorCode != "invalid_client" {
				t.Errorf("replayed assertion: %v, want invalid_client", err)
			}
		})
	}
}

func TestDeprecatedPasswordGrantOnlyWhenListed(t *testing.T) {
	cfg := testConfig()
	cfg.Clients = append(cfg.Clients, config.Client{ClientID: "legacy", ClientSecret: "legacy-secret-legacy",
		GrantTypes: []string{"password"}, Scopes: []string{"read"}})
	s := servertest.Start(t, cfg, servertest.Options{})
	legacy := &oauth2.Config{ClientID: "legacy", ClientSecret: "legacy-secret-legacy",
		Endpoint: oauth2.Endpoint{TokenURL: s.URL + "/oauth/v1/token", AuthStyle: oauth2.AuthStyleInHeader}}
	tok, err := legacy.PasswordCredentialsToken(clientCtx(s), personEmail, personPass)
	if err != nil || !strings.HasPrefix(tok.AccessToken, "lk_at_") {
		t.Fatalf("password grant for a client that lists it: %+v, %v", tok, err)
	}
	if _, err := legacy.PasswordCredentialsToken(clientCtx(s), personEmail, "wrong"); err == nil {
		t.Error("a wrong password got a token")
	}
	web := &oauth2.Config{ClientID: "web", ClientSecret: webSecret,
		Endpoint: oauth2.Endpoint{TokenURL: s.URL + "/oauth/token", AuthStyle: oauth2.AuthStyleInHeader}}
	_, err = web.PasswordCredentialsToken(clientCtx(s), personEmail, personPass)
	if re, ok := err.(*oauth2.RetrieveError); !ok || re.ErrorCode != "unauthorized_client" {
		t.Errorf("password grant for a client that does not list it: %v", err)
	}
}
