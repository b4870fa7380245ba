package federation_test

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"

	"github.com/latchkey/latchkey/internal/config"
	"github.com/latchkey/latchkey/internal/events"
	"github.com/latchkey/latchkey/internal/federation"
	"github.com/latchkey/latchkey/internal/outbound"
	"github.com/latchkey/latchkey/internal/request"
	"github.com/latchkey/latchkey/internal/server/servertest"
	"github.com/latchkey/latchkey/internal/store"
	"github.com/latchkey/latchkey/internal/token"
)

const apiUser, apiPass = "admin", "admin-password-0123"

// world is a latchkey server (for its store and configuration) and a
// federation service on them with a settable clock.
type world struct {
	s     *servertest.Server
	fed   *federation.Service
	clock *servertest.Clock
}

func forEachBackend(t *testing.T, fn func(t *testing.T, w *world)) {
	for _, b := range servertest.Backends {
		t.Run(b, func(t *testing.T) {
			clock := servertest.NewClock()
			s := servertest.Start(t, &config.Config{APIUsers: []config.APIUser{{Username: apiUser, Password: apiPass}},
				Persons: []config.Person{{Email: "jane@example.com", Password: "correct horse battery staple"}}},
				servertest.Options{Backend: b, Clock: clock})
			h, err := token.NewHasher(servertest.Key)
			if err != nil {
				t.Fatal(err)
			}
			rec := events.NewRecorder()
			rec.Now = clock.Now
			fed := &federation.Service{Store: s.Store, Config: s.App.Journeys().Config, Identity: s.App.Journeys().Identity,
				Hasher: h, Events: rec, Issuer: s.URL, HTTP: &http.Client{Timeout: 5 * time.Second}, LDAPTimeout: 5 * time.Second,
				PasswordLevel: 1, Now: clock.Now, Log: slog.New(slog.NewTextHandler(io.Discard, nil))}
			fn(t, &world{s: s, fed: fed, clock: clock})
		})
	}
}

// configure posts units to the configuration API.
func (w *world) configure(t *testing.T, body string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, w.s.URL+"/api/v2/config", strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.SetBasicAuth(apiUser, apiPass)
	resp, err := w.s.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		b, _ := io.ReadAll(resp.Body)
		t.Fatalf("configure: %d %s", resp.StatusCode, b)
	}
	w.fed.Config.Forget()
}

// fakeOP is an OpenID Provider we control: it signs ID tokens with its own
// key and answers the token request as the test case says.
type fakeOP struct {
	*httptest.Server
	key, other  *rsa.PrivateKey
	mu          sync.Mutex
	nonce       string // the nonce of the last authorization URL
	mutate      func(c jwt.Claims, extra map[string]any) (signer *rsa.PrivateKey)
	token       func(w http.ResponseWriter, r *http.Request) bool // answers instead, when it returns true
	claims      map[string]any
	form        url.Values // the last token request
	basic       [2]string
	discovered  int    // discovery requests answered
	claimsParam bool   // claims_parameter_supported
	userinfoSub string // "": no UserInfo endpoint
}

