package sqlstore

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"
)

// fakeServer is a Pipe's server: a round trip commits its statements
// together, unless one of them is "bad" (a server error: none commits) or
// "lost" (the connection: an unknown outcome). A statement "wait" holds
// its round trip until release is closed.
type fakeServer struct {
	mu        sync.Mutex
	committed []string
	trips     [][]string
	waiting   chan struct{} // gets a value when a round trip holds at "wait"
	release   chan struct{}
}

type sqlStateError struct{}

func (sqlStateError) Error() string    { return "duplicate key" }
func (sqlStateError) SQLState() string { return "23505" }

var errLost = errors.New("connection lost")

type fakePipe struct{ s *fakeServer }

func (p fakePipe) Exec(ctx context.Context, stmts []Stmt) (int64, int, error) {
	n := make([]int64, len(stmts))
	failed, err := p.ExecEach(ctx, stmts, n)
	return n[len(n)-1], failed, err
}

// ExecEach tells each statement's position in its round trip, plus one,
// as its count of rows.
func (p fakePipe) ExecEach(ctx context.Context, stmts []Stmt, affected []int64) (int, error) {
	sqls, failed, err := p.trip(stmts)
	if err != nil {
		return failed, err
	}
	p.s.mu.Lock()
	p.s.committed = append(p.s.committed, sqls...)
	p.s.mu.Unlock()
	for i := range affected {
		affected[i] = int64(i + 1)
	}
	return 0, nil
}

// trip records stmts as a round trip and plays it: "bad" and "lost" fail
// it at their place, "wait" holds it until release.
func (p fakePipe) trip(stmts []Stmt) (sqls []string, failed int, err error) {
	for _, st := range stmts {
		sqls = append(sqls, st.SQL)
	}
	p.s.mu.Lock()
	p.s.trips = append(p.s.trips, sqls)
	p.s.mu.Unlock()
	for i, q := range sqls {
		switch q {
		case "bad":
			return sqls, i, fmt.Errorf("statement %d: %w", i, sqlStateError{})
		case "lost":
			return sqls, i, errLost
		case "wait":
			p.s.waiting <- struct{}{}
			<-p.s.release
		}
	}
	return sqls, 0, nil
}

func (fakePipe) Query(context.Context, []Stmt) (Rows, int, error) { panic("not used") }
func (fakePipe) Release()                                         {}

// QueryEach answers each statement with one row: its own text. Its round
// trip plays as ExecEach's does, and commits nothing.
func (p fakePipe) QueryEach(ctx context.Context, stmts []Stmt) ([]Rows, error) {
	sqls, _, err := p.trip(stmts)
	if err != nil {
		return nil, err
	}
	out := make([]Rows, len(sqls))
	for i, q := range sqls {
		out[i] = &textRow{text: q}
	}
	return out, nil
}

// textRow is one row of one text column.
type textRow struct {
	text string
	read bool
}

func (r *textRow) Next() bool {
	next := !r.read
	r.read = true
	return next
}
func (r *textRow) Scan(dest ...any) error     { *dest[0].(*string) = r.text; return nil }
func (r *textRow) Err() error                 { return nil }
func (r *textRow) Close() error               { return nil }
func (r *textRow) Columns() ([]string, error) { return []string{"text"}, nil }

// runErr is g.run for a caller that needs no count of rows.
func runErr(ctx context.Context, g *selfCommits, db *DB, q string) error {
	_, err := g.run(ctx, db, Stmt{SQL: q})
	return err
}

// holdGroup runs the statement "wait" in a group of its own and returns
// once the fake server holds it (until s.release closes), with the channel
// of its outcome.
func holdGroup(ctx context.Context, g *selfCommits, db *DB, s *fakeServer) <-chan error {
	first := make(chan error, 1)
	go func() { first <- runErr(ctx, g, db, "wait") }()
	<-s.waiting
	return first
}

// newHeldServer is a fake server that holds the statement "wait".
func newHeldServer() *fakeServer {
	return &fakeServer{waiting: make(chan struct{}), release: make(chan struct{})}
}

// waitQueued waits until n statements wait in g's queue.
func waitQueued(t *testing.T, g *selfCommits, n int) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); ; {
		g.mu.Lock()
		l := len(g.queue)
		g.mu.Unlock()
		if l == n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d statements queued, want %d", l, n)
		}
		time.Sleep(time.Millisecond)
	}
}

