package oauth

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/latchkey/latchkey/internal/authflow"
	"github.com/latchkey/latchkey/internal/events"
	"github.com/latchkey/latchkey/internal/httpx"
	"github.com/latchkey/latchkey/internal/request"
	"github.com/latchkey/latchkey/internal/store"
	"github.com/latchkey/latchkey/internal/token"
)

// Pages is what the authorization endpoint needs from the hosted pages.
type Pages interface {
	// Session returns the logged-in session of the browser, if any.
	Session(r *http.Request) (store.Session, bool)
	// ErrorPage shows an error that cannot be redirected to the client.
	ErrorPage(w http.ResponseWriter, r *http.Request, status int, msg string)
}

// Authorize is GET /oauth/authorize (RFC 6749 section 4.1.1).
func (s *Service) Authorize(w http.ResponseWriter, r *http.Request) error {
	ctx := r.Context()
	f := s.facts(r)
	q := r.URL.Query()
	clientID := q.Get("client_id")
	if clientID == "" || len(q["client_id"]) > 1 {
		s.record(ctx, f, events.OAuth{Type: events.AuthzRequestInvalidClient})
		s.LogRefusal(ctx, "", ErrInvalidRequest, "no client_id, or more than one", AnsweredErrorPage)
		s.Pages.ErrorPage(w, r, http.StatusBadRequest, "The request names no client, so it cannot go back to the application.")
		return nil
	}
	client, err := s.Store.GetClient(ctx, clientID)
	if errors.Is(err, store.ErrNotFound) {
		s.record(ctx, f, events.OAuth{Type: events.AuthzRequestInvalidClient, ClientID: truncateID(clientID)})
		s.LogRefusal(ctx, clientID, ErrInvalidClient, "unknown client", AnsweredErrorPage)
		s.Pages.ErrorPage(w, r, http.StatusBadRequest, "The application that sent you here is not known.")
		return nil
	}
	if err != nil {
		return err
	}
	ar, aerr := ParseAuthorizeRequest(client, q)
	if aerr != nil {
		s.record(ctx, f, events.OAuth{Type: aerr.EventType, ClientID: client.ID, AppName: client.Name})
		if !aerr.Redirect {
			s.LogRefusal(ctx, client.ID, aerr.Code, aerr.Description, AnsweredErrorPage)
			s.Pages.ErrorPage(w, r, http.StatusBadRequest, aerr.Description)
			return nil
		}
		s.LogRefusal(ctx, client.ID, aerr.Code, aerr.Description, AnsweredRedirect)
		http.Redirect(w, r, s.ErrorRedirect(ar, aerr), http.StatusFound)
		return nil
	}
	ar.RequestedAt = f.Time.Unix()
	if aerr := s.oidcRequest(ctx, client, ar, q); aerr != nil {
		s.record(ctx, f, events.OAuth{Type: aerr.EventType, ClientID: client.ID, AppName: client.Name})
		s.LogRefusal(ctx, client.ID, aerr.Code, aerr.Description, AnsweredRedirect)
		http.Redirect(w, r, s.ErrorRedirect(ar, aerr), http.StatusFound)
		return nil
	}
	// A logged-in person who needs no page gets the code at once; any other
	// step is the hosted pages' (the login page moves on to the right one).
	var d authflow.Decision
	if sess, ok := s.Pages.Session(r); ok {
		if d, err = s.Next(ctx, client, ar, &sess, false); err != nil {
			return err
		}
		if a, ok := d.Approved(); ok {
			to, err := s.Complete(ctx, f, client, ar, a)
			if err != nil {
				return err
			}
			http.Redirect(w, r, to, http.StatusFound)
			return nil
		}
	}
	if ar.Prompted(PromptNone) {
		// OIDC Core section 3.1.2.6: no page may be shown; say which one was needed.
		aerr := promptNoneError(ar, d)
		s.record(ctx, f, events.OAuth{Type: aerr.EventType, ClientID: client.ID, AppName: client.Name})
		s.LogRefusal(ctx, client.ID, aerr.Code, aerr.Description, AnsweredRedirect)
		http.Redirect(w, r, s.ErrorRedirect(ar, aerr), http.StatusFound)
		return nil
	}
	id, err := s.SaveRequest(ctx, ar)
	if err != nil {
		return err
	}
	http.Redirect(w, r, PathLogin+"?request="+url.QueryEscape(id), http.StatusFound)
	return nil
}

