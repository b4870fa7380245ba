package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"runtime"
	"strconv"
	"sync"

	"github.com/latchkey/latchkey/internal/store"
)

// maxBatch bounds how many callers' transactions share one commit, so a
// caller never waits behind an unbounded queue.
const maxBatch = 64

// txBatch is the group commit of Dialect.GroupCommit. Callers queue their
// transaction functions; one goroutine at a time begins a database
// transaction, runs each function in its own savepoint (an error or a panic
// rolls back that function's writes only), commits once, and then answers
// every caller. Each caller still returns only after the commit that holds
// its writes, and sees exactly the outcome a transaction of its own would
// have had: its writes are all committed, or none are.
type txBatch struct {
	mu      sync.Mutex
	queue   []*txJob
	running bool
	yield   func() // nil: runtime.Gosched (tests set their own)
}

type txJob struct {
	ctx   context.Context
	own   bool // BulkTx: runs alone
	fn    func(store.Store) error
	err   error
	panic any
	done  chan struct{}
}

func (b *txBatch) run(ctx context.Context, db *DB, own bool, fn func(store.Store) error) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	j := &txJob{ctx: ctx, own: own, fn: fn, done: make(chan struct{})}
	b.mu.Lock()
	b.queue = append(b.queue, j)
	if !b.running {
		b.running = true
		go b.loop(db)
	}
	b.mu.Unlock()
	<-j.done // not ctx.Done(): the caller must learn whether its writes committed
	if j.panic != nil {
		panic(j.panic)
	}
	return j.err
}

// loop commits batches until the queue is empty, then ends.
//
// Before a commit for a lone caller it yields the processor once: under
// load the goroutines ready to run include requests about to queue, and
// they join the commit instead of each paying for one of their own. When
// nothing else is ready to run, the yield returns at once.
func (b *txBatch) loop(db *DB) {
	yield := b.yield
	if yield == nil {
		yield = runtime.Gosched
	}
	yielded := false
	for {
		b.mu.Lock()
		if len(b.queue) == 1 && !yielded {
			b.mu.Unlock()
			yielded = true
			yield()
			continue
		}
		yielded = false
		n := min(len(b.queue), maxBatch)
		for i, j := range b.queue[:n] {
			if j.own {
				n = max(i, 1) // alone: the jobs before it go first, in a batch of their own
				break
			}
		}
		jobs := b.queue[:n:n]
		b.queue = b.queue[n:]
		if n == 0 {
			b.queue = nil
			b.running = false
			b.mu.Unlock()
			return
		}
		b.mu.Unlock()
		db.commitBatch(jobs)
		for _, j := range jobs {
			close(j.done)
		}
	}
}

// commitBatch runs jobs in one transaction and sets each job's outcome.
// With an EventsAhead, the events the jobs append are held, and written to
// the log before the COMMIT (writeahead.go).
func (db *DB) commitBatch(jobs []*txJob) {
	ctx := context.Background()
	tx, err := db.write.BeginTx(ctx, db.d.TxOptions)
	if err != nil {
		for _, j := range jobs {
			j.err = db.d.Translate(err)
		}
		return
	}
	child := db.txChild(tx)
	log := db.aheadOf()
	if log != nil {
		child.held = &heldEvents{}
	}
	defer db.endTx(child)
	if len(jobs) == 1 {
		// Alone, the transaction is the job's own: no savepoint to set,
		// and none to journal every page it changes into.
		db.commitAlone(tx, child, log, jobs[0])
		db.preparePending(ctx)
		return
	}
	child.detached = true // (driverCtx)
	ok := false
	for i, j := range jobs {
		if j.err = j.ctx.Err(); j.err != nil {
			continue
		}
		if err := child.runJob(j, "lk_job"+strconv.Itoa(i)); err != nil {
			// The savepoint could not be set or undone: the transaction
			// is in an unknown state, so no job of it may commit.
			_ = tx.Rollback()
			failAll(jobs, err)
			db.preparePending(ctx)
			return
		}
		ok = ok || (j.err == nil && j.panic == nil)
	}
	if !ok {
		_ = tx.Rollback()
	} else if batch, err := child.writeAhead(ctx, log); err != nil {
		_ = tx.Rollback()
		failAll(jobs, err)
	} else if err := db.commitAhead(tx, log, batch); err != nil {
		failAll(jobs, err)
	}
	db.preparePending(ctx)
}

// failAll fails every job of a batch that has not failed on its own.
func failAll(jobs []*txJob, err error) {
	for _, j := range jobs {
		if j.err == nil && j.panic == nil {
			j.err = err
		}
	}
}

// commitAlone runs a batch's only job directly in the transaction.
func (db *DB) commitAlone(tx *sql.Tx, child *DB, log EventsAhead, j *txJob) {
	defer func() {
		if p := recover(); p != nil {
			_ = tx.Rollback()
			j.panic = p
		}
	}()
	if child.held != nil {
		child.held.hold = !direct(j.ctx)
	}
	if j.err = j.ctx.Err(); j.err == nil {
		j.err = j.fn(child)
	}
	if j.err != nil {
		_ = tx.Rollback()
		return
	}
	batch, err := child.writeAhead(context.Background(), log)
	if err != nil {
		_ = tx.Rollback()
		j.err = err
		return
	}
	j.err = db.commitAhead(tx, log, batch)
}

// runJob runs one job in a savepoint. Its own failure (error or panic) is
// recorded in j; the returned error is a failure of the savepoint itself.
func (db *DB) runJob(j *txJob, name string) (spErr error) {
	ctx := db.driverCtx(j.ctx) // the batch's transaction is detached: never canceled
	if _, err := db.tx.ExecContext(ctx, "SAVEPOINT "+name); err != nil {
		j.err = db.d.Translate(err)
		return nil // nothing of j was written; the others go on
	}
	rollback := func() error {
		if _, err := db.tx.ExecContext(ctx, "ROLLBACK TO SAVEPOINT "+name); err != nil {
			return errors.Join(errors.New("sqlstore: cannot undo a failed transaction of the batch"), err)
		}
		return nil
	}
	if db.held != nil {
		db.held.hold = !direct(j.ctx)
	}
	mark := db.heldMark()
	undo := func() error {
		db.undoHeld(mark)
		return rollback()
	}
	defer func() {
		if p := recover(); p != nil {
			j.panic = p
			spErr = undo()
		}
	}()
	if j.err = j.fn(db); j.err != nil {
		return undo()
	}
	if _, err := db.tx.ExecContext(ctx, "RELEASE SAVEPOINT "+name); err != nil {
		j.err = db.d.Translate(err)
		return undo()
	}
	return nil
}
