// Package server wires latchkey together: config -> store -> services ->
// routes (routes.go lists every route of the interface).
package server

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/latchkey/latchkey/internal/admin"
	"github.com/latchkey/latchkey/internal/authflow"
	"github.com/latchkey/latchkey/internal/cimconfig"
	"github.com/latchkey/latchkey/internal/client"
	"github.com/latchkey/latchkey/internal/clientaddr"
	"github.com/latchkey/latchkey/internal/clientauth"
	"github.com/latchkey/latchkey/internal/config"
	"github.com/latchkey/latchkey/internal/events"
	"github.com/latchkey/latchkey/internal/httpx"
	"github.com/latchkey/latchkey/internal/identity"
	"github.com/latchkey/latchkey/internal/journey"
	"github.com/latchkey/latchkey/internal/login"
	"github.com/latchkey/latchkey/internal/oauth"
	"github.com/latchkey/latchkey/internal/outbound"
	"github.com/latchkey/latchkey/internal/password"
	"github.com/latchkey/latchkey/internal/personimport"
	"github.com/latchkey/latchkey/internal/pwpolicy"
	"github.com/latchkey/latchkey/internal/scopes"
	"github.com/latchkey/latchkey/internal/seal"
	"github.com/latchkey/latchkey/internal/signing"
	"github.com/latchkey/latchkey/internal/store"
	"github.com/latchkey/latchkey/internal/store/sqlstore"
	"github.com/latchkey/latchkey/internal/token"
	"github.com/latchkey/latchkey/internal/webhook"
	"github.com/latchkey/latchkey/web"
)

// Server holds the dependencies every handler shares.
type Server struct {
	cfg     *config.Config
	store   store.Store
	log     *slog.Logger
	secrets *token.Hasher
	metrics *metrics
	now     func() time.Time
	handler http.Handler
	// adminHandler serves admin_listen; nil without it.
	adminHandler http.Handler
	demo         bool
	drain        drain

	clients  *clientauth.Authenticator
	apiUsers *clientauth.BasicUsers // HTTP basic for the basic_auth APIs
	identity *identity.Service
	oauth    *oauth.Service
	pages    *login.Pages
	scopes   *scopes.API
	search   *events.Search
	imports  *personimport.Handler
	config   *cimconfig.Handler
	keys     *signing.Keys // sign ID tokens and JWT access tokens (keys.go)
	journeys *journey.Service
	admin    *admin.Handler // the admin API and dynamic registration (docs/ADMIN.md)
	// outbound fetches the URLs registrants and API callers supply
	// (jwks_uri, login methods): the SSRF guard, with outbound.allow.
	outbound *outbound.Client
}

// clientCacheTTL bounds how long an instance uses a client it read: clients
// change only when an instance starts with a new config file.
const clientCacheTTL = 5 * time.Second

// Options changes what New builds; the zero value is production.
type Options struct {
	Now  func() time.Time // the clock; time.Now when nil
	Demo bool             // serve --demo: also serve the demo client's redirect page
	// WrapKeys wraps the keys the token endpoints sign with (tests hold
	// a signature with it); nil: the keys as they are.
	WrapKeys func(oauth.Keys) oauth.Keys
	// Templates parsed ahead of New (serve parses them while the store
	// opens); nil: New parses them.
	Templates *Templates
}

// Templates are the hosted pages' and the mails' templates: the built-in
// ones, or cfg.TemplatesDir's where it has them.
type Templates struct {
	pages *web.Templates
	mail  *web.MailTemplates
}

// LoadTemplates parses the templates of dir ("": the built-in ones). It
// needs neither the store nor the server, so a start can run it while
// the store opens, which on PostgreSQL mostly waits for the connection's
// backend.
func LoadTemplates(dir string) (*Templates, error) {
	pages, err := web.Load(dir)
	if err != nil {
		return nil, err
	}
	mail, err := web.LoadMail(dir)
	if err != nil {
		return nil, err
	}
	return &Templates{pages: pages, mail: mail}, nil
}

