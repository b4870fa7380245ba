package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"strings"
)

// lazyTx is the transaction of Dialect.DeferInserts (PostgreSQL), which
// spares round trips: its BEGIN is sent only with its first statement that
// must run inside it, and the writes whose answer its caller does not wait
// for (inserts of grants, tokens, codes and events; an exchanged code's
// grant) are held and sent as one statement (a WITH of data-modifying
// statements) with the next statement or at commit. A
// transaction made only of such inserts, and of plain reads before them,
// sends no BEGIN and no COMMIT at all: the one statement commits itself.
//
// What a caller sees does not change: its reads see its own inserts (they
// are sent first), an insert's error comes back from Tx (and from every
// statement after it), and a transaction that fails writes nothing.
type lazyTx struct {
	tx      *sql.Tx // nil until begun
	pending []heldInsert
	// failed is the error of held inserts that could not be written: the
	// transaction is lost, and Tx returns this error whatever fn returns.
	failed error
}

type heldInsert struct {
	q    string // with "?" placeholders
	args []any
}

// plainRead: a statement that only reads and locks nothing, which is all
// that may run outside the transaction. Anything but a SELECT (an UPDATE
// … RETURNING run as a query, a WITH) counts as a write.
func (db *DB) plainRead(q string) bool {
	q = strings.TrimLeft(q, " \t\r\n")
	if len(q) < 7 || !strings.EqualFold(q[:7], "SELECT ") {
		return false
	}
	return db.d.ForUpdate == "" || !strings.Contains(q, db.d.ForUpdate) && !strings.Contains(q, db.d.KeyShare) &&
		!strings.Contains(q, db.d.ForNoKeyUpdate) && !strings.Contains(q, db.d.ForShare)
}

// writeOrHold runs an INSERT (or an UPDATE whose count of rows its caller
// does not need), or holds it in a lazy transaction.
func (db *DB) writeOrHold(ctx context.Context, q string, args ...any) error {
	if db.lazy != nil {
		if db.lazy.failed != nil {
			return db.lazy.failed
		}
		db.lazy.pending = append(db.lazy.pending, heldInsert{q: q, args: args})
		return nil
	}
	_, err := db.exec(ctx, q, args...)
	return err
}

// beforeStatement readies a lazy transaction for a statement: a plain read
// with nothing held and nothing begun may run on the pool (under READ
// COMMITTED it sees what it would see as the transaction's first
// statement); anything else begins the transaction and sends what is held.
func (db *DB) beforeStatement(ctx context.Context, q string, write bool) error {
	l := db.lazy
	if l == nil {
		return nil
	}
	if l.failed != nil {
		return l.failed
	}
	if l.tx == nil && len(l.pending) == 0 && !write && db.plainRead(q) {
		return nil
	}
	return db.flushHeld(ctx)
}

// begin starts the lazy transaction's database transaction.
func (db *DB) begin(ctx context.Context) error {
	if db.lazy.tx != nil {
		return nil
	}
	tx, err := db.write.BeginTx(ctx, db.d.TxOptions)
	for attempt := 0; db.retryBadConn(ctx, err, attempt); attempt++ {
		tx, err = db.write.BeginTx(ctx, db.d.TxOptions) // see retryBadConn
	}
	if err != nil {
		return db.d.Translate(err)
	}
	db.lazy.tx, db.tx = tx, tx
	return nil
}

// flushHeld begins the transaction and sends the held inserts in it.
func (db *DB) flushHeld(ctx context.Context) error {
	if err := db.begin(ctx); err != nil {
		return err
	}
	if len(db.lazy.pending) == 0 {
		return nil
	}
	q, args := db.heldStatement()
	db.lazy.pending = db.lazy.pending[:0]
	if _, err := db.exec(ctx, q, args...); err != nil {
		db.lazy.failed = err
		return err
	}
	return nil
}

// heldStatement joins the held inserts into one statement.
func (db *DB) heldStatement() (string, []any) {
	p := db.lazy.pending
	if len(p) == 1 {
		return p[0].q, p[0].args
	}
	var b strings.Builder
	var args []any
	b.WriteString("WITH ")
	for i, h := range p[:len(p)-1] {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString("held")
		b.WriteByte(byte('a' + i%26))
		b.WriteString(strings.Repeat("x", i/26))
		b.WriteString(" AS (")
		b.WriteString(h.q)
		b.WriteString(")")
		args = append(args, h.args...)
	}
	last := p[len(p)-1]
	b.WriteString(" ")
	b.WriteString(last.q)
	return b.String(), append(args, last.args...)
}

// commitLazy ends a lazy transaction whose function succeeded.
func (db *DB) commitLazy(ctx context.Context, child *DB) error {
	l := child.lazy
	if l.failed != nil {
		if l.tx != nil {
			_ = l.tx.Rollback()
		}
		return l.failed
	}
	if l.tx == nil {
		if len(l.pending) == 0 {
			return nil // reads only: nothing to commit
		}
		// Only inserts: one statement, its own transaction. The held
		// inserts are sent outside the child, on the pool.
		q, args := child.heldStatement()
		l.pending = nil
		_, err := db.exec(ctx, q, args...)
		return err
	}
	if err := child.flushHeld(ctx); err != nil {
		_ = l.tx.Rollback()
		return err
	}
	return db.d.Translate(l.tx.Commit())
}

// rollbackLazy ends a lazy transaction whose function failed, and returns
// the error Tx reports: a failed flush's own error, which is what the
// statement that hit it saw too, else fn's.
func rollbackLazy(l *lazyTx, fnErr error) error {
	if l.tx != nil {
		_ = l.tx.Rollback()
	}
	if l.failed != nil && !errors.Is(fnErr, l.failed) {
		return errors.Join(l.failed, fnErr)
	}
	return fnErr
}
