package postgres

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"slices"
	"sync"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgtype"
	"github.com/jackc/pgx/v5/stdlib"

	"github.com/latchkey/latchkey/internal/store/sqlstore"
)

// pipe is sqlstore.Pipe on a connection of the pool: database/sql hands
// the connection over (sql.Conn) and pgx sends each round trip's
// statements as one batch, pipelined with a single Sync. A batch that
// starts with BEGIN is an explicit transaction; one without runs as one
// implicit transaction.
type pipe struct {
	db    *sql.DB
	sc    *sql.Conn // nil until the first round trip
	conn  *pgx.Conn // sc's, ours until Release
	batch pgx.Batch
}

// openPipe is Dialect.Pipe: the connection is taken at the first round
// trip, not before.
func openPipe(db *sql.DB) func(context.Context) (sqlstore.Pipe, error) {
	return func(context.Context) (sqlstore.Pipe, error) { return &pipe{db: db}, nil }
}

// maxFirstTries bounds the tries of a first round trip that failed before
// anything ran (run).
const maxFirstTries = sqlstore.MaxBadConnRetries

// connect takes a connection that is not closed, retrying past closing
// ones as sqlstore.RetryBadConn says: database/sql itself gives up with
// driver.ErrBadConn after three.
func (p *pipe) connect(ctx context.Context) error {
	for attempt := 0; ; attempt++ {
		err := p.take(ctx)
		if err == nil {
			return nil
		}
		if !sqlstore.RetryBadConn(ctx, err, attempt) {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			return err
		}
	}
}

// take takes a connection of the pool; a closed one is driver.ErrBadConn.
func (p *pipe) take(ctx context.Context) error {
	sc, err := p.db.Conn(ctx)
	if err != nil {
		return err
	}
	var conn *pgx.Conn
	err = sc.Raw(func(dc any) error {
		conn = dc.(*stdlib.Conn).Conn()
		if conn.IsClosed() {
			return driver.ErrBadConn // database/sql drops it
		}
		return nil
	})
	if err != nil {
		_ = sc.Close()
		return err
	}
	p.sc, p.conn = sc, conn
	return nil
}

// drop closes the connection instead of giving it back.
func (p *pipe) drop() {
	if p.sc == nil {
		return
	}
	_ = p.sc.Raw(func(any) error { return driver.ErrBadConn })
	_ = p.sc.Close()
	p.sc, p.conn = nil, nil
}

func (p *pipe) Release() {
	if p.sc == nil {
		return
	}
	if p.conn.IsClosed() || p.conn.PgConn().TxStatus() != 'I' {
		p.drop()
		return
	}
	_ = p.sc.Close()
	p.sc, p.conn = nil, nil
}

func (p *pipe) Exec(ctx context.Context, stmts []sqlstore.Stmt) (int64, int, error) {
	n, _, failed, err := p.run(ctx, stmts, false, nil)
	return n, failed, err
}

func (p *pipe) ExecEach(ctx context.Context, stmts []sqlstore.Stmt, affected []int64) (int, error) {
	_, _, failed, err := p.run(ctx, stmts, false, affected)
	return failed, err
}

func (p *pipe) Query(ctx context.Context, stmts []sqlstore.Stmt) (sqlstore.Rows, int, error) {
	_, rs, failed, err := p.run(ctx, stmts, true, nil)
	return rs, failed, err
}

// run sends stmts as one batch. With each, each statement's count of
// rows goes to its place in it.
func (p *pipe) run(ctx context.Context, stmts []sqlstore.Stmt, query bool, each []int64) (n int64, rs sqlstore.Rows, failed int, err error) {
	err = p.firstTrip(ctx, func() (bool, error) {
		var err error
		n, rs, failed, err = p.send(ctx, stmts, query, each)
		return failed != 0, err
	})
	return n, rs, failed, err
}

// firstTrip runs trip, which tells whether a statement ran before it
// failed. A first round trip (its BEGIN first, or a lone statement) that
// failed before anything ran, on a connection that was closing, runs again
// on another.
func (p *pipe) firstTrip(ctx context.Context, trip func() (ran bool, err error)) error {
	for try := 0; ; try++ {
		fresh := p.conn == nil
		if fresh {
			if err := p.connect(ctx); err != nil {
				return err
			}
		}
		ran, err := trip()
		if err == nil || !fresh || ran || !pgconn.SafeToRetry(err) || try+1 >= maxFirstTries || ctx.Err() != nil {
			return err
		}
		p.drop()
	}
}