func newFakeOP(t *testing.T) *fakeOP {
	t.Helper()
	op := &fakeOP{}
	var err error
	if op.key, err = rsa.GenerateKey(rand.Reader, 2048); err != nil {
		t.Fatal(err)
	}
	if op.other, err = rsa.GenerateKey(rand.Reader, 2048); err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /.well-known/openid-configuration", func(w http.ResponseWriter, r *http.Request) {
		op.mu.Lock()
		op.discovered++
		doc := map[string]any{"issuer": op.URL, "authorization_endpoint": op.URL + "/auth",
			"token_endpoint": op.URL + "/token", "jwks_uri": op.URL + "/jwks", "end_session_endpoint": op.URL + "/logout",
			"id_token_signing_alg_values_supported": []string{"RS256"}, "claims_parameter_supported": op.claimsParam}
		if op.userinfoSub != "" {
			doc["userinfo_endpoint"] = op.URL + "/userinfo"
		}
		op.mu.Unlock()
		json.NewEncoder(w).Encode(doc)
	})
	mux.HandleFunc("GET /userinfo", func(w http.ResponseWriter, r *http.Request) {
		op.mu.Lock()
		sub := op.userinfoSub
		op.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(map[string]any{"sub": sub, "family_name": "FromUserInfo"})
	})
	mux.HandleFunc("GET /jwks", func(w http.ResponseWriter, r *http.Request) {
		json.NewEncoder(w).Encode(jose.JSONWebKeySet{Keys: []jose.JSONWebKey{{Key: &op.key.PublicKey, KeyID: "op-1", Algorithm: "RS256", Use: "sig"}}})
	})
	mux.HandleFunc("POST /token", func(w http.ResponseWriter, r *http.Request) {
		r.ParseForm()
		op.mu.Lock()
		op.form = r.PostForm
		op.basic[0], op.basic[1], _ = r.BasicAuth()
		tokenFn, mutate, nonce := op.token, op.mutate, op.nonce
		extra := map[string]any{}
		for k, v := range op.claims {
			extra[k] = v
		}
		op.mu.Unlock()
		if tokenFn != nil && tokenFn(w, r) {
			return
		}
		now := time.Now()
		c := jwt.Claims{Issuer: op.URL, Subject: "upstream-sub-1", Audience: jwt.Audience{"latchkey"},
			IssuedAt: jwt.NewNumericDate(now), Expiry: jwt.NewNumericDate(now.Add(5 * time.Minute))}
		extra["nonce"] = nonce
		signWith := op.key
		if mutate != nil {
			if k := mutate(c, extra); k != nil {
				signWith = k
			}
			c = jwt.Claims{} // mutate put everything in extra
		}
		signer, _ := jose.NewSigner(jose.SigningKey{Algorithm: jose.RS256, Key: signWith},
			(&jose.SignerOptions{}).WithType("JWT").WithHeader("kid", "op-1"))
		b := jwt.Signed(signer)
		if mutate == nil {
			b = b.Claims(c)
		}
		raw, _ := b.Claims(extra).Serialize()
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(map[string]any{"access_token": "at-1", "token_type": "Bearer", "expires_in": 300, "id_token": raw})
	})
	op.Server = httptest.NewServer(mux)
	t.Cleanup(op.Close)
	return op
}

// claimsOf turns standard claims into a map a mutation can change.
func claimsOf(c jwt.Claims) map[string]any {
	b, _ := json.Marshal(c)
	var m map[string]any
	json.Unmarshal(b, &m)
	return m
}

func (op *fakeOP) set(fn func(op *fakeOP)) {
	op.mu.Lock()
	defer op.mu.Unlock()
	fn(op)
}

func methodJSON(id, discovery, extra string) string {
	return fmt.Sprintf(`{"login_methods":{"login_methods":[{"id":%q,"name":"Fake","type":"OPEN_ID_CONNECT","enabled":true,
		"auto_activation_enabled":true%s,"open_id_connect_attributes":{"client_authentication_method":"CLIENT_SECRET_BASIC",
		"client_id":"latchkey","client_secret":"op-secret","discovery_url":%q}}]}}`, id, extra, discovery)
}

