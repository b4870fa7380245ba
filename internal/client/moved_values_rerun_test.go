package client

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/latchkey/latchkey/internal/store"
)

// An optimistic request answers the newest value read so far without a
// read, and Confirm reads once to check it: unchanged, the request stands;
// moved, Confirm answers store.ErrRunAgain, then again without a read.
func TestOptimisticAnswersLatestAndConfirmsOnce(t *testing.T) {
	gen, reads := int64(1), 0
	f := &Fresh[int64]{Read: func(context.Context) (int64, error) { reads++; return gen, nil }}

	// Nothing read yet: an optimistic request reads, as any other.
	req := Optimistic(context.Background())
	if v, err := f.Get(req); v != 1 || err != nil || reads != 1 {
		t.Fatalf("first Get: %d, %v after %d reads; want 1 after 1", v, err, reads)
	}
	if _, ok := Unconfirmed(req, f); ok {
		t.Error("a value read by the request is unconfirmed")
	}
	if err := Confirm(req); err != nil || reads != 1 {
		t.Errorf("Confirm of a read value: %v after %d reads", err, reads)
	}

	req = Optimistic(context.Background())
	for range 2 {
		if v, err := f.Get(req); v != 1 || err != nil || reads != 1 {
			t.Fatalf("optimistic Get: %d, %v after %d reads; want 1 without a read", v, err, reads)
		}
	}
	if v, ok := Unconfirmed(req, f); !ok || v != 1 {
		t.Errorf("Unconfirmed: %d, %v; want 1, true", v, ok)
	}
	for range 2 {
		if err := Confirm(req); err != nil || reads != 2 {
			t.Errorf("Confirm of an unchanged value: %v after %d reads; want nil after 2", err, reads)
		}
	}
	if _, ok := Unconfirmed(req, f); ok {
		t.Error("a confirmed value is still unconfirmed")
	}

	req = Optimistic(context.Background())
	f.Get(req)
	gen = 2 // another instance wrote
	for range 2 {
		if err := Confirm(req); !errors.Is(err, store.ErrRunAgain) || reads != 3 {
			t.Errorf("Confirm of a moved value: %v after %d reads; want ErrRunAgain after 3", err, reads)
		}
	}
	if _, ok := Unconfirmed(req, f); ok {
		t.Error("a stale request offers its value to be checked")
	}
	// A plain request has nothing to confirm.
	req = PerRequest(context.Background())
	if v, _ := f.Get(req); v != 2 || Confirm(req) != nil || reads != 4 {
		t.Errorf("a plain request: %d after %d reads", v, reads)
	}
}

// Settle is a store's statement checking the value itself: held confirms
// it with no read; not held makes the request stale with no read.
func TestSettle(t *testing.T) {
	reads := 0
	f := &Fresh[int64]{Read: func(context.Context) (int64, error) { reads++; return 7, nil }}
	f.Get(context.Background())
	for _, held := range []bool{true, false} {
		req := Optimistic(context.Background())
		f.Get(req)
		Settle(req, f, held)
		err := Confirm(req)
		if reads != 1 || held != (err == nil) || !held && !errors.Is(err, store.ErrRunAgain) {
			t.Errorf("settled %v: Confirm %v after %d reads", held, err, reads)
		}
	}
}

// Optimistically runs again, with reads of its own, a request whose values
// moved: whether fn finds out itself (its write's ErrRunAgain) or the
// confirmation after it does. A request whose values held runs once.
func TestOptimisticallyRunsAStaleRequestAgain(t *testing.T) {
	gen := int64(1)
	clock := time.Now()
	f := &Fresh[int64]{Read: func(context.Context) (int64, error) { return gen, nil }, Now: func() time.Time { return clock }}
	f.Get(context.Background())
	for _, tc := range []struct {
		name  string
		moved bool
		fail  bool // fn answers ErrRunAgain itself
		runs  int
	}{
		{"unchanged", false, false, 1},
		{"moved, found by the confirmation", true, false, 2},
		{"moved, found by fn's write", true, true, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			clock = clock.Add(time.Hour) // past the backoff of the case before
			runs, seen := 0, []int64{}
			if tc.moved {
				gen++
			}
			v, err := Optimistically(context.Background(), func(ctx context.Context) (int64, error) {
				runs++
				v, err := f.Get(ctx)
				seen = append(seen, v)
				if tc.fail {
					if err := Confirm(ctx); err != nil {
						return 0, err
					}
				}
				return v, err
			})
			if err != nil || runs != tc.runs || v != gen {
				t.Errorf("%d runs answering %d, %v (saw %v); want %d runs answering %d", runs, v, err, seen, tc.runs, gen)
			}
		})
	}
}

// Where values move often, optimistic requests stop running twice: after
// one found a value moved, requests read for StaleBackoff, then take
// Latest again.
func TestOptimismBacksOffWhereValuesMove(t *testing.T) {
	gen, reads := int64(1), 0
	clock := time.Now()
	f := &Fresh[int64]{Read: func(context.Context) (int64, error) { reads++; return gen, nil },
		StaleBackoff: time.Minute, Now: func() time.Time { return clock }}
	f.Get(context.Background())
	req := Optimistic(context.Background())
	f.Get(req)
	gen++
	if err := Confirm(req); !errors.Is(err, store.ErrRunAgain) {
		t.Fatalf("Confirm of a moved value: %v", err)
	}
	staleAt := clock
	for _, tc := range []struct {
		after    time.Duration
		optimist bool
	}{{0, false}, {59 * time.Second, false}, {time.Minute, true}} {
		clock = staleAt.Add(tc.after)
		req := Optimistic(context.Background())
		before := reads
		f.Get(req)
		_, unconfirmed := Unconfirmed(req, f)
		if unconfirmed != tc.optimist || (reads == before) != tc.optimist {
			t.Errorf("%v after the stale request: unconfirmed %v after %d reads; want optimistic %v",
				tc.after, unconfirmed, reads-before, tc.optimist)
		}
	}
}