// Where a refused authorization request's answer went (LogRefusal).
const (
	AnsweredErrorPage = "error page"
	AnsweredRedirect  = "redirect to the client"
	AnsweredFailURL   = "the scope's failure endpoint"
)

// LogRefusal logs why an authorization request was refused, as the
// adapter logs the other endpoints' refusals (httpx.Handle): the person
// who asks "why was I refused?" has the request id of the error page, or
// the client has the error of the redirect. Never a secret: the client
// id and the answered code and description. The request's access log
// line, with the same request id, has the route.
func (s *Service) LogRefusal(ctx context.Context, clientID, code, why, answered string) {
	log := s.Log
	if log == nil {
		log = slog.Default()
	}
	log.InfoContext(ctx, "authorization request refused", "request_id", httpx.RequestID(ctx),
		"client_id", truncate(clientID, 128), "code", code, "why", why, "answered", answered)
}

func truncateID(s string) string {
	if len(s) > 255 {
		return s[:255]
	}
	return s
}

// SaveRequest keeps a validated request until the person has logged in and
// consented, and returns its ID (random, unguessable: it is in page URLs).
func (s *Service) SaveRequest(ctx context.Context, ar *AuthorizeRequest) (string, error) {
	data, err := json.Marshal(ar)
	if err != nil {
		return "", err
	}
	now := s.Now().UTC()
	id := token.Random(24)
	err = s.Store.CreateAuthRequest(ctx, store.AuthRequest{
		ID: id, ClientID: ar.ClientID, Data: data, CreatedAt: now, ExpiresAt: now.Add(s.authRequestLifetime()),
	})
	return id, err
}

// ErrRequestGone: the pending request is unknown, used or expired.
var ErrRequestGone = errors.New("oauth: authorization request unknown or expired")

// LoadRequest returns a pending request and its client; ErrRedirectRefused
// when its redirect URI may no longer receive the answer.
func (s *Service) LoadRequest(ctx context.Context, id string) (*AuthorizeRequest, store.Client, error) {
	if id == "" || len(id) > 64 {
		return nil, store.Client{}, ErrRequestGone
	}
	pr, err := s.Store.GetAuthRequest(ctx, id)
	if errors.Is(err, store.ErrNotFound) {
		return nil, store.Client{}, ErrRequestGone
	}
	if err != nil {
		return nil, store.Client{}, err
	}
	if !s.Now().Before(pr.ExpiresAt) {
		return nil, store.Client{}, ErrRequestGone
	}
	var ar AuthorizeRequest
	if err := json.Unmarshal(pr.Data, &ar); err != nil {
		return nil, store.Client{}, err
	}
	client, err := s.Store.GetClient(ctx, ar.ClientID)
	if errors.Is(err, store.ErrNotFound) {
		return nil, store.Client{}, ErrRequestGone
	}
	if err != nil {
		return nil, store.Client{}, err
	}
	// Rechecked at every load: the client may have dropped the address
	// since, and the saved row is not trusted to hold a checked one. A
	// device verification has no redirect URI (its pages answer).
	if (ar.DeviceUserCode == "" || ar.RedirectURI != "") && !redirectAllowed(client, client.RedirectURIs, ar.RedirectURI) {
		return nil, store.Client{}, ErrRedirectRefused
	}
	return &ar, client, nil
}

// FinishRequest forgets a pending request once it has been answered.
func (s *Service) FinishRequest(ctx context.Context, id string) error {
	err := s.Store.DeleteAuthRequest(ctx, id)
	if errors.Is(err, store.ErrNotFound) {
		return nil
	}
	return err
}

