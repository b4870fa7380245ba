package sqlstore

import (
	"context"
	"slices"
	"sync"

	"github.com/latchkey/latchkey/internal/store"
)

// ScopeCache keeps the scopes table in memory, so that issuance reads the
// configuration of the requested scopes without a statement inside its
// transaction (SQLite: a statement on the single writer, which every
// caller of the group commit waits for). Only a backend whose database one
// process owns may use it (SQLite); every scope write through the store
// drops it, after the transaction's end as for the token cache, and a read
// that overlapped a write is not kept.
//
// Where other processes write scopes too (PostgreSQL), Generation makes
// the cache follow them: every scope write bumps the client generation in
// its transaction, each request reads that generation once (the client
// cache's check), and the cache holds only while it was loaded at that
// generation or a later one.
type ScopeCache struct {
	// Generation returns the latest client generation this process has
	// read; nil where the process owns the database.
	Generation func() (int64, bool)

	mu     sync.Mutex
	seq    uint64 // counts drops
	loaded bool
	gen    int64 // the generation read before the load
	all    map[string]store.Scope
}

// UseScopeCache makes db answer GetScopes from c.
func (db *DB) UseScopeCache(c *ScopeCache) { db.shared.scopeCache = c }

func (c *ScopeCache) drop() {
	c.mu.Lock()
	c.seq++
	c.loaded, c.all = false, nil
	c.mu.Unlock()
}

// get returns the scopes among ids, by ID, or the drop count to load under.
func (c *ScopeCache) get(ids []string) ([]store.Scope, bool, uint64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.loaded {
		return nil, false, c.seq
	}
	if c.Generation != nil {
		if g, ok := c.Generation(); !ok || g > c.gen {
			return nil, false, c.seq // another process may have written scopes since the load
		}
	}
	var out []store.Scope
	for _, id := range ids {
		if s, ok := c.all[id]; ok && !slices.ContainsFunc(out, func(o store.Scope) bool { return o.ID == id }) {
			out = append(out, s)
		}
	}
	slices.SortFunc(out, func(a, b store.Scope) int {
		switch {
		case a.ID < b.ID:
			return -1
		case a.ID > b.ID:
			return 1
		}
		return 0
	})
	return out, true, 0
}

func (c *ScopeCache) put(seq uint64, gen int64, all []store.Scope) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.seq != seq {
		return // a write overlapped the read
	}
	c.gen = gen
	c.all = make(map[string]store.Scope, len(all))
	for _, s := range all {
		c.all[s.ID] = s
	}
	c.loaded = true
}

// cachedScopes answers GetScopes from the cache when db may: not in a
// transaction that wrote scopes (its own rows are not the cache's).
func (db *DB) cachedScopes(ctx context.Context, ids []string) ([]store.Scope, bool, error) {
	c := db.shared.scopeCache
	if c == nil || db.inTx && *db.scopesWritten {
		return nil, false, nil
	}
	if out, ok, _ := c.get(ids); ok {
		return out, true, nil
	}
	_, _, seq := c.get(nil)
	var gen int64
	if c.Generation != nil {
		// Read before the scopes: a write between the two leaves the
		// cache tagged older than its rows, and the next check reloads it.
		var err error
		if gen, err = db.ClientGeneration(ctx); err != nil {
			return nil, false, err
		}
	}
	all, err := db.ListScopes(ctx)
	if err != nil {
		return nil, false, err
	}
	c.put(seq, gen, all)
	out, ok, _ := c.get(ids)
	if !ok { // a write overlapped: answer from the rows read
		out = slices.DeleteFunc(all, func(s store.Scope) bool { return !slices.Contains(ids, s.ID) })
	}
	return out, true, nil
}

// scopesChanged drops the cache: at once outside a transaction, at the
// transaction's end inside one (until then other connections read the old
// rows).
func (db *DB) scopesChanged() {
	c := db.shared.scopeCache
	if c == nil {
		return
	}
	if db.inTx {
		*db.scopesWritten = true
		return
	}
	c.drop()
}