// oneRunner is a fake DB whose server holds "wait", and the selfCommits
// of it that pick names, with one runner, groups of 16 and no stall.
func oneRunner(pick func(*DB) *selfCommits) (*fakeServer, *DB, *selfCommits) {
	s := newHeldServer()
	db := newFakeDB(s)
	g := pick(db)
	g.maxRunners, g.maxGroup, g.stallAfter = 1, 16, time.Hour
	return s, db, g
}

func newFakeDB(s *fakeServer) *DB {
	d := &Dialect{Name: "fake", Translate: func(err error) error { return err },
		Pipe: func(context.Context) (Pipe, error) { return fakePipe{s}, nil }}
	return &DB{d: d, shared: &shared{}}
}

// TestSelfCommitsShareAndKeepOutcomes: statements that arrive while the
// runners are busy go in one round trip; a server error in a group runs
// its statements again one by one, so each caller gets its own outcome;
// an unknown outcome reaches every caller of the group.
func TestSelfCommitsShareAndKeepOutcomes(t *testing.T) {
	s, db, g := oneRunner(func(db *DB) *selfCommits { return &db.shared.selfCommits })
	ctx := context.Background()

	first := holdGroup(ctx, g, db, s) // the only runner is busy: what comes now queues
	queued := func(n int) { t.Helper(); waitQueued(t, g, n) }
	names := []string{"a", "bad", "b", "c"}
	errs := make([]error, len(names))
	var wg sync.WaitGroup
	for i, q := range names {
		wg.Add(1)
		go func() { defer wg.Done(); errs[i] = runErr(ctx, g, db, q) }()
		queued(i + 1)
	}
	close(s.release)
	if err := <-first; err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	for i, q := range names {
		if bad := q == "bad"; bad != (errs[i] != nil) {
			t.Errorf("statement %q: %v", q, errs[i])
		}
	}
	if !errors.As(errs[1], new(sqlStateError)) {
		t.Errorf("the bad statement's error: %v", errs[1])
	}
	got := strings.Join(s.trips[1], ",")
	if got != "a,bad,b,c" {
		t.Errorf("the queued statements' round trip: %s, want a,bad,b,c", got)
	}
	if c := strings.Join(s.committed, ","); c != "wait,a,b,c" {
		t.Errorf("committed %s, want wait,a,b,c", c)
	}

	// A group that commits: each caller gets its own statement's count.
	s.release = make(chan struct{})
	first = holdGroup(ctx, g, db, s)
	counts := make([]int64, 3)
	for i, q := range []string{"p", "q", "r"} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			counts[i], errs[i] = g.run(ctx, db, Stmt{SQL: q})
		}()
		queued(i + 1)
	}
	close(s.release)
	<-first
	wg.Wait()
	for i := range 3 {
		if errs[i] != nil || counts[i] != int64(i+1) {
			t.Errorf("statement %d of a group: %d rows, %v; want %d", i, counts[i], errs[i], i+1)
		}
	}

	// A lost connection: no caller is told its statement committed.
	s.release = make(chan struct{})
	first = holdGroup(ctx, g, db, s)
	for i, q := range []string{"d", "lost"} {
		wg.Add(1)
		go func() { defer wg.Done(); errs[i] = runErr(ctx, g, db, q) }()
		queued(i + 1)
	}
	close(s.release)
	<-first
	wg.Wait()
	if !errors.Is(errs[0], errLost) || !errors.Is(errs[1], errLost) {
		t.Errorf("a group that lost its connection: %v, %v", errs[0], errs[1])
	}
	// The last runner stops after it has answered its callers.
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(time.Millisecond) {
		g.mu.Lock()
		running, queued := g.running, len(g.queue)
		g.mu.Unlock()
		if running == 0 && queued == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("after the groups: %d running, %d queued", running, queued)
		}
	}
}

// TestSelfCommitsStalledGroup: a statement queued behind a runner that is
// held up (a lock) starts a group of its own and commits meanwhile.
func TestSelfCommitsStalledGroup(t *testing.T) {
	s := newHeldServer()
	db := newFakeDB(s)
	g := &db.shared.selfCommits
	g.maxRunners, g.stallAfter = 1, time.Millisecond
	ctx := context.Background()
	first := holdGroup(ctx, g, db, s)
	if err := runErr(ctx, g, db, "x"); err != nil {
		t.Fatal(err)
	}
	close(s.release)
	if err := <-first; err != nil {
		t.Fatal(err)
	}
	if c := strings.Join(s.committed, ","); c != "x,wait" {
		t.Errorf("committed %s, want x before the held group", c)
	}
}