func (p *pipe) QueryEach(ctx context.Context, stmts []sqlstore.Stmt) (out []sqlstore.Rows, err error) {
	err = p.firstTrip(ctx, func() (bool, error) {
		var err error
		out, err = p.sendEach(ctx, stmts)
		return false, err
	})
	return out, err
}

// sendEach sends stmts as one batch and reads each one's rows in full.
func (p *pipe) sendEach(ctx context.Context, stmts []sqlstore.Stmt) ([]sqlstore.Rows, error) {
	br := p.conn.SendBatch(ctx, p.queue(stmts))
	out := make([]sqlstore.Rows, len(stmts))
	for i := range stmts {
		rows, err := br.Query()
		if err == nil {
			out[i], err = readRows(rows)
		} else {
			rows.Close()
		}
		if err != nil {
			_ = br.Close()
			return nil, err
		}
	}
	return out, br.Close()
}

// queue makes p's batch of stmts.
func (p *pipe) queue(stmts []sqlstore.Stmt) *pgx.Batch {
	b := &p.batch
	clear(b.QueuedQueries)
	b.QueuedQueries = b.QueuedQueries[:0]
	for _, s := range stmts {
		b.Queue(s.SQL, s.Args...)
	}
	return b
}

func (p *pipe) send(ctx context.Context, stmts []sqlstore.Stmt, query bool, each []int64) (int64, sqlstore.Rows, int, error) {
	br := p.conn.SendBatch(ctx, p.queue(stmts))
	last := len(stmts) - 1
	for i := range last {
		tag, err := br.Exec()
		if err != nil {
			_ = br.Close()
			return 0, nil, i, err
		}
		if each != nil {
			each[i] = tag.RowsAffected()
		}
	}
	if query {
		rows, err := br.Query()
		if err != nil {
			rows.Close()
			_ = br.Close()
			return 0, nil, last, err
		}
		return 0, &batchRows{Rows: rows, br: br}, 0, nil
	}
	tag, err := br.Exec()
	if cerr := br.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return 0, nil, last, err
	}
	if tag.String() == "ROLLBACK" && stmts[last].SQL == "COMMIT" {
		// The transaction had failed: PostgreSQL answers its COMMIT by
		// rolling it back.
		return 0, nil, last, pgx.ErrTxCommitRollback
	}
	if each != nil {
		each[last] = tag.RowsAffected()
	}
	return tag.RowsAffected(), nil, 0, nil
}

// batchRows are a batch's last statement's rows; closing them ends the batch.
type batchRows struct {
	pgx.Rows
	br pgx.BatchResults
}

func (r *batchRows) Close() error {
	r.Rows.Close()
	err := r.Rows.Err()
	if cerr := r.br.Close(); err == nil {
		err = cerr
	}
	return err
}

func (r *batchRows) Columns() ([]string, error) { return fieldNames(r.FieldDescriptions()), nil }

// heldRows are rows read in full (QueryEach): their values are copies,
// decoded at Scan with a type map of their own, since the connection and
// its map serve others once the rows are read.
type heldRows struct {
	fields []pgconn.FieldDescription
	values [][][]byte
	next   int
}

func readRows(rows pgx.Rows) (*heldRows, error) {
	h := &heldRows{fields: slices.Clone(rows.FieldDescriptions())}
	for rows.Next() {
		raw := rows.RawValues()
		vals := make([][]byte, len(raw))
		for i, v := range raw {
			if v != nil {
				vals[i] = slices.Clone(v) // pgx reuses its read buffer
			}
		}
		h.values = append(h.values, vals)
	}
	rows.Close()
	return h, rows.Err()
}

// typeMaps: a pgtype.Map caches its scan plans and is not for concurrent
// use; a pool keeps them warm.
var typeMaps = sync.Pool{New: func() any { return pgtype.NewMap() }}

func (h *heldRows) Next() bool {
	if h.next >= len(h.values) {
		return false
	}
	h.next++
	return true
}

func (h *heldRows) Scan(dest ...any) error {
	if h.next == 0 || h.next > len(h.values) {
		return errors.New("postgres: Scan without a row")
	}
	m := typeMaps.Get().(*pgtype.Map)
	defer typeMaps.Put(m)
	return pgx.ScanRow(m, h.fields, h.values[h.next-1], dest...)
}

func (h *heldRows) Err() error   { return nil }
func (h *heldRows) Close() error { return nil }

func (h *heldRows) Columns() ([]string, error) { return fieldNames(h.fields), nil }

func fieldNames(fds []pgconn.FieldDescription) []string {
	out := make([]string, len(fds))
	for i, fd := range fds {
		out[i] = fd.Name
	}
	return out
}
