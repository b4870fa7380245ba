package oauth

import (
	"context"
	"errors"
	"fmt"

	"github.com/latchkey/latchkey/internal/authflow"
	"github.com/latchkey/latchkey/internal/events"
	"github.com/latchkey/latchkey/internal/identity"
	"github.com/latchkey/latchkey/internal/request"
	"github.com/latchkey/latchkey/internal/store"
)

// passwordGrant is the deprecated resource owner password credentials grant
// (RFC 6749 section 4.3), only for clients that list it.
func (s *Service) password(ctx context.Context, f request.Facts, client store.Client, form map[string]string) (*TokenResponse, error) {
	if form["username"] == "" || form["password"] == "" {
		return nil, newError(ErrInvalidRequest, "The username and password parameters are required.")
	}
	requested, desc := ParseScope(form["scope"])
	var scopes []string
	if desc == "" {
		scopes, desc = AllowedScopes(client, requested)
	}
	if desc != "" {
		return nil, newError(ErrInvalidScope, desc)
	}
	if s.Passwords == nil {
		return nil, newError(ErrUnsupportedGrantType, "The password grant is not available.")
	}
	p, err := s.Passwords.CheckPassword(ctx, f, form["username"], form["password"])
	switch {
	case errors.Is(err, identity.ErrThrottled):
		// Answered as a wrong password (RFC 6749 has no throttle error,
		// docs/THROTTLES.md); identity recorded LOGIN_THROTTLED, and no
		// password was checked, so it is no bad credential.
		return nil, newError(ErrInvalidGrant, "The username or password is wrong.")
	case errors.Is(err, identity.ErrBadCredentials):
		s.record(ctx, f, events.OAuth{Type: events.TokenRequestPasswordInvalid, ClientID: client.ID, AppName: client.Name})
		return nil, newError(ErrInvalidGrant, "The username or password is wrong.")
	case err != nil:
		return nil, err
	}
	configured, err := s.Store.GetScopes(ctx, scopes)
	if err != nil {
		return nil, err
	}
	// A password reaches the password level and nothing more: no step-up
	// without the hosted pages.
	pol, err := s.Policy(ctx)
	if err != nil {
		return nil, err
	}
	dec := authflow.Decide(pol, authflow.Request{Kind: authflow.Password, Scopes: scopes, Configured: configured, Person: &p,
		Auth: &authflow.Authentication{Level: s.Flow.PasswordLevel, AMR: []string{"DEFAULT"}, Time: s.Now()}})
	a, ok := dec.Approved()
	if !ok {
		if dec.Reason == authflow.ReasonLevel {
			s.record(ctx, f, events.OAuth{Type: events.TokenRequestScopeInvalid, ClientID: client.ID, AppName: client.Name, UserID: p.ID})
			return nil, newError(ErrInvalidScope, fmt.Sprintf(
				"The requested scopes require authentication level %d; a password reaches %d. Use the authorization code flow.",
				dec.Level, s.Flow.PasswordLevel))
		}
		s.record(ctx, f, events.OAuth{Type: events.TokenRequestPasswordInvalid, ClientID: client.ID, AppName: client.Name, UserID: p.ID})
		// Not allowed to sign in (not activated yet, with activation on):
		// answered as a wrong password, as the login page's throttles are.
		return nil, newError(ErrInvalidGrant, "The username or password is wrong.")
	}
	is := issue{client: client, subject: a.Subject(), scopes: a.Scopes(), requested: requested,
		authLevel: a.Level(), amr: a.AMR(), refresh: issuesRefresh(client)}
	if err := s.prepare(ctx, &is, &p); err != nil {
		return nil, err
	}
	var resp *TokenResponse
	err = s.Store.Tx(ctx, func(tx store.Store) error {
		var g store.Grant
		resp, g, err = s.mint(ctx, tx, is)
		if err != nil {
			return err
		}
		return s.Events.RecordOAuth(ctx, tx, f, events.OAuth{Type: events.TokenRequestPasswordCreated,
			ClientID: client.ID, AppName: client.Name, UserID: p.ID, TransactionID: g.ID})
	})
	if errors.Is(err, errPersonInactive) {
		// Blocked between the password check and the issuance: answered
		// as a wrong password is, so the answer tells nothing of the account.
		s.record(ctx, f, events.OAuth{Type: events.TokenRequestPasswordInvalid, ClientID: client.ID,
			AppName: client.Name, UserID: p.ID})
		return nil, newError(ErrInvalidGrant, "The username or password is wrong.")
	}
	return resp, err
}
