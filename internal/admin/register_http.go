package admin

import (
	"encoding/json"
	"errors"
	"io"
	"mime"
	"net/http"
	"strings"

	"github.com/latchkey/latchkey/internal/httpx"
	"github.com/latchkey/latchkey/internal/request"
	"github.com/latchkey/latchkey/internal/throttle"
)

// registerAnswer maps the registration errors to RFC 7591/7592 answers
// (httpx.OAuthStyle bodies).
func registerAnswer(err error) error {
	var (
		me      *MetadataError
		refused *throttle.Refused
	)
	switch {
	case err == nil:
		return nil
	case errors.As(err, &me):
		return &httpx.Error{Status: http.StatusBadRequest, Code: me.Code, Description: me.Msg}
	case errors.Is(err, ErrRegistrationOff):
		return httpx.Errorf(http.StatusNotFound, "not_found", "Dynamic client registration is not enabled.")
	case errors.Is(err, ErrBadToken):
		// RFC 6750 section 3.1; RFC 7592 section 3: an unknown client and a
		// wrong token get the same answer.
		return &httpx.Error{Status: http.StatusUnauthorized, Code: "invalid_token",
			Description: "The access token is missing, wrong, or not of this client.",
			Header:      map[string]string{"WWW-Authenticate": `Bearer realm="latchkey", error="invalid_token"`}}
	case errors.As(err, &refused):
		msg := "Too many registrations from this address. Retry later."
		if !strings.HasPrefix(refused.Key, keyRegisterIP) {
			msg = "Too many updates of this registration or from this address. Retry later."
		}
		e := httpx.TooManyRequests("too_many_attempts", msg, refused.RetryAfter)
		e.Cause = err
		return e
	}
	return err
}

// bearer is the bearer token of r, "" when it has none.
func bearer(r *http.Request) string {
	h := r.Header.Get("Authorization")
	if len(h) > 7 && strings.EqualFold(h[:7], "bearer ") {
		return strings.TrimSpace(h[7:])
	}
	return ""
}

// decodeMetadata decodes a client metadata body. Unknown members are
// ignored (RFC 7591 section 2), not refused as the admin API does.
func decodeMetadata(w http.ResponseWriter, r *http.Request) (Metadata, error) {
	var m Metadata
	mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type"))
	if err != nil || mt != "application/json" {
		return m, httpx.Errorf(http.StatusBadRequest, "invalid_client_metadata", "The request body must be application/json.")
	}
	r.Body = http.MaxBytesReader(w, r.Body, maxBody)
	dec := json.NewDecoder(r.Body)
	if err := dec.Decode(&m); err != nil {
		he := httpx.JSONError(err, maxBody)
		if he.Status == http.StatusBadRequest {
			he.Code = "invalid_client_metadata"
		}
		return m, he
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return m, httpx.Errorf(http.StatusBadRequest, "invalid_client_metadata", "The request body holds data after the JSON value.")
	}
	return m, nil
}

// registeredView is the answer of a registration and of RFC 7592's read
// and update.
type registeredView struct {
	Metadata
	RedirectURIs  []string `json:"redirect_uris"`
	GrantTypes    []string `json:"grant_types"`
	ResponseTypes []string `json:"response_types"`
}

func (h *Handler) writeRegistered(w http.ResponseWriter, status int, reg Registered) {
	reg.RegistrationClientURI = h.Issuer + reg.ConfigPath
	httpx.NoStore(w)
	httpx.WriteJSON(w, status, registeredView{Metadata: reg.Metadata, RedirectURIs: nonNil(reg.RedirectURIs),
		GrantTypes: nonNil(reg.GrantTypes), ResponseTypes: nonNil(reg.ResponseTypes)})
}

// Register is POST /oauth/register (RFC 7591 section 3).
func (h *Handler) Register(w http.ResponseWriter, r *http.Request) error {
	f := request.Of(r)
	if !h.Service.Registration.Enabled {
		return registerAnswer(ErrRegistrationOff)
	}
	m, err := decodeMetadata(w, r)
	if err != nil {
		return err
	}
	reg, err := h.Service.Register(r.Context(), f, bearer(r), m)
	if err != nil {
		return registerAnswer(err)
	}
	w.Header().Set("Location", h.Issuer+reg.ConfigPath)
	h.writeRegistered(w, http.StatusCreated, reg)
	return nil
}

// ReadRegistration is GET /oauth/register/{client_id} (RFC 7592 section 2.1).
func (h *Handler) ReadRegistration(w http.ResponseWriter, r *http.Request) error {
	reg, err := h.Service.ReadRegistration(r.Context(), r.PathValue("client_id"), bearer(r))
	if err != nil {
		return registerAnswer(err)
	}
	h.writeRegistered(w, http.StatusOK, reg)
	return nil
}

// UpdateRegistration is PUT /oauth/register/{client_id} (RFC 7592 section 2.2).
func (h *Handler) UpdateRegistration(w http.ResponseWriter, r *http.Request) error {
	id, tok := r.PathValue("client_id"), bearer(r)
	var decodeErr error
	body := func() (Metadata, error) {
		m, err := decodeMetadata(w, r)
		decodeErr = err
		return m, err
	}
	reg, err := h.Service.UpdateRegistration(r.Context(), request.Of(r), id, tok, body)
	switch {
	case decodeErr != nil:
		return decodeErr // already an answer (httpx.Error)
	case err != nil:
		return registerAnswer(err)
	}
	h.writeRegistered(w, http.StatusOK, reg)
	return nil
}

// DeleteRegistration is DELETE /oauth/register/{client_id} (RFC 7592
// section 2.3): 204, the client and its tokens gone.
func (h *Handler) DeleteRegistration(w http.ResponseWriter, r *http.Request) error {
	if err := h.Service.DeleteRegistration(r.Context(), request.Of(r), r.PathValue("client_id"), bearer(r)); err != nil {
		return registerAnswer(err)
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}
