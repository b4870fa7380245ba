package clientauth

import (
	"context"
	"sync"
	"time"

	"github.com/latchkey/latchkey/internal/store"
)

// CachedClients keeps clients read from Source for TTL, so the hot paths
// (token, introspection: two client reads each) do not read the store for
// every request. Clients change only when an instance starts with a new
// config file; other instances see the change within TTL. Unknown ids are
// not cached, so random ids cannot grow the cache.
type CachedClients struct {
	Source ClientSource
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
func (cc *CachedClients) GetClient(ctx context.Context, id string) (store.Client, error) {
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

// Forget drops every cached client (after this instance changed clients).
func (cc *CachedClients) Forget() {
	cc.mu.Lock()
	cc.entries = nil
	cc.mu.Unlock()
}
