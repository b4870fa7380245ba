package oauth_test

import (
	"database/sql"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/oauth2"

	"github.com/latchkey/latchkey/internal/config"
	"github.com/latchkey/latchkey/internal/oauth"
	"github.com/latchkey/latchkey/internal/server/servertest"
	"github.com/latchkey/latchkey/internal/store/postgres/pgtest"
)

// Every grant asks its web hooks before its transaction, on every store:
// a transaction waiting on a hook's round trip would hold what it holds
// (on SQLite, every other write of the server). The transaction takes an
// answer only for the request it would send itself.

// heldHook is a web hook receiver whose calls can be held unanswered.
type heldHook struct {
	*httptest.Server
	hold     atomic.Bool
	arrived  chan struct{}
	release  chan struct{}
	requests chan map[string]any // every request, in order
	answer   func(n int) string  // the answer to the n-th call (from 1)
	calls    atomic.Int32
}

func newHeldHook(t *testing.T, answer func(n int) string) *heldHook {
	h := &heldHook{arrived: make(chan struct{}, 1), release: make(chan struct{}),
		requests: make(chan map[string]any, 100), answer: answer}
	h.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req map[string]any
		_ = json.NewDecoder(r.Body).Decode(&req)
		n := int(h.calls.Add(1))
		h.requests <- req
		if h.hold.CompareAndSwap(true, false) {
			h.arrived <- struct{}{}
			<-h.release
		}
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, h.answer(n))
	}))
	t.Cleanup(func() {
		select {
		case <-h.release:
		default:
			close(h.release)
		}
		h.Close()
	})
	return h
}

func always(answer string) func(int) string { return func(int) string { return answer } }

// issuingConfig has a client for every grant that issues tokens.
func issuingConfig() *config.Config {
	cfg := deviceConfig()
	jwt, legacy := jwtConfig().Clients, blockConfig().Clients
	no := false
	cfg.Clients = append(cfg.Clients, jwt[len(jwt)-1], legacy[len(legacy)-1],
		config.Client{ClientID: "legacy-spa", TokenEndpointAuthMethod: "none", RedirectURIs: []string{redirect},
			GrantTypes: []string{"implicit"}, Scopes: []string{"read"}, ConsentRequired: &no})
	return cfg
}

func hooksConfig(access, user *heldHook) *config.Config {
	cfg := issuingConfig()
	cfg.Webhooks.AccessToken = config.Webhook{URL: access.URL, Secret: hookSecret, Timeout: config.Duration(time.Minute)}
	cfg.Webhooks.UserDetails = config.Webhook{URL: user.URL, Secret: hookSecret, Timeout: config.Duration(time.Minute)}
	return cfg
}

// issued is what a grant answered: its access token, and its ID token
// when it was asked for one.
type issued struct{ access, id string }

// issuance is one grant of issuingConfig's clients: prepare readies its
// request, which send then sends.
type issuance struct {
	name   string
	openid bool // the code flow with scope openid: an ID token too
	// prepare readies the request (a code, an approved device) and
	// returns its send.
	prepare func(t *testing.T, s *servertest.Server) (send func() (issued, error))
}

func fromAnswer(r answer) (issued, error) {
	if r.status != 200 {
		return issued{}, fmt.Errorf("%d %s", r.status, r.body)
	}
	return issued{access: r.json["access_token"].(string)}, nil
}

