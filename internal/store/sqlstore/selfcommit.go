package sqlstore

import (
	"context"
	"errors"
	"slices"
	"sync"
	"time"
)

// selfCommits shares a commit among the concurrent lazy transactions that
// are one statement each (commitLazy: held inserts, or an UPDATE held
// before them, that commit themselves). A lone statement runs at once, as
// before. The statements that arrive while maxRunners groups are on their
// way wait for the first of them to end, then go together: one round trip
// (pgx pipelines them with one Sync), one implicit transaction, one commit
// and one WAL flush, where each was a round trip and a commit of its own.
//
// Each caller still returns after the commit that holds its writes, and
// sees the outcome its statement would have had alone: a group whose
// server answered an error committed nothing, and its statements run
// again one by one, each to its own outcome. An error that is not the
// server's (the connection lost) leaves a commit unknown, as it does for a
// lone statement, and every caller of the group gets it.
//
// Plain reads share round trips the same way, in a selfCommits of their
// own (shared.sharedReads, queryRowShared): a group of reads is never
// mixed with writes, whose implicit transaction it would read from.
type selfCommits struct {
	mu      sync.Mutex
	queue   []*selfCommit
	running int
	// Limits; zero is the default (tests set their own).
	maxRunners, maxGroup int
	stallAfter           time.Duration
}

type selfCommit struct {
	ctx   context.Context
	stmt  Stmt
	query bool  // a plain read (sharedReads): its rows go to rows
	n     int64 // the rows the statement affected
	rows  Rows
	err   error
	done  chan struct{}
}

// The limits of a selfCommits whose own are unset.
const (
	// SharedCommitRunners: groups on their way at once. Two let the server
	// work on one group while the next is sent or flushed (one did as well
	// under the bench's load; two bound what a slow group holds up).
	SharedCommitRunners = 2
	// defaultGroup bounds a group, and so how long its locks are held.
	defaultGroup = 16
	// defaultStall: a caller queued this long starts a group of its own,
	// so that a group waiting for a lock (a person's erasure, say) holds
	// up no more than its own statements. Groups commit in a few
	// milliseconds under load.
	defaultStall = 25 * time.Millisecond
)

func (g *selfCommits) limits() (runners, group int, stall time.Duration) {
	runners, group, stall = g.maxRunners, g.maxGroup, g.stallAfter
	if runners == 0 {
		runners = SharedCommitRunners
	}
	if group == 0 {
		group = defaultGroup
	}
	if stall == 0 {
		stall = defaultStall
	}
	return runners, group, stall
}

// run commits s, alone or in a group, and returns the rows it affected.
func (g *selfCommits) run(ctx context.Context, db *DB, s Stmt) (int64, error) {
	j := &selfCommit{ctx: ctx, stmt: s}
	g.submit(db, j)
	return j.n, j.err
}

// query runs the plain read s, alone or in a group of reads (each
// selfCommits holds one kind), and returns its rows.
func (g *selfCommits) query(ctx context.Context, db *DB, s Stmt) (Rows, error) {
	j := &selfCommit{ctx: ctx, stmt: s, query: true}
	g.submit(db, j)
	return j.rows, j.err
}

// submit runs j, alone or in a group, and returns once j has its outcome.
func (g *selfCommits) submit(db *DB, j *selfCommit) {
	maxRunners, maxGroup, stallAfter := g.limits()
	g.mu.Lock()
	if g.running < maxRunners {
		// With a runner free the queue is empty: a runner takes what
		// waits before it stops.
		g.running++
		g.mu.Unlock()
		g.runFirst(db, []*selfCommit{j})
		return
	}
	j.done = make(chan struct{})
	g.queue = append(g.queue, j)
	g.mu.Unlock()
	t := time.NewTimer(stallAfter)
	defer t.Stop()
	select {
	case <-j.done: // not ctx.Done(): a writer must learn whether its writes committed (a read's group is as short)
		return
	case <-t.C:
	}
	// The groups on their way are stalled (behind a lock, a slow server):
	// unless one has taken it meanwhile, this caller runs one more.
	g.mu.Lock()
	i := slices.Index(g.queue, j)
	if i < 0 {
		g.mu.Unlock()
		<-j.done
		return
	}
	jobs := []*selfCommit{j}
	g.queue = slices.Delete(g.queue, i, i+1)
	n := min(len(g.queue), maxGroup-1)
	jobs = append(jobs, g.queue[:n]...)
	g.queue = g.queue[n:]
	g.running++
	g.mu.Unlock()
	g.runFirst(db, jobs)
}

// runFirst commits the group of the caller that runs it, then leaves what
// waits to a runner of its own, so that the caller is answered now.
func (g *selfCommits) runFirst(db *DB, jobs []*selfCommit) {
	g.commit(db, jobs)
	if next := g.next(); next != nil {
		go g.loop(db, next)
	}
}

func (g *selfCommits) loop(db *DB, jobs []*selfCommit) {
	for ; jobs != nil; jobs = g.next() {
		g.commit(db, jobs)
	}
}

func (g *selfCommits) commit(db *DB, jobs []*selfCommit) {
	if jobs[0].query {
		db.readGroup(jobs)
	} else {
		db.commitGroup(jobs)
	}
	for _, j := range jobs {
		if j.done != nil {
			close(j.done)
		}
	}
}

