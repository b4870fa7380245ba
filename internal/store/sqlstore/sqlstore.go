// Package sqlstore implements store.Store on database/sql for the SQL
// backends. The queries are standard SQL that SQLite and PostgreSQL both
// speak (upserts with ON CONFLICT, RETURNING); what differs — schema DDL,
// migration locking, placeholders, driver error codes, connection set-up —
// comes from each backend's Dialect. Times are stored as integer Unix
// microseconds (UTC; 0 for the zero time) and lists as JSON text, the same
// in both, so a round trip is exact.
package sqlstore

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/latchkey/latchkey/internal/store"
)

// Dialect is what a backend supplies.
type Dialect struct {
	Name string // "sqlite" | "postgres"
	// Numbered placeholders ($1, $2, ...) instead of "?".
	NumberedPlaceholders bool
	// InProcess: statements cost no round trip (SQLite), so a prepared
	// one-row statement run n times beats parsing one n-row statement.
	InProcess bool
	// GroupCommit runs the transactions of concurrent callers one after the
	// other inside one database transaction, each in its own savepoint, and
	// commits them together (SQLite: one writer, and a commit costs more than
	// the statements of a typical transaction). See txbatch.go.
	GroupCommit bool
	// Translate maps a driver error to store.ErrConflict/ErrNotFound, or returns it unchanged.
	Translate func(error) error
	// Migrations in version order.
	Migrations []Migration
	// LockMigrations runs inside the migration transaction before anything
	// else ("" for none): PostgreSQL serialises instances that start together.
	LockMigrations string
	// BeginTx starts a read-write transaction (SQLite: BEGIN IMMEDIATE via the DSN).
	TxOptions *sql.TxOptions
	// ForUpdate locks the rows a SELECT reads until the transaction ends
	// (" FOR UPDATE" on PostgreSQL; "" on SQLite, whose writer transaction
	// already excludes every other writer).
	ForUpdate string
	// ForNoKeyUpdate locks a row for an update that leaves its key alone
	// (" FOR NO KEY UPDATE" on PostgreSQL: it does not wait for KeyShare
	// holders; "" on SQLite).
	ForNoKeyUpdate string
	// ForShare holds a row against UPDATE and DELETE until the transaction
	// ends, sharing it with other readers (" FOR SHARE" on PostgreSQL; ""
	// on SQLite).
	ForShare string
	// KeyShare holds a row against DELETE until the transaction ends, and
	// nothing else (" FOR KEY SHARE" on PostgreSQL; "" on SQLite).
	KeyShare string
	// Pipe, when set, runs each transaction as a lazyTx on a connection of
	// its own (lazytx.go): BEGIN with its first statement, COMMIT with its
	// held writes.
	Pipe func(ctx context.Context) (Pipe, error)
	// ArrayInsert inserts many events in one statement of column arrays
	// (PostgreSQL's unnest), whatever their number, instead of a VALUES
	// list per batch size.
	ArrayInsert bool
	// CoalesceUses counts the concurrent uses of one limited token outside
	// a transaction together (usage.go): on PostgreSQL each statement on
	// the row waits for the previous one's commit; on SQLite each use was a
	// commit of the single writer.
	CoalesceUses bool
	// ReturningFrom: an UPDATE ... FROM may return the FROM clause's
	// columns (PostgreSQL; SQLite's RETURNING names only the updated table).
	ReturningFrom bool
	// InsertOrIgnore: an insert that skips the rows whose key is taken is
	// INSERT OR IGNORE (SQLite), not INSERT ... ON CONFLICT DO NOTHING.
	InsertOrIgnore bool
	// IndexHints names the index of an event search (SQLite's INDEXED BY).
	IndexHints bool
	// TablesQuery lists the names of the store's tables (FindText).
	TablesQuery string
}

// Migration is one numbered schema change.
type Migration struct {
	Version int
	Name    string
	SQL     string
}

// String names m as its file does, without the extension: "0031_name".
func (m Migration) String() string { return fmt.Sprintf("%04d_%s", m.Version, m.Name) }

