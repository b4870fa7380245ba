package sqlstore

import (
	"context"
	"slices"
	"sync"

	"github.com/latchkey/latchkey/internal/store"
)

// tokenCacheSize bounds the cached tokens; a full cache starts over.
const tokenCacheSize = 100_000

// maxCachedPerGrant bounds one grant's entries (its index in byGrant).
const maxCachedPerGrant = 32

// TokenCache keeps GetTokenGrant's answers in memory, so that introspecting
// an active token reads no database. Without Generation it is correct only
// when every write to the tokens and grants tables goes through the DBs
// that share it: the embedded store locks its file to one process
// (sqlite.Open) and shares one cache between the stores a process opens on
// that file. PostgreSQL, whose instances write the same rows, follows the
// token generation that its triggers move (Generation): one shared read
// per batch of concurrent lookups instead of one row read each.
//
// Every write that changes a token or grant row invalidates its entries once
// its transaction has ended; an answer read while a write was in flight is
// not cached (seq), so a revocation is seen by every introspection that
// starts after the revoking request was answered. A use of a token with a
// usage limit is the exception: it leaves the entry (see put).
type TokenCache struct {
	// Generation, when set, reads the token generation (PostgreSQL): a
	// value read after the call that every other instance's revocation
	// moves. An entry is answered only under the generation it was read
	// under, and only access tokens are kept (a refresh token's use, on
	// any instance, moves no generation).
	Generation func(ctx context.Context) (int64, error)

	mu      sync.RWMutex
	seq     uint64 // counts invalidations
	entries map[string]cachedToken
	byGrant map[string][]string // grant id -> token hashes (may name removed entries)
}

type cachedToken struct {
	t   store.Token
	g   store.Grant
	gen int64 // the token generation read before the row (Generation)
}

// NewTokenCache returns an empty cache.
func NewTokenCache() *TokenCache {
	return &TokenCache{entries: map[string]cachedToken{}, byGrant: map[string][]string{}}
}

// get returns the cached token and grant of hash, or the invalidation count
// to hand to put after reading the database.
func (c *TokenCache) get(hash []byte) (cachedToken, bool, uint64) {
	c.mu.RLock()
	e, ok := c.entries[string(hash)]
	seq := c.seq
	c.mu.RUnlock()
	return e, ok, seq
}

// put caches what was read when no invalidation has run since seq. A
// token with a usage limit is cached too, and its uses (SpendTokenUse)
// leave its entry: the entry's UsageCount may lag the stored count, which
// no decision reads — SpendTokenUse counts and answers each use in the
// database.
func (c *TokenCache) put(seq uint64, gen int64, t store.Token, g store.Grant) {
	if c.Generation != nil && t.Kind != store.KindAccess {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.seq != seq || len(c.byGrant[g.ID]) >= maxCachedPerGrant {
		return
	}
	if len(c.entries) >= tokenCacheSize {
		c.entries, c.byGrant = map[string]cachedToken{}, map[string][]string{}
	}
	c.entries[string(t.Hash)] = cachedToken{t: t, g: g, gen: gen}
	// Once per token: concurrent readers of one token each put it, and
	// repeats would fill the grant's list, after which none of its tokens
	// is cached again.
	if !slices.Contains(c.byGrant[g.ID], string(t.Hash)) {
		c.byGrant[g.ID] = append(c.byGrant[g.ID], string(t.Hash))
	}
}

// invalidation names what a write changed: one token, one grant with its
// tokens, or (all) everything.
type invalidation struct {
	token []byte
	grant string
	all   bool
}

// apply drops the entries invs name.
func (c *TokenCache) apply(invs []invalidation) {
	if len(invs) == 0 {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.seq++
	for _, inv := range invs {
		switch {
		case inv.all:
			c.entries, c.byGrant = map[string]cachedToken{}, map[string][]string{}
		case inv.grant != "":
			for _, h := range c.byGrant[inv.grant] {
				delete(c.entries, h)
			}
			delete(c.byGrant, inv.grant)
		default:
			delete(c.entries, string(inv.token))
		}
	}
}

// invalidate records that db changed what inv names: at once outside a
// transaction (the statement has committed), after the end of the
// transaction inside one (until then other connections read the old rows).
func (db *DB) invalidate(inv invalidation) {
	c := db.shared.tokens
	if c == nil {
		return
	}
	if db.inTx {
		*db.pendingInv = append(*db.pendingInv, inv)
		return
	}
	c.apply([]invalidation{inv})
}

// endTx applies the invalidations of a transaction that has ended, whether
// it committed or not: dropping entries is always safe.
func (db *DB) endTx(child *DB) {
	if c := db.shared.scopeCache; c != nil && child.scopesWritten != nil && *child.scopesWritten {
		c.drop()
		*child.scopesWritten = false
	}
	if c := db.shared.tokens; c != nil && child.pendingInv != nil {
		c.apply(*child.pendingInv)
		*child.pendingInv = nil
	}
}

// UseTokenCache makes db (and its transactions) read and invalidate c.
func (db *DB) UseTokenCache(c *TokenCache) { db.shared.tokens = c }
