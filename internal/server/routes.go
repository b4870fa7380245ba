package server

import (
	"net/http"
	"net/http/pprof"
	"slices"

	"github.com/latchkey/latchkey/internal/admin"
	"github.com/latchkey/latchkey/internal/cimconfig"
	"github.com/latchkey/latchkey/internal/federation"
	"github.com/latchkey/latchkey/internal/httpx"
	"github.com/latchkey/latchkey/internal/journey"
	"github.com/latchkey/latchkey/internal/login"
	"github.com/latchkey/latchkey/internal/oauth"
	"github.com/latchkey/latchkey/internal/personimport"
	"github.com/latchkey/latchkey/internal/scopes"
	"github.com/latchkey/latchkey/internal/signing"
	"github.com/latchkey/latchkey/web"
)

// routes is the table of contents of latchkey's HTTP interface: every route
// is registered here and nowhere else. Each handler parses, calls its
// service and answers in its API's error style (httpx.OAuthStyle: RFC 6749
// bodies; APIStyle: the scopes and configuration APIs; EmptyStyle: status
// only; hosted pages render an HTML error page). With admin_listen,
// /metrics, the profiler and the API groups listed in admin_apis go to the
// admin mux instead, and the public address answers 404 for them.
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
		// Every grant: oauth.Exchange over the grants table (grant_*.go).
		mux.Handle("POST "+prefix+"/token", oauthAPI(s.oauth.Token))
		mux.Handle("POST "+prefix+"/revoke", oauthAPI(s.oauth.Revoke))
	}
	// RFC 7662; "is this token active" is token.Active.
	mux.Handle("POST /oauth/api/v2/token/introspect", oauthAPI(s.oauth.Introspect))
	// RFC 8628: the device's request, the in-app approval (RFC 6750
	// bearer answers), and the hosted verification pages.
	mux.Handle("POST /oauth/device_authorization", oauthAPI(s.oauth.DeviceAuthorization))
	mux.Handle("POST /oauth/device_authorization/approve", oauthAPI(s.oauth.Approve))
	mux.Handle("GET /oauth/device_authorization/verification", page(s.pages.DevicePage))
	mux.Handle("POST /oauth/device_authorization/verification", page(s.pages.DeviceSubmit))
	// RFC 8414: the grant types are the token endpoint's grants table.
	mux.Handle("GET /.well-known/oauth-authorization-server", oauthAPI(s.oauth.Metadata))
	// OpenID Connect (docs/OIDC.md): discovery is the same document; the
	// public keys of every published signing key; UserInfo (RFC 6750
	// bearer answers); RP-initiated logout ends the browser session.
	mux.Handle("GET "+oauth.PathDiscovery, oauthAPI(s.oauth.Metadata))
	mux.Handle("GET "+signing.PathJWKS, oauthAPI(s.keys.ServeJWKS))
	mux.Handle("GET "+oauth.PathUserInfo, oauthAPI(s.oauth.UserInfo))
	mux.Handle("POST "+oauth.PathUserInfo, oauthAPI(s.oauth.UserInfo))
	mux.Handle("GET "+oauth.PathEndSession, page(s.pages.EndSession))
	mux.Handle("POST "+oauth.PathEndSession, page(s.pages.EndSession))

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

	// Identity-management configuration (shared/spec/interface.md,
	// "Configuration API"): basic_auth API users; v1 answers 500 and v2 409
	// while the API is off (NOTES.md). A unit's GET answers the unit, its
	// POST replaces it (docs/DESIGN.md, identity-management configuration).
	c, cfgMux := s.config, on("configuration")
	cfgAPI := func(fn httpx.HandlerFunc) http.Handler { return httpx.Handle(httpx.APIStyle, fn) }
	cfgMux.Handle("GET /api/config", cfgAPI(c.GetV1))
	cfgMux.Handle("POST /api/config/extension/reload", cfgAPI(c.ReloadExtensions))
	cfgMux.Handle("GET /api/config/identity-providers", cfgAPI(c.IdentityProviders))
	cfgMux.Handle("GET /api/v2/attributes", cfgAPI(c.GetUnit(cimconfig.UnitAttributes)))
	cfgMux.Handle("POST /api/v2/attributes", cfgAPI(c.PostUnit(cimconfig.UnitAttributes)))
	cfgMux.Handle("GET /api/v2/config", cfgAPI(c.GetV2))
	cfgMux.Handle("POST /api/v2/config", cfgAPI(c.PostV2))
	cfgMux.Handle("GET /api/v2/config/custom-messages", cfgAPI(c.GetUnit(cimconfig.UnitCustomMessages)))
	cfgMux.Handle("PUT /api/v2/config/custom-messages", cfgAPI(c.PostUnit(cimconfig.UnitCustomMessages)))
	cfgMux.Handle("PUT /api/v2/config/custom-messages/{locale_variant}/batch", cfgAPI(c.PutMessages))
	cfgMux.Handle("DELETE /api/v2/config/custom-messages/{locale_variant}/{message_key}", cfgAPI(c.DeleteMessage))
	cfgMux.Handle("GET /api/v2/config/features", cfgAPI(c.GetUnit(cimconfig.UnitFeatures)))
	cfgMux.Handle("POST /api/v2/config/features", cfgAPI(c.PostUnit(cimconfig.UnitFeatures)))
	cfgMux.Handle("GET /api/v2/config/features/action-token/whitelisted-urls", cfgAPI(c.ListURLs(cimconfig.ActionTokenURLs)))
	cfgMux.Handle("POST /api/v2/config/features/action-token/whitelisted-urls", cfgAPI(c.AddURL(cimconfig.ActionTokenURLs, http.StatusCreated)))
	cfgMux.Handle("DELETE /api/v2/config/features/action-token/whitelisted-urls/{url_id}", cfgAPI(c.DeleteURL(cimconfig.ActionTokenURLs)))
	cfgMux.Handle("GET /api/v2/config/login-methods", cfgAPI(c.GetUnit(cimconfig.UnitLoginMethods)))
	cfgMux.Handle("GET /api/v2/config/notifications/email", cfgAPI(c.GetUnit(cimconfig.UnitEmailNotifications)))
	cfgMux.Handle("POST /api/v2/config/notifications/email", cfgAPI(c.PostUnit(cimconfig.UnitEmailNotifications)))
	cfgMux.Handle("GET /api/v2/config/organisations", cfgAPI(c.GetUnit(cimconfig.UnitOrganisations)))
	cfgMux.Handle("POST /api/v2/config/password-policy", cfgAPI(c.PostUnit(cimconfig.UnitPasswordPolicy)))
	cfgMux.Handle("GET /api/v2/config/redirects", cfgAPI(c.GetUnit(cimconfig.UnitRedirects)))
	cfgMux.Handle("POST /api/v2/config/redirects", cfgAPI(c.PostUnit(cimconfig.UnitRedirects)))
	cfgMux.Handle("GET /api/v2/config/redirects/whitelisted-urls", cfgAPI(c.ListURLs(cimconfig.RedirectURLs)))
	cfgMux.Handle("POST /api/v2/config/redirects/whitelisted-urls", cfgAPI(c.AddURL(cimconfig.RedirectURLs, http.StatusOK)))
	cfgMux.Handle("DELETE /api/v2/config/redirects/whitelisted-urls/{url_id}", cfgAPI(c.DeleteURL(cimconfig.RedirectURLs)))
	cfgMux.Handle("GET /api/v2/config/step-up", cfgAPI(c.GetUnit(cimconfig.UnitStepUp)))
	cfgMux.Handle("POST /api/v2/config/step-up", cfgAPI(c.PostUnit(cimconfig.UnitStepUp)))
	cfgMux.Handle("GET /api/v2/config/ui-extension", cfgAPI(c.GetUnit(cimconfig.UnitUIExtension)))
	cfgMux.Handle("POST /api/v2/config/ui-extension", cfgAPI(c.PostUnit(cimconfig.UnitUIExtension)))
	cfgMux.Handle("GET /v2/config/certificates", cfgAPI(c.ListCertificates))
	cfgMux.Handle("POST /v2/config/certificates", cfgAPI(c.AddCertificate))
	cfgMux.Handle("POST /v2/config/certificates/batch", cfgAPI(c.BatchCertificates))
	cfgMux.Handle("GET /v2/config/certificates/{certificateId}", cfgAPI(c.GetCertificate))
	cfgMux.Handle("POST /v2/config/certificates/{certificateId}", cfgAPI(c.UpdateCertificate))
	cfgMux.Handle("DELETE /v2/config/certificates/{certificateId}", cfgAPI(c.DeleteCertificate))

	// Admin API (issue 21, docs/ADMIN.md): clients and persons at run time.
	// HTTP basic of api_users, or a bearer access token with scope
	// vendor_api_admin; persons answer 503 while features.person_api_enabled
	// is off. Group "admin" of admin_apis.
	a, admMux := s.admin, on("admin")
	adminAPI := func(fn httpx.HandlerFunc) http.Handler { return httpx.Handle(httpx.APIStyle, fn) }
	admMux.Handle("GET "+admin.PathClients, adminAPI(a.ListClients))
	admMux.Handle("POST "+admin.PathClients, adminAPI(a.CreateClient))
	admMux.Handle("GET "+admin.PathClients+"/{client_id}", adminAPI(a.GetClient))
	admMux.Handle("PUT "+admin.PathClients+"/{client_id}", adminAPI(a.PutClient))
	admMux.Handle("DELETE "+admin.PathClients+"/{client_id}", adminAPI(a.DeleteClient))
	admMux.Handle("POST "+admin.PathClients+"/{client_id}/secret", adminAPI(a.RotateSecret))
	admMux.Handle("GET "+admin.PathPersons, adminAPI(a.FindPersons))
	admMux.Handle("GET "+admin.PathPersons+"/{person_id}", adminAPI(a.GetPerson))
	admMux.Handle("PATCH "+admin.PathPersons+"/{person_id}", adminAPI(a.PatchPerson))
	admMux.Handle("DELETE "+admin.PathPersons+"/{person_id}", adminAPI(a.DeletePerson))
	admMux.Handle("GET "+admin.PathPersons+"/{person_id}/sessions", adminAPI(a.ListSessions))
	admMux.Handle("DELETE "+admin.PathPersons+"/{person_id}/sessions", adminAPI(a.EndSessions))
	// Dynamic client registration (RFC 7591; RFC 7592 for the client's own
	// configuration endpoint): 404 unless dynamic_registration.enabled.
	mux.Handle("POST "+admin.PathRegister, oauthAPI(a.Register))
	mux.Handle("GET "+admin.PathRegister+"/{client_id}", oauthAPI(a.ReadRegistration))
	mux.Handle("PUT "+admin.PathRegister+"/{client_id}", oauthAPI(a.UpdateRegistration))
	mux.Handle("DELETE "+admin.PathRegister+"/{client_id}", oauthAPI(a.DeleteRegistration))

	// Hosted pages.
	mux.Handle("GET /login", page(s.pages.LoginPage))
	mux.Handle("POST /login", page(s.pages.Login))
	mux.Handle("GET "+login.PathTOTP, page(s.pages.TOTPPage))
	mux.Handle("POST "+login.PathTOTP, page(s.pages.TOTP))
	mux.Handle("GET "+login.PathStepUp, page(s.pages.StepUpPage))
	mux.Handle("GET "+login.PathEmailCode, page(s.pages.EmailCodePage))
	mux.Handle("POST "+login.PathEmailCode, page(s.pages.EmailCode))
	mux.Handle("GET "+login.PathLogout, page(s.pages.Logout))
	// Login methods (docs/FEDERATION.md): a method's button, the OpenID
	// Connect redirect URI and post-logout return, the LDAP form.
	mux.Handle("GET "+login.PathFederated, page(s.pages.FederatedStart))
	mux.Handle("GET "+federation.PathCallback, page(s.pages.OIDCCallback))
	mux.Handle("GET "+federation.PathLoggedOut, page(s.pages.UpstreamLoggedOut))
	mux.Handle("POST "+login.PathLDAP, page(s.pages.LDAPLogin))
	mux.Handle("GET /consent", page(s.pages.ConsentPage))
	mux.Handle("POST /consent", page(s.pages.Consent))
	// Self-service journeys (issue 25; docs/JOURNEYS.md): 404 while switched off.
	mux.Handle("GET "+journey.PathSignUp, page(s.pages.Switched(login.SignUpOn, s.pages.SignUpPage)))
	mux.Handle("POST "+journey.PathSignUp, page(s.pages.Switched(login.SignUpOn, s.pages.SignUp)))
	mux.Handle("GET "+journey.PathSignUp+"/done", page(s.pages.Switched(login.SignUpOn, s.pages.SignUpDone)))
	mux.Handle("GET "+journey.PathForgot, page(s.pages.Switched(login.PasswordResetOn, s.pages.ForgotPage)))
	mux.Handle("POST "+journey.PathForgot, page(s.pages.Switched(login.PasswordResetOn, s.pages.Forgot)))
	mux.Handle("GET "+journey.PathForgot+"/sent", page(s.pages.Switched(login.PasswordResetOn, s.pages.ForgotSent)))
	mux.Handle("GET "+journey.PathReset, page(s.pages.Switched(login.PasswordResetOn, s.pages.ResetPage)))
	mux.Handle("POST "+journey.PathReset, page(s.pages.Switched(login.PasswordResetOn, s.pages.Reset)))
	mux.Handle("GET "+journey.PathReset+"/done", page(s.pages.Switched(login.PasswordResetOn, s.pages.ResetDone)))
	mux.Handle("GET "+journey.PathActivate, page(s.pages.ActivatePage))
	mux.Handle("POST "+journey.PathActivate, page(s.pages.Activate))
	mux.Handle("GET "+journey.PathActivate+"/done", page(s.pages.ActivateDone))
	mux.Handle("GET "+login.PathActivateResend, page(s.pages.ResendPage))
	mux.Handle("POST "+login.PathActivateResend, page(s.pages.Resend))
	mux.Handle("GET /{$}", page(s.pages.Home))
	mux.Handle("GET /static/", http.StripPrefix("/static/", staticFiles(web.Static())))
	// Browsers ask for /favicon.ico where no page names an icon (an API's answer, say).
	mux.Handle("GET /favicon.ico", http.RedirectHandler("/static/favicon.svg", http.StatusMovedPermanently))
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