// DB is a store.Store on database/sql.
type DB struct {
	d      *Dialect
	write  *sql.DB // writes and transactions
	read   *sql.DB // plain reads (SQLite: a pool of read-only connections); may equal write
	tx     *sql.Tx // the transaction of a Tx's DB; nil outside and in a lazy one
	inTx   bool
	lazy   *lazyTx // Dialect.Pipe: the transaction's state
	shared *shared
	// savepoints numbers the savepoints of a transaction.
	savepoints *int
	// pendingInv collects a transaction's token cache invalidations.
	pendingInv *[]invalidation
	// scopesWritten: the transaction wrote scopes (ScopeCache).
	scopesWritten *bool
	// held: the group commit's events held for its EventsAhead (nil: none).
	held *heldEvents
	// detached: the transaction is shared by several callers (txBatch), and
	// its statements run without their caller's cancellation (driverCtx).
	detached bool
	// applied lists the migrations this DB's Migrate applied itself.
	applied []int
}

// txChild is the DB that runs statements in tx.
func (db *DB) txChild(tx *sql.Tx) *DB {
	return &DB{d: db.d, write: db.write, read: db.read, tx: tx, inTx: true, shared: db.shared, savepoints: new(int),
		pendingInv: new([]invalidation), scopesWritten: new(bool)}
}

// driverCtx is the context a statement of db runs with: in a transaction
// that several callers share (txBatch), the caller's values without its
// cancellation. The driver interrupts a statement whose context ends, and
// SQLite then rolls back the whole transaction, so one caller gone
// mid-statement would fail every caller of the batch; a caller gone before
// its turn is not run at all. Without a Done channel, neither the driver
// nor database/sql starts a goroutine to watch each statement.
func (db *DB) driverCtx(ctx context.Context) context.Context {
	if db.detached {
		return context.WithoutCancel(ctx)
	}
	return ctx
}

// shared is what a DB and the DBs of its transactions have in common.
type shared struct {
	rebind sync.Map // query -> query with numbered placeholders
	// Prepared statements per pool: SQLite otherwise parses the SQL text of
	// every statement (a quarter of an introspection's CPU before this cache).
	writeStmts, readStmts sync.Map
	stmtCount             atomic.Int64
	// observe, when set, gets each statement's duration (ObserveStatements).
	observe atomic.Pointer[func(op string, d time.Duration)]
	// pending holds queries first run inside a transaction: they are
	// prepared on the write pool after it, because a transaction holds
	// SQLite's only writer connection and preparing on the pool would wait
	// for itself.
	pending     sync.Map
	batch       txBatch
	selfCommits selfCommits  // lazy transactions of one statement (selfcommit.go)
	sharedReads selfCommits  // plain one-row reads by key (queryRowShared), sharing round trips the same way
	tokens      *TokenCache  // nil: no token cache
	guarded     guardedReads // what guarded reads found (lazy transactions only)
	// scopeCache: nil, no scope cache.
	scopeCache *ScopeCache
	events     GroupCommit              // the event sink outside a transaction
	ahead      atomic.Pointer[aheadBox] // the group commit writes events ahead to it (writeahead.go)
	kindCounts sync.Map                 // event kind -> kindCount (CountEvents)
	uses       useCoalescer
	optimism   *Optimism // nil: every request reads its generations (UseOptimism)
}

// Optimism connects the store to requests that decide on the generations
// last read instead of reading them (client.Optimistic, PostgreSQL): each
// write of such a request first confirms them, and an event it records
// outside a transaction is inserted only if they still hold, checked in
// the insert's own statement.
type Optimism struct {
	// Expected returns the generations the request of ctx decided on
	// without reading them, if any are unconfirmed.
	Expected func(ctx context.Context) (Generations, bool)
	// Settle records whether a statement found them unchanged.
	Settle func(ctx context.Context, held bool)
	// Confirm reads them again for the request of ctx, if it has any
	// unconfirmed: store.ErrRunAgain if they moved.
	Confirm func(ctx context.Context) error
}