// Next gathers what is known about a browser flow — the request's scopes,
// the session's person and authentication, remembered consent — and asks
// authflow what must happen next. consented: the person consented to this
// request in this very request (POST /consent).
func (s *Service) Next(ctx context.Context, client store.Client, ar *AuthorizeRequest, sess *store.Session, consented bool) (authflow.Decision, error) {
	configured, err := s.Store.GetScopes(ctx, ar.Scopes)
	if err != nil {
		return authflow.Decision{}, err
	}
	forceConsent := ar.Prompted(PromptConsent)
	req := authflow.Request{Kind: authflow.Browser, Scopes: ar.Scopes, Configured: configured,
		ConsentRequired: client.ConsentRequired || forceConsent, ConsentEveryTime: ar.DeviceUserCode != "" || forceConsent,
		Consented: consented}
	if sess != nil {
		var p store.Person
		var err error
		if sess.Person != nil && sess.Person.ID == sess.PersonID {
			p = *sess.Person // read with the session
		} else {
			p, err = s.Store.GetPerson(ctx, sess.PersonID)
		}
		switch {
		case errors.Is(err, store.ErrNotFound):
			p = store.Person{ID: sess.PersonID} // deleted: no status signs in
		case err != nil:
			return authflow.Decision{}, err
		}
		req.Person = &p
		req.Auth = &authflow.Authentication{Level: sess.AuthLevel, AMR: sess.AMR, Time: sess.AuthTime}
		req.AuthNotBefore = ar.authNotBefore(sess.PersonID)
		if client.ConsentRequired && !consented && ar.DeviceUserCode == "" {
			cs, err := s.Store.ListConsents(ctx, sess.PersonID, client.ID)
			if err != nil {
				return authflow.Decision{}, err
			}
			for _, c := range cs {
				req.Remembered = append(req.Remembered, c.Scope)
			}
		}
	}
	pol, err := s.Policy(ctx)
	if err != nil {
		return authflow.Decision{}, err
	}
	return authflow.Decide(pol, req), nil
}

// errNotApproved: an issuance was reached without authflow's approval.
var errNotApproved = errors.New("oauth: issuance without an approval")

// Complete issues what an approved request asked for — the authorization
// code, the token of the deprecated implicit flow, or the device's approval
// — records it, and returns the URL to send the browser to. Only
// authflow.Decide makes an approval.
func (s *Service) Complete(ctx context.Context, f request.Facts, client store.Client, ar *AuthorizeRequest, a authflow.Approval) (string, error) {
	if a.Subject() == "" {
		return "", errNotApproved
	}
	data, err := json.Marshal(grantData{HookParams: ar.HookParams, Language: ar.Language, IDP: ar.IDP,
		Nonce: ar.Nonce, AuthTime: a.AuthTime().Unix()})
	if err != nil {
		return "", err
	}
	now := s.Now().UTC()
	if ar.DeviceUserCode != "" {
		if err := s.ApproveDevice(ctx, f, ar.DeviceUserCode, a, "browser"); err != nil {
			return DeviceStatusURL(DeviceStatus(err)), nil
		}
		return DeviceStatusURL("approved"), nil
	}
	if ar.ResponseType == "token" {
		return s.completeImplicit(ctx, f, client, ar, a, data)
	}
	code, hash, err := s.tokens().Mint(token.AuthCode, token.Claims{})
	if err != nil {
		return "", err
	}
	redirect := ""
	if ar.RedirectURISent {
		redirect = ar.RedirectURI
	}
	err = s.Store.Tx(ctx, func(tx store.Store) error {
		if err := tx.CreateAuthCode(ctx, store.AuthCode{
			Hash: hash, ClientID: client.ID, Subject: a.Subject(), RedirectURI: redirect, Scopes: a.Scopes(),
			CodeChallenge: ar.CodeChallenge, CodeChallengeMethod: ar.CodeChallengeMethod,
			AuthLevel: a.Level(), AMR: a.AMR(), Data: data, IssuedAt: now, ExpiresAt: now.Add(s.codeLifetime()),
		}); err != nil {
			return err
		}
		return s.Events.RecordOAuth(ctx, tx, f, events.OAuth{Type: events.AuthzRequestGrantCreated,
			ClientID: client.ID, AppName: client.Name, UserID: a.Subject()})
	})
	if errors.Is(err, errPersonInactive) {
		s.LogRefusal(ctx, client.ID, ErrAccessDenied, "the person was blocked or deleted while approving", AnsweredRedirect)
		return s.inactiveRedirect(ar), nil
	}
	if err != nil {
		return "", err
	}
	v := url.Values{"code": {code}, "iss": {s.Issuer}} // iss: RFC 9207 mix-up defence
	if ar.State != "" {
		v.Set("state", ar.State)
	}
	return addQuery(ar.RedirectURI, v), nil
}

