package sqlstore

import (
	"context"
	"errors"
	"sync"

	"github.com/latchkey/latchkey/internal/store"
)

// GroupCommit is the event sink of a DB outside a transaction
// (DB.EventSink): it appends the events that concurrent requests record
// outside a transaction of their own (introspection results, failed logins, refused
// requests) in shared transactions: while one commit runs, the events that
// arrive queue up and go together in the next. Each caller still returns
// only after the commit that holds its event, so an answered request's
// event is as durable as before; what is saved is a commit (SQLite: WAL
// frames and their write calls; PostgreSQL: a round trip) per event.
type GroupCommit struct {
	Store interface {
		Tx(ctx context.Context, fn func(store.Store) error) error
	}

	// OneStatement, when set, appends a batch in a single statement outside
	// a transaction: atomic by itself, it needs no BEGIN and COMMIT
	// (PostgreSQL: two round trips fewer per batch).
	OneStatement func(ctx context.Context, es []store.Event) error

	// With Optimism (PostgreSQL): expected answers the generations a
	// request decided on without reading them; expecting inserts each
	// event only if the generations expected of it (Generations{-1, -1}:
	// none) are those it finds, and returns those; settle tells the
	// request. confirm is DB.confirmWrite, for an event without them.
	expected  func(ctx context.Context) (Generations, bool)
	expecting func(ctx context.Context, es []store.Event, expect []Generations) (Generations, error)
	settle    func(ctx context.Context, held bool)
	confirm   func(ctx context.Context) error

	mu      sync.Mutex
	queue   []queued
	running bool
}

type queued struct {
	events []store.Event
	expect *Generations // nil: the events are inserted whatever the generations
	done   chan error
}

// noExpectation marks an event inserted whatever the generations.
var noExpectation = Generations{Client: -1, Token: -1}

// AppendEvents queues es and waits for the commit that holds them. For a
// request that decided on generations it did not read, the events are
// inserted only if those still hold, and store.ErrRunAgain answers otherwise.
func (g *GroupCommit) AppendEvents(ctx context.Context, es ...store.Event) error {
	q := queued{events: es, done: make(chan error, 1)}
	if g.expected != nil {
		if exp, ok := g.expected(ctx); ok {
			q.expect = &exp
		}
	}
	if q.expect == nil && g.confirm != nil {
		if err := g.confirm(ctx); err != nil {
			return err
		}
	}
	g.mu.Lock()
	g.queue = append(g.queue, q)
	if !g.running {
		g.running = true
		go g.run()
	}
	g.mu.Unlock()
	select {
	case err := <-q.done:
		if q.expect != nil && (err == nil || errors.Is(err, store.ErrRunAgain)) {
			g.settle(ctx, err == nil)
		}
		return err
	case <-ctx.Done():
		return ctx.Err() // the request is gone; its event may still be written
	}
}

// run commits what is queued until the queue is empty, then ends (so an
// idle GroupCommit holds no goroutine).
func (g *GroupCommit) run() {
	for {
		g.mu.Lock()
		batch := g.queue
		g.queue = nil
		if len(batch) == 0 {
			g.running = false
			g.mu.Unlock()
			return
		}
		g.mu.Unlock()
		var all []store.Event
		expecting := false
		for _, q := range batch {
			all = append(all, q.events...)
			expecting = expecting || q.expect != nil
		}
		ctx := context.Background()
		if expecting {
			g.commitExpecting(ctx, batch, all)
			continue
		}
		var err error
		if g.OneStatement != nil {
			err = g.OneStatement(ctx, all)
		} else {
			err = g.Store.Tx(ctx, func(tx store.Store) error { return tx.AppendEvents(ctx, all...) })
		}
		for _, q := range batch {
			q.done <- err
		}
	}
}

// commitExpecting inserts a batch in which some requests expect
// generations: each of those gets store.ErrRunAgain if the statement found
// others, and its events were not inserted.
func (g *GroupCommit) commitExpecting(ctx context.Context, batch []queued, all []store.Event) {
	expect := make([]Generations, 0, len(all))
	for _, q := range batch {
		e := noExpectation
		if q.expect != nil {
			e = *q.expect
		}
		for range q.events {
			expect = append(expect, e)
		}
	}
	found, err := g.expecting(ctx, all, expect)
	for _, q := range batch {
		qerr := err
		if qerr == nil && q.expect != nil && *q.expect != found {
			qerr = store.ErrRunAgain
		}
		q.done <- qerr
	}
}
