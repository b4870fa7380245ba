package oauth

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"time"

	"github.com/latchkey/latchkey/internal/authflow"
	"github.com/latchkey/latchkey/internal/config"
	"github.com/latchkey/latchkey/internal/events"
	"github.com/latchkey/latchkey/internal/httpx"
	"github.com/latchkey/latchkey/internal/store"
	"github.com/latchkey/latchkey/internal/token"
)

// Token is POST /oauth/token (RFC 6749 section 3.2).
func (s *Service) Token(w http.ResponseWriter, r *http.Request) error {
	if err := httpx.ParseForm(w, r, httpx.MaxFormBytes); err != nil {
		return err
	}
	// RFC 6749 section 3.2: parameters sent in the URI query are not accepted.
	if r.URL.RawQuery != "" {
		return badRequest(ErrInvalidRequest, "Send the token request parameters in the request body, not the URI.")
	}
	form, err := httpx.Single(r.PostForm, "grant_type", "code", "redirect_uri", "code_verifier",
		"refresh_token", "scope", "username", "password", "client_id", "device_code")
	if err != nil {
		return err
	}
	client, _, err := s.Clients.Authenticate(r, s.Issuer+PathToken)
	if err != nil {
		s.record(r.Context(), s.Store, r, events.OAuth{Type: events.TokenRequestInvalidClient, ClientID: form["client_id"]})
		return clientError(err)
	}
	gt := form["grant_type"]
	grant, known := grants[gt]
	switch {
	case gt == "":
		s.record(r.Context(), s.Store, r, events.OAuth{Type: events.TokenRequestInvalid, ClientID: client.ID})
		return badRequest(ErrInvalidRequest, "The grant_type parameter is required.")
	case !known:
		s.record(r.Context(), s.Store, r, events.OAuth{Type: events.TokenRequestUnsupportedGrant, ClientID: client.ID})
		return badRequest(ErrUnsupportedGrantType, "The grant_type is not supported.")
	}
	if !allowsGrant(client, gt) {
		s.record(r.Context(), s.Store, r, events.OAuth{Type: events.TokenRequestDisabledGrant, ClientID: client.ID, AppName: client.Name})
		return badRequest(ErrUnauthorizedClient, "The client may not use this grant type.")
	}
	resp, err := grant(s, r, client, form)
	if err != nil {
		return err
	}
	return writeToken(w, resp)
}

// grantFunc answers one grant type at the token endpoint.
type grantFunc func(s *Service, r *http.Request, client store.Client, form map[string]string) (*TokenResponse, error)

// grants is the token endpoint's table: Token dispatches over it and the
// metadata lists its keys, so what is advertised is what is accepted.
var grants = map[string]grantFunc{
	config.GrantAuthorizationCode: (*Service).exchangeCode,
	config.GrantClientCredentials: (*Service).clientCredentials,
	config.GrantRefreshToken:      (*Service).refresh,
	config.GrantPassword:          (*Service).passwordGrant,
	config.GrantDeviceCode:        (*Service).pollDevice,
}

// clientCredentials is RFC 6749 section 4.4: a token for the client itself,
// no person, no refresh token.
func (s *Service) clientCredentials(r *http.Request, client store.Client, form map[string]string) (*TokenResponse, error) {
	ctx := r.Context()
	requested, desc := ParseScope(form["scope"])
	if desc == "" {
		var scopes []string
		if scopes, desc = AllowedScopes(client, requested); desc == "" {
			configured, err := s.Store.GetScopes(ctx, scopes)
			if err != nil {
				return nil, err
			}
			var resp *TokenResponse
			err = s.Store.Tx(ctx, func(tx store.Store) error {
				var err error
				resp, _, err = s.mint(ctx, tx, issue{client: client, scopes: scopes, requested: requested,
					configured: configured, scopesRead: true})
				if err != nil {
					return err
				}
				return s.Events.RecordOAuth(ctx, tx, r, events.OAuth{Type: events.TokenRequestAccessTokenCreated,
					ClientID: client.ID, AppName: client.Name})
			})
			return resp, err
		}
	}
	s.record(ctx, s.EventSink(), r, events.OAuth{Type: events.TokenRequestScopeInvalid, ClientID: client.ID, AppName: client.Name})
	return nil, badRequest(ErrInvalidScope, desc)
}

// errCodeReplay carries the grant of a reused code out of the transaction,
// which must roll back before the grant is revoked.
type errCodeReplay struct{ grantID string }

func (errCodeReplay) Error() string { return "authorization code reused" }

