package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Stmt is one statement of a Pipe's round trip, its placeholders already
// the dialect's.
type Stmt struct {
	SQL  string
	Args []any
}

// Rows are the rows of a query; *sql.Rows is one.
type Rows interface {
	Next() bool
	Scan(dest ...any) error
	Err() error
	Close() error
	Columns() ([]string, error)
}

// Pipe runs the statements of one transaction on one connection, several
// in one round trip (PostgreSQL's pipelined extended protocol). It is what
// database/sql cannot do: a *sql.Tx sends its BEGIN alone and every
// statement alone, each waiting for its answer.
type Pipe interface {
	// Exec runs stmts in order in one round trip and returns the rows the
	// last one affected. On an error, failed is the index of the statement
	// that failed; those after it did not run.
	Exec(ctx context.Context, stmts []Stmt) (affected int64, failed int, err error)
	// ExecEach is Exec that sets affected[i] to the rows the i-th
	// statement affected (len(affected) == len(stmts)).
	ExecEach(ctx context.Context, stmts []Stmt, affected []int64) (failed int, err error)
	// Query is Exec for a last statement that returns rows.
	Query(ctx context.Context, stmts []Stmt) (rows Rows, failed int, err error)
	// QueryEach runs stmts in order in one round trip and returns each
	// one's rows, read in full: the connection is free when it returns.
	QueryEach(ctx context.Context, stmts []Stmt) ([]Rows, error)
	// Release gives the connection back; one still inside a transaction is
	// closed instead.
	Release()
}

// lazyTx is the transaction of a dialect with a Pipe (PostgreSQL), which
// spares round trips:
//
//   - its BEGIN goes with its first statement that must run inside it;
//   - the writes whose answer its caller does not wait for (inserts of
//     grants, tokens, codes and events; an exchanged code's grant) are held
//     and sent as one statement (a WITH of data-modifying statements) with
//     the next statement, or with the COMMIT;
//   - a transaction made only of such inserts, and of plain reads before
//     them, sends no BEGIN and no COMMIT at all: the one statement commits
//     itself.
//
// What a caller sees does not change: its reads see its own inserts (they
// are sent first), an insert's error comes back from Tx (and from every
// statement after it), and a transaction that fails writes nothing.
type lazyTx struct {
	pipe    Pipe // nil until the first statement sent in the transaction
	begun   bool // BEGIN has run
	pending []heldInsert
	// failed is the error of held inserts that could not be written (or of
	// a BEGIN): the transaction is lost, and Tx returns this error whatever
	// fn returns.
	failed error
	batch  []Stmt // reused by send
	// guard, after a guarded read (GetTokenGrantGuardPerson,
	// UseAuthCodeGuardPerson), is the call of its guard function
	// (latchkey_guard_issue, latchkey_guard_code) without its last
	// argument (wait): the held inserts' statement ends with it, or a
	// BEGIN sent later is followed by it. Its failure is ErrReadChanged, and
	// Tx runs the function again with locking reads (locked).
	guard *heldInsert
	// use is a guarded code's use (UseAuthCodeGuardPerson), held: the
	// statement of the guard it goes with reads its rows as "burn".
	use    *codeUse
	locked bool // this run's reads lock: a guarded read has failed once
	// reread: this run's guarded read reads, not from guardedReads (a run
	// that answered from there did not confirm what it decided on).
	reread bool
	// cachedRead is the token hash whose guarded read this run answered
	// from guardedReads; guardSent tells whether the guard went out.
	cachedRead []byte
	guardSent  bool
	// expect, until it is sent, is the generations the request decided on
	// without reading them: the first statement checks them
	// (latchkey_guard_generations, expectCall).
	expect *Generations
}

// expectCall is the check of l.expect, which it takes: sent, it is not
// sent again.
func (l *lazyTx) expectCall() heldInsert {
	e := l.expect
	l.expect = nil
	return heldInsert{q: "SELECT latchkey_guard_generations(?, ?)", args: []any{e.Client, e.Token}}
}

