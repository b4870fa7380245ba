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
// each; a lone caller runs at once.
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
	n    int // callers
	done chan struct{}
	t    store.Token // the token after the statement
	old  int         // its count before
	err  error
}

func (db *DB) coalescedUse(ctx context.Context, hash []byte) (store.Token, error) {
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
	me := b.n
	b.n++
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
	if b.err != nil {
		return b.t, b.err
	}
	if granted := b.t.UsageCount - b.old; me >= granted {
		return b.t, store.ErrConflict
	}
	t := b.t
	t.UsageCount = b.old + me + 1
	return t, nil
}

// runUses runs b's statement, then the batch that gathered meanwhile, if
// any, in a goroutine of its own: a batch serves many callers, so no
// caller's context cancels it.
func (db *DB) runUses(key string, hash []byte, b *useBatch) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	b.t, b.old, b.err = db.countUses(ctx, hash, b.n)
	cancel()
	close(b.done) // the token's cache entry stays, as in CountTokenUse
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

// countUses adds n uses, up to the limit, and returns the token after and
// its count before; ErrConflict (with the token) when none was left.
func (db *DB) countUses(ctx context.Context, hash []byte, n int) (store.Token, int, error) {
	if !db.d.ReturningFrom {
		return db.countUsesInTx(ctx, hash, n)
	}
	var f tokenFields
	var old int
	err := db.queryRowWrite(ctx, `WITH old AS (SELECT usage_count FROM tokens WHERE hash = ? AND usage_limit > 0`+db.d.ForUpdate+`)
		UPDATE tokens SET usage_count = LEAST(usage_limit, tokens.usage_count + ?) FROM old
		WHERE hash = ? AND tokens.usage_count < usage_limit
		RETURNING `+qualify("tokens", tokenColumns)+`, old.usage_count`, hash, n, hash).Scan(append(f.dest(), &old)...)
	if err == nil {
		t, err := f.token()
		return t, old, err
	}
	if !errors.Is(err, sql.ErrNoRows) {
		return store.Token{}, 0, db.scanErr(err)
	}
	t, err := scanToken(db.queryRowWrite(ctx, `SELECT `+tokenColumns+` FROM tokens WHERE hash = ?`, hash))
	if err != nil {
		return t, 0, db.scanErr(err)
	}
	return t, t.UsageCount, store.ErrConflict
}

// countUsesInTx is countUses as a read and an update in one transaction,
// where RETURNING cannot name the count before the update (SQLite). There
// the transaction is a part of the single writer's shared commit, which
// holds the row from the read to the update.
func (db *DB) countUsesInTx(ctx context.Context, hash []byte, n int) (t store.Token, old int, err error) {
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
		_, err = tx.exec(ctx, `UPDATE tokens SET usage_count = ? WHERE hash = ?`, t.UsageCount, hash)
		return err
	})
	return t, old, err
}