// exchangeCode is RFC 6749 section 4.1.3 with PKCE (RFC 7636 section 4.6).
func (s *Service) exchangeCode(r *http.Request, client store.Client, form map[string]string) (*TokenResponse, error) {
	ctx := r.Context()
	code := form["code"]
	if code == "" {
		return nil, badRequest(ErrInvalidRequest, "The code parameter is required.")
	}
	hash := s.Hasher.HashOf(token.AuthCode, code)
	now := s.Now().UTC()
	var resp *TokenResponse
	var subject string
	var refused *refusal
	err := s.Store.Tx(ctx, func(tx store.Store) error {
		err := s.exchange(r, tx, client, form, hash, now, &resp, &subject)
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
		s.record(ctx, s.EventSink(), r, events.OAuth{Type: events.TokenRequestCodeReplayDetected, ClientID: client.ID,
			AppName: client.Name, TransactionID: replay.grantID})
		return nil, badRequest(ErrInvalidGrant, "The authorization code was already used.")
	case errors.As(err, &ref):
		s.record(ctx, s.EventSink(), r, events.OAuth{Type: ref.event, ClientID: client.ID, AppName: client.Name, UserID: subject})
		return nil, ref.err
	case err != nil:
		return nil, err
	}
	return resp, nil
}

// exchange is the body of the code exchange, inside its transaction.
func (s *Service) exchange(r *http.Request, tx store.Store, client store.Client, form map[string]string, hash []byte,
	now time.Time, resp **TokenResponse, subject *string) error {
	ctx := r.Context()
	invalid := func(event, desc string) error {
		return &refusal{event: event, err: badRequest(ErrInvalidGrant, desc)}
	}
	// Using the code first makes it single-use whatever happens next:
	// a failed exchange burns it (RFC 6749 section 4.1.2: one use only).
	c, err := tx.UseAuthCode(ctx, hash, now)
	switch {
	case errors.Is(err, store.ErrConflict):
		return errCodeReplay{grantID: c.GrantID}
	case errors.Is(err, store.ErrNotFound):
		return invalid(events.TokenRequestInvalidGrant, "The authorization code is invalid.")
	case err != nil:
		return err
	}
	*subject = c.Subject
	switch {
	case c.ClientID != client.ID:
		return invalid(events.TokenRequestInvalidGrant, "The authorization code was issued to another client.")
	case !now.Before(c.ExpiresAt):
		return invalid(events.TokenRequestInvalidGrant, "The authorization code has expired.")
	case c.RedirectURI != "" && form["redirect_uri"] != c.RedirectURI:
		// RFC 6749 section 4.1.3: required and identical when the authorization request sent it.
		return invalid(events.TokenRequestInvalidRedirectURI, "The redirect_uri does not match the authorization request.")
	}
	if desc := checkVerifier(c, form["code_verifier"]); desc != "" {
		return invalid(events.TokenRequestInvalidPKCEVerifier, desc)
	}
	var g store.Grant
	*resp, g, err = s.mint(ctx, tx, issue{
		client: client, subject: c.Subject, scopes: c.Scopes, requested: c.Scopes,
		authLevel: c.AuthLevel, amr: c.AMR, data: c.Data,
		refresh: allowsGrant(client, config.GrantRefreshToken),
	})
	if errors.Is(err, errPersonInactive) {
		// Blocked or deleted after the code was issued.
		return invalid(events.TokenRequestInvalidGrant, "The account of the authorization code cannot sign in.")
	}
	if err != nil {
		return err
	}
	if err := tx.SetAuthCodeGrant(ctx, hash, g.ID); err != nil {
		return err
	}
	return s.Events.RecordOAuth(ctx, tx, r, events.OAuth{Type: events.TokenRequestAccessTokenCreated,
		ClientID: client.ID, AppName: client.Name, UserID: c.Subject, TransactionID: g.ID})
}

// refusal is a refused request and the event type recorded for it.
type refusal struct {
	event string
	err   *httpx.Error
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

// refresh is RFC 6749 section 6. Public clients get a new refresh token at
// every use and a reused one revokes the grant (RFC 9700 section 4.14.2);
// confidential clients, which authenticate, keep theirs.
func (s *Service) refresh(r *http.Request, client store.Client, form map[string]string) (*TokenResponse, error) {
	ctx := r.Context()
	value := form["refresh_token"]
	if value == "" {
		return nil, badRequest(ErrInvalidRequest, "The refresh_token parameter is required.")
	}
	requested, desc := ParseScope(form["scope"])
	if desc != "" {
		return nil, badRequest(ErrInvalidScope, desc)
	}
	hash := s.Hasher.HashOf(token.RefreshToken, value)
	now := s.Now().UTC()
	rotate := isPublic(client)
	invalid := func(event, desc string) error {
		return &refusal{event: event, err: badRequest(ErrInvalidGrant, desc)}
	}
	var resp *TokenResponse
	var reused store.Token
	err := s.Store.Tx(ctx, func(tx store.Store) error {
		// The person's row is locked before the token's (UseRefreshToken):
		// a block locks the person and then revokes the tokens, so taking
		// them in the other order could deadlock with it.
		t, err := tx.GetToken(ctx, hash)
		if err != nil && !errors.Is(err, store.ErrNotFound) {
			return err
		}
		var person *store.Person
		if err == nil && t.Kind == store.KindRefresh && t.ClientID == client.ID && t.Subject != "" {
			p, err := lockPerson(ctx, tx, t.Subject)
			if errors.Is(err, errPersonInactive) {
				return invalid(events.TokenRequestInvalidRefreshToken, "The grant is no longer valid.")
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
			return invalid(events.TokenRequestInvalidRefreshToken, "The refresh token is invalid.")
		case err != nil:
			return err
		case t.Kind != store.KindRefresh || t.ClientID != client.ID:
			return invalid(events.TokenRequestInvalidRefreshToken, "The refresh token is invalid.")
		case !t.RevokedAt.IsZero():
			return invalid(events.TokenRequestInvalidRefreshToken, "The refresh token was revoked.")
		case !now.Before(t.ExpiresAt):
			return invalid(events.TokenRequestExpiredRefreshToken, "The refresh token has expired.")
		}
		g, err := tx.GetGrant(ctx, t.GrantID)
		if err != nil {
			return err
		}
		if !g.RevokedAt.IsZero() {
			return invalid(events.TokenRequestInvalidRefreshToken, "The refresh token was revoked.")
		}
		if !now.Before(g.ExpiresAt) {
			return invalid(events.TokenRequestMaxValidityExpired, "The grant has reached its maximum validity.")
		}
		scopes := t.Scopes
		if len(requested) > 0 {
			// RFC 6749 section 6: the scope may only narrow.
			for _, sc := range requested {
				if !slices.Contains(g.Scopes, sc) {
					return &refusal{event: events.TokenRequestScopeInvalid,
						err: badRequest(ErrInvalidScope, "The scope "+sc+" was not granted.")}
				}
			}
			scopes = requested
		}
		configured, err := tx.GetScopes(ctx, scopes)
		if err != nil {
			return err
		}
		if g.Subject != "" {
			if err := s.refreshAllowed(ctx, tx, g, person, scopes, configured); err != nil {
				return err
			}
		}
		resp, _, err = s.mint(ctx, tx, issue{client: client, scopes: scopes, requested: requested,
			grant: &g, refresh: rotate, configured: configured, scopesRead: true, personLocked: person != nil && person.ID == g.Subject})
		if errors.Is(err, errPersonInactive) {
			return invalid(events.TokenRequestInvalidRefreshToken, "The grant is no longer valid.")
		}
		if err != nil {
			return err
		}
		if !rotate && !resp.limited { // a confidential client keeps its refresh token
			resp.RefreshToken = value
		}
		return s.Events.RecordOAuth(ctx, tx, r, events.OAuth{Type: events.TokenRequestAccessTokenRefresh,
			ClientID: client.ID, AppName: client.Name, UserID: g.Subject, TransactionID: g.ID})
	})
	var ref *refusal
	switch {
	case errors.Is(err, store.ErrConflict) && reused.GrantID != "":
		if rerr := s.Store.RevokeGrant(ctx, reused.GrantID, now); rerr != nil && !errors.Is(rerr, store.ErrNotFound) {
			return nil, rerr
		}
		s.record(ctx, s.EventSink(), r, events.OAuth{Type: events.TokenRequestRefreshReuse, ClientID: client.ID,
			AppName: client.Name, UserID: reused.Subject, TransactionID: reused.GrantID})
		return nil, badRequest(ErrInvalidGrant, "The refresh token was already used.")
	case errors.As(err, &ref):
		s.record(ctx, s.EventSink(), r, events.OAuth{Type: ref.event, ClientID: client.ID, AppName: client.Name})
		return nil, ref.err
	case err != nil:
		return nil, err
	}
	return resp, nil
}

// refreshAllowed asks authflow whether a person's grant may be refreshed
// for scopes: a refresh never yields more than the grant was authenticated
// for (a scope whose level was raised since), and never for a person who
// may no longer sign in.
func (s *Service) refreshAllowed(ctx context.Context, tx store.Store, g store.Grant, locked *store.Person, scopes []string, configured []store.Scope) error {
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
	dec := authflow.Decide(s.Flow, authflow.Request{Kind: authflow.Refresh, Scopes: scopes, Configured: configured,
		Person: &p, Auth: &authflow.Authentication{Level: g.AuthLevel, AMR: g.AMR, Time: g.CreatedAt}})
	if _, ok := dec.Approved(); ok {
		return nil
	}
	if dec.Reason == authflow.ReasonLevel {
		return &refusal{event: events.TokenRequestInvalidRefreshToken, err: badRequest(ErrInvalidGrant, fmt.Sprintf(
			"The grant was authenticated at level %d; its scopes now require %d. Authorize again.", g.AuthLevel, dec.Level))}
	}
	return &refusal{event: events.TokenRequestInvalidRefreshToken, err: badRequest(ErrInvalidGrant, "The grant is no longer valid.")}
}

// passwordGrant is the deprecated resource owner password credentials grant
// (RFC 6749 section 4.3), only for clients that list it.
func (s *Service) passwordGrant(r *http.Request, client store.Client, form map[string]string) (*TokenResponse, error) {
	ctx := r.Context()
	if form["username"] == "" || form["password"] == "" {
		return nil, badRequest(ErrInvalidRequest, "The username and password parameters are required.")
	}
	requested, desc := ParseScope(form["scope"])
	var scopes []string
	if desc == "" {
		scopes, desc = AllowedScopes(client, requested)
	}
	if desc != "" {
		return nil, badRequest(ErrInvalidScope, desc)
	}
	if s.Passwords == nil {
		return nil, badRequest(ErrUnsupportedGrantType, "The password grant is not available.")
	}
	p, err := s.Passwords.CheckPassword(ctx, r, form["username"], form["password"])
	if err != nil {
		var he *httpx.Error
		if errors.As(err, &he) {
			s.record(ctx, s.EventSink(), r, events.OAuth{Type: events.TokenRequestPasswordInvalid, ClientID: client.ID, AppName: client.Name})
			return nil, badRequest(ErrInvalidGrant, "The username or password is wrong.")
		}
		return nil, err
	}
	configured, err := s.Store.GetScopes(ctx, scopes)
	if err != nil {
		return nil, err
	}
	// A password reaches the password level and nothing more: no step-up
	// without the hosted pages.
	dec := authflow.Decide(s.Flow, authflow.Request{Kind: authflow.Password, Scopes: scopes, Configured: configured, Person: &p,
		Auth: &authflow.Authentication{Level: s.Flow.PasswordLevel, AMR: []string{"DEFAULT"}, Time: s.Now()}})
	a, ok := dec.Approved()
	if !ok {
		s.record(ctx, s.EventSink(), r, events.OAuth{Type: events.TokenRequestScopeInvalid, ClientID: client.ID, AppName: client.Name, UserID: p.ID})
		if dec.Reason == authflow.ReasonLevel {
			return nil, badRequest(ErrInvalidScope, fmt.Sprintf(
				"The requested scopes require authentication level %d; a password reaches %d. Use the authorization code flow.",
				dec.Level, s.Flow.PasswordLevel))
		}
		return nil, badRequest(ErrInvalidGrant, "The username or password is wrong.")
	}
	var resp *TokenResponse
	err = s.Store.Tx(ctx, func(tx store.Store) error {
		var g store.Grant
		resp, g, err = s.mint(ctx, tx, issue{client: client, subject: a.Subject(), scopes: a.Scopes(), requested: requested,
			authLevel: a.Level(), amr: a.AMR(), refresh: allowsGrant(client, config.GrantRefreshToken),
			configured: configured, scopesRead: true})
		if err != nil {
			return err
		}
		return s.Events.RecordOAuth(ctx, tx, r, events.OAuth{Type: events.TokenRequestPasswordCreated,
			ClientID: client.ID, AppName: client.Name, UserID: p.ID, TransactionID: g.ID})
	})
	if errors.Is(err, errPersonInactive) {
		// Blocked between the password check and the issuance: answered
		// as a wrong password is, so the answer tells nothing of the account.
		s.record(ctx, s.EventSink(), r, events.OAuth{Type: events.TokenRequestPasswordInvalid, ClientID: client.ID,
			AppName: client.Name, UserID: p.ID})
		return nil, badRequest(ErrInvalidGrant, "The username or password is wrong.")
	}
	return resp, err
}
