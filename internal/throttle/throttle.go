// Package throttle holds the small rules every throttle of latchkey shares
// (docs/THROTTLES.md lists them all): reserving an attempt on several
// counters at once, and remembering refusals in memory so that a refused
// caller costs no store read and no hash.
package throttle

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/latchkey/latchkey/internal/store"
)

// Limit is one counter: at most Max attempts of Key per Window.
type Limit struct {
	Key    string
	Max    int
	Window time.Duration
}

// Refused is the error of an attempt over a limit.
type Refused struct {
	Key        string
	RetryAfter time.Duration // until the refusing window ends
}

func (e *Refused) Error() string {
	return fmt.Sprintf("throttle: %s over its limit, retry after %v", e.Key, e.RetryAfter)
}

// Reserve takes one attempt of every limit, in order, all or none: when a
// limit refuses, the attempts already taken are given back and the answer is
// a *Refused. Taking before the attempt is checked (not counting after it)
// is what keeps concurrent attempts within the limit.
func Reserve(ctx context.Context, st store.Throttle, now time.Time, limits ...Limit) error {
	for i, l := range limits {
		ok, retry, err := st.Take(ctx, l.Key, l.Window, l.Max, now)
		if err == nil && ok {
			continue
		}
		if rerr := Release(ctx, st, limits[:i]...); err == nil {
			err = rerr
		}
		if err != nil {
			return err
		}
		CountRefusal(l.Key)
		return &Refused{Key: l.Key, RetryAfter: retry}
	}
	return nil
}

// refusals counts refusals by kind, process-wide: one serving process has
// one store, and /metrics reads them (RefusalCounts).
var refusals sync.Map // kind -> *atomic.Uint64

// CountRefusal counts one refused attempt of key under its kind: the key
// up to its second colon ("login:pair", "client:ip"), never the address
// or account that follows, so the metric's labels stay few.
func CountRefusal(key string) {
	kind := key
	if i := strings.IndexByte(key, ':'); i >= 0 {
		if j := strings.IndexByte(key[i+1:], ':'); j >= 0 {
			kind = key[:i+1+j]
		}
	}
	c, _ := refusals.LoadOrStore(kind, new(atomic.Uint64))
	c.(*atomic.Uint64).Add(1)
}

// RefusalCounts reports the refusals counted so far, by kind.
func RefusalCounts() map[string]uint64 {
	out := map[string]uint64{}
	refusals.Range(func(k, v any) bool {
		out[k.(string)] = v.(*atomic.Uint64).Load()
		return true
	})
	return out
}

// Release gives back one reserved attempt of every limit (the attempt
// proved right: correct entries are not counted).
func Release(ctx context.Context, st store.Throttle, limits ...Limit) error {
	for _, l := range limits {
		if err := st.Release(ctx, l.Key); err != nil {
			return err
		}
	}
	return nil
}

// Memo remembers keys until a time, in one instance's memory: refusals the
// shared store gave (so that a refused caller costs no store read and no
// hash; a key is refused here no longer than the store's window says), or
// facts learnt on the happy path without a store write.
type Memo struct {
	mu    sync.Mutex
	until map[string]time.Time
}

// maxMemo bounds the memory; past it, ended entries are dropped, and if
// that is not enough, all of them (the store still counts).
const maxMemo = 10_000

// Remaining returns how long key is still held (0: not held).
func (v *Memo) Remaining(key string, now time.Time) time.Duration {
	v.mu.Lock()
	defer v.mu.Unlock()
	if until, ok := v.until[key]; ok {
		if now.Before(until) {
			return until.Sub(now)
		}
		delete(v.until, key)
	}
	return 0
}

// Hold remembers key for d from now.
func (v *Memo) Hold(key string, d time.Duration, now time.Time) {
	if d <= 0 {
		return
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.until == nil {
		v.until = map[string]time.Time{}
	}
	if len(v.until) >= maxMemo {
		for k, u := range v.until {
			if !now.Before(u) {
				delete(v.until, k)
			}
		}
		if len(v.until) >= maxMemo {
			clear(v.until)
		}
	}
	v.until[key] = now.Add(d)
}
