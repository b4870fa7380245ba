package oauth

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/latchkey/latchkey/internal/authflow"
	"github.com/latchkey/latchkey/internal/events"
	"github.com/latchkey/latchkey/internal/request"
	"github.com/latchkey/latchkey/internal/store"
	"github.com/latchkey/latchkey/internal/token"
)

// refresh is RFC 6749 section 6. Public clients get a new refresh token at
// every use and a reused one revokes the grant (RFC 9700 section 4.14.2);
// confidential clients, which authenticate, keep theirs.
func (s *Service) refresh(ctx context.Context, f request.Facts, client store.Client, form map[string]string) (*TokenResponse, error) {
	value := form["refresh_token"]
	if value == "" {
		return nil, newError(ErrInvalidRequest, "The refresh_token parameter is required.")
	}
	requested, desc := ParseScope(form["scope"])
	if desc != "" {
		return nil, newError(ErrInvalidScope, desc)
	}
	hash := s.tokens().Key(token.RefreshToken, value)
	now := f.Time.UTC()
	rotate := isPublic(client)
	// Read before the transaction: the identity configuration is read
	// through the store (SQLite's writer is the transaction's).
	pol, err := s.Policy(ctx)
	if err != nil {
		return nil, err
	}
	prepared, err := s.prepareRefresh(ctx, client, hash, requested, rotate, now)
	if err != nil {
		return nil, err
	}
	var resp *TokenResponse
	var reused store.Token
	err = s.Store.Tx(ctx, func(tx store.Store) error {
		// The person's row is locked before the token's (UseRefreshToken):
		// a block locks the person and then revokes the tokens, so taking
		// them in the other order could deadlock with it. The token and
		// its grant are read with the person's share lock, in one
		// statement, and not locked themselves: the grant is not locked
		// after the person either, and a token is only ever active while
		// its grant is not revoked (store.Token.Active), so a revocation
		// that commits meanwhile still stops what this refresh issues.
		// On PostgreSQL the read takes no lock: the writes commit only
		// if the three rows are unchanged then, the person's under the
		// share lock, and otherwise this function runs again, locking
		// (store.GetTokenGrantGuardPerson); it writes only through tx.
		t, g, p, err := tx.GetTokenGrantGuardPerson(ctx, hash)
		shared := err == nil
		if errors.Is(err, store.ErrNotFound) {
			// No token, or no person (one gone, or a client's own
			// grant): the token alone, and its person read after it.
			t, g, err = tx.GetTokenGrant(ctx, hash)
		}
		if err != nil && !errors.Is(err, store.ErrNotFound) {
			return err
		}
		var person *store.Person
		if err == nil && t.Kind == store.KindRefresh && t.ClientID == client.ID && t.Subject != "" {
			if !shared {
				p, err = tx.SharePerson(ctx, t.Subject)
			}
			if p, err = mayIssueFor(p, err); errors.Is(err, errPersonInactive) {
				return invalidGrant(events.TokenRequestInvalidRefreshToken, "The grant is no longer valid.")
			} else if err != nil {
				return err
			}
			person = &p
		}
		if rotate {
			t, err = tx.UseRefreshToken(ctx, hash, now)
			if errors.Is(err, store.ErrConflict) {
				reused = t
				return err
			}
		}
		switch {
		case errors.Is(err, store.ErrNotFound):
			return invalidGrant(events.TokenRequestInvalidRefreshToken, "The refresh token is invalid.")
		case err != nil:
			return err
		}
		scopes, ref := refreshScopes(t, g, client, requested, now)
		if ref != nil {
			return ref
		}
		configured, err := tx.GetScopes(ctx, scopes)
		if err != nil {
			return err
		}
		if g.Subject != "" {
			if err := s.refreshAllowed(ctx, tx, pol, g, person, scopes, configured); err != nil {
				return err
			}
		}
		if person != nil && person.ID != g.Subject {
			person = nil // (another grant's: see above)
		}
		resp, _, err = s.mint(ctx, tx, issue{client: client, scopes: scopes, requested: requested,
			grant: &g, refresh: rotate, person: person, hooks: prepared.hooks, signed: prepared.signed})
		if errors.Is(err, errPersonInactive) {
			return invalidGrant(events.TokenRequestInvalidRefreshToken, "The grant is no longer valid.")
		}
		if err != nil {
			return err
		}
		if !rotate && !resp.limited { // a confidential client keeps its refresh token
			resp.RefreshToken = value
		}
		return s.Events.RecordOAuth(ctx, tx, f, events.OAuth{Type: events.TokenRequestAccessTokenRefresh,
			ClientID: client.ID, AppName: client.Name, UserID: g.Subject, TransactionID: g.ID})
	})
	var ref *refusal
	switch {
	case errors.Is(err, store.ErrConflict) && reused.GrantID != "":
		if rerr := s.Store.RevokeGrant(ctx, reused.GrantID, now); rerr != nil && !errors.Is(rerr, store.ErrNotFound) {
			return nil, rerr
		}
		s.record(ctx, f, events.OAuth{Type: events.TokenRequestRefreshReuse, ClientID: client.ID,
			AppName: client.Name, UserID: reused.Subject, TransactionID: reused.GrantID})
		return nil, newError(ErrInvalidGrant, "The refresh token was already used.")
	case errors.As(err, &ref):
		s.record(ctx, f, events.OAuth{Type: ref.event, ClientID: client.ID, AppName: client.Name})
		return nil, ref.err
	case err != nil:
		return nil, err
	}
	return resp, nil
}

