package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"sync"
	"time"

	"github.com/latchkey/latchkey/internal/store"
)

// useCoalescer counts the concurrent uses of one limited token with one
// write (Dialect.CoalesceUses). On PostgreSQL each conditional increment
// of the row waits for the commit of the one before it, and on SQLite each
// is a commit of the single writer, so n concurrent introspections of one
// token cost n commits one after the other. Here the callers that arrive
// while a write runs wait for the next one, which adds their number at
// once, up to the limit, and returns the count it started from: the first
// of them get the uses that were left, in arrival order, and the rest
// ErrConflict. Exactly usage_limit uses succeed, as with one statement
// each; a lone caller runs at once. The events of the answers the uses
// allow (SpendTokenUse with an event) go in the same write, for the callers
// whose use it counts: a limited introspection commits once, where its
// use and then its event were two commits in series.
type useCoalescer struct {
	mu    sync.Mutex
	slots map[string]*useSlot
}

// useSlot is one token's state: whether a statement runs, and the batch
// that waits for the next one.
type useSlot struct {
	running bool
	next    *useBatch
}

type useBatch struct {
	expect  []Generations // each caller's, in arrival order (noExpectation: none)
	events  []useEvent    // the callers' events, for those that have one
	done    chan struct{}
	t       store.Token // the token after the statement
	old     int         // its count before
	found   Generations // the generations the write found, when checked
	checked bool
	err     error
}

// useEvent is the event of the caller at index caller of a batch.
type useEvent struct {
	caller int
	ev     store.Event
}

// counts tells whether the caller expecting e had its use counted: it
// expected nothing, or what the write found.
func (b *useBatch) counts(e Generations) bool {
	return !b.checked || e == noExpectation || e == b.found
}

// coalescedUse counts one use in the next write for its token, and
// appends ev (if any) in that write when it counts the use. A caller
// that decided on generations it did not read (expect) has its use counted
// only if the write finds them unchanged, and learns so (Optimism.Settle);
// otherwise it gets store.ErrRunAgain, having written nothing.
func (db *DB) coalescedUse(ctx context.Context, hash []byte, expect Generations, ev *store.Event) (store.Token, error) {
	c := &db.shared.uses
	key := string(hash)
	c.mu.Lock()
	if c.slots == nil {
		c.slots = map[string]*useSlot{}
	}
	slot := c.slots[key]
	if slot == nil {
		slot = &useSlot{}
		c.slots[key] = slot
	}
	if slot.next == nil {
		slot.next = &useBatch{done: make(chan struct{})}
	}
	b := slot.next
	me := len(b.expect)
	b.expect = append(b.expect, expect)
	if ev != nil {
		b.events = append(b.events, useEvent{caller: me, ev: *ev})
	}
	if !slot.running {
		slot.running, slot.next = true, nil
		c.mu.Unlock()
		go db.runUses(key, hash, b)
	} else {
		c.mu.Unlock()
	}
	select {
	case <-b.done:
	case <-ctx.Done():
		return store.Token{}, ctx.Err() // the use may still be counted, as with a caller gone after its statement
	}
	if b.err != nil && !errors.Is(b.err, store.ErrConflict) {
		return b.t, b.err
	}
	if expect != noExpectation && b.checked {
		held := b.counts(expect)
		db.shared.optimism.Settle(ctx, held)
		if !held {
			return store.Token{}, store.ErrRunAgain
		}
	}
	if b.err != nil {
		return b.t, b.err
	}
	// The write added the uses of the callers it counted, in arrival order.
	rank := 0
	for _, e := range b.expect[:me] {
		if b.counts(e) {
			rank++
		}
	}
	if granted := b.t.UsageCount - b.old; rank >= granted {
		return b.t, store.ErrConflict
	}
	t := b.t
	t.UsageCount = b.old + rank + 1
	return t, nil
}

// runUses runs b's statement, then the batch that gathered meanwhile, if
// any, in a goroutine of its own: a batch serves many callers, so no
// caller's context cancels it.
func (db *DB) runUses(key string, hash []byte, b *useBatch) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	b.t, b.old, b.found, b.checked, b.err = db.countUses(ctx, hash, b.expect, b.events)
	cancel()
	close(b.done) // the token's cache entry stays, as in SpendTokenUse
	c := &db.shared.uses
	c.mu.Lock()
	slot := c.slots[key]
	next := slot.next
	if next == nil {
		delete(c.slots, key)
		c.mu.Unlock()
		return
	}
	slot.next = nil
	c.mu.Unlock()
	go db.runUses(key, hash, next)
}