// UseOptimism makes the store confirm optimistic requests' generations
// before their writes (see Optimism).
func (db *DB) UseOptimism(o *Optimism) { db.shared.optimism = o }

// confirmWrite is called before every write outside a transaction and
// before a transaction begins: a request that decided on unread
// generations writes nothing unless they held.
func (db *DB) confirmWrite(ctx context.Context) error {
	if o := db.shared.optimism; o != nil && !db.inTx {
		return o.Confirm(ctx)
	}
	return nil
}

// maxStmts bounds the statement caches; queries with many parameters (batch
// inserts, IN lists) are not cached at all.
const (
	maxStmts      = 512
	maxStmtParams = 64
)

// New returns a DB on write (and read, which may be the same pool).
func New(d *Dialect, write, read *sql.DB) *DB {
	if read == nil {
		read = write
	}
	db := &DB{d: d, write: write, read: read, shared: &shared{}}
	db.shared.events.Store = db
	db.shared.events.confirm = db.confirmWrite
	if d.ArrayInsert {
		db.shared.events.OneStatement = func(ctx context.Context, es []store.Event) error {
			return db.insertEvents(ctx, es, eventAppend, false)
		}
		db.shared.events.expecting = db.insertEventsExpecting
		db.shared.events.expected = func(ctx context.Context) (Generations, bool) {
			if o := db.shared.optimism; o != nil {
				return o.Expected(ctx)
			}
			return Generations{}, false
		}
		db.shared.events.settle = func(ctx context.Context, held bool) { db.shared.optimism.Settle(ctx, held) }
	}
	return db
}

// EventSink is where events go: inside a transaction the transaction
// itself (they commit with the action they record), outside one a group
// commit shared by concurrent callers.
func (db *DB) EventSink() store.EventAppender {
	if db.inTx {
		return db
	}
	return &db.shared.events
}

// Backend names the backend.
func (db *DB) Backend() string { return db.d.Name }

// Ping checks both pools.
func (db *DB) Ping(ctx context.Context) error {
	if err := db.write.PingContext(ctx); err != nil {
		return err
	}
	return db.read.PingContext(ctx)
}

// Close closes the cached statements and the pools.
func (db *DB) Close() error {
	for _, m := range []*sync.Map{&db.shared.writeStmts, &db.shared.readStmts} {
		m.Range(func(_, v any) bool { v.(*sql.Stmt).Close(); return true })
	}
	err := db.write.Close()
	if db.read != db.write {
		err = errors.Join(err, db.read.Close())
	}
	return err
}

// Tx runs fn in one transaction; a nested call joins the outer one.
func (db *DB) Tx(ctx context.Context, fn func(store.Store) error) error {
	return db.runTx(ctx, false, fn)
}

// BulkTx is Tx alone in its transaction when commits are shared.
func (db *DB) BulkTx(ctx context.Context, fn func(store.Store) error) error {
	return db.runTx(ctx, true, fn)
}

func (db *DB) runTx(ctx context.Context, own bool, fn func(store.Store) error) (err error) {
	if db.inTx {
		return fn(db)
	}
	// A lazy transaction confirms a request's unread generations in its
	// first statement; any other confirms them before it begins.
	var expect *Generations
	if o := db.shared.optimism; o != nil && db.d.Pipe != nil && !db.d.GroupCommit {
		if g, ok := o.Expected(ctx); ok {
			expect = &g
		}
	}
	if expect == nil {
		if err := db.confirmWrite(ctx); err != nil {
			return err
		}
	}
	if db.d.GroupCommit {
		return db.shared.batch.run(ctx, db, own, fn)
	}
	if db.d.Pipe != nil {
		return db.runLazyTx(ctx, fn, expect)
	}
	tx, err := db.write.BeginTx(ctx, db.d.TxOptions)
	for attempt := 0; db.retryBadConn(ctx, err, attempt); attempt++ {
		tx, err = db.write.BeginTx(ctx, db.d.TxOptions) // see retryBadConn
	}
	if err != nil {
		return db.d.Translate(err)
	}
	child := db.txChild(tx)
	defer func() {
		if p := recover(); p != nil {
			_ = tx.Rollback()
			db.endTx(child)
			panic(p)
		}
		db.endTx(child)
		db.preparePending(ctx)
	}()
	if err := fn(child); err != nil {
		_ = tx.Rollback()
		return err
	}
	return db.d.Translate(tx.Commit())
}