// next takes the next group, or ends the runner that asks: when nothing
// waits, and also when a stalled caller's group made one runner too many
// (what waits has its own stall timers, so nothing is left behind).
func (g *selfCommits) next() []*selfCommit {
	maxRunners, maxGroup, _ := g.limits()
	g.mu.Lock()
	defer g.mu.Unlock()
	n := min(len(g.queue), maxGroup)
	if n == 0 || g.running > maxRunners {
		if n == 0 {
			g.queue = nil
		}
		g.running--
		return nil
	}
	jobs := g.queue[:n:n]
	g.queue = g.queue[n:]
	return jobs
}

// commitGroup runs jobs' statements as one transaction and sets each
// job's outcome.
func (db *DB) commitGroup(jobs []*selfCommit) {
	ctx, jobs, stmts := liveGroup(jobs)
	if len(jobs) == 0 {
		return
	}
	n := make([]int64, len(jobs))
	err := db.pipeExec(ctx, stmts, n)
	if err != nil && len(jobs) > 1 && serverError(err) {
		// Nothing of the group committed: each statement alone, to its
		// own outcome.
		for i, j := range jobs {
			j.err = db.d.Translate(db.pipeExec(ctx, stmts[i:i+1], n[i:i+1]))
			j.n = n[i]
		}
		return
	}
	err = db.d.Translate(err)
	for i, j := range jobs {
		j.n, j.err = n[i], err
	}
}

// liveGroup is jobs without those whose caller is gone (their error set),
// their statements, and the context of the group's round trip.
func liveGroup(jobs []*selfCommit) (context.Context, []*selfCommit, []Stmt) {
	live := jobs[:0:0]
	for _, j := range jobs {
		if j.err = j.ctx.Err(); j.err == nil {
			live = append(live, j)
		}
	}
	if len(live) == 0 {
		return nil, nil, nil
	}
	ctx := live[0].ctx
	if len(live) > 1 {
		// The group's round trip is every caller's: none cancels it.
		ctx = context.WithoutCancel(ctx)
	}
	stmts := make([]Stmt, len(live))
	for i, j := range live {
		stmts[i] = j.stmt
	}
	return ctx, live, stmts
}

// readGroup runs jobs' plain reads in one round trip and sets each job's
// rows. The reads run as one implicit transaction, each with a snapshot of
// its own (READ COMMITTED), as it would alone. A read's server error ends
// that transaction for the reads after it, so the group's reads then run
// again one by one, each to its own outcome.
func (db *DB) readGroup(jobs []*selfCommit) {
	ctx, jobs, stmts := liveGroup(jobs)
	if len(jobs) == 0 {
		return
	}
	rows, err := db.pipeQuery(ctx, stmts)
	if err != nil && len(jobs) > 1 && serverError(err) {
		for i, j := range jobs {
			rs, err := db.pipeQuery(ctx, stmts[i:i+1])
			if j.err = db.d.Translate(err); err == nil {
				j.rows = rs[0]
			}
		}
		return
	}
	err = db.d.Translate(err)
	for i, j := range jobs {
		if j.err = err; err == nil {
			j.rows = rows[i]
		}
	}
}

// pipeQuery is pipeExec for reads: each statement's rows, read in full.
func (db *DB) pipeQuery(ctx context.Context, stmts []Stmt) ([]Rows, error) {
	p, err := db.d.Pipe(ctx)
	if err != nil {
		return nil, err
	}
	defer p.Release()
	start := time.Now()
	rows, err := p.QueryEach(ctx, stmts)
	db.observeStmt("query", start)
	return rows, err
}

// pipeExec runs stmts in one round trip on a connection of its own,
// setting the rows each affected; its error is the driver's, untranslated.
func (db *DB) pipeExec(ctx context.Context, stmts []Stmt, affected []int64) error {
	p, err := db.d.Pipe(ctx)
	if err != nil {
		return err
	}
	defer p.Release()
	start := time.Now()
	_, err = p.ExecEach(ctx, stmts, affected)
	db.observeStmt("exec", start)
	return err
}

// execShared runs a write that is a transaction of its own. On a dialect
// with a Pipe, concurrent ones share a commit (selfCommits); it is for
// short statements on a request's path, not for sweeps, whose locks and
// time every statement of a group would share.
func (db *DB) execShared(ctx context.Context, q string, args ...any) (int64, error) {
	if db.d.Pipe == nil || db.inTx {
		res, err := db.exec(ctx, q, args...)
		if err != nil {
			return 0, err
		}
		return affected(res)
	}
	return db.shared.selfCommits.run(ctx, db, Stmt{SQL: db.sql(q), Args: args})
}

// queryRowShared is queryRow for a plain read that runs outside a
// transaction (none, or a lazy one that has sent nothing). On a dialect
// with a Pipe, concurrent ones share a round trip (sharedReads): one write
// and one wake of the server for the group. It is for one-row reads by key
// on a request's path.
func (db *DB) queryRowShared(ctx context.Context, q string, args ...any) *row {
	if db.d.Pipe == nil || db.tx != nil || db.onPipe(q, false) || !db.plainRead(q) {
		return db.queryRow(ctx, q, args...)
	}
	rs, err := db.shared.sharedReads.query(ctx, db, Stmt{SQL: db.sql(q), Args: args})
	return &row{rs: rs, err: err, done: nothing}
}

// serverError: the server answered err (it has a SQLSTATE), so the
// transaction it ended committed nothing.
func serverError(err error) bool {
	var se interface{ SQLState() string }
	return errors.As(err, &se)
}