func (s *Service) completeImplicit(ctx context.Context, f request.Facts, client store.Client, ar *AuthorizeRequest, a authflow.Approval, data []byte) (string, error) {
	is := issue{client: client, subject: a.Subject(), scopes: a.Scopes(),
		requested: ar.Scopes, authLevel: a.Level(), amr: a.AMR(), data: data}
	if err := s.prepare(ctx, &is, nil); err != nil {
		return "", err
	}
	var resp *TokenResponse
	err := s.Store.Tx(ctx, func(tx store.Store) error {
		var err error
		resp, _, err = s.mint(ctx, tx, is)
		if err != nil {
			return err
		}
		return s.Events.RecordOAuth(ctx, tx, f, events.OAuth{Type: events.AuthzRequestTokenCreated,
			ClientID: client.ID, AppName: client.Name, UserID: a.Subject()})
	})
	if errors.Is(err, errPersonInactive) {
		return s.inactiveRedirect(ar), nil
	}
	if err != nil {
		return "", err
	}
	v := url.Values{"access_token": {resp.AccessToken}, "token_type": {resp.TokenType},
		"expires_in": {strconv.FormatInt(resp.ExpiresIn, 10)}, "scope": {joinScopes(ar.Scopes)}}
	if ar.State != "" {
		v.Set("state", ar.State)
	}
	return ar.RedirectURI + "#" + v.Encode(), nil
}

// inactiveRedirect answers access_denied to the client of a request whose
// person was blocked or deleted while it was being approved.
func (s *Service) inactiveRedirect(ar *AuthorizeRequest) string {
	return s.ErrorRedirect(ar, &AuthorizeError{Code: ErrAccessDenied, Description: "The account cannot sign in.",
		Redirect: true, RedirectURI: ar.RedirectURI, State: ar.State})
}

// ErrorRedirect is the redirect of RFC 6749 section 4.1.2.1 for aerr.
func (s *Service) ErrorRedirect(ar *AuthorizeRequest, aerr *AuthorizeError) string {
	v := url.Values{"error": {aerr.Code}, "error_description": {aerr.Description}, "iss": {s.Issuer}}
	if aerr.State != "" {
		v.Set("state", aerr.State)
	}
	if aerr.VendorCause != "" {
		v.Set("vendor_error_cause", aerr.VendorCause)
	}
	if aerr.Fragment || ar != nil && ar.ResponseType == "token" {
		return aerr.RedirectURI + "#" + v.Encode()
	}
	return addQuery(aerr.RedirectURI, v)
}

// DeviceStatusURL is the status page of the device verification.
func DeviceStatusURL(status string) string {
	return PathDeviceVerification + "?status=" + url.QueryEscape(status)
}

// DeviceStatus names the status page for a failed device decision.
func DeviceStatus(err error) string {
	switch {
	case errors.Is(err, ErrUserCodeExpired):
		return "expired"
	case errors.Is(err, ErrUserCodeDecided):
		return "authorized"
	default:
		return "invalid"
	}
}

// DenyRedirect answers access_denied to the client (the person said no).
func (s *Service) DenyRedirect(ctx context.Context, f request.Facts, client store.Client, ar *AuthorizeRequest, personID string) string {
	if ar.DeviceUserCode != "" {
		if err := s.DenyDevice(ctx, f, ar.DeviceUserCode, personID); err != nil {
			return DeviceStatusURL(DeviceStatus(err))
		}
		return DeviceStatusURL("denied")
	}
	s.record(ctx, f, events.OAuth{Type: events.AuthzRequestDenied, ClientID: client.ID, AppName: client.Name, UserID: personID})
	return s.ErrorRedirect(ar, &AuthorizeError{Code: ErrAccessDenied, Description: "The person denied the request.",
		Redirect: true, RedirectURI: ar.RedirectURI, State: ar.State})
}

// addQuery appends v to a redirect URI that may already have a query
// (RFC 6749 section 3.1.2: the query component must be retained).
func addQuery(uri string, v url.Values) string {
	sep := "?"
	if strings.Contains(uri, "?") {
		sep = "&"
	}
	return uri + sep + v.Encode()
}
