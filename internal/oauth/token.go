package oauth

import (
	"context"
	"net/http"

	"github.com/latchkey/latchkey/internal/client"
	"github.com/latchkey/latchkey/internal/events"
	"github.com/latchkey/latchkey/internal/httpx"
	"github.com/latchkey/latchkey/internal/request"
	"github.com/latchkey/latchkey/internal/store"
)

// Token is POST /oauth/token (RFC 6749 section 3.2): it parses the form,
// authenticates the client and answers what Exchange decides.
func (s *Service) Token(w http.ResponseWriter, r *http.Request) error {
	if err := httpx.ParseForm(w, r, httpx.MaxFormBytes); err != nil {
		return err
	}
	// RFC 6749 section 3.2: parameters sent in the URI query are not accepted.
	if r.URL.RawQuery != "" {
		return answer(newError(ErrInvalidRequest, "Send the token request parameters in the request body, not the URI."))
	}
	form, err := httpx.Single(r.PostForm, "grant_type", "code", "redirect_uri", "code_verifier",
		"refresh_token", "scope", "username", "password", "client_id", "device_code")
	if err != nil {
		return err
	}
	f := s.facts(r)
	// On the generations last read, confirmed by the first statement of
	// the issuance's transaction (client.Optimistically).
	resp, err := client.Optimistically(r.Context(), func(ctx context.Context) (*TokenResponse, error) {
		return s.token(r.WithContext(ctx), f, form)
	})
	if err != nil {
		return err
	}
	return writeToken(w, resp)
}

// token is Token's answer, before it is written.
func (s *Service) token(r *http.Request, f request.Facts, form map[string]string) (*TokenResponse, error) {
	caller, _, err := s.Clients.Authenticate(r, s.Issuer+PathToken)
	if err != nil {
		s.record(r.Context(), f, events.OAuth{Type: events.TokenRequestInvalidClient, ClientID: form["client_id"]})
		return nil, clientError(err)
	}
	resp, err := s.Exchange(r.Context(), TokenRequest{Facts: f, Client: caller, Form: form})
	if err != nil {
		return nil, answer(err)
	}
	return resp, nil
}

// TokenRequest is a token request whose client is authenticated.
type TokenRequest struct {
	Facts  request.Facts
	Client store.Client
	// Form holds the single-valued parameters, grant_type among them.
	Form map[string]string
}

// Exchange answers a token request: the grant type must be known and
// allowed for the client; its grant decides the rest.
func (s *Service) Exchange(ctx context.Context, req TokenRequest) (*TokenResponse, error) {
	client, gt := req.Client, req.Form["grant_type"]
	g, known := grants[gt]
	switch {
	case gt == "":
		s.record(ctx, req.Facts, events.OAuth{Type: events.TokenRequestInvalid, ClientID: client.ID})
		return nil, newError(ErrInvalidRequest, "The grant_type parameter is required.")
	case !known:
		s.record(ctx, req.Facts, events.OAuth{Type: events.TokenRequestUnsupportedGrant, ClientID: client.ID})
		return nil, newError(ErrUnsupportedGrantType, "The grant_type is not supported.")
	case !allowsGrant(client, gt):
		s.record(ctx, req.Facts, events.OAuth{Type: events.TokenRequestDisabledGrant, ClientID: client.ID, AppName: client.Name})
		return nil, newError(ErrUnauthorizedClient, "The client may not use this grant type.")
	}
	resp, err := g.handle(ctx, s, req)
	if err != nil {
		return nil, err
	}
	return s.finish(ctx, resp)
}

// finish signs the ID token of an issuance that committed. Signing after
// the commit keeps a millisecond of RSA out of the transaction; should it
// fail, the client gets an error and the tokens it never saw stay unused
// (a retried code is a replay, which revokes them).
func (s *Service) finish(ctx context.Context, resp *TokenResponse) (*TokenResponse, error) {
	if resp.idClaims == nil {
		return resp, nil
	}
	id, err := s.signIDToken(ctx, resp.idClaims, resp.AccessToken)
	if err != nil {
		return nil, err
	}
	resp.IDToken, resp.idClaims = id, nil
	return resp, nil
}

// grant answers one grant type at the token endpoint (fosite's
// TokenEndpointHandler, Dex's grant handlers): it checks the parameters
// and preconditions of its own flow and issues through Service.mint, the
// one issuance path. One file per grant: grant_<type>.go.
type grant interface {
	handle(ctx context.Context, s *Service, req TokenRequest) (*TokenResponse, error)
}

// grantFunc is a grant written as a method of Service.
type grantFunc func(s *Service, ctx context.Context, f request.Facts, client store.Client, form map[string]string) (*TokenResponse, error)

func (g grantFunc) handle(ctx context.Context, s *Service, req TokenRequest) (*TokenResponse, error) {
	return g(s, ctx, req.Facts, req.Client, req.Form)
}

// grants is the token endpoint's table: Exchange dispatches over it and the
// metadata lists its keys, so what is advertised is what is accepted.
var grants = map[string]grant{
	client.GrantAuthorizationCode: grantFunc((*Service).exchangeCode), // grant_authorization_code.go
	client.GrantClientCredentials: grantFunc((*Service).clientCredentials),
	client.GrantRefreshToken:      grantFunc((*Service).refresh),
	client.GrantPassword:          grantFunc((*Service).password),
	client.GrantDeviceCode:        grantFunc((*Service).pollDevice),
}
