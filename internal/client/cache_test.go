package client

import (
	"context"
	"errors"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/latchkey/latchkey/internal/store"
)

type countingSource struct {
	reads   int
	clients map[string]store.Client
}

func (s *countingSource) GetClient(_ context.Context, id string) (store.Client, error) {
	s.reads++
	c, ok := s.clients[id]
	if !ok {
		return c, store.ErrNotFound
	}
	return c, nil
}

func TestCache(t *testing.T) {
	src := &countingSource{clients: map[string]store.Client{"a": {ID: "a", Name: "A"}}}
	now := time.Now()
	cc := &Cache{Source: src, TTL: 5 * time.Second, Now: func() time.Time { return now }}
	ctx := context.Background()
	for range 3 {
		if c, err := cc.GetClient(ctx, "a"); err != nil || c.Name != "A" {
			t.Fatalf("%+v %v", c, err)
		}
	}
	if src.reads != 1 {
		t.Errorf("%d store reads for 3 lookups within the TTL, want 1", src.reads)
	}
	src.clients["a"] = store.Client{ID: "a", Name: "A2"}
	now = now.Add(5 * time.Second)
	if c, _ := cc.GetClient(ctx, "a"); c.Name != "A2" || src.reads != 2 {
		t.Errorf("after the TTL: %+v, %d reads", c, src.reads)
	}
	for range 2 {
		if _, err := cc.GetClient(ctx, "nope"); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("unknown: %v", err)
		}
	}
	if src.reads != 4 || len(cc.entries) != 1 {
		t.Errorf("unknown ids are cached: %d reads, %d entries", src.reads, len(cc.entries))
	}
	cc.Forget()
	if _, _ = cc.GetClient(ctx, "a"); src.reads != 5 {
		t.Errorf("Forget kept the entry: %d reads", src.reads)
	}
}

// TestCacheGeneration: with a generation, an entry read under an older one
// is read again; a read that overlapped a Forget is not kept.
func TestCacheGeneration(t *testing.T) {
	src := &countingSource{clients: map[string]store.Client{"a": {ID: "a", Name: "A"}}}
	gen := int64(1)
	now := time.Now()
	cc := &Cache{Source: src, TTL: time.Hour, Now: func() time.Time { return now },
		Generation: func(context.Context) (int64, error) { return gen, nil }}
	ctx := context.Background()
	for range 2 {
		if c, _ := cc.GetClient(ctx, "a"); c.Name != "A" {
			t.Fatalf("%+v", c)
		}
	}
	if src.reads != 1 {
		t.Fatalf("%d reads under one generation, want 1", src.reads)
	}
	src.clients["a"] = store.Client{ID: "a", Name: "A2"} // another instance wrote it
	gen++
	if c, _ := cc.GetClient(ctx, "a"); c.Name != "A2" || src.reads != 2 {
		t.Errorf("after the generation moved: %+v, %d reads", c, src.reads)
	}
	boom := errors.New("store down")
	cc.Generation = func(context.Context) (int64, error) { return 0, boom }
	if _, err := cc.GetClient(ctx, "a"); !errors.Is(err, boom) {
		t.Errorf("a failed generation read: %v, want its error (never a stale answer)", err)
	}
}

