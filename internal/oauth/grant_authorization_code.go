package oauth

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"errors"
	"time"

	"github.com/latchkey/latchkey/internal/events"
	"github.com/latchkey/latchkey/internal/identity"
	"github.com/latchkey/latchkey/internal/request"
	"github.com/latchkey/latchkey/internal/store"
	"github.com/latchkey/latchkey/internal/token"
)

// errCodeReplay carries the grant of a reused code out of the transaction,
// which must roll back before the grant is revoked.
type errCodeReplay struct{ grantID string }

func (errCodeReplay) Error() string { return "authorization code reused" }

// exchangeCode is RFC 6749 section 4.1.3 with PKCE (RFC 7636 section 4.6).
func (s *Service) exchangeCode(ctx context.Context, f request.Facts, client store.Client, form map[string]string) (*TokenResponse, error) {
	code := form["code"]
	if code == "" {
		return nil, newError(ErrInvalidRequest, "The code parameter is required.")
	}
	hash := s.tokens().Key(token.AuthCode, code)
	now := f.Time.UTC()
	prepared, err := s.prepareExchange(ctx, client, form, hash, now)
	if err != nil {
		return nil, err
	}
	var resp *TokenResponse
	var subject string
	var refused *refusal
	err = s.Store.Tx(ctx, func(tx store.Store) error {
		refused = nil // the function may run twice (UseAuthCodeGuardPerson)
		err := s.exchange(ctx, f, tx, client, form, hash, now, prepared, &resp, &subject)
		if errors.As(err, &refused) {
			return nil // commit: the failed exchange still burns the code
		}
		return err
	})
	if err == nil && refused != nil {
		err = refused
	}
	var replay errCodeReplay
	var ref *refusal
	switch {
	case errors.As(err, &replay):
		// RFC 6749 section 4.1.2 / RFC 9700 section 4.5: revoke what the code issued.
		if replay.grantID != "" {
			if rerr := s.Store.RevokeGrant(ctx, replay.grantID, now); rerr != nil && !errors.Is(rerr, store.ErrNotFound) {
				return nil, rerr
			}
		}
		s.record(ctx, f, events.OAuth{Type: events.TokenRequestCodeReplayDetected, ClientID: client.ID,
			AppName: client.Name, TransactionID: replay.grantID})
		return nil, newError(ErrInvalidGrant, "The authorization code was already used.")
	case errors.As(err, &ref):
		s.record(ctx, f, events.OAuth{Type: ref.event, ClientID: client.ID, AppName: client.Name, UserID: subject})
		return nil, ref.err
	case err != nil:
		return nil, err
	}
	return resp, nil
}

// prepareExchange is the issuance of the exchange with the work done
// before its transaction (prepare: the web hooks asked, the JWT access
// token signed), when a read of the code says the exchange would issue:
// an unknown, used or refused code, or one whose person is gone, gets
// nothing. The transaction uses the code and decides; this read only
// keeps the hooks' round trips and the signature out of it.
func (s *Service) prepareExchange(ctx context.Context, client store.Client, form map[string]string, hash []byte, now time.Time) (issue, error) {
	if !s.prepares(client) {
		return issue{}, nil
	}
	c, p, err := s.Store.GetAuthCodePerson(ctx, hash)
	if errors.Is(err, store.ErrNotFound) || err == nil && (!c.UsedAt.IsZero() || codeRefusal(c, client, form, now) != nil) {
		return issue{}, nil
	}
	if err != nil {
		return issue{}, err
	}
	is := codeIssue(client, c)
	return is, s.prepare(ctx, &is, &p)
}

// codeIssue is the issuance of an exchange of code c by client.
func codeIssue(client store.Client, c store.AuthCode) issue {
	return issue{client: client, subject: c.Subject, scopes: c.Scopes, requested: c.Scopes,
		authLevel: c.AuthLevel, amr: c.AMR, data: c.Data, refresh: issuesRefresh(client)}
}

// invalidGrant refuses a grant with invalid_grant, recording event.
func invalidGrant(event, desc string) *refusal {
	return &refusal{event: event, err: newError(ErrInvalidGrant, desc)}
}

