package admin

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/latchkey/latchkey/internal/clientauth"
	"github.com/latchkey/latchkey/internal/config"
	"github.com/latchkey/latchkey/internal/httpx"
	"github.com/latchkey/latchkey/internal/personimport"
	"github.com/latchkey/latchkey/internal/request"
	"github.com/latchkey/latchkey/internal/store"
)

// Paths of the admin API.
const (
	PathClients = "/api/v1/clients"
	PathPersons = "/api/v1/persons"
)

// APIScope is the scope a client's access token must carry to call the
// admin API (OPERATOR.md).
const APIScope = "vendor_api_admin"

// maxBody bounds a request body (a client with its key set, a person patch).
const maxBody = 64 << 10

// Handler serves the admin API: thin handlers over Service, answering
// errors as {"error", "error_description", "details"} (httpx.APIStyle).
type Handler struct {
	Service *Service
	// Users are the api_users (HTTP basic); Auth checks a client's bearer
	// access token (client credentials with APIScope) against Tokens.
	Users  *clientauth.BasicUsers
	Auth   *clientauth.Authenticator
	Tokens clientauth.TokenSource
	Issuer string
	// PersonsEnabled reports features.person_api_enabled; nil: on.
	PersonsEnabled func(ctx context.Context) (bool, error)
}

// caller authenticates the admin: HTTP basic of an api_users entry, or a
// bearer access token of a client with APIScope. 401 without (or with a
// wrong) credential, 403 without the scope, 429 when throttled.
func (h *Handler) caller(r *http.Request) (Actor, error) {
	a := Actor{Facts: request.Of(r)}
	authz := r.Header.Get("Authorization")
	var err error
	switch {
	case len(authz) > 6 && strings.EqualFold(authz[:6], "basic "):
		a.Name, err = h.Users.Verify(r)
	case len(authz) > 7 && strings.EqualFold(authz[:7], "bearer "):
		var c store.Client
		// A client assertion's audience may be the issuer or this URL.
		c, err = h.Auth.APICaller(r, h.Issuer+r.URL.Path, APIScope, h.Tokens)
		a.Name = c.ID
	default:
		err = clientauth.ErrUnauthenticated
	}
	if retry, ok := clientauth.RetryAfter(err); ok {
		e := httpx.TooManyRequests("too_many_attempts", "Too many failed authentications. Retry later.", retry)
		e.Cause = err
		return a, e
	}
	switch {
	case errors.Is(err, clientauth.ErrUnauthenticated):
		return a, &httpx.Error{Status: http.StatusUnauthorized, Code: "unauthorized",
			Description: "HTTP basic credentials of an API user, or a bearer access token with scope " + APIScope + ", are required.",
			Header:      map[string]string{"WWW-Authenticate": `Basic realm="latchkey", Bearer realm="latchkey"`}, Cause: err}
	case errors.Is(err, clientauth.ErrForbidden):
		return a, &httpx.Error{Status: http.StatusForbidden, Code: "forbidden",
			Description: "The access token does not carry the scope " + APIScope + "."}
	}
	return a, err
}

// answer maps the rules' errors to the API's answers.
func answer(err error, invalidCode, noun string) error {
	var ie *InvalidError
	switch {
	case err == nil:
		return nil
	case errors.As(err, &ie):
		return &httpx.Error{Status: http.StatusBadRequest, Code: invalidCode, Description: ie.Msg, Details: []string{ie.Field}}
	case errors.Is(err, ErrNotFound):
		return httpx.Errorf(http.StatusNotFound, "not_found", "No %s with that id.", noun)
	case errors.Is(err, ErrReadOnly):
		return httpx.Errorf(http.StatusConflict, "read_only", "The client is defined in the config file: change it there.")
	case errors.Is(err, ErrConflict):
		return httpx.Errorf(http.StatusConflict, "conflict", "The id or email address is taken.")
	case errors.Is(err, ErrChangedSinceRevision):
		return httpx.Errorf(http.StatusPreconditionFailed, "precondition_failed",
			"The client changed since the revision of If-Match: read it again.")
	}
	return err
}

