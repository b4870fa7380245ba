package postgres

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/latchkey/latchkey/internal/store"
)

// TestCanceledQueriesLeaveNoBadConnection: requests whose clients go away
// cancel their queries mid-flight; the connections those leave behind must
// not fail the queries of requests that are still there.
func TestCanceledQueriesLeaveNoBadConnection(t *testing.T) {
	s := newStore(t)
	ctx := context.Background()
	es := make([]store.Event, 3000)
	for i := range es {
		es[i] = store.Event{ID: fmt.Sprintf("0190a5c4-0000-7000-8000-%012d", i), Kind: store.EventOAuth, Type: "T",
			ClientID: "c", Occurred: time.UnixMilli(int64(i))}
	}
	if err := s.AppendEvents(ctx, es...); err != nil {
		t.Fatal(err)
	}
	if err := s.CreatePerson(ctx, activePerson()); err != nil {
		t.Fatal(err)
	}
	var failed atomic.Int64
	var firstErr atomic.Value
	var wg sync.WaitGroup
	deadline := time.Now().Add(3 * time.Second)
	for g := range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for time.Now().Before(deadline) {
				qctx, cancel := context.WithCancel(ctx)
				if g%2 == 0 { // a client that goes away while its query runs
					time.AfterFunc(time.Duration(rand.IntN(2000))*time.Microsecond, cancel)
				}
				f := store.EventFilter{Kind: store.EventOAuth}
				_, err := s.CountEvents(qctx, f, 10000)
				if err != nil {
					err = fmt.Errorf("count: %w", err)
				} else if _, err = s.SearchEvents(qctx, f, 0, 20); err != nil {
					err = fmt.Errorf("search: %w", err)
				} else if err = s.Tx(qctx, func(tx store.Store) error {
					if _, err := tx.CountEvents(qctx, f, 100); err != nil {
						return err
					}
					// A locking read: the transaction's own connection
					// (the pipe), canceled mid-flight too.
					if _, err := tx.SharePerson(qctx, "p1"); err != nil {
						return err
					}
					return tx.AppendEvents(qctx, store.Event{ID: fmt.Sprintf("tx-%d-%d", g, rand.Int64()), Kind: store.EventOAuth,
						Type: "T", Occurred: time.Now()})
				}); err != nil {
					err = fmt.Errorf("tx: %w", err)
				}
				if err != nil && qctx.Err() == nil {
					failed.Add(1)
					firstErr.CompareAndSwap(nil, err.Error())
				}
				cancel()
			}
		}()
	}
	wg.Wait()
	if n := failed.Load(); n > 0 {
		t.Errorf("%d queries of live requests failed, first: %v", n, firstErr.Load())
	}
}
