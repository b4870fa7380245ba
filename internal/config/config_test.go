package config

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/latchkey/latchkey/internal/client"
)

func writeFile(t *testing.T, body string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "latchkey.yaml")
	if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

const goodClient = `
clients:
  - client_id: web-app
    client_secret: "a-long-random-secret"
    redirect_uris: [http://127.0.0.1:3000/callback]
    grant_types: [authorization_code, refresh_token, client_credentials]
    scopes: [read, write]
`

func TestLoadDefaults(t *testing.T) {
	c, err := Load("", nil)
	if err != nil {
		t.Fatal(err)
	}
	if c.Listen != DefaultListen || c.Issuer != "http://"+DefaultListen || c.Database != DefaultDatabase ||
		c.SecretKeyFile != DefaultSecretKeyFile {
		t.Errorf("defaults: got %+v", c)
	}
}

func TestLoadClientDefaults(t *testing.T) {
	c, err := Load(writeFile(t, goodClient), nil)
	if err != nil {
		t.Fatal(err)
	}
	cl := c.Clients[0]
	if cl.TokenEndpointAuthMethod != client.AuthClientSecretBasic {
		t.Errorf("auth method default = %q, want client_secret_basic", cl.TokenEndpointAuthMethod)
	}
	if time.Duration(cl.AccessTokenLifetime) != time.Hour || time.Duration(cl.RefreshTokenLifetime) != 720*time.Hour {
		t.Errorf("lifetimes = %v, %v", cl.AccessTokenLifetime, cl.RefreshTokenLifetime)
	}
	if cl.ConsentRequired == nil || !*cl.ConsentRequired {
		t.Error("consent_required should default to true")
	}
}

// The config file, and only it, may allow cleartext http redirect URIs on
// other hosts (development); the switch reaches the client it is set on.
func TestInsecureHTTPRedirectSwitch(t *testing.T) {
	c, err := Load(writeFile(t, `clients:
  - client_id: dev
    token_endpoint_auth_method: none
    allow_insecure_http_redirect_uris: true
    redirect_uris: [http://dev.example:3000/cb]
    post_logout_redirect_uris: [http://dev.example:3000/bye]
  - client_id: prod
    token_endpoint_auth_method: none
    redirect_uris: [https://app.example/cb]
`), nil)
	if err != nil {
		t.Fatal(err)
	}
	dev, err := c.Clients[0].Registration()
	if err != nil {
		t.Fatal(err)
	}
	prod, err := c.Clients[1].Registration()
	if err != nil {
		t.Fatal(err)
	}
	if !dev.AllowInsecureHTTPRedirectURIs || prod.AllowInsecureHTTPRedirectURIs {
		t.Errorf("switch on dev %v, on prod %v", dev.AllowInsecureHTTPRedirectURIs, prod.AllowInsecureHTTPRedirectURIs)
	}
}

func TestEnvOverridesFile(t *testing.T) {
	p := writeFile(t, "listen: 127.0.0.1:9000\nlog:\n  level: warn\n")
	c, err := Load(p, []string{
		"LATCHKEY_LISTEN=127.0.0.1:9100",
		"LATCHKEY_DATABASE=postgres://u@h:5432/db",
		"LATCHKEY_ISSUER=https://id.example.com/",
		"LATCHKEY_LOG_LEVEL=debug",
		"LATCHKEY_SECRET_KEY_FILE=/tmp/k",
		"OTHER=1",
	})
	if err != nil {
		t.Fatal(err)
	}
	if c.Listen != "127.0.0.1:9100" || c.Database != "postgres://u@h:5432/db" ||
		c.Issuer != "https://id.example.com" || c.Log.Level != "debug" || c.SecretKeyFile != "/tmp/k" {
		t.Errorf("env overrides not applied: %+v", c)
	}
}

