package client

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/latchkey/latchkey/internal/store"
)

// Source reads clients by id (a store, or Static in front of one).
type Source interface {
	GetClient(ctx context.Context, id string) (store.Client, error)
}

// Cache keeps clients read from Source, so the hot paths (token,
// introspection: two client reads each) do not read and decode a client
// row for every request. A change takes effect at once:
//
//   - A client written through this instance is dropped when the write's
//     transaction has ended (Forget, which Static calls); a read that
//     overlapped a Forget is not kept.
//   - With Generation set (a store that other instances write: PostgreSQL)
//     every lookup first reads the store's client generation, which every
//     client write bumps in its transaction, and an entry read under an
//     older generation is read again. Fresh shares one generation read
//     among the lookups that wait for it, and each lookup gets a read that
//     began after the lookup did: a write that committed before a request
//     started is never hidden from it.
//
// TTL bounds an entry's life besides. Unknown ids are not cached, so
// random ids cannot grow it.
type Cache struct {
	Source Source
	TTL    time.Duration
	Now    func() time.Time
	// Generation reads the store's client generation (nil: the store is
	// written by this process only, SQLite, and Forget is told of every
	// write).
	Generation func(ctx context.Context) (int64, error)

	mu      sync.RWMutex
	seq     uint64 // counts Forget calls
	entries map[string]cachedClient
}

type cachedClient struct {
	c       store.Client
	expires time.Time
	gen     int64
}

// GetClient returns the cached client or reads it from Source.
func (cc *Cache) GetClient(ctx context.Context, id string) (store.Client, error) {
	var gen int64
	if cc.Generation != nil {
		// Before the client is read: an entry is never newer than its tag.
		var err error
		if gen, err = cc.generation(ctx); err != nil {
			return store.Client{}, err
		}
	}
	now := cc.Now()
	cc.mu.RLock()
	e, ok := cc.entries[id]
	seq := cc.seq
	cc.mu.RUnlock()
	if ok && now.Before(e.expires) && e.gen == gen {
		return e.c, nil
	}
	c, err := cc.Source.GetClient(ctx, id)
	if err != nil {
		return c, err
	}
	cc.mu.Lock()
	if cc.seq == seq { // no Forget since the read began
		if cc.entries == nil {
			cc.entries = map[string]cachedClient{}
		}
		cc.entries[id] = cachedClient{c: c, expires: now.Add(cc.TTL), gen: gen}
	}
	cc.mu.Unlock()
	return c, nil
}

// generation reads the client generation, once per request when ctx
// carries PerRequest's slot: the request's later lookups (the token
// endpoint and introspection look up two clients) use its first read,
// which began after the request did.
func (cc *Cache) generation(ctx context.Context) (int64, error) {
	slot, _ := ctx.Value(requestGenKey{}).(*requestGen)
	if slot == nil {
		return cc.Generation(ctx)
	}
	slot.mu.Lock()
	defer slot.mu.Unlock()
	if slot.read {
		return slot.v, nil
	}
	v, err := cc.Generation(ctx)
	if err == nil {
		slot.read, slot.v = true, v
	}
	return v, err
}

type requestGenKey struct{}

type requestGen struct {
	mu   sync.Mutex
	read bool
	v    int64
}

// PerRequest returns ctx with a slot for one request's client generation,
// so that its client lookups share one generation read.
func PerRequest(ctx context.Context) context.Context {
	return context.WithValue(ctx, requestGenKey{}, &requestGen{})
}

// Forget drops the cached clients of ids, or every cached client when
// none is named.
func (cc *Cache) Forget(ids ...string) {
	cc.mu.Lock()
	cc.seq++
	if len(ids) == 0 {
		cc.entries = nil
	}
	for _, id := range ids {
		delete(cc.entries, id)
	}
	cc.mu.Unlock()
}

// Fresh answers, to every caller, a value read after the caller arrived,
// sharing reads between callers: a caller that finds no read in flight
// reads at once; callers that arrive while one is in flight share the
// next read, which starts when that one ends. Under load the store sees
// about one read per round trip, whatever the request rate.
type Fresh struct {
	Read    func(ctx context.Context) (int64, error)
	Timeout time.Duration // of one read; default 5 s

	mu      sync.Mutex
	running bool
	next    *freshRead   // the read the callers that arrived during the running one wait for
	latest  atomic.Int64 // the largest value read so far, +1 (0: none yet)
}

// Latest returns the largest value any Get has read so far: at least the
// one the caller's own Get returned. Other caches key their entries on it
// (the PostgreSQL scope cache), so that one read per request serves them all.
func (f *Fresh) Latest() (int64, bool) {
	v := f.latest.Load()
	return v - 1, v > 0
}

type freshRead struct {
	done chan struct{}
	v    int64
	err  error
}

// Get returns a value read after Get was called.
func (f *Fresh) Get(ctx context.Context) (int64, error) {
	f.mu.Lock()
	if !f.running {
		f.running = true
		f.mu.Unlock()
		r := &freshRead{done: make(chan struct{})}
		f.read(r)
		return r.v, r.err
	}
	if f.next == nil {
		f.next = &freshRead{done: make(chan struct{})}
	}
	r := f.next
	f.mu.Unlock()
	select {
	case <-r.done:
		return r.v, r.err
	case <-ctx.Done():
		return 0, ctx.Err()
	}
}

// read runs r, then hands over to the next read, if callers wait for one.
// A read serves many callers, so no caller's context cancels it.
func (f *Fresh) read(r *freshRead) {
	timeout := f.Timeout
	if timeout <= 0 {
		timeout = 5 * time.Second
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	r.v, r.err = f.Read(ctx)
	cancel()
	if r.err == nil {
		for {
			cur := f.latest.Load()
			if cur > r.v || f.latest.CompareAndSwap(cur, r.v+1) {
				break
			}
		}
	}
	close(r.done)
	f.mu.Lock()
	next := f.next
	f.next = nil
	f.running = next != nil
	f.mu.Unlock()
	if next != nil {
		go f.read(next)
	}
}
