package sqlstore

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
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
	rows, goneErr, otherErr := shareCommitWithCallerGone(t, nil)
	if otherErr != nil {
		t.Fatalf("the other caller of the commit: %v", otherErr)
	}
	// Its statement ran to its end without the caller, and committed; the
	// outcome says so.
	if goneErr != nil {
		t.Fatalf("the caller gone mid-statement: %v", goneErr)
	}
	if rows != 2 {
		t.Fatalf("%d rows, want both callers'", rows)
	}
}

// A caller gone mid-statement that then fails has its own savepoint undone,
// and only that: the savepoint's statements run without its cancellation,
// or database/sql would refuse the ROLLBACK TO and fail the whole batch.
func TestSharedCommitUndoesOnlyAGoneCallerThatFails(t *testing.T) {
	rows, goneErr, otherErr := shareCommitWithCallerGone(t, context.Cause)
	if otherErr != nil {
		t.Fatalf("the other caller of the commit: %v", otherErr)
	}
	if !errors.Is(goneErr, context.Canceled) {
		t.Fatalf("the caller gone mid-statement: %v, want its own failure", goneErr)
	}
	if rows != 1 {
		t.Fatalf("%d rows, want the other caller's only", rows)
	}
}

// shareCommitWithCallerGone queues two callers for one shared commit; the
// first's context ends in the middle of its statement, and after the
// statement it returns then(ctx) when then is set. It reports the rows
// committed and both callers' outcomes.
func shareCommitWithCallerGone(t *testing.T, then func(context.Context) error) (rows int, goneErr, otherErr error) {
	t.Helper()
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
	insert := func(ctx context.Context, q string, then func(context.Context) error) error {
		return db.Tx(ctx, func(tx store.Store) error {
			if _, err := tx.(*DB).exec(ctx, q); err != nil || then == nil {
				return err
			}
			return then(ctx)
		})
	}
	wg.Go(func() {
		// Its caller goes at the first row; a long statement goes on after.
		goneErr = insert(gone, `WITH RECURSIVE c(x) AS (SELECT lk_test_cancel() UNION ALL SELECT x + 1 FROM c WHERE x < 20000)
			INSERT INTO t (name) SELECT 'gone' FROM c WHERE x = 20000`, then)
	})
	wg.Go(func() { otherErr = insert(ctx, `INSERT INTO t (name) VALUES ('other')`, nil) })
	for db.shared.batch.queued() < 2 {
		time.Sleep(time.Millisecond) // until both wait for the writer: they share its next commit
	}
	close(release)
	wg.Wait()
	if err := db.write.QueryRow(`SELECT count(*) FROM t`).Scan(&rows); err != nil {
		t.Fatal(err)
	}
	return rows, goneErr, otherErr
}

// A lone caller's commit waits for one yield of the processor, and a
// caller that queues meanwhile shares it: one transaction for both.
func TestALoneCallerSharesItsCommitWithOneQueuedAtItsYield(t *testing.T) {
	db := openBatched(t)
	ctx := context.Background()
	txOf := func(txs *[]*sql.Tx, mu *sync.Mutex) func(store.Store) error {
		return func(tx store.Store) error {
			mu.Lock()
			defer mu.Unlock()
			*txs = append(*txs, tx.(*DB).tx)
			return nil
		}
	}
	var mu sync.Mutex
	var txs []*sql.Tx
	var wg sync.WaitGroup
	yields := 0
	db.shared.batch.yield = func() {
		yields++
		if yields > 1 {
			return
		}
		wg.Go(func() {
			if err := db.Tx(ctx, txOf(&txs, &mu)); err != nil {
				t.Error(err)
			}
		})
		for db.shared.batch.queued() < 2 {
			time.Sleep(time.Millisecond) // until the second caller waits for the writer
		}
	}
	if err := db.Tx(ctx, txOf(&txs, &mu)); err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	if len(txs) != 2 || txs[0] != txs[1] {
		t.Fatalf("transactions %v, want one shared by both callers", txs)
	}
	if yields != 1 {
		t.Fatalf("%d yields, want one: two callers commit without one", yields)
	}
}

// A lone caller with nobody to share its commit yields once, then commits.
func TestALoneCallerCommitsAfterOneYield(t *testing.T) {
	db := openBatched(t)
	yields := 0
	db.shared.batch.yield = func() { yields++ }
	for range 3 {
		if err := db.Tx(context.Background(), func(tx store.Store) error {
			_, err := tx.(*DB).exec(context.Background(), `INSERT INTO t (name) VALUES ('alone')`)
			return err
		}); err != nil {
			t.Fatal(err)
		}
	}
	if yields != 3 {
		t.Fatalf("%d yields for three lone callers one after another, want one each", yields)
	}
	var rows int
	if err := db.write.QueryRow(`SELECT count(*) FROM t`).Scan(&rows); err != nil {
		t.Fatal(err)
	}
	if rows != 3 {
		t.Fatalf("%d rows, want 3", rows)
	}
}
