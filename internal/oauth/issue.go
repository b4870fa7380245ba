package oauth

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"reflect"
	"slices"
	"time"

	"github.com/latchkey/latchkey/internal/client"
	"github.com/latchkey/latchkey/internal/identity"
	"github.com/latchkey/latchkey/internal/request"
	"github.com/latchkey/latchkey/internal/scopes"
	"github.com/latchkey/latchkey/internal/store"
	"github.com/latchkey/latchkey/internal/token"
)

// tokens is the token strategy: Tokens, or opaque tokens under Hasher.
func (s *Service) tokens() token.Strategy {
	if s.Tokens != nil {
		return s.Tokens
	}
	return token.Opaque{Hasher: s.Hasher}
}

// issue is one issuance: a new grant (when grant is nil) or a new token pair
// of an existing grant.
type issue struct {
	client    store.Client
	subject   string
	scopes    []string
	authLevel int
	amr       []string
	data      []byte
	refresh   bool // issue a refresh token
	grant     *store.Grant
	requested []string // scopes the request named, to decide whether to echo scope
	// person: the caller read the person in this transaction under its
	// lock (lockPerson) or its store's guard, and checked the status;
	// nil: mint locks the person.
	person *store.Person
	// signed: the access token signed before the transaction (presign);
	// mint takes it unless the access token hook ran inside and changed
	// the claims it was signed with.
	signed *presigned
	// hooks: the web hooks' answers asked before the transaction
	// (askHooks); nil when none were.
	hooks *hookAnswers
}

// grantData is the flow data of is: its grant's, or a new grant's.
func (is issue) grantData() (grantData, error) {
	var data grantData
	b := is.data
	if is.grant != nil {
		b = is.grant.Data
	}
	if len(b) > 0 {
		if err := json.Unmarshal(b, &data); err != nil {
			return data, err
		}
	}
	return data, nil
}

// presigned is a JWT access token signed before the issuance's
// transaction: a signature (one to two milliseconds of CPU for RS256)
// never runs inside a transaction, where it would hold what the
// transaction holds (the person's hold against a block; on an embedded
// store, every other write). mint takes it only when the claims it would
// sign itself are the ones signed here.
type presigned struct {
	now     time.Time
	grantID string
	claims  map[string]any // as signed, but the jti
	value   string
}

// signsAccessJWT: client's access tokens are JWTs (unless a scope counts
// their uses).
func (s *Service) signsAccessJWT(c store.Client) bool {
	return s.Keys != nil && client.IssuesJWTAccessTokens(c)
}

// prepares: an issuance for c has work to do before its transaction (a
// web hook to ask, a JWT to sign), for which a grant that reads its code
// or token inside the transaction reads them once before it.
func (s *Service) prepares(c store.Client) bool {
	return s.hooksEnabled() || s.signsAccessJWT(c)
}

// prepare does the slow work of is before its transaction, so that no
// transaction waits on a web hook's round trip or a signature: it asks
// the web hooks (askHooks), then signs the JWT access token (presign).
// The transaction decides again on what it reads, and takes these only
// when they answer what it would ask.
// p is the person of is when the caller read it; one who may not sign in
// gets nothing signed (the transaction refuses).
func (s *Service) prepare(ctx context.Context, is *issue, p *store.Person) error {
	var err error
	if is.hooks, err = s.askHooks(ctx, *is, p); err != nil {
		return err
	}
	if p != nil && p.ID != "" && !identity.MaySignIn(p.Status) {
		return nil
	}
	is.signed, err = s.presign(ctx, *is)
	return err
}

// presign signs the JWT access token of is before its transaction, or
// returns nil when mint would not sign one or could not know the claims
// before the transaction: no signing keys, an opaque client, an access
// token hook not asked yet (it narrows scopes and adds claims), or a
// scope with a usage limit (the token stays opaque). A new grant's token
// is signed with the grant id and time mint then writes.
func (s *Service) presign(ctx context.Context, is issue) (*presigned, error) {
	if !s.signsAccessJWT(is.client) {
		return nil, nil
	}
	data, err := is.grantData()
	if err != nil {
		return nil, err
	}
	if s.Details.AccessHook.Enabled() {
		// Signed with what the hook answered; should mint get another
		// answer inside, it signs again.
		if is.hooks == nil || is.hooks.access == nil {
			return nil, nil
		}
		is.scopes, data.AdditionalClaims = is.hooks.narrowed, is.hooks.claims
	}
	configured, err := s.Store.GetScopes(ctx, is.scopes)
	if err != nil || scopes.UsageLimit(configured) > 0 {
		return nil, err
	}
	now := s.Now().UTC()
	var g store.Grant
	if is.grant != nil {
		g = *is.grant
	} else {
		g = newGrant(is, now)
	}
	c := accessClaims(is, g, now)
	claims := s.accessJWTClaims(&c, g, data)
	value, err := s.signAccessJWT(ctx, claims)
	if err != nil {
		return nil, err
	}
	return &presigned{now: now, grantID: g.ID, claims: claims, value: value}, nil
}