// runLazyTx is runTx for a dialect with a Pipe (lazytx.go). A function
// whose guarded read went stale runs once more, with locking reads: such
// a function (a refresh's, a code exchange's) must be one that may run
// twice.
//
// With expect (the generations the request decided on without reading
// them), the transaction's first statement checks them
// (latchkey_guard_generations) and fails with store.ErrRunAgain if they
// moved; the request learns either way (Optimism.Settle). A transaction
// that sends nothing leaves them unconfirmed.
func (db *DB) runLazyTx(ctx context.Context, fn func(store.Store) error, expect *Generations) error {
	l, checked, err := db.runLazyOnce(ctx, fn, &lazyTx{expect: expect})
	if l.cachedRead != nil && (errors.Is(err, ErrReadChanged) || !l.guardSent) {
		// It decided on a kept read that no guard confirmed (it refused,
		// or wrote nothing), or whose guard failed: nothing was written.
		db.shared.guarded.drop(l.cachedRead)
		_, checked, err = db.runLazyOnce(ctx, fn, &lazyTx{reread: true, expect: expect})
	}
	if errors.Is(err, ErrReadChanged) {
		_, checked, err = db.runLazyOnce(ctx, fn, &lazyTx{locked: true, expect: expect})
	}
	if expect != nil {
		switch {
		case errors.Is(err, store.ErrRunAgain):
			db.shared.optimism.Settle(ctx, false)
		case err == nil && checked:
			db.shared.optimism.Settle(ctx, true)
		}
	}
	return err
}

// runLazyOnce runs fn once in the lazy transaction l, which it returns.
func (db *DB) runLazyOnce(ctx context.Context, fn func(store.Store) error, l *lazyTx) (_ *lazyTx, checked bool, err error) {
	expect := l.expect
	child := db.txChild(nil)
	child.lazy = l
	defer func() { checked = l.expect == nil && expect != nil }()
	defer func() {
		if p := recover(); p != nil {
			_ = rollbackLazy(ctx, l, nil)
			db.endLazy(child)
			panic(p)
		}
		db.endLazy(child)
	}()
	if err := fn(child); err != nil {
		return l, false, rollbackLazy(ctx, l, err)
	}
	return l, false, db.commitLazy(ctx, child)
}

// endLazy gives back a lazy transaction's connection, then ends it as
// endTx does.
func (db *DB) endLazy(child *DB) {
	if child.lazy.pipe != nil {
		child.lazy.pipe.Release()
	}
	db.endTx(child)
}

// Savepoint runs fn inside a savepoint of the current transaction: an error
// of fn undoes fn's writes only and the transaction goes on (PostgreSQL
// would otherwise refuse every later statement of the transaction). Outside
// a transaction it is Tx.
func (db *DB) Savepoint(ctx context.Context, fn func(store.Store) error) (err error) {
	if !db.inTx {
		return db.Tx(ctx, fn)
	}
	*db.savepoints++
	name := "lk_sp" + strconv.Itoa(*db.savepoints)
	if db.lazy != nil {
		return db.lazySavepoint(ctx, name, fn)
	}
	dctx := db.driverCtx(ctx)
	if _, err := db.tx.ExecContext(dctx, "SAVEPOINT "+name); err != nil {
		return db.d.Translate(err)
	}
	mark := db.heldMark()
	if err = fn(db); err != nil {
		db.undoHeld(mark)
		if _, rerr := db.tx.ExecContext(dctx, "ROLLBACK TO SAVEPOINT "+name); rerr != nil {
			return errors.Join(err, db.d.Translate(rerr))
		}
		return err
	}
	_, err = db.tx.ExecContext(dctx, "RELEASE SAVEPOINT "+name)
	return db.d.Translate(err)
}