func TestLoadErrors(t *testing.T) {
	client := func(extra string) string {
		return "clients:\n  - client_id: c1\n" + extra
	}
	tests := []struct {
		name, file string
		env        []string
		want       string // substring of the error
	}{
		{"unknown top-level key is an error", "lisen: 1.2.3.4:80\n", nil, "line 1: unknown key lisen"},
		{"a seed person's look-alike address is an error", "persons:\n  - email: \"\\uff4aane@example.com\"\n    password: pw\n", nil,
			"compatibility characters"},
		{"unknown nested key is an error", client("    secret: x\n"), nil, "line 3: unknown key secret"},
		{"malformed yaml", "listen: [\n", nil, "config"},
		{"wrong type", "clients: 3\n", nil, "cannot unmarshal"},
		{"listen without port", "listen: localhost\n", nil, "listen"},
		{"issuer must be absolute", "issuer: /relative\n", nil, "issuer"},
		{"issuer without query", "issuer: http://a.example?x=1\n", nil, "issuer"},
		{"unsupported database", "database: mysql://x\n", nil, "database"},
		{"bad log level", "log:\n  level: loud\n", nil, "log.level"},
		{"bad duration", client("    redirect_uris: [https://a.example/cb]\n    client_secret: aaaaaaaaaaaaaaaaaaaa\n    access_token_lifetime: soon\n"), nil, "invalid duration"},
		{"unknown auth method", client("    client_secret: aaaaaaaaaaaaaaaaaaaa\n    token_endpoint_auth_method: magic\n    grant_types: [client_credentials]\n"), nil, "token_endpoint_auth_method"},
		{"basic needs a secret", client("    token_endpoint_auth_method: client_secret_basic\n    grant_types: [client_credentials]\n"), nil, "needs client_secret"},
		{"private_key_jwt needs keys", client("    token_endpoint_auth_method: private_key_jwt\n    grant_types: [client_credentials]\n"), nil, "needs jwks"},
		{"private_key_jwt takes no secret", client("    token_endpoint_auth_method: private_key_jwt\n    client_secret: aaaaaaaaaaaaaaaaaaaa\n    jwks_uri: https://a.example/jwks\n    grant_types: [client_credentials]\n"), nil, "does not use a client secret"},
		{"public client takes no secret", client("    token_endpoint_auth_method: none\n    client_secret: aaaaaaaaaaaaaaaaaaaa\n    redirect_uris: [https://a.example/cb]\n"), nil, "public client"},
		{"short secret refused", client("    client_secret: short\n    grant_types: [client_credentials]\n"), nil, "at least 16"},
		{"secret and hash both set", client("    client_secret: aaaaaaaaaaaaaaaaaaaa\n    client_secret_hash: $argon2id$x\n    grant_types: [client_credentials]\n"), nil, "not both"},
		{"hash must be PHC", client("    client_secret_hash: plain\n    grant_types: [client_credentials]\n"), nil, "PHC"},
		{"unknown grant type", client("    client_secret: aaaaaaaaaaaaaaaaaaaa\n    grant_types: [magic]\n"), nil, "not a known grant type"},
		{"public client cannot use client_credentials", client("    grant_types: [client_credentials]\n"), nil, "public client cannot use client_credentials"},
		{"redirect uri must be absolute", client("    redirect_uris: [/cb]\n"), nil, "is relative"},
		{"a javascript redirect uri is refused", client("    redirect_uris: ['JAVASCRIPT://a.example/%0aalert(1)']\n"), nil, "redirect_uris"},
		{"a data post-logout redirect uri is refused", client("    redirect_uris: [https://a.example/cb]\n    post_logout_redirect_uris: ['data:text/html,x']\n"), nil, "post_logout_redirect_uris"},
		{"cleartext http off loopback needs the dev switch", client("    redirect_uris: [http://dev.example/cb]\n"), nil, "cleartext http"},
		{"the dev switch does not let script schemes through", client("    allow_insecure_http_redirect_uris: true\n    redirect_uris: [http://dev.example/cb, 'javascript:alert(1)']\n"), nil, "javascript"},
		{"redirect uri without fragment", client("    redirect_uris: ['https://a.example/cb#x']\n"), nil, "fragment"},
		{"code grant needs a redirect uri", client("    grant_types: [authorization_code]\n"), nil, "needs at least one redirect URI"},
		{"bad scope token", client("    redirect_uris: [https://a.example/cb]\n    scopes: ['a b']\n"), nil, "scope token"},
		{"client listed twice", "clients:\n  - {client_id: c1, redirect_uris: [https://a.example/cb]}\n  - {client_id: c1, redirect_uris: [https://a.example/cb]}\n", nil, "listed twice"},
		{"client id with colon", "clients:\n  - {client_id: 'a:b', redirect_uris: [https://a.example/cb]}\n", nil, "without ':'"},
		{"jwks must hold keys", client("    jwks: {keys: []}\n    grant_types: [client_credentials]\n"), nil, "non-empty"},
		{"bad app platform", client("    redirect_uris: [https://a.example/cb]\n    app_platform: windows\n"), nil, "app_platform"},
		{"api user needs one password", "api_users:\n  - username: admin\n", nil, "exactly one"},
		{"api user with both passwords", "api_users:\n  - {username: admin, password: x, password_hash: $argon2id$y}\n", nil, "exactly one"},
		{"person email must be valid", "persons:\n  - {email: not-an-email, password: x}\n", nil, "not a valid address"},
		{"person needs a password", "persons:\n  - {email: a@example.com}\n", nil, "password"},
		{"bad trusted proxy", "trusted_proxies: [10.0.0.0/33]\n", nil, "trusted_proxies"},
		{"unknown token_keys", "token_keys: ordered\n", nil, "token_keys"},
		{"bad outbound allow range", "outbound:\n  allow: [10.0.0.0/33]\n", nil, "outbound.allow"},
		{"outbound allow entry is a URL", "outbound:\n  allow: ['http://test.internal/']\n", nil, "outbound.allow"},
		{"unknown token_keys from the environment", "", []string{"LATCHKEY_TOKEN_KEYS=Stamped"}, "token_keys"},
		{"bad events trusted proxy", "events:\n  trusted_proxies: [lb.example]\n", nil, "events.trusted_proxies"},
		{"bad listen from the environment is reported", "", []string{"LATCHKEY_LISTEN=nope"}, "listen"},
		{"bad debug_listen is reported", "", []string{"LATCHKEY_DEBUG_LISTEN=nope"}, "debug_listen"},
		{"unknown signing algorithm", "oidc:\n  signing_algorithm: HS256\n", nil, "oidc.signing_algorithm"},
		{"unknown oidc key", "oidc:\n  signing_alg: RS256\n", nil, "unknown key signing_alg"},
		{"id token lifetime too long", "oidc:\n  id_token_lifetime: 2d\n", nil, "oidc.id_token_lifetime"},
		{"publish ahead too short", "oidc:\n  key_publish_ahead: 10s\n", nil, "oidc.key_publish_ahead"},
		{"rotation within the publish-ahead time", "oidc:\n  key_rotation_period: 24h\n", nil, "oidc.key_rotation_period"},
		{"max signed lifetime below the id token's", "oidc:\n  id_token_lifetime: 2h\n  max_signed_lifetime: 1h\n", nil, "oidc.max_signed_lifetime"},
		{"bad signing algorithm from the environment", "", []string{"LATCHKEY_OIDC_SIGNING_ALGORITHM=none"}, "oidc.signing_algorithm"},
		{"unknown user details attribute", "introspection:\n  user_details: {nickname: nick}\n", nil, `unknown person attribute "nickname"`},
		{"custom attribute as a profile claim", "introspection:\n  user_details: {custom.work_mail: email}\n", nil, `"email" is reserved`},
		{"custom attribute as a profile attribute's name", "introspection:\n  user_details: {custom.shown: display_name}\n", nil, `"display_name" is reserved`},
		{"profile attribute as a protocol claim", "introspection:\n  user_details: {id: sub}\n", nil, `"sub" is a protocol claim`},
		{"two attributes on one key", "introspection:\n  user_details: {first_name: given, custom.given: given}\n", nil, `both map to "given"`},
		{"user details attribute without a key", "introspection:\n  user_details: {first_name: ''}\n", nil, "first_name has no key"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := ""
			if tt.file != "" {
				path = writeFile(t, tt.file)
			}
			_, err := Load(path, tt.env)
			if err == nil {
				t.Fatalf("Load succeeded, want error containing %q", tt.want)
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error = %q, want it to contain %q", err, tt.want)
			}
			if strings.Contains(err.Error(), "\n") {
				t.Errorf("error spans several lines: %q", err)
			}
		})
	}
}