// New builds a Server on an opened, migrated store, with the static clients
// of cfg in front of it (client.Static: never written to the store). It
// fails with store.ErrServerKeyMismatch when the store belongs to another
// server key.
func New(ctx context.Context, cfg *config.Config, st store.Store, logger *slog.Logger, serverKey []byte, opts Options) (*Server, error) {
	h, err := token.NewHasher(serverKey)
	if err != nil {
		return nil, err
	}
	h.Stamped = cfg.StampedTokenKeys(st.Backend())
	// Before anything is written: under another key every hash and sealed
	// secret in the store is useless, and this instance's own answers
	// (tokens, sessions, its static clients' secrets) would not match the
	// other instances'.
	if err := st.ClaimServerKey(ctx, h.Fingerprint()); err != nil {
		return nil, fmt.Errorf("server key: %w", err)
	}
	now := opts.Now
	if now == nil {
		now = time.Now
	}
	s := &Server{
		cfg:     cfg,
		store:   st,
		log:     logger,
		secrets: h,
		metrics: newMetrics(cfg.Metrics.ClientLabels),
		now:     now,
		demo:    opts.Demo,
	}
	if s.outbound, err = outbound.New(outbound.Options{Allow: cfg.Outbound.Allow}); err != nil {
		return nil, err
	}
	if err := s.startKeys(ctx, serverKey); err != nil {
		return nil, err
	}
	tpl := opts.Templates
	if tpl == nil {
		if tpl, err = LoadTemplates(cfg.TemplatesDir); err != nil {
			return nil, err
		}
	}
	templates := tpl.pages
	s.metrics.observeStore(st)
	rec := events.NewRecorder()
	rec.Now = now
	rec.Log = logger
	rec.Observe = s.metrics.observeEvent
	// The config file's clients are a read-only layer in front of the
	// store's (client.Static); every service reads clients through it.
	static, err := s.staticClients()
	if err != nil {
		return nil, err
	}
	raw := st
	layered := client.NewStatic(st, static)
	st = layered
	clients := &client.Cache{Source: st, TTL: clientCacheTTL, Now: now}
	layered.Changed = clients.Forget
	if gen, ok := raw.(interface {
		ClientGeneration(context.Context) (int64, error)
	}); ok && st.Backend() != "sqlite" {
		// Other instances write clients and scopes too: every lookup
		// checks the client generation (the backend's, not the
		// contract's), so their changes take effect at once here, and the
		// scope cache holds while that generation has not moved (scope
		// writes bump it).
		fresh := &client.Fresh[int64]{Read: gen.ClientGeneration}
		clients.Generation = fresh.Get
		latest := fresh.Latest
		if g, ok := raw.(interface {
			SharedGenerations() *client.Fresh[sqlstore.Generations]
		}); ok {
			// The read the token cache makes too (postgres.Store).
			shared := g.SharedGenerations()
			clients.Generation = func(ctx context.Context) (int64, error) {
				v, err := shared.Get(ctx)
				return v.Client, err
			}
			latest = func() (int64, bool) {
				v, ok := shared.Latest()
				return v.Client, ok
			}
		}
		if sc, ok := raw.(interface{ UseScopeCache(*sqlstore.ScopeCache) }); ok {
			sc.UseScopeCache(&sqlstore.ScopeCache{Generation: latest})
		}
	}
	s.clients = &clientauth.Authenticator{
		Clients: clients, Assertions: st, Secrets: h, Issuer: cfg.Issuer, Now: now, Throttle: st,
		Outbound: s.outbound, Operator: layered.IsStatic,
	}
	if s.apiUsers, err = apiUsers(cfg.APIUsers); err != nil {
		return nil, err
	}
	s.apiUsers.Throttle, s.apiUsers.Now = st, now
	if s.identity, err = identity.New(st, rec, now); err != nil {
		return nil, err
	}
	totpSealer, err := seal.New(serverKey, "totp")
	if err != nil {
		return nil, err
	}
	s.identity.TOTP = totpSealer
	s.identity.Devices, s.identity.Keys = h, h
	s.oauth = &oauth.Service{
		Store: st, Hasher: h, Clients: s.clients, Passwords: s.identity, Events: rec,
		Issuer: cfg.Issuer, Now: now, Log: logger, DeviceCodeLifetime: time.Duration(cfg.DeviceCodeLifetime),
		ClientCache: clients,
		Flow:        authflow.Policy{PasswordLevel: cfg.PasswordAuthenticationLevel, TOTPLevel: cfg.TOTPAuthenticationLevel},
		Keys:        oauthKeys(s.keys, opts.WrapKeys), IDTokenLifetime: time.Duration(cfg.OIDC.IDTokenLifetime), PageLanguages: login.Languages(),
	}
	s.pages = &login.Pages{
		OAuth: s.oauth, Identity: s.identity, Store: st, Hasher: h, Templates: templates,
		Secure: strings.HasPrefix(cfg.Issuer, "https://"), Now: now, Log: logger,
	}
	s.oauth.Pages = s.pages
	if cfg.DynamicRegistration.Enabled {
		s.oauth.RegistrationEndpoint = cfg.Issuer + admin.PathRegister
	}
	s.oauth.Details = s.introspectionDetails()
	s.scopes = &scopes.API{Store: st, Auth: s.clients, Events: rec, Issuer: cfg.Issuer}
	keySealer, err := seal.New(serverKey, "key-pairs")
	if err != nil {
		return nil, err
	}
	methodSealer, err := seal.New(serverKey, "login-method-secrets")
	if err != nil {
		return nil, err
	}
	cim := &cimconfig.Service{Store: st, Keys: keySealer, Secrets: methodSealer, Events: rec, Now: now,
		Breached: &pwpolicy.RangeChecker{Endpoint: cfg.BreachedPasswords.Endpoint,
			Timeout: time.Duration(cfg.BreachedPasswords.Timeout), FailClosed: cfg.BreachedPasswords.FailClosed}}
	s.identity.PasswordPolicy = cim.CheckPassword
	if err := applyFeatures(ctx, cim, cfg.Features); err != nil {
		return nil, err
	}
	s.config = &cimconfig.Handler{Service: cim, Users: s.apiUsers, Reload: func() error {
		cim.Forget()
		if s.journeys != nil {
			if err := s.journeys.Mails.Templates.Reload(); err != nil {
				return err
			}
		}
		return templates.Reload()
	}}
	s.pages.CustomMessages = cim.Messages
	if s.journeys, err = s.newJourneys(cim, serverKey, rec, tpl.mail); err != nil {
		return nil, err
	}
	s.pages.Journeys = s.journeys
	// authflow decides with the identity configuration's step-up and
	// activation settings too.
	s.oauth.Settings = s.journeys.Policy
	s.identity.OnDelete = s.journeys.AccountRemoved
	if s.pages.Federation, err = s.newFederation(cim, serverKey, rec); err != nil {
		return nil, err
	}
	s.pages.LogoutTarget = cim.LogoutTarget
	s.search = &events.Search{Store: st, Auth: s.clients, Users: s.apiUsers, Issuer: cfg.Issuer,
		Enabled: func() bool {
			snap, err := cim.Snapshot(context.Background())
			return err != nil || snap.EventsAPIEnabled() // a store error surfaces in the search itself
		}}
	s.imports = &personimport.Handler{
		Service: &personimport.Service{Store: st, Events: rec, TOTP: totpSealer, PRF: cfg.Import.PBKDF2PRF,
			IdPs: cim.IdPs, Log: logger, Now: now, Mails: s.journeys},
		Users: s.apiUsers, Enabled: func() bool { return *cfg.Import.Enabled },
		Partitioning: cfg.Import.Partitioning, MaxPersons: cfg.Import.MaxPersons,
	}
	s.admin = &admin.Handler{
		Service: &admin.Service{Store: layered, Secrets: h, Events: rec, Now: now, AccountRemoved: s.journeys.AccountRemoved,
			Registration: admin.Registration{Enabled: cfg.DynamicRegistration.Enabled,
				InitialAccessToken: cfg.DynamicRegistration.InitialAccessToken}, Outbound: s.outbound},
		Users: s.apiUsers, Auth: s.clients, Tokens: st, Issuer: cfg.Issuer,
		PersonsEnabled: func(ctx context.Context) (bool, error) {
			snap, err := cim.Snapshot(ctx)
			if err != nil {
				return false, err
			}
			return snap.PersonAPIEnabled(), nil
		},
	}
	if err := s.identity.SeedPersons(ctx, cfg.Persons); err != nil {
		return nil, err
	}
	mux := http.NewServeMux()
	var adminMux *http.ServeMux
	if cfg.AdminListen != "" {
		adminMux = http.NewServeMux()
	}
	s.routes(mux, adminMux)
	// The client address is resolved once, behind the trusted proxies, for
	// every throttle and event (clientaddr.Of, clientaddr.Key).
	chain := func(h http.Handler) http.Handler {
		h = clientaddr.New(cfg.ProxyList()).Middleware(httpx.WithRequestID(
			httpx.SecurityHeaders(strings.HasPrefix(cfg.Issuer, "https://"))(
				httpx.Observe(logger, s.metrics.observe)(h))))
		if opts.Demo || debugLevel(cfg.Log.Level) {
			// Outermost: Observe must see the request the mux matched.
			h = httpx.WithDebugAnswers(h)
		}
		return h
	}
	handler := chain(mux)
	if clients.Generation != nil {
		handler = oneGenerationPerRequest(handler)
	}
	s.handler = s.drain.middleware(handler)
	if adminMux != nil {
		s.adminHandler = chain(adminMux)
	}
	return s, nil
}