// TestSelfCommitsCanceledWhileQueued: a caller gone before its group ran
// gets its context's error and writes nothing.
func TestSelfCommitsCanceledWhileQueued(t *testing.T) {
	s := newHeldServer()
	db := newFakeDB(s)
	g := &db.shared.selfCommits
	g.maxRunners, g.stallAfter = 1, time.Hour
	first := holdGroup(context.Background(), g, db, s)
	ctx, cancel := context.WithCancel(context.Background())
	res := make(chan error, 1)
	go func() { res <- runErr(ctx, g, db, "gone") }()
	for {
		g.mu.Lock()
		n := len(g.queue)
		g.mu.Unlock()
		if n == 1 {
			break
		}
		time.Sleep(time.Millisecond)
	}
	cancel()
	close(s.release)
	<-first
	if err := <-res; !errors.Is(err, context.Canceled) {
		t.Errorf("canceled caller: %v", err)
	}
	if c := strings.Join(s.committed, ","); c != "wait" {
		t.Errorf("committed %s, want only the first", c)
	}
}

// TestSelfCommitsStalledRunnersLeaveNoneBehind: a runner started by a
// stalled caller stops after its group even while others wait (so stalls
// do not pile up runners); those others, behind the same held runner,
// start groups of their own and commit.
func TestSelfCommitsStalledRunnersLeaveNoneBehind(t *testing.T) {
	s := newHeldServer()
	db := newFakeDB(s)
	g := &db.shared.selfCommits
	g.maxRunners, g.maxGroup, g.stallAfter = 1, 1, time.Millisecond
	ctx := context.Background()
	first := holdGroup(ctx, g, db, s)
	names := []string{"a", "b", "c", "d"}
	errs := make(chan error, len(names))
	for _, q := range names {
		go func() { errs <- runErr(ctx, g, db, q) }()
	}
	for range names {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	g.mu.Lock()
	running, queued := g.running, len(g.queue)
	g.mu.Unlock()
	if running != 1 || queued != 0 {
		t.Errorf("while the first group is held: %d runners, %d queued; want 1, 0", running, queued)
	}
	close(s.release)
	if err := <-first; err != nil {
		t.Fatal(err)
	}
	if c := strings.Join(s.committed, ","); len(c) != len("a,b,c,d,wait") || !strings.HasSuffix(c, "wait") {
		t.Errorf("committed %s, want a, b, c and d before the held group", c)
	}
}

// TestSharedReadsShareRoundTripsAndKeepOutcomes: reads that arrive while
// the runners are busy go in one round trip, and each caller gets its own
// row; a read's server error runs the group's reads again one by one, so
// only that caller gets it.
func TestSharedReadsShareRoundTripsAndKeepOutcomes(t *testing.T) {
	s, db, g := oneRunner(func(db *DB) *selfCommits { return &db.shared.sharedReads })
	ctx := context.Background()
	read := func(q string) (string, error) {
		rs, err := g.query(ctx, db, Stmt{SQL: q})
		if err != nil {
			return "", err
		}
		var got string
		err = scanOne(rs, []any{&got})
		return got, err
	}
	first := make(chan error, 1)
	go func() { _, err := read("wait"); first <- err }()
	<-s.waiting // the only runner is busy: what comes now queues
	names := []string{"a", "bad", "b"}
	got := make([]string, len(names))
	errs := make([]error, len(names))
	var wg sync.WaitGroup
	for i, q := range names {
		wg.Go(func() { got[i], errs[i] = read(q) })
		waitQueued(t, g, i+1)
	}
	close(s.release)
	if err := <-first; err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	for i, q := range names {
		if q == "bad" {
			if !errors.As(errs[i], new(sqlStateError)) {
				t.Errorf("the bad read: %q, %v; want its server error", got[i], errs[i])
			}
		} else if errs[i] != nil || got[i] != q {
			t.Errorf("read %q: %q, %v", q, got[i], errs[i])
		}
	}
	var trips []string
	for _, trip := range s.trips {
		trips = append(trips, strings.Join(trip, ","))
	}
	if want := "wait|a,bad,b|a|bad|b"; strings.Join(trips, "|") != want {
		t.Errorf("round trips %s, want %s", strings.Join(trips, "|"), want)
	}
	if len(s.committed) != 0 {
		t.Errorf("reads committed %v", s.committed)
	}
}