// A custom attribute is released (introspection.user_details) under no
// reserved name (claim.Reserved), and no attribute under a protocol claim:
// every such name is refused at load, whatever else the mapping holds.
func TestUserDetailsKeysAreNeverReserved(t *testing.T) {
	for _, tc := range []struct {
		mapping string
		ok      bool
	}{
		{"{custom.loyalty: loyalty_level}", true},
		{"{first_name: name, display_name: shown}", true}, // the profile, under names of the operator's choice
		{"{custom.a: x, custom.b: y}", true},
		{"{custom.a: nonce}", false}, {"{custom.a: amr}", false}, {"{custom.a: at_hash}", false}, {"{custom.a: sid}", false},
		{"{custom.a: cnf}", false}, {"{custom.a: urn:vendor.com:oidc:group_policies}", false}, {"{custom.a: group_permissions}", false},
		{"{custom.a: name}", false}, {"{custom.a: given_name}", false}, {"{custom.a: email_verified}", false},
		{"{custom.a: phone_number}", false}, {"{custom.a: address}", false}, {"{custom.a: updated_at}", false},
		{"{custom.a: first_name}", false}, {"{custom.a: last_name}", false}, {"{custom.a: id}", false}, {"{custom.a: status}", false},
		{"{email: iss}", false}, {"{status: exp}", false}, {"{display_name: auth_time}", false},
		{"{custom.a: x, custom.b: x}", false},
	} {
		_, err := Load(writeFile(t, "introspection:\n  user_details: "+tc.mapping+"\n"), nil)
		if (err == nil) != tc.ok {
			t.Errorf("user_details %s: %v, want accepted=%v", tc.mapping, err, tc.ok)
		}
	}
}