// lazySavepoint is Savepoint in a lazy transaction. What was held before
// it goes with its SAVEPOINT; what fn holds goes with its RELEASE, so that
// the savepoint holds exactly fn's writes and an error of theirs undoes fn.
func (db *DB) lazySavepoint(ctx context.Context, name string, fn func(store.Store) error) error {
	if err := db.txExec(ctx, "SAVEPOINT "+name); err != nil {
		return err
	}
	err := fn(db)
	if err == nil {
		if err = db.txExec(ctx, "RELEASE SAVEPOINT "+name); err == nil {
			return nil
		}
	}
	// Undone: what fn held, and a failed send of it.
	db.lazy.pending, db.lazy.failed = db.lazy.pending[:0], nil
	if rerr := db.txExec(ctx, "ROLLBACK TO SAVEPOINT "+name); rerr != nil {
		return errors.Join(err, rerr)
	}
	return err
}

// sql rewrites "?" placeholders to "$n" for dialects that number them. The
// queries of this package hold no "?" in literals, so the rewrite is exact.
func (db *DB) sql(q string) string {
	if !db.d.NumberedPlaceholders {
		return q
	}
	if v, ok := db.shared.rebind.Load(q); ok {
		return v.(string)
	}
	var b strings.Builder
	n := 0
	for i := 0; i < len(q); i++ {
		if q[i] == '?' {
			n++
			b.WriteByte('$')
			b.WriteString(strconv.Itoa(n))
			continue
		}
		b.WriteByte(q[i])
	}
	out := b.String()
	db.shared.rebind.Store(q, out)
	return out
}

// prepared returns the statement of q on pool: the cached one, or a new one
// that is cached unless the cache is full (then the caller closes it).
func (db *DB) prepared(ctx context.Context, pool *sql.DB, cache *sync.Map, q string) (st *sql.Stmt, cached bool, err error) {
	if v, ok := cache.Load(q); ok {
		return v.(*sql.Stmt), true, nil
	}
	st, err = pool.PrepareContext(ctx, q)
	if err != nil {
		return nil, false, err
	}
	if db.shared.stmtCount.Load() >= maxStmts {
		return st, false, nil
	}
	if v, loaded := cache.LoadOrStore(q, st); loaded {
		st.Close()
		return v.(*sql.Stmt), true, nil
	}
	db.shared.stmtCount.Add(1)
	return st, true, nil
}

// stmt returns a statement for q: a cached prepared one (bound to the
// transaction when there is one) or, the first time q runs inside a
// transaction, the transaction itself.
func (db *DB) stmt(ctx context.Context, q string, nargs int, write bool) (st statement, done func(), err error) {
	pool, cache := db.read, &db.shared.readStmts
	if write || db.inTx {
		pool, cache = db.write, &db.shared.writeStmts
	}
	done = func() {}
	if db.tx != nil {
		if v, ok := cache.Load(q); ok {
			return db.tx.StmtContext(ctx, v.(*sql.Stmt)), done, nil
		}
		if cacheable(q, nargs) {
			db.shared.pending.Store(q, struct{}{})
		}
		return txStatement{db.tx, q}, done, nil
	}
	var ps *sql.Stmt
	cached := false
	if !cacheable(q, nargs) {
		ps, err = pool.PrepareContext(ctx, q)
	} else {
		ps, cached, err = db.prepared(ctx, pool, cache, q)
	}
	if err != nil {
		return nil, done, err
	}
	if !cached {
		done = func() { ps.Close() }
	}
	return ps, done, nil
}

// preparePending prepares on the write pool the queries that so far ran only
// inside transactions. Failures are ignored: the query then stays unprepared.
func (db *DB) preparePending(ctx context.Context) {
	db.shared.pending.Range(func(k, _ any) bool {
		db.shared.pending.Delete(k)
		_, _, _ = db.prepared(context.WithoutCancel(ctx), db.write, &db.shared.writeStmts, k.(string))
		return true
	})
}