// mayGuard tells whether a read may be a guarded read (unlocked, its
// guard sent with the transaction's writes): in a lazy transaction that
// has sent nothing, holds nothing and has no guard yet, on its first run.
func (l *lazyTx) mayGuard() bool {
	return l != nil && !l.locked && !l.begun && len(l.pending) == 0 && l.guard == nil && l.failed == nil
}

// ErrReadChanged is a guarded read's failure at its commit: what it read
// changed (or was under a writer's lock) before the commit. Tx answers it
// by running its function again with locking reads; a dialect's Translate
// returns it for its guard's error.
var ErrReadChanged = errors.New("sqlstore: a guarded read changed before its commit")

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

// onPipe tells whether a statement of a lazy transaction goes through send.
// Only a plain read with nothing held and nothing begun runs on the pool:
// under READ COMMITTED it sees what it would see as the transaction's
// first statement.
func (db *DB) onPipe(q string, write bool) bool {
	l := db.lazy
	return l != nil && (l.failed != nil || l.begun || len(l.pending) > 0 || write || !db.plainRead(q))
}

// send runs q in the lazy transaction, with what the transaction has not
// sent yet — its BEGIN, its held inserts — before it in the same round
// trip. With query, it returns q's rows, else the rows q affected. An
// error of what went before q loses the transaction (lazyTx.failed).
func (db *DB) send(ctx context.Context, q string, args []any, query bool) (affected int64, rs Rows, err error) {
	l := db.lazy
	if l.failed != nil {
		return 0, nil, l.failed
	}
	if l.pipe == nil {
		if l.pipe, err = db.d.Pipe(ctx); err != nil {
			return 0, nil, db.d.Translate(err)
		}
	}
	batch := l.batch[:0]
	withBegin := !l.begun
	if withBegin {
		batch = append(batch, Stmt{SQL: "BEGIN"})
	}
	if withBegin && l.expect != nil {
		c := l.expectCall()
		batch = append(batch, Stmt{SQL: db.sql(c.q), Args: c.args})
	}
	if withBegin && l.guard != nil {
		// The guard (after a guarded code's use) comes first, waiting for
		// the rows as a locking read would, then what the transaction holds.
		gq, gargs := db.guardStatement(true)
		batch = append(batch, Stmt{SQL: db.sql(gq), Args: gargs})
	}
	if len(l.pending) > 0 {
		hq, hargs := db.heldStatement()
		l.pending = l.pending[:0]
		batch = append(batch, Stmt{SQL: db.sql(hq), Args: hargs})
	}
	last := len(batch)
	batch = append(batch, Stmt{SQL: db.sql(q), Args: args})
	l.batch = batch
	start := time.Now()
	var failed int
	if query {
		rs, failed, err = l.pipe.Query(ctx, batch)
		db.observeStmt("query", start)
	} else {
		affected, failed, err = l.pipe.Exec(ctx, batch)
		db.observeStmt("exec", start)
	}
	clear(batch) // the arguments are not kept alive by the reused slice
	if withBegin && (err == nil || failed > 0) {
		l.begun = true // BEGIN, the batch's first statement, ran
	}
	if err != nil {
		err = db.d.Translate(err)
		if failed < last {
			l.failed = err
		}
	}
	return affected, rs, err
}

// txExec runs a statement that only the transaction's own connection can
// run (SAVEPOINT and the like).
func (db *DB) txExec(ctx context.Context, q string) error {
	_, _, err := db.send(ctx, q, nil, false)
	return err
}

// heldStatement joins the held inserts (at least one) into one statement.
func (db *DB) heldStatement() (string, []any) {
	return joinHeld(nil, db.lazy.pending, nil)
}

// guardStatement is the statement of a guarded read's guard, which takes
// it out of the transaction: the code's held use first, then with
// wait = false (a statement that commits itself) the held inserts, and
// the guard's call last.
func (db *DB) guardStatement(wait bool) (string, []any) {
	l := db.lazy
	call := heldInsert{q: l.guard.q + ", " + strconv.FormatBool(wait) + ")", args: l.guard.args}
	if l.expect != nil { // (a BEGIN sent first checks it on its own)
		c := l.expectCall()
		call.q += ", " + strings.TrimPrefix(c.q, "SELECT ")
		call.args = append(slices.Clip(call.args), c.args...)
	}
	var use *heldInsert
	if l.use != nil {
		u := l.use.statement(wait)
		use = &u
	}
	var held []heldInsert
	if !wait {
		held = l.pending
	}
	l.guard, l.use, l.guardSent = nil, nil, true
	return joinHeld(use, held, &call)
}

