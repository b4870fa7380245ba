package sqlstore_test

import (
	"context"
	"fmt"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/latchkey/latchkey/internal/store"
	"github.com/latchkey/latchkey/internal/store/sqlite"
	"github.com/latchkey/latchkey/internal/store/sqlstore"
)

type countingTx struct {
	store.Store
	txs atomic.Int32
}

func (c *countingTx) Tx(ctx context.Context, fn func(store.Store) error) error {
	c.txs.Add(1)
	time.Sleep(2 * time.Millisecond) // a slow disk: lets the queue fill while a commit runs
	return c.Store.Tx(ctx, fn)
}

// Every event of concurrent callers is stored by the time its call returns,
// and callers share commits.
func TestGroupCommit(t *testing.T) {
	st, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "db"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	cs := &countingTx{Store: st}
	g := &sqlstore.GroupCommit{Store: cs}
	const n = 200
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			id := fmt.Sprintf("e-%03d", i)
			err := g.AppendEvents(context.Background(), store.Event{ID: id, Kind: store.EventOAuth, Type: "T", Name: "t", Occurred: time.Now()})
			if err != nil {
				t.Error(err)
				return
			}
			// Durable when the call returns: a fresh read finds it.
			evs, err := st.SearchEvents(context.Background(), store.EventFilter{Kind: store.EventOAuth, Types: []string{"T"}}, 0, n)
			found := false
			for _, e := range evs {
				found = found || e.ID == id
			}
			if err != nil || !found {
				t.Errorf("event %s not stored when AppendEvents returned (%v)", id, err)
			}
		}()
	}
	wg.Wait()
	if c, _ := st.CountEvents(context.Background(), store.EventFilter{Kind: store.EventOAuth}, 1000); c != n {
		t.Errorf("%d events stored, want %d", c, n)
	}
	if txs := cs.txs.Load(); txs >= n {
		t.Errorf("%d commits for %d concurrent events: nothing was shared", txs, n)
	}
	// A failing transaction is every waiter's error: an event of no known
	// kind fails the batch.
	if err := g.AppendEvents(context.Background(), store.Event{ID: "e-x", Kind: "nonsense", Type: "T", Name: "t", Occurred: time.Now()}); err == nil {
		t.Error("an event of no known kind was accepted")
	}
}