// applyFeatures writes the feature switches the operator file sets into
// the stored configuration, so that the file can turn an API back on.
func applyFeatures(ctx context.Context, cim *cimconfig.Service, f config.Features) error {
	if f.EventsAPIEnabled == nil && f.ConfigurationAPIEnabled == nil && f.PersonAPIEnabled == nil {
		return nil
	}
	return cim.Update(ctx, []string{cimconfig.UnitFeatures}, func(snap *cimconfig.Snapshot) error {
		if snap.Features == nil {
			snap.Features = &cimconfig.Features{}
		}
		if f.EventsAPIEnabled != nil {
			snap.Features.EventsAPIEnabled = f.EventsAPIEnabled
		}
		if f.ConfigurationAPIEnabled != nil {
			snap.Features.ConfigurationAPIEnabled = f.ConfigurationAPIEnabled
		}
		if f.PersonAPIEnabled != nil {
			snap.Features.PersonAPIEnabled = f.PersonAPIEnabled
		}
		return nil
	})
}

// debugLevel: the log level (validated by config) logs debug lines.
func debugLevel(level string) bool {
	var l slog.Level
	return l.UnmarshalText([]byte(level)) == nil && l <= slog.LevelDebug
}

// Handler is the HTTP interface of the public address.
func (s *Server) Handler() http.Handler { return s.handler }