// everyGrant is an issuance of every grant that mints tokens.
func everyGrant() []issuance {
	exchange := func(openid bool) func(t *testing.T, s *servertest.Server) func() (issued, error) {
		return func(t *testing.T, s *servertest.Server) func() (issued, error) {
			oc := oauthConfig(s, "web", webSecret, oauth2.AuthStyleInHeader)
			if openid {
				oc.Scopes = []string{"openid", "read"}
			}
			code, verifier := codeFor(t, s, browser(t, s), oc)
			return func() (issued, error) {
				tok, err := oc.Exchange(clientCtx(s), code, oauth2.VerifierOption(verifier))
				if err != nil {
					return issued{}, err
				}
				id, _ := tok.Extra("id_token").(string)
				return issued{access: tok.AccessToken, id: id}, nil
			}
		}
	}
	return []issuance{
		{name: "client_credentials", prepare: func(t *testing.T, s *servertest.Server) func() (issued, error) {
			return func() (issued, error) { return fromAnswer(jwtToken(t, s, "read")) }
		}},
		{name: "authorization_code", prepare: exchange(false)},
		{name: "authorization_code, openid", openid: true, prepare: exchange(true)},
		{name: "refresh_token", prepare: func(t *testing.T, s *servertest.Server) func() (issued, error) {
			tok := personToken(t, s, "web", webSecret, "")
			return func() (issued, error) { return fromAnswer(refreshWith(t, s, "web", webSecret, tok.RefreshToken)) }
		}},
		{name: "password", prepare: func(t *testing.T, s *servertest.Server) func() (issued, error) {
			return func() (issued, error) { return fromAnswer(passwordToken(t, s, personEmail, personPass)) }
		}},
		{name: "implicit", prepare: func(t *testing.T, s *servertest.Server) func() (issued, error) {
			return func() (issued, error) {
				back := authorize(t, s, browser(t, s), s.URL+"/oauth/authorize?client_id=legacy-spa&response_type=token&state=imp")
				frag, _ := url.ParseQuery(back.Fragment)
				if frag.Get("access_token") == "" {
					return issued{}, fmt.Errorf("implicit answer %s", back)
				}
				return issued{access: frag.Get("access_token")}, nil
			}
		}},
		{name: "device_code", prepare: func(t *testing.T, s *servertest.Server) func() (issued, error) {
			app := appToken(t, s, "read", oauth.DeviceApproveScope)
			d := deviceAuth(t, s, "tv", "read")
			if r := approveInApp(t, s, app.AccessToken, d.UserCode); r.status != http.StatusNoContent {
				t.Fatalf("approve: %d %v", r.status, r.json)
			}
			return func() (issued, error) { return fromAnswer(poll(t, s, "tv", d.DeviceCode)) }
		}},
	}
}

// heldWhileAnotherWrites sends g's request while held holds it (held
// returns once the request is held there, release lets it go on), and
// checks that a revocation commits meanwhile: nothing the request waits
// for holds a transaction that another write needs (SQLite's single
// writer above all). It returns what g answered.
func heldWhileAnotherWrites(t *testing.T, s *servertest.Server, g issuance, hold func(), arrived <-chan struct{}, release func()) issued {
	t.Helper()
	revocable := personToken(t, s, "web", webSecret, "").AccessToken
	send := g.prepare(t, s)
	hold()
	type result struct {
		got issued
		err error
	}
	answered := make(chan result, 1)
	go func() {
		got, err := send()
		answered <- result{got, err}
	}()
	<-arrived
	done := make(chan answer, 1)
	go func() { done <- post(t, s, "/oauth/revoke", url.Values{"token": {revocable}}, "web", webSecret) }()
	select {
	case r := <-done:
		if r.status != 200 {
			t.Errorf("revoke: %d %s", r.status, r.body)
		}
	case <-time.After(30 * time.Second):
		t.Error("a revocation waited for the held request")
	}
	release()
	r := <-answered
	if r.err != nil {
		t.Fatalf("the held grant: %v", r.err)
	}
	if active(t, s, revocable) {
		t.Error("the revoked token is active")
	}
	return r.got
}

