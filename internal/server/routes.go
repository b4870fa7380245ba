package server

import (
	"net/http"
	"net/http/pprof"
	"slices"

	"github.com/latchkey/latchkey/internal/httpx"
	"github.com/latchkey/latchkey/internal/login"
	"github.com/latchkey/latchkey/internal/personimport"
	"github.com/latchkey/latchkey/internal/scopes"
	"github.com/latchkey/latchkey/web"
)

// routes is the table of contents of latchkey's HTTP interface: every route
// is registered here and nowhere else. With admin_listen, /metrics, the
// profiler and the API groups listed in admin_apis go to the admin mux
// instead, and the public address answers 404 for them.
func (s *Server) routes(mux, adminMux *http.ServeMux) {
	on := func(group string) *http.ServeMux {
		if adminMux != nil && (group == "operations" || slices.Contains(s.cfg.AdminAPIs, group)) {
			return adminMux
		}
		return mux
	}
	oauthAPI := func(fn httpx.HandlerFunc) http.Handler { return httpx.Handle(httpx.OAuthStyle, fn) }
	page := func(fn httpx.HandlerFunc) http.Handler { return httpx.Handle(s.pages.ServerErrorPage, fn) }

	// OAuth 2.0 (shared/spec/interface.md, "OAuth endpoints"), unversioned and v1.
	for _, prefix := range []string{"/oauth", "/oauth/v1"} {
		mux.Handle("GET "+prefix+"/authorize", page(s.oauth.Authorize))
		mux.Handle("POST "+prefix+"/token", oauthAPI(s.oauth.Token))
		mux.Handle("POST "+prefix+"/revoke", oauthAPI(s.oauth.Revoke))
	}
	mux.Handle("POST /oauth/api/v2/token/introspect", oauthAPI(s.oauth.Introspect))
	mux.Handle("POST /oauth/device_authorization", oauthAPI(s.oauth.DeviceAuthorization))
	mux.Handle("POST /oauth/device_authorization/approve", oauthAPI(s.oauth.Approve))
	mux.Handle("GET /oauth/device_authorization/verification", page(s.pages.DevicePage))
	mux.Handle("POST /oauth/device_authorization/verification", page(s.pages.DeviceSubmit))
	mux.HandleFunc("GET /.well-known/oauth-authorization-server", s.oauth.Metadata)

	// Scope configuration API (shared/spec/interface.md, "Scopes API").
	scopeAPI := func(fn httpx.HandlerFunc) http.Handler { return httpx.Handle(httpx.APIStyle, fn) }
	on("scopes").Handle("GET "+scopes.Path, scopeAPI(s.scopes.List))
	on("scopes").Handle("POST "+scopes.Path, scopeAPI(s.scopes.Create))
	on("scopes").Handle("GET "+scopes.Path+"/{scope}", scopeAPI(s.scopes.Get))
	on("scopes").Handle("PATCH "+scopes.Path+"/{scope}", scopeAPI(s.scopes.Patch))
	on("scopes").Handle("DELETE "+scopes.Path+"/{scope}", scopeAPI(s.scopes.Delete))

	// Event search (shared/spec/interface.md, "Events API").
	on("events").Handle("GET /oauth/api/v1/events", oauthAPI(s.search.OAuthEvents))
	on("events").Handle("GET /api/v1/events", oauthAPI(s.search.OAuthEvents)) // the path the spec's sample uses
	on("events").Handle("GET /api/events", httpx.Handle(httpx.EmptyStyle, s.search.PersonEvents))

	// Person import (shared/spec/interface.md, "Import API").
	on("import").Handle("POST "+personimport.Path, httpx.Handle(httpx.EmptyStyle, s.imports.Import))

	// Identity-management configuration (shared/spec/interface.md, "Configuration API").
	for _, rt := range s.config.Routes() {
		on("configuration").Handle(rt.Pattern, httpx.Handle(httpx.APIStyle, rt.Handler))
	}

	// Hosted pages.
	mux.Handle("GET /login", page(s.pages.LoginPage))
	mux.Handle("POST /login", page(s.pages.Login))
	mux.Handle("GET "+login.PathTOTP, page(s.pages.TOTPPage))
	mux.Handle("POST "+login.PathTOTP, page(s.pages.TOTP))
	mux.Handle("GET "+login.PathLogout, page(s.pages.Logout))
	mux.Handle("GET /consent", page(s.pages.ConsentPage))
	mux.Handle("POST /consent", page(s.pages.Consent))
	mux.Handle("GET /static/", http.StripPrefix("/static/", staticFiles(web.Static())))
	if s.demo {
		mux.Handle("GET /demo/callback", s.pages.DemoCallback(s.cfg.Issuer))
	}

	// Operations (OPERATOR.md, "Well-known paths"). Health answers on both
	// addresses: the balancer checks the public one.
	mux.HandleFunc("GET /health/alive", s.alive)
	mux.HandleFunc("GET /health/ready", s.ready)
	on("operations").Handle("GET /metrics", s.metrics.handler())
	if adminMux != nil {
		adminMux.HandleFunc("GET /health/alive", s.alive)
		adminMux.HandleFunc("GET /health/ready", s.ready)
		profiler(adminMux)
	}
}

// profiler registers Go's profiler (net/http/pprof); never on the public mux.
func profiler(mux *http.ServeMux) {
	mux.HandleFunc("GET /debug/pprof/", pprof.Index)
	mux.HandleFunc("GET /debug/pprof/cmdline", pprof.Cmdline)
	mux.HandleFunc("GET /debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("GET /debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("GET /debug/pprof/trace", pprof.Trace)
}
