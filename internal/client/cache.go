package client

import (
	"context"
	"errors"
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
		if gen, err = cc.Generation(ctx); err != nil {
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

type requestKey struct{}

// requestReads are one request's reads of each Fresh: the first Get of a
// request reads, its later Gets answer that read, which began after the
// request did. In an optimistic request (Optimistic) a Get answers the
// newest value read so far without reading, and the value waits in
// unconfirmed for the request's first write to confirm it (Confirm, or a
// store's write that checks it in its own statement: Unconfirmed, Settle).
type requestReads struct {
	mu          sync.Mutex
	reads       map[any]any                        // *Fresh[T] → T
	optimistic  bool                               // Gets answer Latest, unconfirmed
	unconfirmed map[any]func(context.Context) bool // *Fresh[T] → reads again: still the value answered?
	stale       bool                               // a value answered moved before it was confirmed
}

// PerRequest returns ctx with a slot for one request's Fresh reads, so that
// the request's lookups (the token endpoint and introspection look up two
// clients, and introspection a token) share one read of each generation.
func PerRequest(ctx context.Context) context.Context {
	return context.WithValue(ctx, requestKey{}, &requestReads{})
}

// Optimistic returns ctx with a slot for one request's Fresh values that
// does not wait for a read: each Fresh answers the newest value read so
// far (its Latest), and the request must confirm those values before it
// writes and before it answers (Confirm, Settle). A value confirmed equal
// to one read after the request began means nothing it governs moved
// between the two reads, so what the request decided stands as if it had
// read then. Run such a request through Optimistically, which runs it
// again with PerRequest's reads when a value had moved.
func Optimistic(ctx context.Context) context.Context {
	return context.WithValue(ctx, requestKey{}, &requestReads{optimistic: true})
}

// Optimistically runs fn with an optimistic slot (Optimistic) and confirms
// the values it used; if one had moved (store.ErrRunAgain, from fn or from
// the confirmation) it runs fn again with reads that begin after the
// request did (PerRequest), and answers that run. fn must confirm before
// any write of its own (a store does so itself, by Confirm or Settle), so
// that a run it discards has written nothing.
func Optimistically[T any](ctx context.Context, fn func(ctx context.Context) (T, error)) (T, error) {
	octx := Optimistic(ctx)
	v, err := fn(octx)
	if !errors.Is(err, store.ErrRunAgain) {
		cerr := Confirm(octx)
		if cerr == nil {
			return v, err
		}
		if !errors.Is(cerr, store.ErrRunAgain) {
			var zero T
			return zero, cerr
		}
	}
	return fn(PerRequest(ctx))
}

// Confirm reads again each value the request of ctx used without a read
// (Optimistic) and answers store.ErrRunAgain if one has moved; a value that
// held is confirmed once. Outside an optimistic request it does nothing.
func Confirm(ctx context.Context) error {
	slot, _ := ctx.Value(requestKey{}).(*requestReads)
	if slot == nil || !slot.optimistic {
		return nil
	}
	slot.mu.Lock()
	defer slot.mu.Unlock()
	for f, held := range slot.unconfirmed {
		if slot.stale {
			break
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		if !held(ctx) {
			slot.stale = true
			break
		}
		delete(slot.unconfirmed, f)
	}
	if slot.stale {
		return store.ErrRunAgain
	}
	return nil
}

// Unconfirmed returns the value of f that the request of ctx used without
// a read, if it has not been confirmed yet: a store may check it in the
// statement of the request's write and then Settle it.
func Unconfirmed[T comparable](ctx context.Context, f *Fresh[T]) (T, bool) {
	var zero T
	slot, _ := ctx.Value(requestKey{}).(*requestReads)
	if slot == nil || !slot.optimistic {
		return zero, false
	}
	slot.mu.Lock()
	defer slot.mu.Unlock()
	if _, ok := slot.unconfirmed[f]; !ok || slot.stale {
		return zero, false
	}
	return slot.reads[f].(T), true
}

// Settle records what a store's statement found of f's value that the
// request of ctx used (Unconfirmed): held, it is confirmed; otherwise the
// request is stale, and Confirm answers store.ErrRunAgain without a read.
func Settle[T comparable](ctx context.Context, f *Fresh[T], held bool) {
	slot, _ := ctx.Value(requestKey{}).(*requestReads)
	if slot == nil {
		return
	}
	slot.mu.Lock()
	if held {
		delete(slot.unconfirmed, f)
	} else {
		slot.stale = true
		f.moved()
	}
	slot.mu.Unlock()
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
// about one read per round trip, whatever the request rate. Within a
// request (PerRequest) it reads once: the request's later callers get its
// first read, which began after the request did.
type Fresh[T comparable] struct {
	Read    func(ctx context.Context) (T, error)
	Timeout time.Duration // of one read; default 5 s
	// StaleBackoff: after an optimistic request found a value moved, the
	// optimistic requests of this long read instead (default 1 s), so that
	// where values move often (other instances' changes, this one's
	// revocations) requests do not run twice.
	StaleBackoff time.Duration
	Now          func() time.Time // StaleBackoff's clock; default time.Now

	mu      sync.Mutex
	running bool
	next    *freshRead[T]     // the read the callers that arrived during the running one wait for
	latest  atomic.Pointer[T] // the value of the newest read that succeeded
	staleAt atomic.Pointer[time.Time]
}

// trusted tells whether optimistic requests may use Latest: no value
// moved under one within StaleBackoff.
func (f *Fresh[T]) trusted() bool {
	at := f.staleAt.Load()
	if at == nil {
		return true
	}
	backoff := f.StaleBackoff
	if backoff <= 0 {
		backoff = time.Second
	}
	return f.clock().Sub(*at) >= backoff
}

// moved records that a value moved under an optimistic request.
func (f *Fresh[T]) moved() {
	now := f.clock()
	f.staleAt.Store(&now)
}

func (f *Fresh[T]) clock() time.Time {
	if f.Now != nil {
		return f.Now()
	}
	return time.Now()
}

// Latest returns the value of the newest read so far: at least as new as
// the one the caller's own Get returned, since reads run one at a time.
// Other caches key their entries on it (the PostgreSQL scope cache), so
// that one read per request serves them all.
func (f *Fresh[T]) Latest() (T, bool) {
	if p := f.latest.Load(); p != nil {
		return *p, true
	}
	var zero T
	return zero, false
}

type freshRead[T comparable] struct {
	done chan struct{}
	v    T
	err  error
}

// Get returns a value read after Get was called, or after the request of
// ctx began (PerRequest).
func (f *Fresh[T]) Get(ctx context.Context) (T, error) {
	slot, _ := ctx.Value(requestKey{}).(*requestReads)
	if slot == nil {
		return f.get(ctx)
	}
	slot.mu.Lock()
	defer slot.mu.Unlock()
	if v, ok := slot.reads[f]; ok {
		return v.(T), nil
	}
	if p := f.latest.Load(); slot.optimistic && p != nil && f.trusted() {
		v := *p
		if slot.reads == nil {
			slot.reads = map[any]any{}
		}
		if slot.unconfirmed == nil {
			slot.unconfirmed = map[any]func(context.Context) bool{}
		}
		slot.reads[f] = v
		slot.unconfirmed[f] = func(ctx context.Context) bool {
			now, err := f.get(ctx)
			if err != nil || now != v {
				f.moved()
				return false
			}
			return true
		}
		return v, nil
	}
	v, err := f.get(ctx)
	if err == nil {
		if slot.reads == nil {
			slot.reads = map[any]any{}
		}
		slot.reads[f] = v
	}
	return v, err
}

func (f *Fresh[T]) get(ctx context.Context) (T, error) {
	f.mu.Lock()
	if !f.running {
		f.running = true
		f.mu.Unlock()
		r := &freshRead[T]{done: make(chan struct{})}
		f.read(r)
		return r.v, r.err
	}
	if f.next == nil {
		f.next = &freshRead[T]{done: make(chan struct{})}
	}
	r := f.next
	f.mu.Unlock()
	select {
	case <-r.done:
		return r.v, r.err
	case <-ctx.Done():
		var zero T
		return zero, ctx.Err()
	}
}

// read runs r, then hands over to the next read, if callers wait for one.
// A read serves many callers, so no caller's context cancels it.
func (f *Fresh[T]) read(r *freshRead[T]) {
	timeout := f.Timeout
	if timeout <= 0 {
		timeout = 5 * time.Second
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	r.v, r.err = f.Read(ctx)
	cancel()
	if r.err == nil {
		v := r.v
		f.latest.Store(&v)
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