func TestWebHooksHoldNoWriter(t *testing.T) {
	for _, backend := range servertest.Backends {
		for _, g := range everyGrant() {
			t.Run(backend+"/"+g.name, func(t *testing.T) {
				access := newHeldHook(t, always(`{"additionalClaims":{"tier":"gold"}}`))
				user := newHeldHook(t, always(`{"claims":{"loyalty":"gold"}}`))
				s := servertest.Start(t, hooksConfig(access, user), servertest.Options{Backend: backend})
				held := access
				if g.openid {
					held = user // (the access token hook is asked first, unheld)
				}
				got := heldWhileAnotherWrites(t, s, g, func() { held.hold.Store(true) }, held.arrived, func() { close(held.release) })
				if g.openid {
					if idt := jwtClaims(t, got.id); idt["loyalty"] != "gold" {
						t.Errorf("ID token without the hook's claim: %v", idt)
					}
				} else if r := introspect(t, s, got.access, nil); r.json["tier"] != "gold" {
					t.Errorf("introspection without the hook's claim: %s", r.body)
				}
			})
		}
	}
}

// An answer asked before the transaction is taken only for the request
// the transaction would send: the person renamed while the hook was
// asked, the exchange asks again with the new name, and the token
// carries the second answer.
func TestWebHookAskedAgainWhenItsRequestChanged(t *testing.T) {
	for _, backend := range servertest.Backends {
		t.Run(backend, func(t *testing.T) {
			access := newHeldHook(t, func(n int) string { return fmt.Sprintf(`{"additionalClaims":{"call":%d}}`, n) })
			user := newHeldHook(t, always(`{}`))
			s := servertest.Start(t, hooksConfig(access, user), servertest.Options{Backend: backend})
			oc := oauthConfig(s, "web", webSecret, oauth2.AuthStyleInHeader)
			code, verifier := codeFor(t, s, browser(t, s), oc)
			access.hold.Store(true)
			type result struct {
				tok *oauth2.Token
				err error
			}
			answered := make(chan result, 1)
			go func() {
				tok, err := oc.Exchange(clientCtx(s), code, oauth2.VerifierOption(verifier))
				answered <- result{tok, err}
			}()
			<-access.arrived
			rename(t, s, "Janet")
			close(access.release)
			r := <-answered
			if r.err != nil {
				t.Fatal(r.err)
			}
			if n := access.calls.Load(); n != 2 {
				t.Fatalf("the access token hook was called %d times, want twice (before the transaction, then inside)", n)
			}
			<-access.requests
			if again := <-access.requests; again["userClaims"].(map[string]any)["first_name"] != "Janet" {
				t.Errorf("the second request: %v, want the person as the transaction read it", again)
			}
			if got := introspect(t, s, r.tok.AccessToken, nil); got.json["call"] != float64(2) {
				t.Errorf("introspection: %s, want the second answer's claim", got.body)
			}
		})
	}
}

// The read before the transaction asks the hooks only for a grant that
// would issue: a refused or replayed code asks nothing.
func TestWebHooksNotAskedForARefusedCode(t *testing.T) {
	access := newHeldHook(t, always(`{}`))
	user := newHeldHook(t, always(`{}`))
	s := servertest.Start(t, hooksConfig(access, user), servertest.Options{})
	oc := oauthConfig(s, "web", webSecret, oauth2.AuthStyleInHeader)
	oc.Scopes = []string{"openid", "read"}
	code, verifier := codeFor(t, s, browser(t, s), oc)
	if _, err := oc.Exchange(clientCtx(s), code, oauth2.VerifierOption(oauth2.GenerateVerifier())); !isOAuthError(err, "invalid_grant") {
		t.Fatalf("wrong verifier: %v", err)
	}
	if n, m := access.calls.Load(), user.calls.Load(); n != 0 || m != 0 {
		t.Errorf("a code refused for its verifier asked the hooks %d and %d times", n, m)
	}
	// The refusal burned the code: the right verifier is now a replay.
	if _, err := oc.Exchange(clientCtx(s), code, oauth2.VerifierOption(verifier)); !isOAuthError(err, "invalid_grant") {
		t.Fatalf("replay: %v", err)
	}
	if n, m := access.calls.Load(), user.calls.Load(); n != 0 || m != 0 {
		t.Errorf("a used code asked the hooks %d and %d times", n, m)
	}
}