// codeRefusal is the refusal of exchanging code c for client, or nil.
func codeRefusal(c store.AuthCode, client store.Client, form map[string]string, now time.Time) *refusal {
	switch {
	case c.ClientID != client.ID:
		return invalidGrant(events.TokenRequestInvalidGrant, "The authorization code was issued to another client.")
	case !now.Before(c.ExpiresAt):
		return invalidGrant(events.TokenRequestInvalidGrant, "The authorization code has expired.")
	case c.RedirectURI != "" && form["redirect_uri"] != c.RedirectURI:
		// RFC 6749 section 4.1.3: required and identical when the authorization request sent it.
		return invalidGrant(events.TokenRequestInvalidRedirectURI, "The redirect_uri does not match the authorization request.")
	}
	if desc := checkVerifier(c, form["code_verifier"]); desc != "" {
		return invalidGrant(events.TokenRequestInvalidPKCEVerifier, desc)
	}
	return nil
}

// exchange is the body of the code exchange, inside its transaction.
func (s *Service) exchange(ctx context.Context, f request.Facts, tx store.Store, client store.Client, form map[string]string, hash []byte,
	now time.Time, prepared issue, resp **TokenResponse, subject *string) error {
	// Using the code first makes it single-use whatever happens next:
	// a failed exchange burns it (RFC 6749 section 4.1.2: one use only).
	// The person is read with it, as lockPerson does: the authority over
	// the status (authflow decided on a read made before the code). The
	// store may read both without a lock and commit this function's
	// writes only if the code's use was the first and the person is
	// unchanged then; otherwise this function runs again, locking. It
	// writes only through tx.
	c, p, err := tx.UseAuthCodeGuardPerson(ctx, hash, now)
	switch {
	case errors.Is(err, store.ErrConflict):
		return errCodeReplay{grantID: c.GrantID}
	case errors.Is(err, store.ErrNotFound):
		return invalidGrant(events.TokenRequestInvalidGrant, "The authorization code is invalid.")
	case err != nil:
		return err
	}
	*subject = c.Subject
	if ref := codeRefusal(c, client, form, now); ref != nil {
		return ref
	}
	if p.ID == "" || !identity.MaySignIn(p.Status) {
		// Gone, or blocked since the code was issued.
		return invalidGrant(events.TokenRequestInvalidGrant, "The account of the authorization code cannot sign in.")
	}
	is := codeIssue(client, c)
	is.person, is.hooks, is.signed = &p, prepared.hooks, prepared.signed
	var g store.Grant
	*resp, g, err = s.mint(ctx, tx, is)
	if err != nil {
		return err
	}
	if err := tx.SetAuthCodeGrant(ctx, hash, g.ID); err != nil {
		return err
	}
	return s.Events.RecordOAuth(ctx, tx, f, events.OAuth{Type: events.TokenRequestAccessTokenCreated,
		ClientID: client.ID, AppName: client.Name, UserID: c.Subject, TransactionID: g.ID})
}

// refusal is a refused request and the event type recorded for it.
type refusal struct {
	event string
	err   *Error
}

func (r *refusal) Error() string { return r.err.Error() }

// checkVerifier applies RFC 7636 section 4.6 and the downgrade rule of
// RFC 9700 section 2.1.1: a verifier without a challenge is refused.
func checkVerifier(c store.AuthCode, verifier string) string {
	if c.CodeChallenge == "" {
		if verifier != "" {
			return "A code_verifier was sent but the authorization request had no code_challenge."
		}
		return ""
	}
	if verifier == "" {
		return "The code_verifier parameter is required."
	}
	if !pkceVerifierOK(verifier) {
		return "The code_verifier must be 43 to 128 unreserved characters."
	}
	var computed string
	switch c.CodeChallengeMethod {
	case "S256":
		sum := sha256.Sum256([]byte(verifier))
		computed = base64.RawURLEncoding.EncodeToString(sum[:])
	case pkcePlain:
		computed = verifier
	default:
		return "The code_challenge_method is not supported."
	}
	if subtle.ConstantTimeCompare([]byte(computed), []byte(c.CodeChallenge)) != 1 {
		return "The code_verifier does not match the code_challenge."
	}
	return ""
}

func pkceVerifierOK(v string) bool { return pkceChallengeRE.MatchString(v) }