// newGrant is the grant a new issuance writes. It ends at the maximum
// refresh validity, counted from the first token: rotation never extends
// a grant.
func newGrant(is issue, now time.Time) store.Grant {
	g := store.Grant{
		ID:        token.OrderedID(now),
		ClientID:  is.client.ID,
		Subject:   is.subject,
		Scopes:    is.scopes,
		AuthLevel: is.authLevel,
		AMR:       is.amr,
		Data:      is.data,
		CreatedAt: now,
	}
	if is.refresh {
		g.ExpiresAt = now.Add(is.client.RefreshTokenLifetime)
	} else {
		g.ExpiresAt = now.Add(is.client.AccessTokenLifetime)
	}
	return g
}

// accessClaims are the claims of the access token of an issuance of g.
func accessClaims(is issue, g store.Grant, now time.Time) token.Claims {
	return token.Claims{GrantID: g.ID, ClientID: is.client.ID, Subject: g.Subject, Scopes: is.scopes,
		IssuedAt: now, ExpiresAt: now.Add(is.client.AccessTokenLifetime)}
}

// errPersonInactive: the person an issuance is for may no longer sign in
// (blocked, inactive, invited) or was deleted.
var errPersonInactive = errors.New("oauth: the person may not sign in")

// lockPerson locks the person of an issuance inside its transaction and
// returns errPersonInactive for one who may not sign in. It is the
// authority over the person's status: authflow decided on a read made
// before the transaction, and a block may have committed since. Holding
// the row until the issuance commits makes a concurrent block wait, and
// its RevokePerson then finds what was issued. Every transaction that
// issues for a person takes this lock before it writes anything, and
// before it locks a token row (the refresh grant), in the order a block
// takes them (person, then grants and tokens): no deadlock between them.
// The lock is shared (SharePerson): issuance never writes the person, so
// one person's concurrent issuances (several devices, tabs) need not queue
// behind each other, while a status change still waits for all of them.
func lockPerson(ctx context.Context, tx store.Store, subject string) (store.Person, error) {
	if subject == "" {
		return store.Person{}, nil // client credentials: no person
	}
	return mayIssueFor(tx.SharePerson(ctx, subject))
}

// mayIssueFor is errPersonInactive for a person read under a lock who is
// gone or may no longer sign in.
func mayIssueFor(p store.Person, err error) (store.Person, error) {
	if errors.Is(err, store.ErrNotFound) || err == nil && !identity.MaySignIn(p.Status) {
		return p, errPersonInactive
	}
	return p, err
}