// joinHeld makes one statement of held's parts and main's, or of held's
// alone with its last part the main statement: a WITH whose parts are
// named helda, heldb… after use, named burn.
func joinHeld(use *heldInsert, held []heldInsert, main *heldInsert) (string, []any) {
	if main == nil {
		main, held = &held[len(held)-1], held[:len(held)-1]
	}
	if use == nil && len(held) == 0 {
		return main.q, main.args
	}
	var b strings.Builder
	var args []any
	b.WriteString("WITH ")
	if use != nil {
		b.WriteString("burn AS (")
		b.WriteString(use.q)
		b.WriteString(")")
		args = append(args, use.args...)
	}
	for i, h := range held {
		if i > 0 || use != nil {
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
	b.WriteString(" ")
	b.WriteString(main.q)
	return b.String(), append(args, main.args...)
}

// commitLazy ends a lazy transaction whose function succeeded: its held
// inserts and its COMMIT go in one round trip.
func (db *DB) commitLazy(ctx context.Context, child *DB) error {
	l := child.lazy
	if l.failed != nil {
		return rollbackLazy(ctx, l, l.failed)
	}
	if !l.begun {
		if len(l.pending) == 0 && l.use == nil {
			return nil // plain reads only: nothing to commit
		}
		// Only inserts: one statement, its own transaction, which
		// concurrent ones share (selfcommit.go). After a guarded read,
		// the guard ends it: it never waits for a lock there (a person's,
		// a code's), where it would hold up the statements it shares a
		// commit with.
		var q string
		var args []any
		switch {
		case l.guard != nil:
			q, args = child.guardStatement(false)
		case l.expect != nil:
			c := l.expectCall()
			q, args = joinHeld(nil, l.pending, &c)
		default:
			q, args = child.heldStatement()
		}
		l.pending = nil
		_, err := db.shared.selfCommits.run(ctx, db, Stmt{SQL: db.sql(q), Args: args})
		return err
	}
	batch := l.batch[:0]
	if len(l.pending) > 0 {
		hq, hargs := child.heldStatement()
		l.pending = nil
		batch = append(batch, Stmt{SQL: db.sql(hq), Args: hargs})
	}
	batch = append(batch, Stmt{SQL: "COMMIT"})
	_, failed, err := l.pipe.Exec(ctx, batch)
	if err == nil {
		l.begun = false
		return nil
	}
	err = db.d.Translate(err)
	if failed < len(batch)-1 {
		return rollbackLazy(ctx, l, err) // a held insert failed: COMMIT did not run
	}
	l.begun = false // a failed COMMIT ends the transaction
	return err
}

// rollbackLazy ends a lazy transaction whose function (or commit) failed,
// and returns the error Tx reports: a failed flush's own error, which is
// what the statement that hit it saw too, else fnErr.
func rollbackLazy(ctx context.Context, l *lazyTx, fnErr error) error {
	if l.begun {
		// Whatever its outcome, Release closes a connection left inside
		// the transaction.
		_, _, _ = l.pipe.Exec(context.WithoutCancel(ctx), []Stmt{{SQL: "ROLLBACK"}})
		l.begun = false
	}
	if l.failed != nil && !errors.Is(fnErr, l.failed) {
		return errors.Join(l.failed, fnErr)
	}
	return fnErr
}

// scanOne scans the first of rs into dest and closes rs; no row is
// sql.ErrNoRows, as *sql.Row says it.
func scanOne(rs Rows, dest []any) error {
	if !rs.Next() {
		err := rs.Err()
		rs.Close()
		if err != nil {
			return err
		}
		return sql.ErrNoRows
	}
	err := rs.Scan(dest...)
	if cerr := rs.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = rs.Err()
	}
	return err
}