// TestOneGenerationReadPerRequest: a request's lookups share its first
// generation read; the next request reads again and sees a change made
// between the two; a failed read is not kept.
func TestOneGenerationReadPerRequest(t *testing.T) {
	src := &countingSource{clients: map[string]store.Client{"a": {ID: "a", Name: "A"}, "b": {ID: "b", Name: "B"}}}
	gen, reads := int64(1), 0
	var fail error
	now := time.Now()
	fresh := &Fresh[int64]{Read: func(context.Context) (int64, error) { reads++; return gen, fail }}
	cc := &Cache{Source: src, TTL: time.Hour, Now: func() time.Time { return now }, Generation: fresh.Get}
	req := PerRequest(context.Background())
	for _, id := range []string{"a", "b", "a"} {
		if _, err := cc.GetClient(req, id); err != nil {
			t.Fatal(err)
		}
	}
	if reads != 1 {
		t.Errorf("%d generation reads for one request's three lookups, want 1", reads)
	}
	src.clients["a"] = store.Client{ID: "a", Name: "A2"} // another instance wrote it
	gen++
	if c, _ := cc.GetClient(PerRequest(context.Background()), "a"); c.Name != "A2" || reads != 2 {
		t.Errorf("the next request: %+v after %d reads, want A2 after 2", c, reads)
	}
	fail = errors.New("store down")
	req = PerRequest(context.Background())
	for range 2 {
		if _, err := cc.GetClient(req, "a"); !errors.Is(err, fail) {
			t.Errorf("a failed generation read: %v", err)
		}
	}
	if reads != 4 {
		t.Errorf("a failed read was kept for the request: %d reads, want 4", reads)
	}
	// Another Fresh (the token generation's) has a read of its own in the
	// same request, and a value of its own type.
	other := &Fresh[string]{Read: func(context.Context) (string, error) { reads++; return "tokens", nil }}
	fail, req = nil, PerRequest(context.Background())
	for range 2 {
		if _, err := fresh.Get(req); err != nil {
			t.Fatal(err)
		}
		if v, err := other.Get(req); err != nil || v != "tokens" {
			t.Fatalf("other Fresh: %q, %v", v, err)
		}
	}
	if reads != 6 {
		t.Errorf("%d reads, want 6: one per Fresh and request", reads)
	}
}

// forgettingSource calls Forget while a read is in flight.
type forgettingSource struct {
	cc *Cache
	n  int
}

func (s *forgettingSource) GetClient(_ context.Context, id string) (store.Client, error) {
	s.n++
	s.cc.Forget(id) // a write through this instance commits during the read
	return store.Client{ID: id, Name: "old"}, nil
}

func TestCacheKeepsNoReadThatOverlappedAForget(t *testing.T) {
	src := &forgettingSource{}
	cc := &Cache{Source: src, TTL: time.Hour, Now: time.Now}
	src.cc = cc
	for range 2 {
		if _, err := cc.GetClient(context.Background(), "a"); err != nil {
			t.Fatal(err)
		}
	}
	if src.n != 2 {
		t.Errorf("%d reads: a read that overlapped a Forget was kept", src.n)
	}
}

// TestFreshReadsAfterEveryCaller: each caller gets a value read after it
// arrived (so at least the writes that committed before), and concurrent
// callers share reads.
func TestFreshReadsAfterEveryCaller(t *testing.T) {
	var committed, reads atomic.Int64
	f := &Fresh[int64]{Read: func(context.Context) (int64, error) {
		reads.Add(1)
		v := committed.Load()
		time.Sleep(time.Millisecond) // a round trip
		return v, nil
	}}
	var wg sync.WaitGroup
	const callers, calls = 16, 50
	for range callers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range calls {
				w := committed.Add(1) // a write that commits before the call
				v, err := f.Get(context.Background())
				if err != nil || v < w {
					t.Errorf("Get = %d, %v after the write %d committed", v, err, w)
					return
				}
			}
		}()
	}
	wg.Wait()
	if n := reads.Load(); n >= callers*calls {
		t.Errorf("%d reads for %d calls: none shared", n, callers*calls)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	block := make(chan struct{})
	f = &Fresh[int64]{Read: func(context.Context) (int64, error) { <-block; return 1, nil }}
	go func() { _, _ = f.Get(context.Background()) }()
	for { // wait until the first read runs, so the next caller waits for another
		f.mu.Lock()
		running := f.running
		f.mu.Unlock()
		if running {
			break
		}
		runtime.Gosched()
	}
	if _, err := f.Get(ctx); !errors.Is(err, context.Canceled) {
		t.Errorf("a canceled caller: %v", err)
	}
	close(block)
}

// TestFreshLatest: Latest is the value of the newest read so far, never
// one older than the caller's own Get.
func TestFreshLatest(t *testing.T) {
	values := []int64{3, 7, 7}
	i := 0
	f := &Fresh[int64]{Read: func(context.Context) (int64, error) { v := values[i]; i++; return v, nil }}
	if _, ok := f.Latest(); ok {
		t.Fatal("Latest before any read")
	}
	for _, want := range []int64{3, 7, 7} {
		if _, err := f.Get(context.Background()); err != nil {
			t.Fatal(err)
		}
		if got, ok := f.Latest(); !ok || got != want {
			t.Errorf("Latest = %d, %v; want %d", got, ok, want)
		}
	}
}