// countUses adds the uses of the callers expecting expect (one each), up
// to the limit, with the events of the callers it counts, and returns the
// token after and its count before; ErrConflict (with the token) when none
// was left. Where it checks the generations in its own statement
// (PostgreSQL), it counts only the callers that expected nothing or what
// it found (useBatch.counts), and returns what it found.
func (db *DB) countUses(ctx context.Context, hash []byte, expect []Generations, evs []useEvent) (t store.Token, old int, found Generations, checked bool, err error) {
	if !db.d.ReturningFrom {
		t, old, err = db.countUsesInTx(ctx, hash, len(expect), evs)
		return t, old, found, false, err
	}
	clientGens, tokenGens := make([]int64, len(expect)), make([]int64, len(expect))
	for i, e := range expect {
		clientGens[i], tokenGens[i] = e.Client, e.Token
	}
	es, callers := make([]store.Event, len(evs)), make([]int64, len(evs))
	for i, e := range evs {
		es[i], callers[i] = e.ev, int64(e.caller+1) // (ordinalities count from 1)
	}
	// The callers whose generations held are counted in arrival order (v's
	// ordinality): those ranked within the uses the update added have
	// their events inserted, as useBatch.counts and coalescedUse's rank
	// decide for them.
	var f tokenFields
	err = db.queryRowWrite(ctx, `WITH g AS (`+generationsQuery+`),
		v AS (SELECT v.ord, row_number() OVER (ORDER BY v.ord) AS rank
			FROM unnest(?::bigint[], ?::bigint[]) WITH ORDINALITY AS v(client_gen, token_gen, ord), g
			WHERE v.client_gen < 0 OR v.client_gen = g.client AND v.token_gen = g.token),
		callers AS (SELECT count(*) AS n FROM v),
		old AS (SELECT usage_count FROM tokens WHERE hash = ? AND usage_limit > 0`+db.d.ForUpdate+`),
		counted AS (UPDATE tokens SET usage_count = LEAST(usage_limit, tokens.usage_count + callers.n) FROM old, callers, g
			WHERE hash = ? AND tokens.usage_count < usage_limit AND callers.n > 0
			RETURNING `+qualify("tokens", tokenColumns)+`, old.usage_count AS old_count, g.client, g.token),
		events AS (INSERT INTO events (`+eventRowColumns+`)
			SELECT `+qualify("e", eventRowColumns)+`
			FROM unnest(`+eventArrayParams+`, ?::bigint[]) AS e(`+eventRowColumns+`, caller)
			JOIN v ON v.ord = e.caller, counted
			WHERE v.rank <= counted.usage_count - counted.old_count)
		SELECT * FROM counted`,
		append([]any{clientGens, tokenGens, hash, hash}, append(eventArrays(es), callers)...)...).Scan(append(f.dest(), &old, &found.Client, &found.Token)...)
	if err == nil {
		t, err := f.token()
		return t, old, found, true, err
	}
	if !errors.Is(err, sql.ErrNoRows) {
		return store.Token{}, 0, found, false, db.scanErr(err)
	}
	// No use was left, or no caller's generations held: the generations
	// read again tell which (they only grow, so a caller that did not
	// match the write's does not match these).
	f = tokenFields{}
	err = db.queryRowWrite(ctx, `SELECT `+tokenColumns+`, g.client, g.token FROM tokens, (`+generationsQuery+`) AS g
		WHERE hash = ?`, hash).Scan(append(f.dest(), &found.Client, &found.Token)...)
	if err != nil {
		return store.Token{}, 0, found, false, db.scanErr(err)
	}
	if t, err = f.token(); err != nil {
		return t, 0, found, false, err
	}
	return t, t.UsageCount, found, true, store.ErrConflict
}

// countUsesInTx is countUses as a read and an update in one transaction,
// where RETURNING cannot name the count before the update (SQLite). There
// the transaction is a part of the single writer's shared commit, which
// holds the row from the read to the update. Every caller is counted, in
// arrival order, so the first ones get the uses left and their events.
func (db *DB) countUsesInTx(ctx context.Context, hash []byte, n int, evs []useEvent) (t store.Token, old int, err error) {
	err = db.Tx(ctx, func(st store.Store) error {
		tx := st.(*DB)
		var err error
		if t, err = scanToken(tx.queryRow(ctx, `SELECT `+tokenColumns+` FROM tokens WHERE hash = ?`, hash)); err != nil {
			return tx.scanErr(err)
		}
		old = t.UsageCount
		if t.UsageLimit <= 0 || old >= t.UsageLimit {
			return store.ErrConflict
		}
		t.UsageCount = min(t.UsageLimit, old+n)
		if _, err = tx.exec(ctx, `UPDATE tokens SET usage_count = ? WHERE hash = ?`, t.UsageCount, hash); err != nil {
			return err
		}
		var es []store.Event
		for _, e := range evs {
			if e.caller < t.UsageCount-old {
				es = append(es, e.ev)
			}
		}
		if len(es) == 0 {
			return nil
		}
		return tx.AppendEvents(ctx, es...)
	})
	return t, old, err
}
