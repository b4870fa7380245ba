package storetest

import (
	"fmt"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/latchkey/latchkey/internal/store"
)

// EventIndexes are the events table's search indexes.
var EventIndexes = []string{"events_occurred", "events_user", "events_client", "events_type",
	"events_transaction", "events_agent"}

// TimeOrderedEvents returns n events as a server records them: ids
// (UUIDv7), times and transaction ids rising, several events per
// millisecond, spread over spread clients, types, users and agents (and
// over both kinds when spread > 1); start numbers the first, so that calls
// can continue one another.
func TimeOrderedEvents(start, n, spread int) []store.Event {
	base := time.Now().Add(-time.Hour).UTC()
	es := make([]store.Event, n)
	for k := range es {
		i := start + k
		j := i % spread
		e := store.Event{
			ID: uuid.Must(uuid.NewV7()).String(), Kind: store.EventOAuth, Type: fmt.Sprintf("TYPE_%d", j),
			Name: "Event", ClientID: fmt.Sprintf("client-%d", j), AppName: "App",
			TransactionID: fmt.Sprintf("tx-%09d", i/8), UserID: fmt.Sprintf("User%d@example.com", j),
			PersonID: "person", ClientIP: "192.0.2.10", UserAgent: "Go-http-client/1.1",
			AgentUser: fmt.Sprintf("agent-%d", j), Context: map[string]string{"scope": "read"},
			Occurred: base.Add(time.Duration(i/4) * time.Millisecond),
		}
		if j%2 == 1 {
			e.Kind = store.EventPerson
		}
		es[k] = e
	}
	return es
}

// EventIndexSize reads the size of an index and rebuilds it (a store's own
// means: pages, bytes).
type EventIndexSize struct {
	Size    func(index string) (int64, error)
	Rebuild func(index string) error
}

// CheckEventIndexesDense inserts events in time order, in the batches a
// server's group commit makes and spread over spread values of each
// indexed column, then compares each search index with the same index
// rebuilt from scratch: an index whose key order puts each new event at
// the front of its range splits its pages in halves that stay half empty,
// about twice the rebuilt size.
func CheckEventIndexesDense(t *testing.T, spread int, insert func([]store.Event) error, ix EventIndexSize) {
	t.Helper()
	const n, batch = 20_000, 10
	for i := 0; i < n; i += batch {
		if err := insert(TimeOrderedEvents(i, batch, spread)); err != nil {
			t.Fatal(err)
		}
	}
	for _, name := range EventIndexes {
		live, err := ix.Size(name)
		if err != nil {
			t.Fatal(err)
		}
		if err := ix.Rebuild(name); err != nil {
			t.Fatal(err)
		}
		rebuilt, err := ix.Size(name)
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("%s: %d live, %d rebuilt", name, live, rebuilt)
		if float64(live) > 1.3*float64(rebuilt) {
			t.Errorf("%s: %d after inserts in time order, %d rebuilt: its pages stay part empty", name, live, rebuilt)
		}
	}
}

// BenchmarkEventBatches inserts time-ordered events in batches of the
// sizes a group commit makes, and reports the cost of each event.
func BenchmarkEventBatches(b *testing.B, insert func([]store.Event) error) {
	for _, size := range []int{1, 10, 64, 250} {
		b.Run(fmt.Sprintf("batch=%d", size), func(b *testing.B) {
			next := 0
			for b.Loop() {
				if err := insert(TimeOrderedEvents(next, size, 1)); err != nil {
					b.Fatal(err)
				}
				next += size
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(next), "ns/event")
		})
	}
}
