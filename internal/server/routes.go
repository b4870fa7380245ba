package server

import (
	"net/http"

	"github.com/latchkey/latchkey/internal/httpx"
	"github.com/latchkey/latchkey/internal/journey"
	"github.com/latchkey/latchkey/internal/login"
	"github.com/latchkey/latchkey/internal/personimport"
	"github.com/latchkey/latchkey/internal/scopes"
	"github.com/latchkey/latchkey/web"
)

// routes is the table of contents of latchkey's HTTP interface: every route
// is registered here and nowhere else.
func (s *Server) routes(mux *http.ServeMux) {
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
	mux.Handle("GET "+scopes.Path, scopeAPI(s.scopes.List))
	mux.Handle("POST "+scopes.Path, scopeAPI(s.scopes.Create))
	mux.Handle("GET "+scopes.Path+"/{scope}", scopeAPI(s.scopes.Get))
	mux.Handle("PATCH "+scopes.Path+"/{scope}", scopeAPI(s.scopes.Patch))
	mux.Handle("DELETE "+scopes.Path+"/{scope}", scopeAPI(s.scopes.Delete))

	// Event search (shared/spec/interface.md, "Events API").
	mux.Handle("GET /oauth/api/v1/events", oauthAPI(s.search.OAuthEvents))
	mux.Handle("GET /api/v1/events", oauthAPI(s.search.OAuthEvents)) // the path the spec's sample uses
	mux.Handle("GET /api/events", httpx.Handle(httpx.EmptyStyle, s.search.PersonEvents))

	// Person import (shared/spec/interface.md, "Import API").
	mux.Handle("POST "+personimport.Path, httpx.Handle(httpx.EmptyStyle, s.imports.Import))

	// Identity-management configuration (shared/spec/interface.md, "Configuration API").
	for _, rt := range s.config.Routes() {
		mux.Handle(rt.Pattern, httpx.Handle(httpx.APIStyle, rt.Handler))
	}

	// Hosted pages.
	mux.Handle("GET /login", page(s.pages.LoginPage))
	mux.Handle("POST /login", page(s.pages.Login))
	mux.Handle("GET "+login.PathTOTP, page(s.pages.TOTPPage))
	mux.Handle("POST "+login.PathTOTP, page(s.pages.TOTP))
	mux.Handle("GET "+login.PathLogout, page(s.pages.Logout))
	mux.Handle("GET /consent", page(s.pages.ConsentPage))
	mux.Handle("POST /consent", page(s.pages.Consent))
	// Self-service journeys (issue 25; docs/JOURNEYS.md): 404 while switched off.
	mux.Handle("GET "+journey.PathSignUp, page(s.pages.SignUpPage))
	mux.Handle("POST "+journey.PathSignUp, page(s.pages.SignUp))
	mux.Handle("GET "+journey.PathSignUp+"/done", page(s.pages.SignUpDone))
	mux.Handle("GET "+journey.PathForgot, page(s.pages.ForgotPage))
	mux.Handle("POST "+journey.PathForgot, page(s.pages.Forgot))
	mux.Handle("GET "+journey.PathForgot+"/sent", page(s.pages.ForgotSent))
	mux.Handle("GET "+journey.PathReset, page(s.pages.ResetPage))
	mux.Handle("POST "+journey.PathReset, page(s.pages.Reset))
	mux.Handle("GET "+journey.PathReset+"/done", page(s.pages.ResetDone))
	mux.Handle("GET "+journey.PathActivate, page(s.pages.ActivatePage))
	mux.Handle("POST "+journey.PathActivate, page(s.pages.Activate))
	mux.Handle("GET "+journey.PathActivate+"/done", page(s.pages.ActivateDone))
	mux.Handle("GET "+login.PathActivateResend, page(s.pages.ResendPage))
	mux.Handle("POST "+login.PathActivateResend, page(s.pages.Resend))
	mux.Handle("GET /{$}", page(s.pages.Home))
	mux.Handle("GET /static/", http.StripPrefix("/static/", staticFiles(web.Static())))
	if s.demo {
		mux.Handle("GET /demo/callback", s.pages.DemoCallback(s.cfg.Issuer))
	}

	// Operations (OPERATOR.md, "Well-known paths").
	mux.HandleFunc("GET /health/alive", s.alive)
	mux.HandleFunc("GET /health/ready", s.ready)
	mux.Handle("GET /metrics", s.metrics.handler())
}