// start begins a sign-in at method id as browser and returns the state
// and the facts; it remembers the nonce for the fake provider.
func (w *world) start(t *testing.T, op *fakeOP, id, browser string) (string, request.Facts) {
	t.Helper()
	f := request.Facts{Addr: "192.0.2.7", Time: w.clock.Now()}
	m, err := w.fed.Method(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	to, err := w.fed.BeginOIDC(context.Background(), f, m, "request-1", browser, "")
	if err != nil {
		t.Fatal(err)
	}
	u, err := url.Parse(to)
	if err != nil {
		t.Fatal(err)
	}
	q := u.Query()
	if q.Get("code_challenge_method") != "S256" || q.Get("code_challenge") == "" || q.Get("nonce") == "" ||
		q.Get("redirect_uri") != w.s.URL+federation.PathCallback || !strings.Contains(q.Get("scope"), "openid") {
		t.Fatalf("authorization URL %s: want PKCE S256, a nonce, the callback and openid", to)
	}
	if op != nil {
		op.set(func(op *fakeOP) { op.nonce = q.Get("nonce") })
	}
	return q.Get("state"), f
}

// complete takes the state as browser and completes with the callback q.
func (w *world) complete(t *testing.T, state, browser string, f request.Facts, q url.Values) (federation.Result, error) {
	t.Helper()
	st, err := w.fed.TakeState(context.Background(), f, store.FederationLogin, state, browser)
	if err != nil {
		return federation.Result{}, err
	}
	if q == nil {
		q = url.Values{"code": {"code-1"}, "state": {state}}
	}
	return w.fed.CompleteOIDC(context.Background(), f, st, q, "web")
}

func TestUpstreamAnswersAreVerified(t *testing.T) {
	forEachBackend(t, func(t *testing.T, w *world) {
		op := newFakeOP(t)
		w.configure(t, methodJSON("fake", op.URL+"/.well-known/openid-configuration", ""))
		type mutation = func(c jwt.Claims, m map[string]any) *rsa.PrivateKey
		claims := func(fn func(m map[string]any)) mutation {
			return func(c jwt.Claims, m map[string]any) *rsa.PrivateKey {
				for k, v := range claimsOf(c) {
					m[k] = v
				}
				fn(m)
				return nil
			}
		}
		for _, tc := range []struct {
			name        string
			mutate      mutation
			token       func(w http.ResponseWriter, r *http.Request) bool
			q           func(state string) url.Values
			code, cause string
			event       string
		}{
			{name: "a wrong nonce is refused", mutate: claims(func(m map[string]any) { m["nonce"] = "not-the-nonce" }),
				code: "access_denied", cause: "invalid_id_token", event: events.IdPInvalidIDToken},
			{name: "a missing nonce is refused", mutate: claims(func(m map[string]any) { delete(m, "nonce") }),
				code: "access_denied", cause: "invalid_id_token", event: events.IdPInvalidIDToken},
			{name: "another audience is refused", mutate: claims(func(m map[string]any) { m["aud"] = "someone-else" }),
				code: "access_denied", cause: "invalid_id_token", event: events.IdPInvalidIDToken},
			{name: "another issuer is refused", mutate: claims(func(m map[string]any) { m["iss"] = "https://evil.example" }),
				code: "access_denied", cause: "invalid_id_token", event: events.IdPInvalidIDToken},
			{name: "an expired ID token is refused", mutate: claims(func(m map[string]any) { m["exp"] = time.Now().Add(-time.Hour).Unix() }),
				code: "access_denied", cause: "invalid_id_token", event: events.IdPInvalidIDToken},
			{name: "a signature by a key not in the JWKS is refused", mutate: func(c jwt.Claims, m map[string]any) *rsa.PrivateKey {
				for k, v := range claimsOf(c) {
					m[k] = v
				}
				return op.other
			}, code: "access_denied", cause: "invalid_id_token", event: events.IdPInvalidIDToken},
			{name: "a token answer without an ID token is refused", token: func(w http.ResponseWriter, r *http.Request) bool {
				w.Header().Set("Content-Type", "application/json")
				io.WriteString(w, `{"access_token":"at","token_type":"Bearer"}`)
				return true
			}, code: "server_error", cause: "id_token_missing", event: events.IdPMissingIDToken},
			{name: "a refused client authentication is server_error", token: func(w http.ResponseWriter, r *http.Request) bool {
				w.Header().Set("Content-Type", "application/json")
				w.WriteHeader(http.StatusUnauthorized)
				io.WriteString(w, `{"error":"invalid_client"}`)
				return true
			}, code: "server_error", cause: "idp_client_authentication_failed", event: events.IdPClientAuthFailed},
			{name: "a refused code is server_error", token: func(w http.ResponseWriter, r *http.Request) bool {
				w.Header().Set("Content-Type", "application/json")
				w.WriteHeader(http.StatusBadRequest)
				io.WriteString(w, `{"error":"invalid_grant"}`)
				return true
			}, code: "server_error", cause: "idp_token_error", event: events.IdPMissingAccessToken},
			{name: "the upstream's access_denied is passed on", q: func(state string) url.Values {
				return url.Values{"error": {"access_denied"}, "state": {state}}
			}, code: "access_denied", cause: "access_denied", event: events.IdPReceivedError},
			{name: "the upstream refusing latchkey's request is server_error", q: func(state string) url.Values {
				return url.Values{"error": {"invalid_scope"}, "state": {state}}
			}, code: "server_error", cause: "invalid_scope", event: events.IdPReceivedError},
			{name: "a callback without a code is refused", q: func(state string) url.Values {
				return url.Values{"state": {state}}
			}, code: "server_error", cause: "code_missing", event: "IDP_OAUTH_MISSING_ACCESS_GRANT"},
		} {
			t.Run(tc.name, func(t *testing.T) {
				op.set(func(op *fakeOP) { op.mutate, op.token = tc.mutate, tc.token })
				state, f := w.start(t, op, "fake", "browser-1")
				var q url.Values
				if tc.q != nil {
					q = tc.q(state)
				}
				_, err := w.complete(t, state, "browser-1", f, q)
				var fe *federation.Error
				if !errors.As(err, &fe) || fe.Code != tc.code || fe.Cause != tc.cause {
					t.Fatalf("complete: %v, want %s with vendor_error_cause %s", err, tc.code, tc.cause)
				}
				evs, _ := w.s.Store.SearchEvents(context.Background(), store.EventFilter{Kind: store.EventOAuth, Types: []string{tc.event}}, 0, 10)
				if len(evs) == 0 {
					t.Errorf("no %s event", tc.event)
				}
			})
		}
		if n, err := w.s.Store.CountEvents(context.Background(), store.EventFilter{Kind: store.EventPerson, Types: []string{events.PersonCreated}}, 10); err != nil || n != 1 {
			t.Errorf("person created events: %d, %v; want only the seed person's (no refused answer made a person)", n, err)
		}

		// The good answer signs in, with the client secret in the
		// Authorization header and the PKCE verifier.
		op.set(func(op *fakeOP) {
			op.mutate, op.token = nil, nil
			op.claims = map[string]any{"email": "up@example.com", "email_verified": true, "given_name": "Up"}
		})
		state, f := w.start(t, op, "fake", "browser-1")
		res, err := w.complete(t, state, "browser-1", f, nil)
		if err != nil || !res.Created || res.Person.Email != "up@example.com" || res.Person.FirstName != "Up" {
			t.Fatalf("a valid answer: %+v, %v; want a created person", res.Outcome, err)
		}
		op.mu.Lock()
		form, basic := op.form, op.basic
		op.mu.Unlock()
		if basic != [2]string{"latchkey", "op-secret"} || len(form.Get("code_verifier")) != 43 || form.Get("client_secret") != "" {
			t.Errorf("token request: basic %v, form %v; want CLIENT_SECRET_BASIC and a code_verifier", basic, form)
		}
	})
}

func TestStateIsSingleUseBoundAndExpiring(t *testing.T) {
	forEachBackend(t, func(t *testing.T, w *world) {
		op := newFakeOP(t)
		w.configure(t, methodJSON("fake", op.URL+"/.well-known/openid-configuration", ""))
		ctx := context.Background()
		state, f := w.start(t, op, "fake", "browser-1")
		if _, err := w.fed.TakeState(ctx, f, store.FederationLogin, state, "browser-2"); !errors.Is(err, federation.ErrStateInvalid) {
			t.Errorf("another browser's take: %v, want ErrStateInvalid", err)
		}
		if _, err := w.fed.TakeState(ctx, f, store.FederationLogin, state, "browser-1"); !errors.Is(err, federation.ErrStateInvalid) {
			t.Errorf("a take after the refused one: %v, want ErrStateInvalid (spent)", err)
		}
		state, f = w.start(t, op, "fake", "browser-1")
		if _, err := w.fed.TakeState(ctx, f, store.FederationLogin, state, "browser-1"); err != nil {
			t.Fatalf("take: %v", err)
		}
		if _, err := w.fed.TakeState(ctx, f, store.FederationLogin, state, "browser-1"); !errors.Is(err, federation.ErrStateInvalid) {
			t.Errorf("second take: %v, want ErrStateInvalid", err)
		}
		state, f = w.start(t, op, "fake", "browser-1")
		w.clock.Advance(federation.StateLifetime)
		if _, err := w.fed.TakeState(ctx, f, store.FederationLogin, state, "browser-1"); !errors.Is(err, federation.ErrStateInvalid) {
			t.Errorf("take at expiry: %v, want ErrStateInvalid", err)
		}
		if _, err := w.fed.TakeState(ctx, f, store.FederationLogin, "", "browser-1"); !errors.Is(err, federation.ErrStateMissing) {
			t.Errorf("no state: %v, want ErrStateMissing", err)
		}
		if _, err := w.fed.TakeState(ctx, f, store.FederationLogin, "lk_fs_forged", "browser-1"); !errors.Is(err, federation.ErrStateInvalid) {
			t.Errorf("forged state: %v, want ErrStateInvalid", err)
		}
	})
}

func TestPrivateKeyJWTClientAuthentication(t *testing.T) {
	forEachBackend(t, func(t *testing.T, w *world) {
		op := newFakeOP(t)
		key, err := rsa.GenerateKey(rand.Reader, 2048)
		if err != nil {
			t.Fatal(err)
		}
		pkcs8, _ := x509.MarshalPKCS8PrivateKey(key)
		pub, _ := x509.MarshalPKIXPublicKey(&key.PublicKey)
		b64 := func(typ string, der []byte) string {
			return base64.StdEncoding.EncodeToString(pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}))
		}
		w.configure(t, `{"key_pairs":[{"name":"rp-signing","key_type":"CERTIFICATE_RSA_PRIVATE_KEY","public_key":"`+
			b64("PUBLIC KEY", pub)+`","private_key":"`+b64("PRIVATE KEY", pkcs8)+`"}]}`)
		var keyID string
		for _, k := range w.certificates(t) {
			if k["name"] == "rp-signing" {
				keyID, _ = k["id"].(string)
			}
		}
		w.configure(t, strings.Replace(methodJSON("fake", op.URL+"/.well-known/openid-configuration", ""),
			`"client_authentication_method":"CLIENT_SECRET_BASIC"`, `"client_authentication_method":"PRIVATE_KEY_JWT","signing_key_id":"`+keyID+`"`, 1))
		op.set(func(op *fakeOP) { op.claims = map[string]any{"email": "pkj@example.com"} })
		state, f := w.start(t, op, "fake", "browser-1")
		if _, err := w.complete(t, state, "browser-1", f, nil); err != nil {
			t.Fatalf("complete: %v", err)
		}
		op.mu.Lock()
		form, basic := op.form, op.basic
		op.mu.Unlock()
		if basic[0] != "" || form.Get("client_assertion_type") != "urn:ietf:params:oauth:client-assertion-type:jwt-bearer" {
			t.Fatalf("token request %v (basic %v): want a client assertion and no basic credentials", form, basic)
		}
		tok, err := jwt.ParseSigned(form.Get("client_assertion"), []jose.SignatureAlgorithm{jose.RS256})
		if err != nil {
			t.Fatal(err)
		}
		var c jwt.Claims
		if err := tok.Claims(&key.PublicKey, &c); err != nil {
			t.Fatalf("the assertion is not signed by the key pair: %v", err)
		}
		if err := c.ValidateWithLeeway(jwt.Expected{Issuer: "latchkey", Subject: "latchkey", AnyAudience: jwt.Audience{op.URL + "/token"},
			Time: time.Now()}, 0); err != nil || c.ID == "" || tok.Headers[0].KeyID != keyID {
			t.Errorf("assertion claims %+v (kid %s): %v; want iss=sub=client id, aud the token endpoint, a jti, kid the key pair", c,
				tok.Headers[0].KeyID, err)
		}
	})
}