// cacheable tells whether q, with nargs parameters, goes in a statement
// cache: one with few parameters, or one of the few shapes of a batch.
func cacheable(q string, nargs int) bool {
	return nargs <= maxStmtParams || eventShapeSQL[q]
}

// statement is what *sql.Stmt and txStatement have in common.
type statement interface {
	ExecContext(ctx context.Context, args ...any) (sql.Result, error)
	QueryContext(ctx context.Context, args ...any) (*sql.Rows, error)
	QueryRowContext(ctx context.Context, args ...any) *sql.Row
}

// txStatement runs an unprepared query on a transaction.
type txStatement struct {
	tx *sql.Tx
	q  string
}

func (t txStatement) ExecContext(ctx context.Context, args ...any) (sql.Result, error) {
	return t.tx.ExecContext(ctx, t.q, args...)
}

func (t txStatement) QueryContext(ctx context.Context, args ...any) (*sql.Rows, error) {
	return t.tx.QueryContext(ctx, t.q, args...)
}

func (t txStatement) QueryRowContext(ctx context.Context, args ...any) *sql.Row {
	return t.tx.QueryRowContext(ctx, t.q, args...)
}

func (db *DB) exec(ctx context.Context, q string, args ...any) (res sql.Result, err error) {
	if err := db.confirmWrite(ctx); err != nil {
		return nil, err
	}
	if db.onPipe(q, true) {
		n, _, err := db.send(ctx, q, args, false)
		if err != nil {
			return nil, err
		}
		return driver.RowsAffected(n), nil
	}
	dctx := db.driverCtx(ctx)
	for attempt := 0; ; attempt++ {
		st, done, err := db.stmt(dctx, db.sql(q), len(args), true)
		if err != nil {
			if db.retryBadConn(ctx, err, attempt) {
				continue
			}
			return nil, db.d.Translate(err)
		}
		start := time.Now()
		res, err = st.ExecContext(dctx, args...)
		db.observeStmt("exec", start)
		done()
		if !db.retryBadConn(ctx, err, attempt) {
			return res, db.d.Translate(err)
		}
	}
}

// ObserveStatements has fn called with the duration of every statement
// (op "exec" or "query"; a query until its first row is ready) of this
// store and its transactions: the store latency operators watch.
func (db *DB) ObserveStatements(fn func(op string, d time.Duration)) { db.shared.observe.Store(&fn) }

func (db *DB) observeStmt(op string, start time.Time) {
	if fn := db.shared.observe.Load(); fn != nil {
		(*fn)(op, time.Since(start))
	}
}

// PoolStats reports the connection pools: the writing one and, when reads
// have a pool of their own (SQLite), the reading one.
func (db *DB) PoolStats() (write, read sql.DBStats, separate bool) {
	return db.write.Stats(), db.read.Stats(), db.read != db.write
}

// MaxBadConnRetries bounds RetryBadConn.
const MaxBadConnRetries = 10

// RetryBadConn tells whether an operation that failed with err (a
// statement's preparation, a BEGIN, taking a connection) may run again,
// attempt being the retries so far: when the driver reported a bad
// connection. A driver says so only when the statement did not run
// (database/sql/driver's ErrBadConn), and database/sql retries only twice
// on pooled connections: pgx closes the connection of a canceled query
// asynchronously, so after a burst of clients going away more pooled
// connections than that can be closing, and a live request would fail with
// "driver: bad connection".
//
// After the first retry it waits a little (at most ~10 ms in all): the
// connections the pool hands out may all be closing at that instant, and
// retrying at once would only find them again.
func RetryBadConn(ctx context.Context, err error, attempt int) bool {
	if attempt >= MaxBadConnRetries || !errors.Is(err, driver.ErrBadConn) || ctx.Err() != nil {
		return false
	}
	if attempt > 0 {
		time.Sleep(time.Duration(attempt) * 200 * time.Microsecond)
	}
	return true
}

