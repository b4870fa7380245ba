package oauth

import (
	"context"

	"github.com/latchkey/latchkey/internal/events"
	"github.com/latchkey/latchkey/internal/request"
	"github.com/latchkey/latchkey/internal/store"
)

// clientCredentials is RFC 6749 section 4.4: a token for the client itself,
// no person, no refresh token.
func (s *Service) clientCredentials(ctx context.Context, f request.Facts, client store.Client, form map[string]string) (*TokenResponse, error) {
	requested, desc := ParseScope(form["scope"])
	if desc == "" {
		var scopes []string
		if scopes, desc = AllowedScopes(client, requested); desc == "" {
			is := issue{client: client, scopes: scopes, requested: requested}
			if err := s.prepare(ctx, &is, nil); err != nil {
				return nil, err
			}
			var resp *TokenResponse
			err := s.Store.Tx(ctx, func(tx store.Store) error {
				var err error
				resp, _, err = s.mint(ctx, tx, is)
				if err != nil {
					return err
				}
				return s.Events.RecordOAuth(ctx, tx, f, events.OAuth{Type: events.TokenRequestAccessTokenCreated,
					ClientID: client.ID, AppName: client.Name})
			})
			return resp, err
		}
	}
	s.record(ctx, f, events.OAuth{Type: events.TokenRequestScopeInvalid, ClientID: client.ID, AppName: client.Name})
	return nil, newError(ErrInvalidScope, desc)
}
