package sqlstore

import (
	"context"
	"database/sql"
	"errors"

	"github.com/latchkey/latchkey/internal/store"
)

// EventsAhead is a log that makes a group commit's events durable before
// the commit, so that they need not be inserted into the events table (and
// its indexes) on the single writer inside it (SQLite's event log). The
// events of a batch carry the batch's number; the transaction records that
// number in event_log_batch, so a replay after a crash keeps a batch's
// events exactly when its transaction committed.
type EventsAhead interface {
	// WriteAhead writes es, the events of one batch's transaction, and
	// returns the batch's number, larger than every number before it.
	WriteAhead(es []store.Event) (batch int64, err error)
	// Abort records that batch's transaction did not commit: its events
	// are never to be indexed.
	Abort(batch int64)
}

// markBatch records, in the batch's transaction, that batch committed.
const markBatch = `UPDATE event_log_batch SET batch = ? WHERE id = 1`

// aheadBox lets an interface value live in an atomic.Pointer.
type aheadBox struct{ log EventsAhead }

// UseEventsAhead makes the group commit write its transactions' events to
// l instead of the events table (nil: into the table again). For a dialect
// with GroupCommit only.
func (db *DB) UseEventsAhead(l EventsAhead) {
	if l == nil {
		db.shared.ahead.Store(nil)
		return
	}
	db.shared.ahead.Store(&aheadBox{log: l})
}

type directKey struct{}

// WithoutWriteAhead marks ctx so that a transaction started with it
// inserts its events into the events table inside itself, as without an
// EventsAhead: for a transaction whose caller must find them in the table
// when it commits (the person erasure scrubs the log after it).
func WithoutWriteAhead(ctx context.Context) context.Context {
	return context.WithValue(ctx, directKey{}, true)
}

func direct(ctx context.Context) bool { return ctx.Value(directKey{}) != nil }

// heldEvents are the events of a batch's transactions, held for the log.
type heldEvents struct {
	events []store.Event
	hold   bool // the running job's events are held (false: inserted)
}

// hold appends es to the events held for the log, reporting false when
// the transaction inserts its events itself.
func (db *DB) hold(es []store.Event) (bool, error) {
	if db.held == nil || !db.held.hold {
		return false, nil
	}
	if err := store.CheckEventKinds(es); err != nil {
		return true, err
	}
	db.held.events = append(db.held.events, es...)
	return true, nil
}

// heldMark is where a savepoint's held events start; undoHeld drops those
// held after it, with the savepoint's writes.
func (db *DB) heldMark() int {
	if db.held == nil {
		return 0
	}
	return len(db.held.events)
}

func (db *DB) undoHeld(mark int) {
	if db.held != nil && len(db.held.events) > mark {
		clear(db.held.events[mark:])
		db.held.events = db.held.events[:mark]
	}
}

// writeAhead writes the held events of db's batch to the log and records
// the batch in its transaction. Without held events it does nothing
// (batch 0).
func (db *DB) writeAhead(ctx context.Context, log EventsAhead) (int64, error) {
	if db.held == nil || len(db.held.events) == 0 {
		return 0, nil
	}
	batch, err := log.WriteAhead(db.held.events)
	if err != nil {
		return 0, err
	}
	res, err := db.exec(ctx, markBatch, batch)
	if err == nil {
		if n, _ := res.RowsAffected(); n != 1 {
			err = errors.New("sqlstore: event_log_batch has no row to record a batch in")
		}
	}
	if err != nil {
		log.Abort(batch)
		return 0, err
	}
	return batch, nil
}

// commitAhead commits tx, whose batch (0: none) was written ahead, and
// tells the log when it did not commit.
func (db *DB) commitAhead(tx *sql.Tx, log EventsAhead, batch int64) error {
	err := db.d.Translate(tx.Commit())
	if err == nil || batch == 0 {
		return err
	}
	// A COMMIT that failed has rolled back; the mark says so for certain.
	if got, qerr := db.CommittedBatch(context.Background()); qerr == nil && got == batch {
		return nil
	}
	log.Abort(batch)
	return err
}

// aheadOf is the log the group commit writes events to, if any.
func (db *DB) aheadOf() EventsAhead {
	if b := db.shared.ahead.Load(); b != nil {
		return b.log
	}
	return nil
}

// CommittedBatch is the number of the last batch whose events were written
// ahead and whose transaction committed.
func (db *DB) CommittedBatch(ctx context.Context) (int64, error) {
	var n int64
	err := db.write.QueryRowContext(ctx, `SELECT batch FROM event_log_batch WHERE id = 1`).Scan(&n)
	return n, db.d.Translate(err)
}