// A hook that fails closed fails the exchange before the code is used:
// once the hook answers, the same code is exchanged.
func TestWebHookFailingClosedLeavesTheCodeUnused(t *testing.T) {
	for _, backend := range servertest.Backends {
		t.Run(backend, func(t *testing.T) {
			hook := newHook(t, hookSecret, `{"additionalClaims":{"tier":"gold"}}`)
			hook.status = http.StatusBadGateway
			cfg := introspectConfig()
			cfg.Webhooks.AccessToken = config.Webhook{URL: hook.URL, Secret: hookSecret, FailClosed: true}
			s := servertest.Start(t, cfg, servertest.Options{Backend: backend})
			oc := oauthConfig(s, "web", webSecret, oauth2.AuthStyleInHeader)
			code, verifier := codeFor(t, s, browser(t, s), oc)
			if _, err := oc.Exchange(clientCtx(s), code, oauth2.VerifierOption(verifier)); !isOAuthError(err, "server_error") {
				t.Fatalf("hook failing closed: %v, want server_error", err)
			}
			hook.mu.Lock()
			hook.status = 0
			hook.mu.Unlock()
			tok, err := oc.Exchange(clientCtx(s), code, oauth2.VerifierOption(verifier))
			if err != nil {
				t.Fatalf("the same code once the hook answers: %v", err)
			}
			if r := introspect(t, s, tok.AccessToken, nil); r.json["tier"] != "gold" {
				t.Errorf("introspection: %s", r.body)
			}
		})
	}
}

// A refresh stores the access token hook's claims on its grant only when
// they changed: an unchanged answer leaves the grant's row as it was (on
// PostgreSQL every refresh of a grant otherwise updated its one row, each
// holding the row's lock until its commit), a changed one is stored.
func TestRefreshRewritesItsGrantOnlyWhenTheHookChangedIt(t *testing.T) {
	for _, backend := range servertest.Backends {
		t.Run(backend, func(t *testing.T) {
			tier := func(n int) string { // the code exchange is call 1
				if n <= 3 {
					return `{"additionalClaims":{"tier":"gold"}}`
				}
				return `{"additionalClaims":{"tier":"platinum"}}`
			}
			access := newHeldHook(t, tier)
			user := newHeldHook(t, always(`{}`))
			opts := servertest.Options{Backend: backend}
			version := func() string { return "" } // the grant row's version, where the store shows it
			if backend == "postgres" {
				opts.PostgresURL = pgtest.NewDatabase(t)
				raw, err := sql.Open("pgx", opts.PostgresURL)
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { raw.Close() })
				version = func() string {
					var v string
					if err := raw.QueryRow(`SELECT xmin::text FROM grants WHERE client_id = 'web'`).Scan(&v); err != nil {
						t.Fatal(err)
					}
					return v
				}
			}
			s := servertest.Start(t, hooksConfig(access, user), opts)
			tok := personToken(t, s, "web", webSecret, "")
			refreshed := func(want string) {
				t.Helper()
				r := refreshWith(t, s, "web", webSecret, tok.RefreshToken)
				if r.status != 200 {
					t.Fatalf("refresh: %d %s", r.status, r.body)
				}
				if got := introspect(t, s, r.json["access_token"].(string), nil); got.json["tier"] != want {
					t.Errorf("introspection: %s, want tier %s", got.body, want)
				}
			}
			refreshed("gold")
			before := version()
			refreshed("gold")
			if after := version(); after != before {
				t.Errorf("the grant's row was rewritten (version %s, then %s) with the hook's answer unchanged", before, after)
			}
			refreshed("platinum")
			if after := version(); backend == "postgres" && after == before {
				t.Error("the hook's changed answer was not stored on the grant")
			}
		})
	}
}
