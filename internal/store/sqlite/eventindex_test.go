package sqlite

import (
	"context"
	"testing"

	"github.com/latchkey/latchkey/internal/store"
	"github.com/latchkey/latchkey/internal/store/storetest"
)

// The search indexes stay dense as the indexer inserts events in time
// order (pages counted by dbstat).
func TestEventIndexesStayDense(t *testing.T) {
	st, raw := openWithRaw(t)
	ctx := context.Background()
	storetest.CheckEventIndexesDense(t, 4, func(es []store.Event) error { return st.IndexEvents(ctx, es...) },
		storetest.EventIndexSize{
			Size: func(index string) (n int64, err error) {
				err = raw.QueryRow(`SELECT count(*) FROM dbstat WHERE name = ?`, index).Scan(&n)
				return n, err
			},
			Rebuild: func(index string) error { _, err := raw.Exec(`REINDEX ` + index); return err },
		})
}

// BenchmarkIndexEvents: the indexer's inserts, per event, each batch in a
// transaction of its own as the indexer runs it (indexEvents).
func BenchmarkIndexEvents(b *testing.B) {
	st := openTestStore(b)
	ctx := context.Background()
	storetest.BenchmarkEventBatches(b, func(es []store.Event) error { return indexEvents(ctx, st.DB, es) })
}
