package oauth

import (
	"context"
	"errors"
	"net/http"
	"strings"

	"github.com/latchkey/latchkey/internal/client"
	"github.com/latchkey/latchkey/internal/events"
	"github.com/latchkey/latchkey/internal/httpx"
	"github.com/latchkey/latchkey/internal/request"
	"github.com/latchkey/latchkey/internal/store"
	"github.com/latchkey/latchkey/internal/token"
)

// Revoke is POST /oauth/revoke (RFC 7009). It answers 200 with an empty body
// also for unknown tokens (section 2.2), so the answer tells an attacker nothing.
func (s *Service) Revoke(w http.ResponseWriter, r *http.Request) error {
	f := s.facts(r)
	if err := httpx.ParseForm(w, r, httpx.MaxFormBytes); err != nil {
		return err
	}
	form, err := httpx.Single(r.PostForm, "token", "token_type_hint")
	if err != nil {
		return err
	}
	// On the generations last read, confirmed by the event's insert or
	// before the revocation's write (client.Optimistically).
	_, err = client.Optimistically(r.Context(), func(ctx context.Context) (struct{}, error) {
		return struct{}{}, s.revoke(r.WithContext(ctx), f, form)
	})
	if err != nil {
		return err
	}
	httpx.NoStore(w)
	w.WriteHeader(http.StatusOK)
	return nil
}

// revoke is Revoke's work, before its answer is written.
func (s *Service) revoke(r *http.Request, f request.Facts, form map[string]string) error {
	caller, _, err := s.Clients.Authenticate(r, s.Issuer+PathRevoke)
	if err != nil {
		s.record(r.Context(), f, events.OAuth{Type: events.TokenRevokeClientInvalid, ClientID: r.PostForm.Get("client_id")})
		return clientError(err)
	}
	if form["token"] == "" {
		s.record(r.Context(), f, events.OAuth{Type: events.TokenRevokeInvalidRequest, ClientID: caller.ID, AppName: caller.Name})
		return answer(newError(ErrInvalidRequest, "The token parameter is required."))
	}
	if err := s.RevokeToken(r.Context(), f, caller, form["token"], form["token_type_hint"]); err != nil {
		return answer(err)
	}
	return nil
}

// RevokeToken revokes value if client owns it. Revoking a refresh token
// revokes its whole grant (RFC 7009 section 2.1: the access tokens of the
// same grant go too); revoking an access token revokes that token.
func (s *Service) RevokeToken(ctx context.Context, f request.Facts, client store.Client, value, hint string) error {
	// The common case, a live token of the caller's, in one write without a
	// read first, when the value's prefix names its kind; the reads below
	// say what else it is.
	kind, storeKind, liveType := token.AccessToken, store.KindAccess, events.TokenRevokeAccessTokenSuccess
	if strings.HasPrefix(value, token.RefreshToken.Prefix) {
		kind, storeKind, liveType = token.RefreshToken, store.KindRefresh, events.TokenRevokeRefreshTokenSuccess
	}
	var triedHash []byte // value's key as a token of kind, once computed
	if strings.HasPrefix(value, kind.Prefix) {
		triedHash = s.tokens().Key(kind, value)
		now := s.Now().UTC()
		done, err := s.Events.RecordOAuthBy(f, events.OAuth{Type: liveType, ClientID: client.ID, AppName: client.Name},
			func(ev store.Event) (bool, error) {
				return s.Store.RevokeLiveToken(ctx, storeKind, triedHash, client.ID, now, ev)
			})
		if done || err != nil {
			return err
		}
	}
	// The hint only decides the lookup order (RFC 7009 section 2.1).
	kinds := []token.Kind{token.AccessToken, token.RefreshToken}
	if hint == "refresh_token" {
		kinds[0], kinds[1] = kinds[1], kinds[0]
	}
	for _, k := range kinds {
		hash := triedHash
		if k != kind || hash == nil {
			hash = s.tokens().Key(k, value)
		}
		// Through the token cache: a token revoked already (a client's
		// retry) is answered from memory while no revocation has moved it.
		t, g, err := s.Store.GetTokenGrantToChange(ctx, hash)
		if errors.Is(err, store.ErrNotFound) {
			continue
		}
		if err != nil {
			return err
		}
		if t.ClientID != client.ID {
			// RFC 7009 section 2.1: a client may revoke only tokens issued to it.
			s.record(ctx, f, events.OAuth{Type: events.TokenRevokeTokenInvalid, ClientID: client.ID, AppName: client.Name})
			return newError(ErrUnauthorizedClient, "The token was not issued to this client.")
		}
		typ := events.TokenRevokeAccessTokenSuccess
		if t.Kind == store.KindRefresh {
			typ = events.TokenRevokeRefreshTokenSuccess
		}
		ev := events.OAuth{Type: typ, ClientID: client.ID, AppName: client.Name, UserID: t.Subject, TransactionID: t.GrantID}
		if !t.RevokedAt.IsZero() && (t.Kind == store.KindAccess || !g.RevokedAt.IsZero()) {
			// Revoked already (a refresh token with its grant), and a
			// revocation is never undone: a repeated request (a client's
			// retry, a logout sent twice) writes nothing but its event,
			// takes no lock, and moves no generation that every instance's
			// token cache would be emptied by.
			s.record(ctx, f, ev)
			return nil
		}
		now := s.Now().UTC()
		return s.Store.Tx(ctx, func(tx store.Store) error {
			if t.Kind == store.KindRefresh {
				if err := tx.RevokeGrant(ctx, t.GrantID, now); err != nil && !errors.Is(err, store.ErrNotFound) {
					return err
				}
			}
			if err := tx.RevokeToken(ctx, hash, now); err != nil {
				return err
			}
			return s.Events.RecordOAuth(ctx, tx, f, ev)
		})
	}
	s.record(ctx, f, events.OAuth{Type: events.TokenRevokeTokenInvalid, ClientID: client.ID, AppName: client.Name})
	return nil
}
