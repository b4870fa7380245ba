package sqlstore

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	sqlite "modernc.org/sqlite"

	"github.com/latchkey/latchkey/internal/store"
)

// cancelMidStatement, when set, is called by the SQL function
// lk_test_cancel from inside the statement that calls it.
var cancelMidStatement atomic.Pointer[context.CancelFunc]

func init() {
	sqlite.MustRegisterScalarFunction("lk_test_cancel", 0, func(*sqlite.FunctionContext, []driver.Value) (driver.Value, error) {
		if cancel := cancelMidStatement.Load(); cancel != nil {
			(*cancel)()
		}
		return int64(1), nil
	})
}

// openBatched opens a SQLite file as the sqlite store does (one writer
// connection, shared commits) with one table, t.
func openBatched(t *testing.T) *DB {
	t.Helper()
	conn, err := sql.Open("sqlite", "file:"+filepath.Join(t.TempDir(), "db")+"?_pragma=journal_mode(WAL)&_txlock=immediate")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	conn.SetMaxOpenConns(1)
	if _, err := conn.Exec(`CREATE TABLE t (name TEXT NOT NULL)`); err != nil {
		t.Fatal(err)
	}
	return New(&Dialect{Name: "sqlite", InProcess: true, GroupCommit: true, Translate: func(err error) error { return err }},
		conn, conn)
}

// queued is how many transactions wait for the writer.
func (b *txBatch) queued() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return len(b.queue)
}

// A caller gone in the middle of its statement, in a commit it shares with
// others, fails none of them. The driver interrupts a statement whose
// context ends, and SQLite then rolls back the whole transaction: every
// caller of the batch failed with "cannot undo a failed transaction of the
// batch" before the shared transaction's statements ran without their
// callers' cancellation.
func TestSharedCommitOutlivesACallerGoneMidStatement(t *testing.T) {
	db := openBatched(t)
	ctx := context.Background()
	entered, release := make(chan struct{}), make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() { // holds the writer while the two below queue up
		if err := db.Tx(ctx, func(store.Store) error { close(entered); <-release; return nil }); err != nil {
			t.Error(err)
		}
	})
	<-entered
	gone, cancel := context.WithCancel(ctx)
	defer cancel()
	cancelMidStatement.Store(&cancel)
	defer cancelMidStatement.Store(nil)
	insert := func(ctx context.Context, q string) error {
		return db.Tx(ctx, func(tx store.Store) error { _, err := tx.(*DB).exec(ctx, q); return err })
	}
	var goneErr, otherErr error
	wg.Go(func() {
		// Its caller goes at the first row; a long statement goes on after.
		goneErr = insert(gone, `WITH RECURSIVE c(x) AS (SELECT lk_test_cancel() UNION ALL SELECT x + 1 FROM c WHERE x < 20000)
			INSERT INTO t (name) SELECT 'gone' FROM c WHERE x = 20000`)
	})
	wg.Go(func() { otherErr = insert(ctx, `INSERT INTO t (name) VALUES ('other')`) })
	for db.shared.batch.queued() < 2 {
		time.Sleep(time.Millisecond) // until both wait for the writer: they share its next commit
	}
	close(release)
	wg.Wait()
	if otherErr != nil {
		t.Fatalf("the other caller of the commit: %v", otherErr)
	}
	// Its statement ran to its end without the caller, and committed; the
	// outcome says so.
	if goneErr != nil {
		t.Fatalf("the caller gone mid-statement: %v", goneErr)
	}
	var n int
	if err := db.write.QueryRow(`SELECT count(*) FROM t`).Scan(&n); err != nil || n != 2 {
		t.Fatalf("%d rows (%v), want both callers'", n, err)
	}
}
