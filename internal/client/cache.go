package client

import (
	"context"
	"sync"
	"time"

	"github.com/latchkey/latchkey/internal/store"
)

// Source reads clients by id (a store, or Static in front of one).
type Source interface {
	GetClient(ctx context.Context, id string) (store.Client, error)
}

// Cache keeps clients read from Source for TTL, so the hot paths (token,
// introspection: two client reads each) do not read the store for every
// request. A client written through this instance is dropped at once
// (Forget, which Static.Changed calls); other instances see a change
// within TTL. Unknown ids are not cached, so random ids cannot grow it.
type Cache struct {
	Source Source
	TTL    time.Duration
	Now    func() time.Time

	mu      sync.RWMutex
	entries map[string]cachedClient
}

type cachedClient struct {
	c       store.Client
	expires time.Time
}

// GetClient returns the cached client or reads it from Source.
func (cc *Cache) GetClient(ctx context.Context, id string) (store.Client, error) {
	now := cc.Now()
	cc.mu.RLock()
	e, ok := cc.entries[id]
	cc.mu.RUnlock()
	if ok && now.Before(e.expires) {
		return e.c, nil
	}
	c, err := cc.Source.GetClient(ctx, id)
	if err != nil {
		return c, err
	}
	cc.mu.Lock()
	if cc.entries == nil {
		cc.entries = map[string]cachedClient{}
	}
	cc.entries[id] = cachedClient{c: c, expires: now.Add(cc.TTL)}
	cc.mu.Unlock()
	return c, nil
}

// Forget drops the cached clients of ids, or every cached client when
// none is named.
func (cc *Cache) Forget(ids ...string) {
	cc.mu.Lock()
	if len(ids) == 0 {
		cc.entries = nil
	}
	for _, id := range ids {
		delete(cc.entries, id)
	}
	cc.mu.Unlock()
}
