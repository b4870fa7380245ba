package token

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/latchkey/latchkey/internal/store"
)

// Claims are what a token is issued for. An opaque token only stores them
// (store.Token); a self-contained format would carry them in the value.
type Claims struct {
	GrantID   string
	ClientID  string
	Subject   string // "" for a client's own token (client credentials)
	Scopes    []string
	IssuedAt  time.Time
	ExpiresAt time.Time
}

// Strategy is how tokens look and how they are found again (fosite's
// CoreStrategy): Mint returns a new token and the key the store keeps it
// under, Key the key of a presented token. The grants, introspection,
// revocation and bearer authentication use only these, so a second format
// (JWT access tokens, RFC 9068: a signed value whose key is a hash of its
// jti) plugs in here without touching them.
type Strategy interface {
	Mint(k Kind, c Claims) (value string, key []byte, err error)
	Key(k Kind, value string) []byte
}

// Opaque is latchkey's strategy: a prefixed random value of 256 bits,
// stored under its keyed hash (Hasher), the claims only in the store.
type Opaque struct{ Hasher *Hasher }

// Mint returns a new value of kind k and its keyed hash.
func (o Opaque) Mint(k Kind, _ Claims) (string, []byte, error) {
	v, h := o.Hasher.Mint(k)
	return v, h, nil
}

// Key is the keyed hash of a presented value of kind k.
func (o Opaque) Key(k Kind, value string) []byte { return o.Hasher.HashOf(k, value) }

// TokenGrants reads a token with its grant by key (store.Tokens).
type TokenGrants interface {
	GetTokenGrant(ctx context.Context, key []byte) (store.Token, store.Grant, error)
}

// ErrInactive: the presented token is unknown, expired, revoked, spent (a
// rotated refresh token), or of another kind than asked for.
var ErrInactive = errors.New("token: not active")

// ErrExhausted: an access token whose usage limit is spent (Spend). It is
// ErrInactive too, for the callers that do not tell the two apart.
var ErrExhausted = fmt.Errorf("%w: its usage limit is spent", ErrInactive)

// Found is an active token: its storage key, its record and its grant.
type Found struct {
	Key   []byte
	Token store.Token
	Grant store.Grant
}

// Active is the one answer to "is this token active, and for what"
// (introspection, userinfo, in-app device approval, the APIs' bearer
// credentials): ErrInactive, a store error, or the token found. A usage
// limit is not spent here but by Spend, once the caller has accepted the
// token for what it asks.
func Active(ctx context.Context, s Strategy, src TokenGrants, k Kind, value string, now time.Time) (Found, error) {
	key := s.Key(k, value)
	t, g, err := src.GetTokenGrant(ctx, key)
	switch {
	case errors.Is(err, store.ErrNotFound):
		return Found{}, ErrInactive
	case err != nil:
		return Found{}, err
	case t.Kind != storeKind(k) || !t.Active(g, now):
		return Found{}, ErrInactive
	}
	return Found{Key: key, Token: t, Grant: g}, nil
}

// TokenUses counts the uses of tokens with a usage limit (store.Tokens).
type TokenUses interface {
	SpendTokenUse(ctx context.Context, key []byte, ev *store.Event) (store.Token, error)
}

// Spend counts one use of an active access token with a usage limit and
// returns the token as counted, or ErrExhausted past the limit (one
// conditional increment in the store: exactly usage_limit uses succeed,
// however many race). Every place that accepts an access token calls it
// once the token itself passes (active, the caller's, carrying the scope
// or person the endpoint needs): introspection answering active,
// userinfo, in-app approval and the APIs' bearer credentials share one
// count. A token refused for itself spends nothing; what the request then
// fails on (a wrong user code, say) does not give the use back, as a
// resource server that introspects counts the use before acting. A token
// without a limit passes unchanged.
func Spend(ctx context.Context, uses TokenUses, f Found) (store.Token, error) {
	if !Limited(f) {
		return f.Token, nil
	}
	return exhausted(uses.SpendTokenUse(ctx, f.Key, nil))
}

// Limited tells whether a use of f counts (Spend).
func Limited(f Found) bool {
	return f.Token.UsageLimit > 0 && f.Token.Kind == store.KindAccess
}

// SpendRecording is Spend for a Limited token whose use is answered with
// ev: the store appends ev with the use, and not when it counts none
// (ErrExhausted, or the request's generations moved).
func SpendRecording(ctx context.Context, uses TokenUses, f Found, ev store.Event) (store.Token, error) {
	return exhausted(uses.SpendTokenUse(ctx, f.Key, &ev))
}

// exhausted is a count's outcome, ErrExhausted past the limit.
func exhausted(t store.Token, err error) (store.Token, error) {
	if errors.Is(err, store.ErrConflict) {
		return store.Token{}, ErrExhausted
	}
	return t, err
}

// storeKind is the store's kind of the tokens of kind k.
func storeKind(k Kind) string {
	if k == RefreshToken {
		return store.KindRefresh
	}
	return store.KindAccess
}