func clientAnswer(err error) error { return answer(err, "invalid_client_metadata", "client") }
func personAnswer(err error) error { return answer(err, "invalid_request", "person") }

// ifMatch reads If-Match: a revision (`"3"`), or 0 for none or `*`. A
// value that names no revision matches none (RFC 9110 section 13.1.1).
func ifMatch(r *http.Request) (int64, error) {
	v := strings.TrimSpace(r.Header.Get("If-Match"))
	if v == "" || v == "*" {
		return 0, nil
	}
	n, err := strconv.ParseInt(strings.Trim(v, `"`), 10, 64)
	if err != nil || n <= 0 || !strings.HasPrefix(v, `"`) {
		return 0, ErrChangedSinceRevision
	}
	return n, nil
}

// writeClient answers c with its ETag, never cached: secret is the one the
// request generated, shown only in this answer.
func writeClient(w http.ResponseWriter, status int, c Client, secret string) {
	if c.Revision > 0 {
		w.Header().Set("ETag", `"`+strconv.FormatInt(c.Revision, 10)+`"`)
	}
	httpx.NoStore(w)
	httpx.WriteJSON(w, status, View(c, secret))
}

// callerAt authenticates the caller and reads If-Match, for the requests
// that change a client without a body.
func (h *Handler) callerAt(r *http.Request) (Actor, int64, error) {
	a, err := h.caller(r)
	if err != nil {
		return a, 0, err
	}
	rev, err := ifMatch(r)
	if err != nil {
		return a, 0, clientAnswer(err)
	}
	return a, rev, nil
}

// ClientView is a client as the admin API and the CLI show it: never a
// secret or a secret's hash, but the secret an answer generated.
type ClientView struct {
	ClientID                string          `json:"client_id"`
	ClientSecret            string          `json:"client_secret,omitempty"` // only in the answer that generated it
	Source                  string          `json:"source"`
	Name                    string          `json:"name"`
	TokenEndpointAuthMethod string          `json:"token_endpoint_auth_method"`
	JWKS                    json.RawMessage `json:"jwks,omitempty"`
	JWKSURI                 string          `json:"jwks_uri,omitempty"`
	RedirectURIs            []string        `json:"redirect_uris"`
	GrantTypes              []string        `json:"grant_types"`
	Scopes                  []string        `json:"scopes"`
	ConsentRequired         bool            `json:"consent_required"`
	AllowPlainPKCE          bool            `json:"allow_plain_pkce"`
	AccessTokenLifetime     string          `json:"access_token_lifetime"`
	RefreshTokenLifetime    string          `json:"refresh_token_lifetime"`
	AppIdentifier           string          `json:"app_identifier"`
	AppPlatform             string          `json:"app_platform"`
	AppVersion              string          `json:"app_version"`
	IntrospectAnyToken      bool            `json:"introspect_any_token"`
	DeviceApprovalClients   []string        `json:"device_approval_clients"`
	PostLogoutRedirectURIs  []string        `json:"post_logout_redirect_uris"`
	AccessTokenFormat       string          `json:"access_token_format"`
	Revision                int64           `json:"revision,omitempty"`
	CreatedAt               string          `json:"created_at,omitempty"`
	UpdatedAt               string          `json:"updated_at,omitempty"`
}