// retryBadConn is RetryBadConn outside a transaction; inside one, a
// statement is never run again.
func (db *DB) retryBadConn(ctx context.Context, err error, attempt int) bool {
	return db.tx == nil && RetryBadConn(ctx, err, attempt)
}

// row is a single-row result whose statement is released after Scan.
type row struct {
	r    *sql.Row
	rs   Rows // instead of r, in a lazy transaction
	err  error
	done func()
}

func (r *row) Scan(dest ...any) error {
	defer r.done()
	if r.err != nil {
		return r.err
	}
	if r.rs != nil {
		return scanOne(r.rs, dest)
	}
	return r.r.Scan(dest...)
}

func nothing() {}

func (db *DB) rowOn(ctx context.Context, write bool, q string, args ...any) *row {
	if write {
		if err := db.confirmWrite(ctx); err != nil {
			return &row{err: err, done: nothing}
		}
	}
	if db.onPipe(q, write) {
		_, rs, err := db.send(ctx, q, args, true)
		return &row{rs: rs, err: err, done: nothing}
	}
	dctx := db.driverCtx(ctx)
	for attempt := 0; ; attempt++ {
		st, done, err := db.stmt(dctx, db.sql(q), len(args), write)
		if err != nil {
			if db.retryBadConn(ctx, err, attempt) {
				continue
			}
			return &row{err: err, done: done}
		}
		start := time.Now()
		r := st.QueryRowContext(dctx, args...)
		db.observeStmt("query", start)
		if db.retryBadConn(ctx, r.Err(), attempt) {
			done()
			continue
		}
		return &row{r: r, done: done}
	}
}

// queryRow reads through the transaction when there is one, else the read pool.
func (db *DB) queryRow(ctx context.Context, q string, args ...any) *row {
	return db.rowOn(ctx, false, q, args...)
}

// queryRowWrite runs a writing statement that returns a row (RETURNING).
func (db *DB) queryRowWrite(ctx context.Context, q string, args ...any) *row {
	return db.rowOn(ctx, true, q, args...)
}

// rows closes its statement with the rows.
type rows struct {
	Rows
	done func()
}

func (r *rows) Close() error { defer r.done(); return r.Rows.Close() }

func (db *DB) query(ctx context.Context, q string, args ...any) (*rows, error) {
	return db.queryOn(ctx, false, q, args...)
}

// queryWrite runs a writing statement that returns rows (UPDATE … RETURNING).
func (db *DB) queryWrite(ctx context.Context, q string, args ...any) (*rows, error) {
	return db.queryOn(ctx, true, q, args...)
}

func (db *DB) queryOn(ctx context.Context, write bool, q string, args ...any) (*rows, error) {
	if write {
		if err := db.confirmWrite(ctx); err != nil {
			return nil, err
		}
	}
	if db.onPipe(q, write) {
		_, rs, err := db.send(ctx, q, args, true)
		if err != nil {
			return nil, err
		}
		return &rows{Rows: rs, done: nothing}, nil
	}
	dctx := db.driverCtx(ctx)
	for attempt := 0; ; attempt++ {
		st, done, err := db.stmt(dctx, db.sql(q), len(args), write)
		if err != nil {
			if db.retryBadConn(ctx, err, attempt) {
				continue
			}
			return nil, db.d.Translate(err)
		}
		start := time.Now()
		rs, err := st.QueryContext(dctx, args...)
		db.observeStmt("query", start)
		if err == nil {
			return &rows{Rows: rs, done: done}, nil
		}
		done()
		if !db.retryBadConn(ctx, err, attempt) {
			return nil, db.d.Translate(err)
		}
	}
}

// scanErr maps sql.ErrNoRows to store.ErrNotFound.
func (db *DB) scanErr(err error) error {
	if errors.Is(err, sql.ErrNoRows) {
		return store.ErrNotFound
	}
	return db.d.Translate(err)
}