// OAuth is the OAuth service (tests: the claims it builds, without HTTP).
func (s *Server) OAuth() *oauth.Service { return s.oauth }

// AdminHandler is the interface of admin_listen (/metrics, the profiler,
// the API groups of admin_apis), or nil when admin_listen is not set.
func (s *Server) AdminHandler() http.Handler { return s.adminHandler }

// staticClients are the config file's clients as stored clients, their
// secrets hashed under this instance's server key.
func (s *Server) staticClients() ([]store.Client, error) {
	out := make([]store.Client, 0, len(s.cfg.Clients))
	for _, c := range s.cfg.Clients {
		sc, err := s.storeClient(c)
		if err != nil {
			return nil, fmt.Errorf("client %s: %w", c.ClientID, err)
		}
		if c.AllowInsecureHTTPRedirectURIs {
			// RFC 9700 section 2.6: a code over cleartext http can be read on
			// the way. Allowed for development only, and said so.
			s.log.Warn("client allows cleartext http redirect URIs on any host: for development only (allow_insecure_http_redirect_uris)",
				"client_id", c.ClientID)
		}
		out = append(out, sc)
	}
	return out, nil
}

func (s *Server) storeClient(c config.Client) (store.Client, error) {
	r, err := c.Registration()
	if err != nil {
		return store.Client{}, err
	}
	return r.Stored(func(secret string) []byte { return s.secrets.Hash(token.LabelClientSecret, secret) }), nil
}

// apiUsers hashes the plain passwords of the config once, at start.
func apiUsers(users []config.APIUser) (*clientauth.BasicUsers, error) {
	m := make(map[string]string, len(users))
	for _, u := range users {
		h := u.PasswordHash
		if h == "" {
			var err error
			if h, err = password.Hash(u.Password); err != nil {
				return nil, err
			}
		}
		m[u.Username] = h
	}
	return clientauth.NewBasicUsers(m)
}

// introspectionDetails builds the introspection members and web hooks of the config.
func (s *Server) introspectionDetails() oauth.Details {
	ic := s.cfg.Introspection
	hc := webhook.NewClient()
	hook := func(name string, h config.Webhook) *webhook.Hook {
		if h.URL == "" {
			return nil
		}
		return &webhook.Hook{Name: name, URL: h.URL, Secret: h.Secret, Timeout: time.Duration(h.Timeout),
			FailClosed: h.FailClosed, Client: hc, Now: s.now}
	}
	d := oauth.Details{
		UserDetails:  ic.UserDetails,
		LegacyGroups: ic.GroupPermissionsLegacy,
		UserHook:     hook("user_details", s.cfg.Webhooks.UserDetails),
		AccessHook:   hook("access_token", s.cfg.Webhooks.AccessToken),
	}
	if ic.GroupPermissionsAPI != "" {
		d.Groups = &oauth.GroupPolicies{Base: ic.GroupPermissionsAPI, Timeout: time.Duration(ic.GroupPermissionsTimeout),
			TTL: time.Duration(ic.GroupPermissionsCache), Client: hc, Now: s.now,
			OnFailure: func(err error) {
				s.metrics.groupFailures.Inc()
				s.log.Warn("group permissions API failed; introspection answers without group policies", "err", err)
			}}
	}
	return d
}

// oneGenerationPerRequest lets each request's client and token lookups
// share one read of the generations (client.PerRequest).
func oneGenerationPerRequest(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		next.ServeHTTP(w, r.WithContext(client.PerRequest(r.Context())))
	})
}

// oauthKeys are keys as the token endpoints sign with them: wrapped by
// wrap, when set.
func oauthKeys(keys *signing.Keys, wrap func(oauth.Keys) oauth.Keys) oauth.Keys {
	if wrap == nil {
		return keys
	}
	return wrap(keys)
}
