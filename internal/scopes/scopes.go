// Package scopes serves the scope configuration API
// (/api/v1/configuration/scopes) and holds the scope rules the OAuth flows
// use: usage limits, persistent consent, descriptions, authentication levels.
package scopes

import (
	"errors"
	"net/http"
	"net/url"
	"sort"

	"github.com/latchkey/latchkey/internal/client"
	"github.com/latchkey/latchkey/internal/clientauth"
	"github.com/latchkey/latchkey/internal/events"
	"github.com/latchkey/latchkey/internal/httpx"
	"github.com/latchkey/latchkey/internal/lazyre"
	"github.com/latchkey/latchkey/internal/request"
	"github.com/latchkey/latchkey/internal/store"
)

// APIScope is the scope clients of this API must be allowed.
const APIScope = "vendor_api_config"

// Path is the collection path.
const Path = "/api/v1/configuration/scopes"

// API serves the scopes API.
type API struct {
	Store  store.Store
	Auth   *clientauth.Authenticator
	Events *events.Recorder
	Issuer string
}

var (
	idRE     = lazyre.New(`^[A-Za-z0-9_-]{1,20}$`)
	localeRE = lazyre.New(`^[a-z]{2,3}([_-][A-Z]{2}([_-][A-Za-z0-9]{1,8})?)?$`)
)

// maxInt keeps integers inside int32, the width clients of the original API expect.
const maxInt = 1<<31 - 1

// body is the JSON of a scope in requests. Members not sent take their
// default (the PATCH rule: fields not sent are reset).
type body struct {
	ScopeID                    string            `json:"scope_id"`
	AuthenticationLevel        int64             `json:"authentication_level"`
	UsageLimit                 int64             `json:"usage_limit"`
	ServiceEndpoint            *string           `json:"service_endpoint"`
	VerificationFailedEndpoint *string           `json:"verification_failed_endpoint"`
	PersistentConsent          bool              `json:"persistent_consent"`
	Descriptions               map[string]string `json:"descriptions"`
}

// view is the read response: the members the spec lists.
type view struct {
	ScopeID             string            `json:"scope_id"`
	AuthenticationLevel int               `json:"authentication_level"`
	UsageLimit          int               `json:"usage_limit"`
	ServiceEndpoint     *string           `json:"service_endpoint"`
	PersistentConsent   bool              `json:"persistent_consent"`
	Descriptions        map[string]string `json:"descriptions"`
}

func toView(s store.Scope) view {
	v := view{ScopeID: s.ID, AuthenticationLevel: s.AuthenticationLevel, UsageLimit: s.UsageLimit,
		PersistentConsent: s.PersistentConsent, Descriptions: s.Descriptions}
	if s.ServiceEndpoint != "" {
		ep := s.ServiceEndpoint
		v.ServiceEndpoint = &ep
	}
	if v.Descriptions == nil {
		v.Descriptions = map[string]string{}
	}
	return v
}

func apiError(status int, code, desc string, details ...string) *httpx.Error {
	return &httpx.Error{Status: status, Code: code, Description: desc, Details: details}
}

// caller authenticates the API client; 401 unauthorized or 403 forbidden.
func (a *API) caller(r *http.Request) (store.Client, error) {
	c, err := a.Auth.APICaller(r, a.Issuer+Path, APIScope, a.Store)
	switch {
	case errors.Is(err, clientauth.ErrUnauthenticated):
		e := apiError(http.StatusUnauthorized, "unauthorized", "Valid client credentials are required.")
		e.Header = map[string]string{"WWW-Authenticate": `Basic realm="latchkey", Bearer realm="latchkey"`}
		e.Cause = err
		return c, e
	case errors.Is(err, clientauth.ErrThrottled):
		retry, _ := clientauth.RetryAfter(err)
		e := httpx.TooManyRequests("too_many_attempts", "Too many failed client authentications. Retry later.", retry)
		e.Details, e.Cause = []string{}, err
		return c, e
	case errors.Is(err, clientauth.ErrForbidden):
		return c, apiError(http.StatusForbidden, "forbidden", "The client is not allowed the scope "+APIScope+".")
	}
	return c, err
}

// validate checks b and returns the scope, or a 400 listing every bad field.
func validate(b body) (store.Scope, error) {
	var details []string
	if !idRE.MatchString(b.ScopeID) {
		details = append(details, "scope_id: required, at most 20 characters of a-z, A-Z, 0-9, _ and -")
	}
	if b.AuthenticationLevel < 0 || b.AuthenticationLevel > maxInt {
		details = append(details, "authentication_level: must be an integer from 0 to 2147483647")
	}
	if b.UsageLimit < 0 || b.UsageLimit > maxInt {
		details = append(details, "usage_limit: must be an integer from 0 (unlimited) to 2147483647")
	}
	if ep := b.ServiceEndpoint; ep != nil && *ep != "" && !absoluteURL(*ep) {
		details = append(details, "service_endpoint: must be an absolute http(s) URL")
	}
	// The browser is sent to verification_failed_endpoint: the redirect URI
	// rule of the clients (no script scheme, no cleartext http off loopback).
	if ep := b.VerificationFailedEndpoint; ep != nil && *ep != "" {
		if err := client.ValidateRedirectURI(*ep, client.RedirectPolicy{}); err != nil {
			details = append(details, "verification_failed_endpoint: "+err.Error())
		}
	}
	for loc, text := range b.Descriptions {
		if !localeRE.MatchString(loc) {
			details = append(details, "descriptions: "+strconvQuote(loc)+" is not a locale code (e.g. en, nl_NL)")
		} else if len(text) > 1000 {
			details = append(details, "descriptions."+loc+": at most 1000 characters")
		}
	}
	if len(b.Descriptions) > 100 {
		details = append(details, "descriptions: at most 100 locales")
	}
	if len(details) > 0 {
		sort.Strings(details)
		return store.Scope{}, apiError(http.StatusBadRequest, "invalid_request", "The scope is not valid.", details...)
	}
	s := store.Scope{ID: b.ScopeID, AuthenticationLevel: int(b.AuthenticationLevel), UsageLimit: int(b.UsageLimit),
		PersistentConsent: b.PersistentConsent, Descriptions: b.Descriptions}
	if b.ServiceEndpoint != nil {
		s.ServiceEndpoint = *b.ServiceEndpoint
	}
	if b.VerificationFailedEndpoint != nil {
		s.VerificationFailedEndpoint = *b.VerificationFailedEndpoint
	}
	if len(s.Descriptions) == 0 {
		s.Descriptions = nil
	}
	return s, nil
}