// mint is the one issuance path of every grant and of the implicit flow:
// it writes the grant and tokens of is through st (a transaction) and
// returns the response. It returns errPersonInactive, having written
// nothing, when the person may no longer sign in.
func (s *Service) mint(ctx context.Context, st store.Store, is issue) (*TokenResponse, store.Grant, error) {
	now := s.Now().UTC()
	if is.signed != nil {
		now = is.signed.now
	}
	subject := is.subject
	if is.grant != nil {
		subject = is.grant.Subject
	}
	var person store.Person
	if is.person != nil {
		person = *is.person
	} else {
		var err error
		if person, err = lockPerson(ctx, st, subject); err != nil {
			return nil, store.Grant{}, err
		}
	}
	data, err := is.grantData()
	if err != nil {
		return nil, store.Grant{}, err
	}
	if s.Details.AccessHook.Enabled() {
		// The answer asked before the transaction, if it answered what
		// this transaction read; otherwise the hook is asked here, whose
		// bounded timeout bounds the hold.
		req := s.accessHookRequest(is.client, subject, is.scopes, data.HookParams, person)
		narrowed, claims, ok := is.hooks.accessAnswer(req)
		if !ok {
			if narrowed, claims, err = s.askAccessHook(ctx, st, is.client, req); err != nil {
				return nil, store.Grant{}, err
			}
		}
		is.scopes, data.AdditionalClaims = narrowed, claims
		b, err := json.Marshal(data)
		if err != nil {
			return nil, store.Grant{}, err
		}
		is.data = b
		// Rewritten only when the answer changed it: a grant's refreshes
		// would otherwise all update its one row (on PostgreSQL each
		// holding the row's lock until its commit).
		if is.grant != nil && !bytes.Equal(b, is.grant.Data) {
			if err := st.SetGrantData(ctx, is.grant.ID, b); err != nil {
				return nil, store.Grant{}, err
			}
		}
	}
	// Read in the transaction, after the hook may have narrowed the
	// scopes, and before the first write: keeping this read cheap is the
	// backend's business (SQLite answers it from memory; PostgreSQL sends
	// a read that comes before any write outside the transaction, whose
	// inserts then go as one statement).
	configured, err := st.GetScopes(ctx, is.scopes)
	if err != nil {
		return nil, store.Grant{}, err
	}
	// OpenID Connect: an ID token goes with the tokens of a person's grant.
	idToken := s.issuesIDToken(subject, is.scopes)
	g := store.Grant{}
	if is.grant != nil {
		g = *is.grant
	} else {
		g = newGrant(is, now)
		if is.signed != nil {
			g.ID = is.signed.grantID
		}
		if idToken {
			// The ID token answers the user details; a new grant stores them
			// as it is written, from the person this issuance read, rather
			// than reading the person again and updating the grant after.
			if data.UserDetails, err = s.detailsOf(ctx, request.Facts{}, st, person, g, data, is.hooks); err != nil {
				return nil, g, err
			}
			if g.Data, err = json.Marshal(data); err != nil {
				return nil, g, err
			}
		}
		if err := st.CreateGrant(ctx, g); err != nil {
			return nil, g, err
		}
	}
	limit := scopes.UsageLimit(configured)
	claims := accessClaims(is, g, now)
	exp := claims.ExpiresAt
	var access string
	var accessHash []byte
	if s.signsAccessJWT(is.client) && limit == 0 {
		// A counted token stays opaque: only introspection can count its uses.
		jwt := s.accessJWTClaims(&claims, g, data)
		if a := is.signed; a != nil && reflect.DeepEqual(a.claims, jwt) {
			access = a.value
		} else if access, err = s.signAccessJWT(ctx, jwt); err != nil {
			return nil, g, err
		}
		exp, accessHash = claims.ExpiresAt, s.tokens().Key(token.AccessToken, access)
	} else if access, accessHash, err = s.tokens().Mint(token.AccessToken, claims); err != nil {
		return nil, g, err
	}
	if err := st.CreateToken(ctx, store.Token{
		Hash: accessHash, Kind: store.KindAccess, GrantID: g.ID, ClientID: is.client.ID,
		Subject: g.Subject, Scopes: is.scopes, IssuedAt: now, ExpiresAt: exp, UsageLimit: limit,
	}); err != nil {
		return nil, g, err
	}
	resp := &TokenResponse{
		TokenType:   "bearer",
		AccessToken: access,
		ExpiresIn:   int64(exp.Sub(now) / time.Second),
		ProfileID:   s.profileID(is.client, g.Subject),
		limited:     limit > 0,
	}
	// A token whose uses are counted gets no refresh token (shared/spec/NOTES.md):
	// a refresh would hand out fresh uses.
	if is.refresh && limit == 0 {
		rexp := now.Add(is.client.RefreshTokenLifetime)
		if rexp.After(g.ExpiresAt) {
			rexp = g.ExpiresAt
		}
		refresh, refreshHash, err := s.tokens().Mint(token.RefreshToken, token.Claims{GrantID: g.ID,
			ClientID: is.client.ID, Subject: g.Subject, Scopes: is.scopes, IssuedAt: now, ExpiresAt: rexp})
		if err != nil {
			return nil, g, err
		}
		if err := st.CreateToken(ctx, store.Token{
			Hash: refreshHash, Kind: store.KindRefresh, GrantID: g.ID, ClientID: is.client.ID,
			Subject: g.Subject, Scopes: is.scopes, IssuedAt: now, ExpiresAt: rexp,
		}); err != nil {
			return nil, g, err
		}
		resp.RefreshToken = refresh
	}
	// RFC 6749 section 5.1: scope is required in the answer when it differs from the request.
	if !slices.Equal(is.requested, is.scopes) {
		resp.Scope = joinScopes(is.scopes)
	}
	if idToken {
		// Signed after the transaction commits (Service.finish), as no
		// signature runs inside a transaction (presigned).
		if resp.idClaims, err = s.idTokenClaims(ctx, st, person, is.client, g, is.scopes, data, is.grant == nil, now); err != nil {
			return nil, g, err
		}
	}
	return resp, g, nil
}

// profileID is "static" for clients that are not mobile app instances
// (shared/spec/NOTES.md); a mobile app instance gets a stable 6-character
// profile of the person on that app.
func (s *Service) profileID(c store.Client, subject string) string {
	if c.AppIdentifier == "" {
		return "static"
	}
	sum := s.Hasher.Hash("profile_id", c.ID+"\x00"+subject)
	const alphabet = "abcdefghijklmnopqrstuvwxyz0123456789"
	out := make([]byte, 6)
	for i := range out {
		out[i] = alphabet[int(sum[i])%len(alphabet)]
	}
	return string(out)
}
