package sqlstore

import (
	"context"
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

	mu      sync.Mutex
	queue   []queued
	running bool
}

type queued struct {
	events []store.Event
	done   chan error
}

// AppendEvents queues es and waits for the commit that holds them.
func (g *GroupCommit) AppendEvents(ctx context.Context, es ...store.Event) error {
	q := queued{events: es, done: make(chan error, 1)}
	g.mu.Lock()
	g.queue = append(g.queue, q)
	if !g.running {
		g.running = true
		go g.run()
	}
	g.mu.Unlock()
	select {
	case err := <-q.done:
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
		for _, q := range batch {
			all = append(all, q.events...)
		}
		ctx := context.Background()
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