func absoluteURL(s string) bool {
	u, err := url.Parse(s)
	return err == nil && (u.Scheme == "https" || u.Scheme == "http") && u.Host != ""
}

// strconvQuote quotes a client-sent key for a message, capped in length.
func strconvQuote(s string) string {
	if len(s) > 32 {
		s = s[:32] + "..."
	}
	return `"` + s + `"`
}

func (a *API) decode(w http.ResponseWriter, r *http.Request) (store.Scope, error) {
	var b body
	if err := httpx.DecodeJSON(w, r, &b, 64<<10); err != nil {
		return store.Scope{}, err
	}
	return validate(b)
}

// Create is POST /api/v1/configuration/scopes.
func (a *API) Create(w http.ResponseWriter, r *http.Request) error {
	c, err := a.caller(r)
	if err != nil {
		return err
	}
	s, err := a.decode(w, r)
	if err != nil {
		return err
	}
	err = a.Store.Tx(r.Context(), func(tx store.Store) error {
		if err := tx.CreateScope(r.Context(), s); err != nil {
			return err
		}
		return a.Events.RecordOAuth(r.Context(), tx, request.Of(r), events.OAuth{Type: events.AdminScopeCreated, ClientID: c.ID, AppName: c.Name, AgentUser: c.ID})
	})
	if errors.Is(err, store.ErrConflict) {
		return apiError(http.StatusConflict, "conflict", "The scope already exists.", "scope_id")
	}
	if err != nil {
		return err
	}
	w.Header().Set("Location", Path+"/"+s.ID)
	w.WriteHeader(http.StatusCreated)
	return nil
}

// Get is GET /api/v1/configuration/scopes/{scope}.
func (a *API) Get(w http.ResponseWriter, r *http.Request) error {
	if _, err := a.caller(r); err != nil {
		return err
	}
	found, err := a.Store.GetScopes(r.Context(), []string{r.PathValue("scope")})
	if err != nil {
		return err
	}
	if len(found) == 0 {
		return apiError(http.StatusNotFound, "not_found", "The scope cannot be found.")
	}
	httpx.NoStore(w)
	httpx.WriteJSON(w, http.StatusOK, toView(found[0]))
	return nil
}

// List is GET /api/v1/configuration/scopes: every scope, by ID.
func (a *API) List(w http.ResponseWriter, r *http.Request) error {
	if _, err := a.caller(r); err != nil {
		return err
	}
	all, err := a.Store.ListScopes(r.Context())
	if err != nil {
		return err
	}
	out := make([]view, len(all))
	for i, s := range all {
		out[i] = toView(s)
	}
	httpx.NoStore(w)
	httpx.WriteJSON(w, http.StatusOK, out)
	return nil
}

// Patch is PATCH /api/v1/configuration/scopes/{scope}: fields sent change,
// fields not sent go back to their defaults.
func (a *API) Patch(w http.ResponseWriter, r *http.Request) error {
	c, err := a.caller(r)
	if err != nil {
		return err
	}
	s, err := a.decode(w, r)
	if err != nil {
		return err
	}
	if s.ID != r.PathValue("scope") {
		return apiError(http.StatusBadRequest, "invalid_request", "scope_id must equal the scope of the path.", "scope_id")
	}
	err = a.Store.Tx(r.Context(), func(tx store.Store) error {
		if err := tx.ReplaceScope(r.Context(), s); err != nil {
			return err
		}
		return a.Events.RecordOAuth(r.Context(), tx, request.Of(r), events.OAuth{Type: events.AdminScopeUpdated, ClientID: c.ID, AppName: c.Name, AgentUser: c.ID})
	})
	if errors.Is(err, store.ErrNotFound) {
		return apiError(http.StatusNotFound, "not_found", "The scope cannot be found.")
	}
	if err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

// Delete is DELETE /api/v1/configuration/scopes/{scope}.
func (a *API) Delete(w http.ResponseWriter, r *http.Request) error {
	c, err := a.caller(r)
	if err != nil {
		return err
	}
	err = a.Store.Tx(r.Context(), func(tx store.Store) error {
		if err := tx.DeleteScope(r.Context(), r.PathValue("scope")); err != nil {
			return err
		}
		return a.Events.RecordOAuth(r.Context(), tx, request.Of(r), events.OAuth{Type: events.AdminScopeDeleted, ClientID: c.ID, AppName: c.Name, AgentUser: c.ID})
	})
	if errors.Is(err, store.ErrNotFound) {
		return apiError(http.StatusNotFound, "not_found", "The scope cannot be found.")
	}
	if err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}
