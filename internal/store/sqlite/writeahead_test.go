package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"sync"
	"testing"

	"github.com/latchkey/latchkey/internal/store"
	"github.com/latchkey/latchkey/internal/store/sqlstore"
)

// eventIDs is the ids of the indexed events of kind OAuth, sorted.
func eventIDs(t testing.TB, st *Store) []string {
	t.Helper()
	es, err := st.SearchEvents(context.Background(), store.EventFilter{Kind: store.EventOAuth}, 0, 1000)
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, e := range es {
		ids = append(ids, e.ID)
	}
	slices.Sort(ids)
	return ids
}

func ids(is ...int) []string {
	var out []string
	for _, i := range is {
		out = append(out, testEvent(i).ID)
	}
	slices.Sort(out)
	return out
}

// openWithRaw opens a store and a second connection to its file, for what
// the store does not offer: the commit mark of a batch written ahead by hand.
func openWithRaw(t testing.TB) (*Store, *sql.DB) {
	path := filepath.Join(t.TempDir(), "db")
	st, err := Open(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	db, err := sql.Open("sqlite", "file:"+path+"?_pragma=busy_timeout(10000)")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return st, db
}

func markCommitted(t testing.TB, db *sql.DB, batch int64) {
	t.Helper()
	if _, err := db.Exec(`UPDATE event_log_batch SET batch = ? WHERE id = 1`, batch); err != nil {
		t.Fatal(err)
	}
}

// A replay keeps the events recorded outside a transaction and those of
// batches that committed; it drops a batch whose commit failed (its abort
// record) and one the crash cut off before its commit (past the mark).
func TestWriteAheadReplay(t *testing.T) {
	st, raw := openWithRaw(t)
	path := filepath.Join(t.TempDir(), "events.log")
	l := abandonedLog(t, st, path)
	ctx := context.Background()
	if err := l.AppendEvents(ctx, testEvent(0)); err != nil {
		t.Fatal(err)
	}
	b1, err := l.WriteAhead([]store.Event{testEvent(1), testEvent(2)})
	if err != nil {
		t.Fatal(err)
	}
	markCommitted(t, raw, b1)
	b2, err := l.WriteAhead([]store.Event{testEvent(3)})
	if err != nil {
		t.Fatal(err)
	}
	l.Abort(b2) // its COMMIT failed
	b3, err := l.WriteAhead([]store.Event{testEvent(4)})
	if err != nil {
		t.Fatal(err)
	}
	markCommitted(t, raw, b3)
	b4, err := l.WriteAhead([]store.Event{testEvent(5)})
	if err != nil {
		t.Fatal(err)
	}
	if !(b1 < b2 && b2 < b3 && b3 < b4) {
		t.Fatalf("batch numbers %d %d %d %d do not grow", b1, b2, b3, b4)
	}
	// The process dies before batch 4 commits.
	l2 := openTestLog(t, st, path, defaultEventLogOptions())
	if got, want := eventIDs(t, st), ids(0, 1, 2, 4); !slices.Equal(got, want) {
		t.Fatalf("after replay: %v, want %v", got, want)
	}
	if n := fileSize(t, path); n != 0 {
		t.Fatalf("file of %d bytes after replay, want 0", n)
	}
	// Numbering goes on from the last committed batch.
	b, err := l2.WriteAhead([]store.Event{testEvent(6)})
	if err != nil {
		t.Fatal(err)
	}
	if b != b3+1 {
		t.Fatalf("batch %d after replay, want %d", b, b3+1)
	}
	l2.Abort(b)
}

// The indexer skips an aborted batch's events, in the same pass as the
// batches around it.
func TestWriteAheadIndexSkipsAborted(t *testing.T) {
	st := openTestStore(t)
	path := filepath.Join(t.TempDir(), "events.log")
	opt := defaultEventLogOptions()
	opt.noIndexer = true
	l := openTestLog(t, st, path, opt)
	ctx := context.Background()
	if _, err := l.WriteAhead([]store.Event{testEvent(1)}); err != nil {
		t.Fatal(err)
	}
	b, err := l.WriteAhead([]store.Event{testEvent(2), testEvent(3)})
	if err != nil {
		t.Fatal(err)
	}
	l.Abort(b)
	if _, err := l.WriteAhead([]store.Event{testEvent(4)}); err != nil {
		t.Fatal(err)
	}
	if err := l.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	if got, want := eventIDs(t, st), ids(1, 4); !slices.Equal(got, want) {
		t.Fatalf("indexed %v, want %v", got, want)
	}
	if n := l.Backlog(); n != 0 {
		t.Fatalf("%d records pending after Flush", n)
	}
}

var errRefused = errors.New("refused")

// Through the store: a transaction's events are written ahead and found
// once it commits; those of a transaction or savepoint that fails are
// never found; concurrent transactions of one batch keep theirs apart.
func TestWriteAheadTransactions(t *testing.T) {
	st := openTestStore(t)
	ctx := context.Background()
	appendIn := func(i int) func(store.Store) error {
		return func(tx store.Store) error { return tx.AppendEvents(ctx, testEvent(i)) }
	}
	if err := st.Tx(ctx, appendIn(1)); err != nil {
		t.Fatal(err)
	}
	if n, err := st.DB.CommittedBatch(ctx); err != nil || n < 1 {
		t.Fatalf("committed batch %d (%v): the event was not written ahead", n, err)
	}
	err := st.Tx(ctx, func(tx store.Store) error {
		if err := appendIn(2)(tx); err != nil {
			return err
		}
		return errRefused
	})
	if !errors.Is(err, errRefused) {
		t.Fatalf("failing transaction: %v", err)
	}
	err = st.Tx(ctx, func(tx store.Store) error {
		if err := appendIn(3)(tx); err != nil {
			return err
		}
		sp := tx.(interface {
			Savepoint(context.Context, func(store.Store) error) error
		})
		if err := sp.Savepoint(ctx, func(tx store.Store) error {
			if err := appendIn(4)(tx); err != nil {
				return err
			}
			return errRefused
		}); !errors.Is(err, errRefused) {
			return fmt.Errorf("savepoint: %v", err)
		}
		return sp.Savepoint(ctx, appendIn(5))
	})
	if err != nil {
		t.Fatal(err)
	}
	// Many at once share batches: even ones commit, odd ones fail.
	var wg sync.WaitGroup
	for i := 10; i < 74; i++ {
		wg.Go(func() {
			err := st.Tx(ctx, func(tx store.Store) error {
				if err := appendIn(i)(tx); err != nil {
					return err
				}
				if i%2 == 1 {
					return errRefused
				}
				return nil
			})
			if (err != nil) != (i%2 == 1) {
				t.Errorf("transaction %d: %v", i, err)
			}
		})
	}
	wg.Wait()
	want := ids(1, 3, 5)
	for i := 10; i < 74; i += 2 {
		want = append(want, testEvent(i).ID)
	}
	slices.Sort(want)
	if got := eventIDs(t, st); !slices.Equal(got, want) {
		t.Fatalf("indexed %v, want %v", got, want)
	}
}

// A transaction marked WithoutWriteAhead inserts its events itself: they
// are in the table when it commits, and never in the log.
func TestWithoutWriteAhead(t *testing.T) {
	st := openTestStore(t)
	ctx := sqlstore.WithoutWriteAhead(context.Background())
	if err := st.Tx(ctx, func(tx store.Store) error { return tx.AppendEvents(ctx, testEvent(1)) }); err != nil {
		t.Fatal(err)
	}
	// The table itself, without the log's flush.
	es, err := st.DB.SearchEvents(ctx, store.EventFilter{Kind: store.EventOAuth}, 0, 10)
	if err != nil || len(es) != 1 || es[0].ID != testEvent(1).ID {
		t.Fatalf("table: %v %v", es, err)
	}
	if n := st.file.events.Backlog(); n != 0 {
		t.Fatalf("%d records in the log", n)
	}
}

// While a backup holds the guard, no record leaves the log: compaction
// waits for it and happens after.
func TestBackupGuardHoldsCompaction(t *testing.T) {
	st := openTestStore(t)
	path := filepath.Join(t.TempDir(), "events.log")
	opt := defaultEventLogOptions()
	opt.noIndexer = true
	opt.compactSize = 1000
	l := openTestLog(t, st, path, opt)
	guard, err := openGuard(path)
	if err != nil {
		t.Fatal(err)
	}
	defer guard.Close()
	if err := guardExclusive(guard); err != nil {
		t.Fatal(err)
	}
	appendAll(t, l, 0, 30)
	if err := l.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	held := fileSize(t, path)
	if held <= 1000 {
		t.Fatalf("file of %d bytes: the test needs more than the compaction size", held)
	}
	guardRelease(guard)
	appendAll(t, l, 30, 31)
	if err := l.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	if n := fileSize(t, path); n != 0 {
		t.Fatalf("file of %d bytes after the backup, want 0", n)
	}
	if n := countEvents(t, st); n != 31 {
		t.Fatalf("%d events, want 31", n)
	}
	if _, err := os.Stat(path + "-guard"); err != nil {
		t.Fatal(err)
	}
}

// A batch whose mark cannot be recorded fails, and its events, written
// ahead, are never indexed nor replayed.
func TestWriteAheadMarkFails(t *testing.T) {
	st, raw := openWithRaw(t)
	ctx := context.Background()
	if _, err := raw.Exec(`DELETE FROM event_log_batch`); err != nil {
		t.Fatal(err)
	}
	err := st.Tx(ctx, func(tx store.Store) error { return tx.AppendEvents(ctx, testEvent(1)) })
	if err == nil {
		t.Fatal("a batch without its mark committed")
	}
	if n := st.file.events.Backlog(); n != 2 {
		t.Fatalf("%d records in the log, want the event and its batch's abort", n)
	}
	if _, err := raw.Exec(`INSERT INTO event_log_batch (id, batch) VALUES (1, 100)`); err != nil {
		t.Fatal(err)
	}
	if err := st.Tx(ctx, func(tx store.Store) error { return tx.AppendEvents(ctx, testEvent(2)) }); err != nil {
		t.Fatal(err)
	}
	if got, want := eventIDs(t, st), ids(2); !slices.Equal(got, want) {
		t.Fatalf("indexed %v, want %v", got, want)
	}
}

// Closing the store while a transaction that appends an event runs: the
// transaction commits, its event written ahead, and Close indexes it.
func TestCloseWaitsForBatchWrittenAhead(t *testing.T) {
	dbPath := filepath.Join(t.TempDir(), "db")
	st, err := Open(context.Background(), dbPath)
	if err != nil {
		t.Fatal(err)
	}
	l := st.file.events
	ctx := context.Background()
	in, release := make(chan struct{}), make(chan struct{})
	txErr := make(chan error, 1)
	go func() {
		txErr <- st.Tx(ctx, func(tx store.Store) error {
			close(in)
			<-release
			return tx.AppendEvents(ctx, testEvent(1))
		})
	}()
	<-in
	closed := make(chan error, 1)
	go func() { closed <- st.Close() }()
	for {
		l.mu.Lock()
		c := l.closed
		l.mu.Unlock()
		if c {
			break
		}
		runtime.Gosched()
	}
	close(release)
	if err := <-txErr; err != nil {
		t.Fatalf("the transaction in flight at Close: %v", err)
	}
	if err := <-closed; err != nil {
		t.Fatal(err)
	}
	if n := fileSize(t, dbPath+"-events"); n != 0 {
		t.Fatalf("log of %d bytes after Close, want it indexed and empty", n)
	}
	st2, err := Open(context.Background(), dbPath)
	if err != nil {
		t.Fatal(err)
	}
	defer st2.Close()
	if got, want := eventIDs(t, st2), ids(1); !slices.Equal(got, want) {
		t.Fatalf("after reopening: %v, want %v", got, want)
	}
}
