package e2e

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/go-jose/go-jose/v4"
	"golang.org/x/oauth2"

	"github.com/latchkey/latchkey/internal/client"
	"github.com/latchkey/latchkey/internal/config"
	"github.com/latchkey/latchkey/internal/oauth"
	"github.com/latchkey/latchkey/internal/server/servertest"
)

// The device flow's idp goes straight to the login method: the person
// types the code, signs in at the upstream latchkey, consents, and the
// device gets its tokens.
func TestDeviceFlowWithLoginMethodInBrowser(t *testing.T) {
	for _, backend := range servertest.Backends {
		t.Run(backend, func(t *testing.T) {
			e := newFedEnv(t, backend, config.Client{ClientID: "tv", Name: "Living Room TV", TokenEndpointAuthMethod: client.AuthNone,
				GrantTypes: []string{deviceGrant}, Scopes: []string{"read"}, ConsentRequired: boolPtr(true)})
			configure(t, e.s, `{"login_methods":{"login_methods":[`+
				oidcMethod("partner", "Partner", e.upIssuer+"/.well-known/openid-configuration", "latchkey-rp", upSecret, "")+`]}}`)
			oc := e.tvConfig("read")
			da, result := e.startDevice(t, oc, oauth2.SetAuthURLParam("idp", "partner"))
			navigate(t, e.ctx, da.VerificationURI)
			do(t, e.ctx, "type the user code", typeInto(chromedp.ID("user_code"), da.UserCode))
			expectPage(t, click(t, e.ctx, "submit"), e.upIssuer, "/login", 200)
			expectPage(t, login(t, e.ctx, "alice@example.com", upPass), e.s.URL, "/consent", 200)
			expectPage(t, click(t, e.ctx, "allow"), e.s.URL, oauth.PathDeviceVerification, 200)
			expectDeviceStatus(t, e.ctx, "approved")
			r := <-result
			if r.err != nil {
				t.Fatalf("device token: %v", r.err)
			}
			if sub := introspectSub(t, e.s, r.tok.AccessToken); sub != personByEmail(t, e.s.Store, "alice@example.com").ID {
				t.Errorf("the device's token is of %q, want the upstream identity's person", sub)
			}
		})
	}
}

// PRIVATE_KEY_JWT against a real upstream: the upstream latchkey knows
// latchkey's key pair (kid = the key pair's id) as the client's JWKS.
func TestPrivateKeyJWTLoginMethodInBrowser(t *testing.T) {
	for _, backend := range servertest.Backends {
		t.Run(backend, func(t *testing.T) {
			ctx := newBrowser(t)
			app := newClientApp(t)
			cfg := testConfig(app.callbackURL())
			cfg.APIUsers = []config.APIUser{{Username: fedAdmin, Password: fedAdminPass}}
			s := servertest.Start(t, cfg, servertest.Options{Backend: backend})
			e := &fedEnv{env: &env{backend: backend, s: s, app: app, ctx: ctx}}

			key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
			if err != nil {
				t.Fatal(err)
			}
			pkcs8, _ := x509.MarshalPKCS8PrivateKey(key)
			pub, _ := x509.MarshalPKIXPublicKey(&key.PublicKey)
			b64 := func(typ string, der []byte) string {
				return base64.StdEncoding.EncodeToString(pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}))
			}
			configure(t, s, `{"key_pairs":[{"name":"rp","key_type":"CERTIFICATE_EC_PRIVATE_KEY","public_key":"`+b64("PUBLIC KEY", pub)+
				`","private_key":"`+b64("PRIVATE KEY", pkcs8)+`"}]}`)
			keyID := keyPairID(t, s, "rp")
			jwk, _ := json.Marshal(jose.JSONWebKeySet{Keys: []jose.JSONWebKey{{Key: &key.PublicKey, KeyID: keyID, Algorithm: "ES256", Use: "sig"}}})
			var jwks map[string]any
			json.Unmarshal(jwk, &jwks)
			up := servertest.Start(t, &config.Config{
				Clients: []config.Client{{ClientID: "latchkey-pkj", Name: "Downstream latchkey",
					TokenEndpointAuthMethod: client.AuthPrivateKeyJWT, JWKS: jwks, RedirectURIs: []string{s.URL + "/login/oidc/callback"},
					GrantTypes: []string{client.GrantAuthorizationCode}, Scopes: []string{"read"}, ConsentRequired: boolPtr(false)}},
				Persons: []config.Person{{Email: "pia@example.com", Password: upPass, FirstName: "Pia"}},
			}, servertest.Options{Host: "localhost"})
			upIssuer := strings.Replace(up.URL, "127.0.0.1", "localhost", 1)
			configure(t, s, `{"login_methods":{"login_methods":[{"id":"pkj","name":"Partner","type":"OPEN_ID_CONNECT","enabled":true,
				"auto_activation_enabled":true,"open_id_connect_attributes":{"client_authentication_method":"PRIVATE_KEY_JWT",
				"client_id":"latchkey-pkj","signing_key_id":"`+keyID+`","discovery_url":"`+upIssuer+`/.well-known/openid-configuration",
				"scopes":["openid","email"]}}]}}`)
			cfgW, verifier := e.authorize(t, "pkj-1", oauth2.SetAuthURLParam("idp", "pkj"))
			expectPage(t, login(t, ctx, "pia@example.com", upPass), s.URL, "/consent", 200)
			if idt := e.finish(t, cfgW, verifier, "pkj-1"); idt.Subject != personByEmail(t, s.Store, "pia@example.com").ID {
				t.Error("signed in as someone else")
			}
		})
	}
}

func keyPairID(t *testing.T, s *servertest.Server, name string) string {
	t.Helper()
	req, _ := http.NewRequestWithContext(context.Background(), http.MethodGet, s.URL+"/v2/config/certificates", nil)
	req.SetBasicAuth(fedAdmin, fedAdminPass)
	resp, err := s.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var body struct {
		KeyPairs []struct{ ID, Name string } `json:"key_pairs"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
		t.Fatal(err)
	}
	for _, k := range body.KeyPairs {
		if k.Name == name {
			return k.ID
		}
	}
	t.Fatalf("no key pair %s", name)
	return ""
}

// introspectSub is the sub of an active token ("" when inactive).
func introspectSub(t *testing.T, s *servertest.Server, token string) string {
	t.Helper()
	req, _ := http.NewRequest("POST", s.URL+"/oauth/api/v2/token/introspect", strings.NewReader(url.Values{"token": {token}}.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.SetBasicAuth("web", webSecret)
	resp, err := s.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var got struct {
		Active bool   `json:"active"`
		Sub    string `json:"sub"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&got); err != nil {
		t.Fatal(err)
	}
	if !got.Active {
		return ""
	}
	return got.Sub
}