// certificates lists the key pairs of the certificates API.
func (w *world) certificates(t *testing.T) []map[string]any {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, w.s.URL+"/v2/config/certificates", nil)
	req.SetBasicAuth(apiUser, apiPass)
	resp, err := w.s.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var body struct {
		KeyPairs []map[string]any `json:"key_pairs"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
		t.Fatal(err)
	}
	return body.KeyPairs
}

func TestUpstreamDown(t *testing.T) {
	forEachBackend(t, func(t *testing.T, w *world) {
		op := newFakeOP(t)
		w.configure(t, methodJSON("fake", op.URL+"/.well-known/openid-configuration", ""))
		op.Close() // gone before the first discovery
		m, err := w.fed.Method(context.Background(), "fake")
		if err != nil {
			t.Fatal(err)
		}
		_, err = w.fed.BeginOIDC(context.Background(), request.Facts{}, m, "r", "b", "")
		var fe *federation.Error
		if !errors.As(err, &fe) || fe.Code != "temporarily_unavailable" || fe.Cause != "idp_unavailable" {
			t.Errorf("begin with the upstream down: %v, want temporarily_unavailable", err)
		}
	})
}

func TestMetadataCacheManualSetupClaimsAndUserInfo(t *testing.T) {
	forEachBackend(t, func(t *testing.T, w *world) {
		op := newFakeOP(t)
		op.set(func(op *fakeOP) { op.claimsParam = true })
		w.configure(t, strings.Replace(methodJSON("fake", op.URL+"/.well-known/openid-configuration", ""),
			`"discovery_url"`, `"metadata_expiration_time_in_seconds":60,"claims":["email","given_name"],"discovery_url"`, 1))
		discovered := func() int { op.mu.Lock(); defer op.mu.Unlock(); return op.discovered }
		m, _ := w.fed.Method(context.Background(), "fake")
		to, err := w.fed.BeginOIDC(context.Background(), request.Facts{}, m, "r", "b", "jane@example.com")
		if err != nil {
			t.Fatal(err)
		}
		u, _ := url.Parse(to)
		var claims map[string]map[string]any
		if err := json.Unmarshal([]byte(u.Query().Get("claims")), &claims); err != nil || len(claims["id_token"]) != 2 ||
			len(claims["userinfo"]) != 2 || u.Query().Get("login_hint") != "jane@example.com" {
			t.Errorf("authorization URL %s: want the claims parameter (supported by the provider) and the login_hint", to)
		}
		// Cached for metadata_expiration_time_in_seconds.
		w.start(t, op, "fake", "b")
		if n := discovered(); n != 1 {
			t.Errorf("%d discoveries within the expiration time, want 1", n)
		}
		w.clock.Advance(61 * time.Second)
		w.start(t, op, "fake", "b")
		if n := discovered(); n != 2 {
			t.Errorf("%d discoveries after the expiration time, want 2", n)
		}

		// Manual metadata: no discovery at all; UserInfo read and merged,
		// and refused when it is about someone else.
		w.configure(t, fmt.Sprintf(`{"login_methods":{"login_methods":[{"id":"manual","type":"OPEN_ID_CONNECT","enabled":true,
			"auto_activation_enabled":true,"open_id_connect_attributes":{"client_authentication_method":"CLIENT_SECRET_BASIC",
			"client_id":"latchkey","client_secret":"op-secret","manual_metadata_setup":true,"issuer":%q,"authorization_url":%q,
			"id_token_url":%q,"jwks_url":%q,"user_info_url":%q}}]}}`, op.URL, op.URL+"/auth", op.URL+"/token", op.URL+"/jwks", op.URL+"/userinfo"))
		op.set(func(op *fakeOP) {
			op.userinfoSub = "upstream-sub-1"
			op.claims = map[string]any{"email": "manual@example.com"}
		})
		state, f := w.start(t, op, "manual", "b")
		res, err := w.complete(t, state, "b", f, nil)
		if err != nil || res.Person.LastName != "FromUserInfo" || discovered() != 2 {
			t.Fatalf("manual metadata: %+v, %v (discoveries %d); want UserInfo's family_name and no discovery", res.Outcome, err, discovered())
		}
		op.set(func(op *fakeOP) { op.userinfoSub = "someone-else" })
		state, f = w.start(t, op, "manual", "b")
		_, err = w.complete(t, state, "b", f, nil)
		var fe *federation.Error
		if !errors.As(err, &fe) || fe.Cause != "userinfo_subject_mismatch" || fe.Code != "access_denied" {
			t.Errorf("UserInfo of another subject: %v, want access_denied userinfo_subject_mismatch", err)
		}
	})
}

// Login methods come from the configuration API: their URLs are fetched
// through the outbound guard, which refuses the provider on loopback
// unless outbound.allow names it.
func TestLoginMethodURLsAreGuarded(t *testing.T) {
	forEachBackend(t, func(t *testing.T, w *world) {
		op := newFakeOP(t)
		w.configure(t, methodJSON("fake", op.URL+"/.well-known/openid-configuration", ""))
		m, err := w.fed.Method(context.Background(), "fake")
		if err != nil {
			t.Fatal(err)
		}
		w.fed.HTTP = outbound.MustNew(outbound.Options{}).HTTPClient()
		_, err = w.fed.BeginOIDC(context.Background(), request.Facts{}, m, "r", "b", "")
		var fe *federation.Error
		if !errors.As(err, &fe) || fe.Cause != "idp_unavailable" {
			t.Fatalf("begin at a loopback provider: %v, want idp_unavailable", err)
		}
		op.set(func(op *fakeOP) {
			if op.discovered != 0 {
				t.Errorf("the loopback provider answered %d discovery requests", op.discovered)
			}
		})
		w.fed.HTTP = outbound.MustNew(outbound.Options{Allow: []string{"127.0.0.1"}}).HTTPClient()
		if _, err := w.fed.BeginOIDC(context.Background(), request.Facts{}, m, "r", "b", ""); err != nil {
			t.Fatalf("begin at an allowed provider: %v", err)
		}
	})
}