func TestLoadMissingFile(t *testing.T) {
	_, err := Load(filepath.Join(t.TempDir(), "absent.yaml"), nil)
	if err == nil || !strings.Contains(err.Error(), "no such file") {
		t.Fatalf("err = %v", err)
	}
}

func TestParseDuration(t *testing.T) {
	for in, want := range map[string]time.Duration{"90s": 90 * time.Second, "1h": time.Hour, "30d": 720 * time.Hour} {
		got, err := ParseDuration(in)
		if err != nil || got != want {
			t.Errorf("ParseDuration(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	for _, in := range []string{"", "d", "-1d", "1.5d", "abc"} {
		if _, err := ParseDuration(in); err == nil {
			t.Errorf("ParseDuration(%q) succeeded", in)
		}
	}
}

func TestTrustedProxiesJoinBothKeys(t *testing.T) {
	c, err := Load(writeFile(t, "trusted_proxies: [10.0.0.0/8, 192.0.2.7]\nevents:\n  trusted_proxies: [192.0.2.7, 2001:db8::/32]\n"), nil)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := c.ProxyList(), []string{"10.0.0.0/8", "192.0.2.7", "2001:db8::/32"}; !slices.Equal(got, want) {
		t.Errorf("ProxyList = %v, want the union %v", got, want)
	}
}

func TestOIDCDefaults(t *testing.T) {
	c, err := Load(writeFile(t, goodClient+"  - client_id: long\n    redirect_uris: [https://a.example/cb]\n    access_token_lifetime: 3h\n"), nil)
	if err != nil {
		t.Fatal(err)
	}
	want := OIDC{SigningAlgorithm: "RS256", IDTokenLifetime: Duration(time.Hour),
		KeyRotationPeriod: Duration(2160 * time.Hour), KeyPublishAhead: Duration(24 * time.Hour),
		// The longest lifetime a key may sign for: the 3h access tokens.
		MaxSignedLifetime: Duration(3 * time.Hour)}
	if c.OIDC != want {
		t.Errorf("oidc = %+v, want %+v", c.OIDC, want)
	}
	c, err = Load(writeFile(t, "oidc:\n  signing_algorithm: EdDSA\n  max_signed_lifetime: 30m\n  id_token_lifetime: 5m\n"),
		[]string{"LATCHKEY_OIDC_KEY_PUBLISH_AHEAD=2h"})
	if err != nil {
		t.Fatal(err)
	}
	if c.OIDC.SigningAlgorithm != "EdDSA" || c.OIDC.MaxSignedLifetime != Duration(30*time.Minute) ||
		c.OIDC.KeyPublishAhead != Duration(2*time.Hour) {
		t.Errorf("oidc from file and environment = %+v", c.OIDC)
	}
}