// View is c as shown, with secret when the answer generated one.
func View(c Client, secret string) ClientView {
	format := c.AccessTokenFormat
	if format == "" {
		format = "opaque"
	}
	return ClientView{ClientID: c.ID, ClientSecret: secret, Source: c.Source, Name: c.Name,
		TokenEndpointAuthMethod: c.TokenEndpointAuthMethod, JWKS: c.JWKS, JWKSURI: c.JWKSURI,
		RedirectURIs: nonNil(c.RedirectURIs), GrantTypes: nonNil(c.GrantTypes), Scopes: nonNil(c.Scopes),
		ConsentRequired: c.ConsentRequired, AllowPlainPKCE: c.AllowPlainPKCE,
		AccessTokenLifetime: config.FormatDuration(c.AccessTokenLifetime), RefreshTokenLifetime: config.FormatDuration(c.RefreshTokenLifetime),
		AppIdentifier: c.AppIdentifier, AppPlatform: c.AppPlatform, AppVersion: c.AppVersion,
		IntrospectAnyToken: c.IntrospectAnyToken, DeviceApprovalClients: nonNil(c.DeviceApprovalClients),
		PostLogoutRedirectURIs: nonNil(c.PostLogoutRedirectURIs), AccessTokenFormat: format,
		Revision: c.Revision, CreatedAt: stamp(c.CreatedAt), UpdatedAt: stamp(c.UpdatedAt)}
}

func nonNil(v []string) []string {
	if v == nil {
		return []string{}
	}
	return v
}

func stamp(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.UTC().Format(time.RFC3339)
}

// callerWithClient authenticates the caller and decodes the client of the
// body (POST and PUT).
func (h *Handler) callerWithClient(w http.ResponseWriter, r *http.Request) (Actor, ClientInput, error) {
	var in ClientInput
	a, err := h.caller(r)
	if err != nil {
		return a, in, err
	}
	err = httpx.DecodeJSON(w, r, &in, maxBody)
	var he *httpx.Error
	if errors.As(err, &he) && he.Status == http.StatusBadRequest {
		he.Code = "invalid_client_metadata"
	}
	return a, in, err
}

// CreateClient is POST /api/v1/clients: 201 with Location and the client,
// with a generated client_secret shown only here.
func (h *Handler) CreateClient(w http.ResponseWriter, r *http.Request) error {
	a, in, err := h.callerWithClient(w, r)
	if err != nil {
		return err
	}
	c, secret, err := h.Service.CreateClient(r.Context(), a, in)
	if err != nil {
		return clientAnswer(err)
	}
	w.Header().Set("Location", PathClients+"/"+c.ID)
	writeClient(w, http.StatusCreated, c, secret)
	return nil
}

// ListClients is GET /api/v1/clients?limit=&offset=: {clients, total}.
func (h *Handler) ListClients(w http.ResponseWriter, r *http.Request) error {
	if _, err := h.caller(r); err != nil {
		return err
	}
	q := r.URL.Query()
	limit, err := intParam(q.Get("limit"), 100, 1, 1000)
	if err != nil {
		return &httpx.Error{Status: http.StatusBadRequest, Code: "invalid_request",
			Description: "limit must be a number from 1 to 1000.", Details: []string{"limit"}}
	}
	offset, err := intParam(q.Get("offset"), 0, 0, 1<<31-1)
	if err != nil {
		return &httpx.Error{Status: http.StatusBadRequest, Code: "invalid_request",
			Description: "offset must be a number from 0.", Details: []string{"offset"}}
	}
	cs, total, err := h.Service.ListClients(r.Context(), offset, limit)
	if err != nil {
		return err
	}
	out := struct {
		Clients []ClientView `json:"clients"`
		Total   int          `json:"total"`
	}{Clients: make([]ClientView, len(cs)), Total: total}
	for i, c := range cs {
		out.Clients[i] = View(c, "")
	}
	httpx.NoStore(w)
	httpx.WriteJSON(w, http.StatusOK, out)
	return nil
}