func affected(res sql.Result) (int64, error) {
	n, err := res.RowsAffected()
	if err != nil {
		return 0, fmt.Errorf("rows affected: %w", err)
	}
	return n, nil
}

// Migrate applies the pending migrations, each in its own transaction, and
// is a no-op when all are applied. Instances starting at once on one
// PostgreSQL serialise on the dialect's lock: each migration is applied by
// exactly one of them, the others wait for it and then find it applied.
func (db *DB) Migrate(ctx context.Context) error {
	had, done := db.migrated(ctx)
	if done {
		return nil
	}
	var trace *MigrationTrace
	if had {
		trace = migrationTraceOf(ctx)
	}
	for _, m := range db.d.Migrations {
		applied, err := db.migrateOne(ctx, m, trace)
		if err != nil {
			return fmt.Errorf("migration %s: %w", m, err)
		}
		if applied {
			db.applied = append(db.applied, m.Version)
		}
	}
	return nil
}

// migrated reports whether the store had a schema (any migration
// applied) and whether every migration this binary knows is applied, with
// one read: the common start, which then writes nothing. Any doubt (no
// table yet, an error) answers not done, and Migrate takes the locked,
// one-by-one path, which finds for itself what is applied.
func (db *DB) migrated(ctx context.Context) (had, done bool) {
	applied, err := db.AppliedVersions(ctx)
	if err != nil {
		return false, false
	}
	for _, m := range db.d.Migrations {
		if _, ok := slices.BinarySearch(applied, m.Version); !ok {
			return len(applied) > 0, false
		}
	}
	return true, true
}

// MigrationReport is what the start-up log says about the schema.
type MigrationReport struct {
	Known   []int // the versions this binary carries
	Applied []int // the versions this process applied (the rest were there)
}

// Migrations reports the migrations this binary knows and those its
// Migrate applied.
func (db *DB) Migrations() MigrationReport {
	r := MigrationReport{Applied: slices.Clone(db.applied)}
	for _, m := range db.d.Migrations {
		r.Known = append(r.Known, m.Version)
	}
	return r
}

// migrateOne applies m unless it is applied, telling trace (when set).
func (db *DB) migrateOne(ctx context.Context, m Migration, trace *MigrationTrace) (bool, error) {
	tx, err := db.write.BeginTx(ctx, db.d.TxOptions)
	if err != nil {
		return false, err
	}
	defer tx.Rollback() //nolint:errcheck // no-op after commit
	if db.d.LockMigrations != "" {
		if _, err := tx.ExecContext(ctx, db.d.LockMigrations); err != nil {
			return false, err
		}
	}
	if _, err := tx.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS schema_migrations (
		version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at BIGINT NOT NULL)`); err != nil {
		return false, err
	}
	var n int
	if err := tx.QueryRowContext(ctx, db.sql(`SELECT COUNT(*) FROM schema_migrations WHERE version = ?`), m.Version).Scan(&n); err != nil {
		return false, err
	}
	if n > 0 {
		return false, nil
	}
	start := time.Now()
	if trace != nil && trace.Start != nil {
		trace.Start(m.String())
	}
	if _, err := tx.ExecContext(ctx, m.SQL); err != nil {
		return false, err
	}
	if _, err := tx.ExecContext(ctx, db.sql(`INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, ?, ?)`),
		m.Version, m.Name, time.Now().UnixMicro()); err != nil {
		return false, err
	}
	if err := tx.Commit(); err != nil {
		return false, err
	}
	if trace != nil && trace.Done != nil {
		trace.Done(m.String(), time.Since(start))
	}
	return true, nil
}

// AppliedVersions lists the applied migration versions in order.
func (db *DB) AppliedVersions(ctx context.Context) ([]int, error) {
	rows, err := db.write.QueryContext(ctx, `SELECT version FROM schema_migrations ORDER BY version`)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []int
	for rows.Next() {
		var v int
		if err := rows.Scan(&v); err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	return out, rows.Err()
}

var _ store.Store = (*DB)(nil)
