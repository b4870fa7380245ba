package server

import (
	"net/http"

	"github.com/latchkey/latchkey/internal/cimconfig"
	"github.com/latchkey/latchkey/internal/httpx"
	"github.com/latchkey/latchkey/internal/login"
	"github.com/latchkey/latchkey/internal/personimport"
	"github.com/latchkey/latchkey/internal/scopes"
	"github.com/latchkey/latchkey/internal/signing"
	"github.com/latchkey/latchkey/web"
)

// routes is the table of contents of latchkey's HTTP interface: every route
// is registered here and nowhere else. Each handler parses, calls its
// service and answers in its API's error style (httpx.OAuthStyle: RFC 6749
// bodies; APIStyle: the scopes and configuration APIs; EmptyStyle: status
// only; hosted pages render an HTML error page).
func (s *Server) routes(mux *http.ServeMux) {
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
	mux.HandleFunc("GET /.well-known/oauth-authorization-server", s.oauth.Metadata)
	// OpenID Connect (issue 20): the public keys of every published signing key.
	mux.Handle("GET "+signing.PathJWKS, oauthAPI(s.keys.ServeJWKS))

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

	// Identity-management configuration (shared/spec/interface.md,
	// "Configuration API"): basic_auth API users; v1 answers 500 and v2 409
	// while the API is off (NOTES.md). A unit's GET answers the unit, its
	// POST replaces it (docs/DESIGN.md, identity-management configuration).
	c := s.config
	cfgAPI := func(fn httpx.HandlerFunc) http.Handler { return httpx.Handle(httpx.APIStyle, fn) }
	mux.Handle("GET /api/config", cfgAPI(c.GetV1))
	mux.Handle("POST /api/config/extension/reload", cfgAPI(c.ReloadExtensions))
	mux.Handle("GET /api/config/identity-providers", cfgAPI(c.IdentityProviders))
	mux.Handle("GET /api/v2/attributes", cfgAPI(c.GetUnit(cimconfig.UnitAttributes)))
	mux.Handle("POST /api/v2/attributes", cfgAPI(c.PostUnit(cimconfig.UnitAttributes)))
	mux.Handle("GET /api/v2/config", cfgAPI(c.GetV2))
	mux.Handle("POST /api/v2/config", cfgAPI(c.PostV2))
	mux.Handle("GET /api/v2/config/custom-messages", cfgAPI(c.GetUnit(cimconfig.UnitCustomMessages)))
	mux.Handle("PUT /api/v2/config/custom-messages", cfgAPI(c.PostUnit(cimconfig.UnitCustomMessages)))
	mux.Handle("PUT /api/v2/config/custom-messages/{locale_variant}/batch", cfgAPI(c.PutMessages))
	mux.Handle("DELETE /api/v2/config/custom-messages/{locale_variant}/{message_key}", cfgAPI(c.DeleteMessage))
	mux.Handle("GET /api/v2/config/features", cfgAPI(c.GetUnit(cimconfig.UnitFeatures)))
	mux.Handle("POST /api/v2/config/features", cfgAPI(c.PostUnit(cimconfig.UnitFeatures)))
	mux.Handle("GET /api/v2/config/features/action-token/whitelisted-urls", cfgAPI(c.ListURLs(cimconfig.ActionTokenURLs)))
	mux.Handle("POST /api/v2/config/features/action-token/whitelisted-urls", cfgAPI(c.AddURL(cimconfig.ActionTokenURLs, http.StatusCreated)))
	mux.Handle("DELETE /api/v2/config/features/action-token/whitelisted-urls/{url_id}", cfgAPI(c.DeleteURL(cimconfig.ActionTokenURLs)))
	mux.Handle("GET /api/v2/config/login-methods", cfgAPI(c.GetUnit(cimconfig.UnitLoginMethods)))
	mux.Handle("GET /api/v2/config/notifications/email", cfgAPI(c.GetUnit(cimconfig.UnitEmailNotifications)))
	mux.Handle("POST /api/v2/config/notifications/email", cfgAPI(c.PostUnit(cimconfig.UnitEmailNotifications)))
	mux.Handle("GET /api/v2/config/organisations", cfgAPI(c.GetUnit(cimconfig.UnitOrganisations)))
	mux.Handle("POST /api/v2/config/password-policy", cfgAPI(c.PostUnit(cimconfig.UnitPasswordPolicy)))
	mux.Handle("GET /api/v2/config/redirects", cfgAPI(c.GetUnit(cimconfig.UnitRedirects)))
	mux.Handle("POST /api/v2/config/redirects", cfgAPI(c.PostUnit(cimconfig.UnitRedirects)))
	mux.Handle("GET /api/v2/config/redirects/whitelisted-urls", cfgAPI(c.ListURLs(cimconfig.RedirectURLs)))
	mux.Handle("POST /api/v2/config/redirects/whitelisted-urls", cfgAPI(c.AddURL(cimconfig.RedirectURLs, http.StatusOK)))
	mux.Handle("DELETE /api/v2/config/redirects/whitelisted-urls/{url_id}", cfgAPI(c.DeleteURL(cimconfig.RedirectURLs)))
	mux.Handle("GET /api/v2/config/step-up", cfgAPI(c.GetUnit(cimconfig.UnitStepUp)))
	mux.Handle("POST /api/v2/config/step-up", cfgAPI(c.PostUnit(cimconfig.UnitStepUp)))
	mux.Handle("GET /api/v2/config/ui-extension", cfgAPI(c.GetUnit(cimconfig.UnitUIExtension)))
	mux.Handle("POST /api/v2/config/ui-extension", cfgAPI(c.PostUnit(cimconfig.UnitUIExtension)))
	mux.Handle("GET /v2/config/certificates", cfgAPI(c.ListCertificates))
	mux.Handle("POST /v2/config/certificates", cfgAPI(c.AddCertificate))
	mux.Handle("POST /v2/config/certificates/batch", cfgAPI(c.BatchCertificates))
	mux.Handle("GET /v2/config/certificates/{certificateId}", cfgAPI(c.GetCertificate))
	mux.Handle("POST /v2/config/certificates/{certificateId}", cfgAPI(c.UpdateCertificate))
	mux.Handle("DELETE /v2/config/certificates/{certificateId}", cfgAPI(c.DeleteCertificate))

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

	// Operations (OPERATOR.md, "Well-known paths").
	mux.HandleFunc("GET /health/alive", s.alive)
	mux.HandleFunc("GET /health/ready", s.ready)
	mux.Handle("GET /metrics", s.metrics.handler())
}