func intParam(v string, def, lo, hi int) (int, error) {
	if v == "" {
		return def, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < lo || n > hi {
		return 0, strconv.ErrRange
	}
	return n, nil
}

// GetClient is GET /api/v1/clients/{client_id}, with its ETag.
func (h *Handler) GetClient(w http.ResponseWriter, r *http.Request) error {
	if _, err := h.caller(r); err != nil {
		return err
	}
	c, err := h.Service.GetClient(r.Context(), r.PathValue("client_id"))
	if err != nil {
		return clientAnswer(err)
	}
	writeClient(w, http.StatusOK, c, "")
	return nil
}

// PutClient is PUT /api/v1/clients/{client_id}: every member replaced;
// If-Match (the ETag) refuses a stale update with 412.
func (h *Handler) PutClient(w http.ResponseWriter, r *http.Request) error {
	a, in, err := h.callerWithClient(w, r)
	if err != nil {
		return err
	}
	rev, err := ifMatch(r)
	if err != nil {
		return clientAnswer(err)
	}
	c, secret, err := h.Service.ReplaceClient(r.Context(), a, r.PathValue("client_id"), rev, in)
	if err != nil {
		return clientAnswer(err)
	}
	writeClient(w, http.StatusOK, c, secret)
	return nil
}

// revocationView counts what a delete ended.
type revocationView struct {
	GrantsRevoked int64  `json:"grants_revoked"`
	TokensRevoked int64  `json:"tokens_revoked"`
	SessionsEnded *int64 `json:"sessions_ended,omitempty"`
}

// DeleteClient is DELETE /api/v1/clients/{client_id}: its tokens are
// revoked in the same transaction.
func (h *Handler) DeleteClient(w http.ResponseWriter, r *http.Request) error {
	a, rev, err := h.callerAt(r)
	if err != nil {
		return err
	}
	out, err := h.Service.DeleteClient(r.Context(), a, r.PathValue("client_id"), rev)
	if err != nil {
		return clientAnswer(err)
	}
	httpx.WriteJSON(w, http.StatusOK, revocationView{GrantsRevoked: out.Grants, TokensRevoked: out.Tokens})
	return nil
}

// RotateSecret is POST /api/v1/clients/{client_id}/secret: the new secret,
// shown only here; the old one fails at once.
func (h *Handler) RotateSecret(w http.ResponseWriter, r *http.Request) error {
	a, rev, err := h.callerAt(r)
	if err != nil {
		return err
	}
	c, secret, err := h.Service.RotateSecret(r.Context(), a, r.PathValue("client_id"), rev)
	if err != nil {
		return clientAnswer(err)
	}
	writeClient(w, http.StatusOK, c, secret)
	return nil
}

// personsOn authenticates the caller and checks features.person_api_enabled:
// off, it answers 503 as the import API does and returns ok=false.
func (h *Handler) personsOn(w http.ResponseWriter, r *http.Request) (Actor, bool, error) {
	a, err := h.caller(r)
	if err != nil {
		return a, false, err
	}
	if h.PersonsEnabled != nil {
		on, err := h.PersonsEnabled(r.Context())
		if err != nil {
			return a, false, err
		}
		if !on {
			httpx.WriteJSON(w, http.StatusServiceUnavailable, struct {
				Code    int    `json:"error_code"`
				Message string `json:"error_message"`
			}{1001, "Requested feature not available."})
			return a, false, nil
		}
	}
	return a, true, nil
}

// personView is a person as read: never a password hash or TOTP secret.
// Profile is the import's Profile (personimport.ProfileOf), so that what
// was imported reads back equal; the flat members after it are the older
// read of the same data, kept for the callers of v1 (docs/decisions/0005).
type personView struct {
	PersonID         string                `json:"person_id"`
	PartitionID      string                `json:"partition_id"`
	Email            string                `json:"email"`
	Status           string                `json:"status"`
	Profile          personimport.Profile  `json:"profile"`
	FirstName        string                `json:"first_name"`
	LastName         string                `json:"last_name"`
	DisplayName      string                `json:"display_name"`
	Initials         string                `json:"initials"`
	Gender           string                `json:"gender"`
	DateOfBirth      string                `json:"date_of_birth"`
	PreferredLocale  string                `json:"preferred_locale"`
	EmailAddresses   []store.ContactPoint  `json:"email_addresses"`
	PhoneNumbers     []store.ContactPoint  `json:"phone_numbers"`
	Addresses        []store.PostalAddress `json:"addresses"`
	CustomAttributes map[string]string     `json:"custom_attributes"`
	HasPassword      bool                  `json:"has_password"`
	HasTOTP          bool                  `json:"has_totp"`
	Identities       []identityView        `json:"identities"`
	CreatedAt        string                `json:"created_at"`
	UpdatedAt        string                `json:"updated_at"`
}

// identityView is a linked identity. upstream_attributes are what the
// identity provider sent that no mapping took: shown to the operator (to
// choose what to map), never part of the person nor released.
type identityView struct {
	IdPID              string            `json:"idp_id"`
	ExternalPersonID   string            `json:"external_person_id"` // the import's name
	ExternalID         string            `json:"external_id"`        // the same, deprecated
	UpstreamAttributes map[string]string `json:"upstream_attributes"`
	CreatedAt          string            `json:"created_at"`
}

func personOf(p Person) personView {
	pr := personimport.ProfileOf(p.Person)
	v := personView{PersonID: p.ID, PartitionID: p.Partition, Email: p.Email, Status: p.Status, Profile: pr,
		FirstName: p.FirstName, LastName: p.LastName, DisplayName: p.Profile.DisplayName, Initials: p.Profile.Initials,
		Gender: p.Profile.Gender, DateOfBirth: p.Profile.DateOfBirth, PreferredLocale: p.Profile.PreferredLocale,
		EmailAddresses: []store.ContactPoint{}, PhoneNumbers: p.Profile.Phones, Addresses: p.Profile.Addresses,
		CustomAttributes: p.Custom, HasPassword: p.PasswordHash != "", HasTOTP: p.TOTPSecret != nil,
		Identities: []identityView{}, CreatedAt: stamp(p.CreatedAt), UpdatedAt: stamp(p.UpdatedAt)}
	// The login email is among the addresses, as in the profile.
	for _, e := range pr.EmailAddresses {
		v.EmailAddresses = append(v.EmailAddresses, store.ContactPoint{Value: e.Value, Primary: e.Primary, Verified: *e.Verified})
	}
	if v.PhoneNumbers == nil {
		v.PhoneNumbers = []store.ContactPoint{}
	}
	if v.Addresses == nil {
		v.Addresses = []store.PostalAddress{}
	}
	if v.CustomAttributes == nil {
		v.CustomAttributes = map[string]string{}
	}
	for _, e := range p.Identities {
		attrs := e.Attributes
		if attrs == nil {
			attrs = map[string]string{}
		}
		v.Identities = append(v.Identities, identityView{IdPID: e.IdPID, ExternalPersonID: e.ExternalID, ExternalID: e.ExternalID, UpstreamAttributes: attrs,
			CreatedAt: stamp(e.CreatedAt)})
	}
	return v
}

// FindPersons is GET /api/v1/persons?email=: {persons}, in every partition.
func (h *Handler) FindPersons(w http.ResponseWriter, r *http.Request) error {
	_, ok, err := h.personsOn(w, r)
	if !ok {
		return err
	}
	q := r.URL.Query()
	email := q.Get("email")
	if len(q["email"]) != 1 || email == "" || len(email) > 254 {
		return &httpx.Error{Status: http.StatusBadRequest, Code: "invalid_request",
			Description: "email is required: the address to look up.", Details: []string{"email"}}
	}
	ps, err := h.Service.FindPersons(r.Context(), email)
	if err != nil {
		return err
	}
	out := struct {
		Persons []personView `json:"persons"`
	}{Persons: make([]personView, len(ps))}
	for i, p := range ps {
		out.Persons[i] = personOf(p)
	}
	httpx.NoStore(w)
	httpx.WriteJSON(w, http.StatusOK, out)
	return nil
}

// GetPerson is GET /api/v1/persons/{person_id}.
func (h *Handler) GetPerson(w http.ResponseWriter, r *http.Request) error {
	_, ok, err := h.personsOn(w, r)
	if !ok {
		return err
	}
	p, err := h.Service.GetPerson(r.Context(), r.PathValue("person_id"))
	if err != nil {
		return personAnswer(err)
	}
	httpx.NoStore(w)
	httpx.WriteJSON(w, http.StatusOK, personOf(p))
	return nil
}

// PatchPerson is PATCH /api/v1/persons/{person_id}: status and profile.
func (h *Handler) PatchPerson(w http.ResponseWriter, r *http.Request) error {
	a, ok, err := h.personsOn(w, r)
	if !ok {
		return err
	}
	var pp PersonPatch
	if err := httpx.DecodeJSON(w, r, &pp, maxBody); err != nil {
		return err
	}
	p, _, err := h.Service.PatchPerson(r.Context(), a, r.PathValue("person_id"), pp)
	if err != nil {
		return personAnswer(err)
	}
	httpx.NoStore(w)
	httpx.WriteJSON(w, http.StatusOK, personOf(p))
	return nil
}

// endPerson runs end (the erasure, or the end of the sessions) on the
// person of the path and answers what it revoked.
func (h *Handler) endPerson(w http.ResponseWriter, r *http.Request,
	end func(ctx context.Context, a Actor, id string) (store.PersonRevocation, error)) error {
	a, ok, err := h.personsOn(w, r)
	if !ok {
		return err
	}
	out, err := end(r.Context(), a, r.PathValue("person_id"))
	if err != nil {
		return personAnswer(err)
	}
	httpx.WriteJSON(w, http.StatusOK, revocationView{GrantsRevoked: out.Grants, TokensRevoked: out.Tokens, SessionsEnded: &out.Sessions})
	return nil
}

// DeletePerson is DELETE /api/v1/persons/{person_id}: the erasure.
func (h *Handler) DeletePerson(w http.ResponseWriter, r *http.Request) error {
	return h.endPerson(w, r, h.Service.ErasePerson)
}

// sessionID names a session without its secret: the session's stored
// hash, hashed again and cut short.
func sessionID(hash []byte) string {
	sum := sha256.Sum256(hash)
	return base64.RawURLEncoding.EncodeToString(sum[:12])
}

// ListSessions is GET /api/v1/persons/{person_id}/sessions.
func (h *Handler) ListSessions(w http.ResponseWriter, r *http.Request) error {
	_, ok, err := h.personsOn(w, r)
	if !ok {
		return err
	}
	got, err := h.Service.ListSessions(r.Context(), r.PathValue("person_id"))
	if err != nil {
		return personAnswer(err)
	}
	type sessionView struct {
		SessionID string   `json:"session_id"`
		Level     int      `json:"authentication_level"`
		AMR       []string `json:"amr"`
		AuthTime  string   `json:"auth_time"`
		ExpiresAt string   `json:"expires_at"`
	}
	type grantView struct {
		GrantID   string   `json:"grant_id"`
		ClientID  string   `json:"client_id"`
		Scopes    []string `json:"scopes"`
		CreatedAt string   `json:"created_at"`
		ExpiresAt string   `json:"expires_at"`
	}
	out := struct {
		Sessions []sessionView `json:"sessions"`
		Grants   []grantView   `json:"grants"`
	}{Sessions: []sessionView{}, Grants: []grantView{}}
	for _, s := range got.Sessions {
		out.Sessions = append(out.Sessions, sessionView{SessionID: sessionID(s.Hash), Level: s.AuthLevel, AMR: nonNil(s.AMR),
			AuthTime: stamp(s.AuthTime), ExpiresAt: stamp(s.ExpiresAt)})
	}
	for _, g := range got.Grants {
		out.Grants = append(out.Grants, grantView{GrantID: g.ID, ClientID: g.ClientID, Scopes: nonNil(g.Scopes),
			CreatedAt: stamp(g.CreatedAt), ExpiresAt: stamp(g.ExpiresAt)})
	}
	httpx.NoStore(w)
	httpx.WriteJSON(w, http.StatusOK, out)
	return nil
}

// EndSessions is DELETE /api/v1/persons/{person_id}/sessions.
func (h *Handler) EndSessions(w http.ResponseWriter, r *http.Request) error {
	return h.endPerson(w, r, h.Service.EndSessions)
}