// prepareRefresh is the issuance of the refresh with the work done before
// its transaction (prepare), when a read of the token says the refresh
// would issue. The transaction decides; this read only keeps the hooks'
// round trips and the signature out of it.
func (s *Service) prepareRefresh(ctx context.Context, client store.Client, hash []byte, requested []string, rotate bool, now time.Time) (issue, error) {
	if !s.prepares(client) {
		return issue{}, nil
	}
	// (ErrNotFound also for a token without a person, or whose person is
	// gone: the transaction decides those without asking here.)
	t, g, p, err := s.Store.GetTokenGrantPerson(ctx, hash)
	if errors.Is(err, store.ErrNotFound) {
		return issue{}, nil
	}
	if err != nil {
		return issue{}, err
	}
	scopes, ref := refreshScopes(t, g, client, requested, now)
	if ref != nil || rotate && !t.UsedAt.IsZero() || p.ID != g.Subject {
		return issue{}, nil
	}
	is := issue{client: client, scopes: scopes, requested: requested, grant: &g, refresh: rotate}
	return is, s.prepare(ctx, &is, &p)
}

// refreshScopes are the scopes a refresh with token t of grant g issues,
// or its refusal: a token of another kind, client or grant, revoked or
// expired, a grant revoked or at its maximum validity, or a requested
// scope the grant does not hold.
func refreshScopes(t store.Token, g store.Grant, client store.Client, requested []string, now time.Time) ([]string, *refusal) {
	switch {
	case t.Kind != store.KindRefresh || t.ClientID != client.ID || t.GrantID != g.ID:
		// (g is another grant only when the first read found no token.)
		return nil, invalidGrant(events.TokenRequestInvalidRefreshToken, "The refresh token is invalid.")
	case !t.RevokedAt.IsZero():
		return nil, invalidGrant(events.TokenRequestInvalidRefreshToken, "The refresh token was revoked.")
	case !now.Before(t.ExpiresAt):
		return nil, invalidGrant(events.TokenRequestExpiredRefreshToken, "The refresh token has expired.")
	case !g.RevokedAt.IsZero():
		return nil, invalidGrant(events.TokenRequestInvalidRefreshToken, "The refresh token was revoked.")
	case !now.Before(g.ExpiresAt):
		return nil, invalidGrant(events.TokenRequestMaxValidityExpired, "The grant has reached its maximum validity.")
	}
	if len(requested) == 0 {
		return t.Scopes, nil
	}
	// RFC 6749 section 6: the scope may only narrow.
	for _, sc := range requested {
		if !slices.Contains(g.Scopes, sc) {
			return nil, &refusal{event: events.TokenRequestScopeInvalid,
				err: newError(ErrInvalidScope, "The scope "+sc+" was not granted.")}
		}
	}
	return requested, nil
}

// refreshAllowed asks authflow whether a person's grant may be refreshed
// for scopes: a refresh never yields more than the grant was authenticated
// for (a scope whose level was raised since), and never for a person who
// may no longer sign in.
func (s *Service) refreshAllowed(ctx context.Context, tx store.Store, pol authflow.Policy, g store.Grant, locked *store.Person, scopes []string, configured []store.Scope) error {
	var p store.Person
	if locked != nil && locked.ID == g.Subject {
		p = *locked // read under the row lock of this transaction
	} else {
		var err error
		p, err = tx.GetPerson(ctx, g.Subject)
		if errors.Is(err, store.ErrNotFound) {
			p = store.Person{ID: g.Subject}
		} else if err != nil {
			return err
		}
	}
	dec := authflow.Decide(pol, authflow.Request{Kind: authflow.Refresh, Scopes: scopes, Configured: configured,
		Person: &p, Auth: &authflow.Authentication{Level: g.AuthLevel, AMR: g.AMR, Time: g.CreatedAt}})
	if _, ok := dec.Approved(); ok {
		return nil
	}
	if dec.Reason == authflow.ReasonLevel {
		return &refusal{event: events.TokenRequestInvalidRefreshToken, err: newError(ErrInvalidGrant, fmt.Sprintf(
			"The grant was authenticated at level %d; its scopes now require %d. Authorize again.", g.AuthLevel, dec.Level))}
	}
	return &refusal{event: events.TokenRequestInvalidRefreshToken, err: newError(ErrInvalidGrant, "The grant is no longer valid.")}
}
