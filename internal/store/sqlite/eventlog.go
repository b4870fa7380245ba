package sqlite

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"log/slog"
	"maps"
	"os"
	"sync"
	"time"

	"github.com/latchkey/latchkey/internal/store"
	"github.com/latchkey/latchkey/internal/store/sqlstore"
)

// The event log makes an event recorded outside a transaction durable with
// one write(2) to an append-only file, shared by the callers that arrive
// together, instead of a commit that updates the events table's eight
// b-trees. The events are indexed into the table behind, in large batches.
// Like SQLite's WAL with synchronous=NORMAL, a write that returned survives
// a crash of the process (SIGKILL), not a crash of the machine: openEventLog
// replays what was written and not yet indexed.
//
// File format: a sequence of records, each
//
//	[4] length n of the payload, little-endian
//	[4] CRC-32C (Castagnoli) of the 4 length bytes and the payload, little-endian
//	[n] payload: a version byte (1), the 13 string fields of store.Event in
//	    declaration order (ID ... Partition) as uvarint length + bytes,
//	    Occurred as a zigzag varint of Unix milliseconds (the table keeps
//	    milliseconds), then Context as a uvarint count of key/value pairs,
//	    each string as uvarint length + bytes.
//
// A replay ends at the first record that is cut short, fails its checksum or
// does not decode: a crash mid-write leaves such a tail, and it was never
// acknowledged.
//
// Events of a transaction are written ahead (WriteAhead): the group commit
// writes its transactions' events before its COMMIT, as records of version
// 2 (the version byte, the batch's number as a uvarint, then as version
// 1), and the transaction sets event_log_batch to that number. A replay
// keeps them when the table's number is at least theirs and no abort
// record (version 3: the version byte and the batch's number) follows
// them: their transaction committed. Batches commit in the order of their
// numbers, on the single writer, and a failed commit's abort record is
// written before the next batch begins.

// Defaults of the event log; eventLogOptions lets tests change them.
const (
	logIndexBatch  = 250                    // index as soon as this many events wait (an index holds the writer: see PERFORMANCE.md)
	logIndexDelay  = 200 * time.Millisecond // or this long after the first of them was written
	logMaxPending  = 100_000                // appenders wait for the indexer beyond this
	logCompactSize = 4 << 20                // start the file afresh once it is indexed and this large
	logReplayTx    = 10_000                 // events per transaction of a replay
	maxRecord      = 16 << 20               // larger payloads are refused, and read as corruption
	recordHeader   = 8
	recordVersion  = 1 // an event recorded outside a transaction
	recordAhead    = 2 // an event of a batch, written ahead of its commit
	recordAbort    = 3 // the batch's transaction did not commit
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

var errLogClosed = errors.New("sqlite: event log closed")

type eventLogOptions struct {
	indexBatch  int
	indexDelay  time.Duration
	maxPending  int
	compactSize int64
	noIndexer   bool // tests: no background indexing, only Flush and Close index
}

func defaultEventLogOptions() eventLogOptions {
	return eventLogOptions{indexBatch: logIndexBatch, indexDelay: logIndexDelay, maxPending: logMaxPending,
		compactSize: logCompactSize}
}

// eventLog is the durable event log of a SQLite store. When nested, its
// locks are taken in the order sem (indexing), wmu (the file), pmu (the
// pending records); mu (the batch being filled) is never held with another.
type eventLog struct {
	db   *sqlstore.DB
	log  *slog.Logger
	path string
	opt  eventLogOptions

	// mu guards the batch that the next write carries and the writer's state.
	mu      sync.Mutex
	fill    *logBatch
	spare   []byte // the buffer of the previous write, reused
	writing bool   // a writer goroutine runs
	closed  bool
	writers sync.WaitGroup

	// wmu serialises the file: write(2), truncation, replacement.
	wmu    sync.Mutex
	f      *os.File
	size   int64    // bytes in the file
	broken error    // the file holds bytes that no replay could pass: refuse to write more
	batch  int64    // the number of the last batch written ahead
	guard  *os.File // locked shared while records leave the file (openGuard)

	// pmu guards the records written and not yet indexed.
	pmu      sync.Mutex
	pending  []byte // those records, exactly as in the file (its tail)
	pendingN int
	written  uint64 // events written since open
	indexed  uint64 // of which indexed
	firstAt  time.Time
	retryAt  time.Time      // after a failed index, the indexer waits until then
	drained  chan struct{}  // closed and replaced by every successful index (back-pressure)
	aborted  map[int64]bool // batches written ahead whose transaction did not commit

	sem  chan struct{} // one index at a time: the indexer's, a Flush's or Close's
	wake chan struct{} // the indexer has something to consider
	stop chan struct{} // closed by Close
	done chan struct{} // closed when the indexer has returned
}

// logBatch is the records of one write and its outcome.
type logBatch struct {
	buf  []byte
	n    int
	err  error
	done chan struct{}
}

// openEventLog opens (creating) the log file at path, replays every complete,
// checksummed record into db (IndexEvents, in one or a few transactions),
// then truncates the file. A torn or corrupt tail (a record cut by a crash
// mid-write, or garbage) ends the replay at the last good record: those
// bytes were never acknowledged.
func openEventLog(ctx context.Context, path string, db *sqlstore.DB, log *slog.Logger) (*eventLog, error) {
	return openEventLogWith(ctx, path, db, log, defaultEventLogOptions())
}

func openEventLogWith(ctx context.Context, path string, db *sqlstore.DB, log *slog.Logger, opt eventLogOptions) (*eventLog, error) {
	if log == nil {
		log = slog.Default()
	}
	// A compaction cut short by a crash leaves its new file behind; the log
	// itself still holds every record.
	if err := os.Remove(path + ".tmp"); err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("sqlite: event log: %w", err)
	}
	f, err := os.OpenFile(path, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o600)
	if err != nil {
		return nil, fmt.Errorf("sqlite: event log: %w", err)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("sqlite: event log: %w", err)
	}
	rs, good := decodeLog(data)
	if good < len(data) {
		log.Warn("event log: ignoring a torn or corrupt tail", "path", path, "bytes", len(data)-good)
	}
	committed, err := db.CommittedBatch(ctx)
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("sqlite: event log: %w", err)
	}
	es := replayable(rs, committed)
	for rest := es; len(rest) > 0; {
		n := min(len(rest), logReplayTx)
		if err := indexEvents(ctx, db, rest[:n]); err != nil {
			f.Close()
			return nil, fmt.Errorf("sqlite: event log replay: %w", err)
		}
		rest = rest[n:]
	}
	guard, err := openGuard(path)
	if err != nil {
		f.Close()
		return nil, err
	}
	// Every record to keep is in the table now; the tail was never
	// acknowledged, the batches past the table's number never committed.
	// (Not while a backup copies the log: guardShared waits for it.)
	err = guardShared(guard, true)
	if err == nil {
		err = f.Truncate(0)
		guardRelease(guard)
	}
	if err != nil {
		guard.Close()
		f.Close()
		return nil, fmt.Errorf("sqlite: event log: %w", err)
	}
	if len(rs) > 0 {
		log.Info("event log: replayed", "path", path, "events", len(es), "dropped", eventsOf(rs)-len(es))
	}
	l := &eventLog{db: db, log: log, path: path, opt: opt, f: f, guard: guard, batch: committed,
		aborted: map[int64]bool{},
		fill:    &logBatch{done: make(chan struct{})},
		drained: make(chan struct{}),
		sem:     make(chan struct{}, 1), wake: make(chan struct{}, 1),
		stop: make(chan struct{}), done: make(chan struct{}),
	}
	if opt.noIndexer {
		close(l.done)
	} else {
		go l.indexLoop()
	}
	return l, nil
}

// indexEvents indexes es in a transaction of their own: a batch is large,
// and the group commit then runs it alone, without a savepoint.
func indexEvents(ctx context.Context, db *sqlstore.DB, es []store.Event) error {
	return db.BulkTx(ctx, func(tx store.Store) error { return indexInto(ctx, tx, es) })
}

func indexInto(ctx context.Context, tx store.Store, es []store.Event) error {
	ix, ok := tx.(interface {
		IndexEvents(context.Context, ...store.Event) error
	})
	if !ok {
		return fmt.Errorf("sqlite: event log: %T cannot index events", tx)
	}
	return ix.IndexEvents(ctx, es...)
}

// AppendEvents writes es to the log and returns once they are written
// (write(2) returned). Group commit: while one write runs, callers queue;
// the next write carries everything queued. Events of unknown kinds are
// refused before anything is written.
func (l *eventLog) AppendEvents(ctx context.Context, es ...store.Event) error {
	if err := store.CheckEventKinds(es); err != nil {
		return err
	}
	if len(es) == 0 {
		return nil
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := l.waitForRoom(ctx); err != nil {
		return err
	}
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		return errLogClosed
	}
	b := l.fill
	mark := len(b.buf)
	for _, e := range es {
		var err error
		if b.buf, err = appendRecord(b.buf, e); err != nil {
			b.buf = b.buf[:mark] // none of es is written
			l.mu.Unlock()
			return err
		}
	}
	b.n += len(es)
	if !l.writing {
		l.writing = true
		l.writers.Add(1)
		go l.writeLoop()
	}
	l.mu.Unlock()
	select {
	case <-b.done:
		return b.err
	case <-ctx.Done():
		return ctx.Err() // the request is gone; its events may still be written
	}
}

// waitForRoom holds an appender back while too many events wait to be
// indexed: memory stays bounded when indexing falls behind or fails.
func (l *eventLog) waitForRoom(ctx context.Context) error {
	for {
		l.pmu.Lock()
		if l.pendingN < l.opt.maxPending {
			l.pmu.Unlock()
			return nil
		}
		drained := l.drained
		l.pmu.Unlock()
		l.kick()
		select {
		case <-drained:
		case <-l.stop:
			return errLogClosed
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// writeLoop writes the queued batches until none is left, then ends, so an
// idle log holds no writer goroutine.
func (l *eventLog) writeLoop() {
	defer l.writers.Done()
	var prev []byte
	for {
		l.mu.Lock()
		if prev != nil && cap(prev) <= 1<<20 { // a burst's large buffer is not kept
			l.spare = prev[:0]
		}
		b := l.fill
		if b.n == 0 {
			l.writing = false
			l.mu.Unlock()
			return
		}
		l.fill = &logBatch{buf: l.spare, done: make(chan struct{})}
		l.spare = nil
		l.mu.Unlock()
		b.err = l.write(b.buf, b.n)
		prev = b.buf
		close(b.done)
	}
}

// write appends buf, holding n records, to the file and to the pending records.
func (l *eventLog) write(buf []byte, n int) error {
	l.wmu.Lock()
	defer l.wmu.Unlock()
	return l.writeLocked(buf, n)
}

// writeLocked is write; the caller holds wmu.
func (l *eventLog) writeLocked(buf []byte, n int) error {
	if l.broken != nil {
		return l.broken
	}
	if l.f == nil {
		return errLogClosed
	}
	if _, err := l.f.Write(buf); err != nil {
		// A partial record would end every later replay before the records
		// written after it: cut it off, or write no more.
		if terr := l.f.Truncate(l.size); terr != nil {
			l.broken = fmt.Errorf("sqlite: event log %s unusable after a failed write: %w", l.path, terr)
			l.log.Error("event log: cannot undo a partial write", "path", l.path, "err", terr)
		}
		return fmt.Errorf("sqlite: event log: %w", err)
	}
	l.size += int64(len(buf))
	l.pmu.Lock()
	if l.pendingN == 0 {
		l.firstAt = time.Now()
	}
	l.pending = append(l.pending, buf...)
	l.pendingN += n
	l.written += uint64(n)
	kick := l.pendingN == n || l.pendingN >= l.opt.indexBatch
	l.pmu.Unlock()
	if kick {
		l.kick()
	}
	return nil
}

// WriteAhead writes the events of a group commit's batch before its
// COMMIT (sqlstore.EventsAhead), directly: the batch holds the single
// writer, which the indexer needs, so it neither queues behind other
// appenders nor waits for room.
func (l *eventLog) WriteAhead(es []store.Event) (int64, error) {
	l.wmu.Lock()
	defer l.wmu.Unlock()
	batch := l.batch + 1
	var buf []byte
	for _, e := range es {
		var err error
		if buf, err = appendAheadRecord(buf, e, batch); err != nil {
			return 0, err
		}
	}
	if err := l.writeLocked(buf, len(es)); err != nil {
		return 0, err
	}
	l.batch = batch
	return batch, nil
}

// Abort records that batch did not commit. Should the record not be
// written, the log takes no more writes: the batches after batch would
// record numbers above it, and a replay would keep its events.
func (l *eventLog) Abort(batch int64) {
	l.wmu.Lock()
	defer l.wmu.Unlock()
	l.pmu.Lock()
	l.aborted[batch] = true
	l.pmu.Unlock()
	if err := l.writeLocked(appendAbortRecord(nil, batch), 1); err != nil {
		if l.broken == nil {
			l.broken = fmt.Errorf("sqlite: event log %s unusable: cannot record an aborted batch: %w", l.path, err)
		}
		l.log.Error("event log: cannot record an aborted batch", "path", l.path, "batch", batch, "err", err)
	}
}

func (l *eventLog) kick() {
	select {
	case l.wake <- struct{}{}:
	default:
	}
}

// Backlog is the number of events written to the log and not yet indexed.
func (l *eventLog) Backlog() int {
	l.pmu.Lock()
	defer l.pmu.Unlock()
	return l.pendingN
}

// indexLoop indexes the pending events when enough wait or the first of
// them has waited long enough, until Close.
func (l *eventLog) indexLoop() {
	defer close(l.done)
	t := time.NewTimer(time.Hour)
	t.Stop()
	for {
		wait := l.indexDue()
		if wait == 0 {
			l.sem <- struct{}{}
			err := l.index(context.Background())
			<-l.sem
			if err != nil {
				l.log.Error("event log: indexing failed; retrying", "err", err)
			}
			continue
		}
		var timer <-chan time.Time
		if wait > 0 {
			t.Reset(wait)
			timer = t.C
		}
		select {
		case <-l.stop:
			t.Stop()
			return
		case <-l.wake:
		case <-timer:
		}
		t.Stop()
	}
}

// indexDue returns 0 when the pending events are to be indexed now, how
// long until they are, or -1 when none is pending.
func (l *eventLog) indexDue() time.Duration {
	l.pmu.Lock()
	defer l.pmu.Unlock()
	if l.pendingN == 0 {
		return -1
	}
	now := time.Now()
	if now.Before(l.retryAt) {
		return l.retryAt.Sub(now)
	}
	if l.pendingN >= l.opt.indexBatch || l.pendingN >= l.opt.maxPending {
		return 0
	}
	return max(l.firstAt.Add(l.opt.indexDelay).Sub(now), 0)
}

// index indexes every pending event; the caller holds sem. On failure the
// events stay pending (and in the file) for the next attempt. The pending
// records are taken inside the indexing transaction, which holds the single
// writer: every batch written ahead before it has committed or aborted.
func (l *eventLog) index(ctx context.Context) error {
	l.pmu.Lock()
	n := l.pendingN
	l.pmu.Unlock()
	if n == 0 {
		return nil
	}
	var snap []byte
	err := l.db.BulkTx(ctx, func(tx store.Store) error {
		l.pmu.Lock()
		snap, n = l.pending, l.pendingN
		aborted := maps.Clone(l.aborted)
		l.pmu.Unlock()
		// The writer only appends to pending, so snap's bytes stay as they are.
		rs, good := decodeLog(snap)
		if good != len(snap) || len(rs) != n {
			return fmt.Errorf("sqlite: event log: %d pending records do not decode", n) // a bug, not a crash
		}
		var es []store.Event
		for _, r := range rs {
			if !r.abort && !aborted[r.batch] {
				es = append(es, r.e)
			}
		}
		return indexInto(ctx, tx, es)
	})
	now := time.Now()
	l.pmu.Lock()
	if err != nil {
		l.retryAt = now.Add(l.opt.indexDelay)
		l.pmu.Unlock()
		return err
	}
	rest := l.pending[len(snap):]
	if cap(l.pending) > 2*logCompactSize && len(rest) < logCompactSize/2 {
		l.pending = append([]byte(nil), rest...) // let a backlog's buffer go
	} else {
		l.pending = append(l.pending[:0], rest...)
	}
	if len(rest) == 0 {
		clear(l.aborted) // their records have left the pending ones
	}
	l.pendingN -= n
	l.indexed += uint64(n)
	l.firstAt = now // the rest were written during the index: due no later than their own delay
	l.retryAt = time.Time{}
	close(l.drained)
	l.drained = make(chan struct{})
	l.pmu.Unlock()
	l.compact()
	return nil
}

// compact starts the file afresh once it is large: empty when every record
// is indexed; otherwise a new file holding only the records still pending
// replaces it by rename, so a crash finds every pending record in the old
// file or in the new one. (Under steady load some events are always pending
// after an index, so waiting for none would let the file grow without end.)
func (l *eventLog) compact() {
	l.wmu.Lock()
	defer l.wmu.Unlock()
	if l.f == nil || l.broken != nil || l.size <= l.opt.compactSize {
		return
	}
	if guardShared(l.guard, false) != nil {
		return // a backup copies the log: after it
	}
	defer guardRelease(l.guard)
	l.pmu.Lock()
	rest := l.pending // the writer, its only other mutator, waits for wmu
	l.pmu.Unlock()
	if len(rest) == 0 {
		if err := l.f.Truncate(0); err != nil {
			l.log.Error("event log: cannot truncate", "path", l.path, "err", err)
			return
		}
		l.size = 0
		return
	}
	tmp := l.path + ".tmp"
	f, err := os.OpenFile(tmp, os.O_APPEND|os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o600)
	if err == nil {
		if _, err = f.Write(rest); err == nil {
			err = os.Rename(tmp, l.path)
		}
		if err != nil {
			f.Close()
			os.Remove(tmp)
		}
	}
	if err != nil {
		l.log.Error("event log: cannot compact", "path", l.path, "err", err)
		return
	}
	l.f.Close()
	l.f, l.size = f, int64(len(rest))
}

// Flush indexes every event appended so far into the events table and
// returns when they are committed there. Safe for concurrent use, also
// while appends go on: it indexes at least what was appended before it.
func (l *eventLog) Flush(ctx context.Context) error {
	l.pmu.Lock()
	target, done := l.written, l.indexed >= l.written
	l.pmu.Unlock()
	if done {
		return nil // nothing to index: no wait for an index run of later events
	}
	select {
	case l.sem <- struct{}{}:
	case <-ctx.Done():
		return ctx.Err()
	}
	defer func() { <-l.sem }()
	l.pmu.Lock()
	done = l.indexed >= target // a concurrent Flush or the indexer did it
	l.pmu.Unlock()
	if done {
		return nil
	}
	return l.index(ctx)
}

// Close flushes, stops background work and closes the file. The file is
// left empty when every event is indexed; otherwise the next open replays it.
func (l *eventLog) Close() error {
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		return nil
	}
	l.closed = true
	l.mu.Unlock()
	l.writers.Wait() // every accepted batch is written
	close(l.stop)
	<-l.done
	l.sem <- struct{}{}
	defer func() { <-l.sem }()
	// A group commit that took the log before it was detached (lock.go)
	// writes ahead to it still: a transaction of the writer's queue after
	// it waits for that batch, whose records the index below then takes.
	err := l.db.BulkTx(context.Background(), func(store.Store) error { return nil })
	if err == nil {
		err = l.index(context.Background())
	}
	l.wmu.Lock()
	defer l.wmu.Unlock()
	l.pmu.Lock()
	empty := l.pendingN == 0
	l.pmu.Unlock()
	// A backup copying the log keeps it as it is; the next open replays it.
	if err == nil && empty && l.broken == nil && guardShared(l.guard, false) == nil {
		err = l.f.Truncate(0)
		guardRelease(l.guard)
	}
	err = errors.Join(err, l.f.Close(), l.guard.Close())
	l.f = nil
	return err
}

// erase runs fn, a transaction that scrubs the events table for an erased
// person, so that no copy of those events is left in the log either:
// before fn, every pending event is indexed (fn's scrub then finds it in
// the table); while fn runs nothing is indexed (a record with the
// person's data cannot reach the table behind fn's scrub); after fn, the
// records written meanwhile that are about the person are scrubbed, in
// memory and in the file, and the file starts afresh with only the pending
// records: the records indexed before held the data too. Appends go on
// throughout.
func (l *eventLog) erase(ctx context.Context, fn func() (store.Erasure, error)) error {
	select {
	case l.sem <- struct{}{}:
	case <-ctx.Done():
		return ctx.Err()
	}
	defer func() { <-l.sem }()
	if err := l.index(ctx); err != nil {
		return err
	}
	x, err := fn()
	if err != nil {
		return err
	}
	return l.rewrite(x)
}

// rewrite scrubs the pending records about x's person and replaces the
// file by one that holds the pending records only (by rename, as compact
// does, so a crash finds every pending record in the old file or the new).
func (l *eventLog) rewrite(x store.Erasure) error {
	// Not while a backup copies the log: it waits for the copy, before wmu,
	// so that appends and the group commit's writes go on meanwhile.
	if err := guardShared(l.guard, true); err != nil {
		return fmt.Errorf("sqlite: event log: %w", err)
	}
	defer guardRelease(l.guard)
	l.wmu.Lock()
	defer l.wmu.Unlock()
	if l.f == nil {
		return errLogClosed
	}
	if l.broken != nil {
		return l.broken
	}
	l.pmu.Lock()
	pending := l.pending // the writer, its only other mutator, waits for wmu
	l.pmu.Unlock()
	rs, good := decodeLog(pending)
	if good != len(pending) {
		return fmt.Errorf("sqlite: event log: pending records do not decode")
	}
	var buf []byte
	for _, r := range rs {
		var err error
		switch {
		case r.abort:
			buf = appendAbortRecord(buf, r.batch)
		case x.About(r.e):
			x.Scrub(&r.e)
			fallthrough
		default:
			buf, err = appendRecordOf(buf, r)
		}
		if err != nil {
			return err
		}
	}
	tmp := l.path + ".tmp"
	f, err := os.OpenFile(tmp, os.O_APPEND|os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o600)
	if err != nil {
		return fmt.Errorf("sqlite: event log: %w", err)
	}
	if _, err = f.Write(buf); err == nil {
		err = f.Sync()
	}
	if err == nil {
		err = os.Rename(tmp, l.path)
	}
	if err != nil {
		f.Close()
		os.Remove(tmp)
		return fmt.Errorf("sqlite: event log: %w", err)
	}
	l.f.Close()
	l.f, l.size = f, int64(len(buf))
	l.pmu.Lock()
	l.pending = buf
	l.pmu.Unlock()
	return nil
}

// appendRecord appends the record of e, recorded outside a transaction, to buf.
func appendRecord(buf []byte, e store.Event) ([]byte, error) {
	return appendRecordOf(buf, logRecord{e: e})
}

// appendAheadRecord appends the record of e, an event of batch, to buf.
func appendAheadRecord(buf []byte, e store.Event, batch int64) ([]byte, error) {
	return appendRecordOf(buf, logRecord{e: e, batch: batch})
}

// appendAbortRecord appends the record that batch did not commit to buf.
func appendAbortRecord(buf []byte, batch int64) []byte {
	start := len(buf)
	buf = append(buf, 0, 0, 0, 0, 0, 0, 0, 0, recordAbort)
	buf = binary.AppendUvarint(buf, uint64(batch))
	return frame(buf, start)
}

// appendRecordOf appends the record of an event, of a batch or none.
func appendRecordOf(buf []byte, r logRecord) ([]byte, error) {
	e := r.e
	start := len(buf)
	if r.batch == 0 {
		buf = append(buf, 0, 0, 0, 0, 0, 0, 0, 0, recordVersion)
	} else {
		buf = binary.AppendUvarint(append(buf, 0, 0, 0, 0, 0, 0, 0, 0, recordAhead), uint64(r.batch))
	}
	for _, s := range [...]string{e.ID, e.Kind, e.Type, e.Name, e.ClientID, e.AppName, e.TransactionID, e.UserID,
		e.PersonID, e.ClientIP, e.UserAgent, e.AgentUser, e.Partition} {
		buf = appendString(buf, s)
	}
	buf = binary.AppendVarint(buf, e.Occurred.UnixMilli())
	buf = binary.AppendUvarint(buf, uint64(len(e.Context)))
	for k, v := range e.Context {
		buf = appendString(appendString(buf, k), v)
	}
	if n := len(buf) - start - recordHeader; n > maxRecord {
		return buf[:start], fmt.Errorf("sqlite: event %s: %d bytes, more than the event log takes", e.ID, n)
	}
	return frame(buf, start), nil
}

// frame fills in the header of the record that starts at start.
func frame(buf []byte, start int) []byte {
	n := len(buf) - start - recordHeader
	binary.LittleEndian.PutUint32(buf[start:], uint32(n))
	binary.LittleEndian.PutUint32(buf[start+4:], recordCRC(buf[start:start+4], buf[start+recordHeader:]))
	return buf
}

func appendString(buf []byte, s string) []byte {
	return append(binary.AppendUvarint(buf, uint64(len(s))), s...)
}

// recordCRC covers the length too: a corrupt length then fails the check
// instead of framing a wrong payload.
func recordCRC(length, payload []byte) uint32 {
	return crc32.Update(crc32.Update(0, castagnoli, length), castagnoli, payload)
}

// logRecord is a decoded record: an event (of batch, 0 when recorded
// outside a transaction), or the abort of batch.
type logRecord struct {
	e     store.Event
	batch int64
	abort bool
}

// decodeLog decodes the complete, checksummed records at the start of
// data, stopping at the first one that is cut short, fails its checksum or
// does not decode. good is the length of the prefix they fill.
func decodeLog(data []byte) (rs []logRecord, good int) {
	for {
		rest := data[good:]
		if len(rest) < recordHeader {
			return rs, good
		}
		n := binary.LittleEndian.Uint32(rest)
		if n > maxRecord || int(n) > len(rest)-recordHeader {
			return rs, good
		}
		payload := rest[recordHeader : recordHeader+n]
		if binary.LittleEndian.Uint32(rest[4:]) != recordCRC(rest[:4], payload) {
			return rs, good
		}
		r, ok := decodeRecord(string(payload))
		if !ok {
			return rs, good
		}
		rs = append(rs, r)
		good += recordHeader + int(n)
	}
}

// decodeRecords is decodeLog's events, whatever their batch.
func decodeRecords(data []byte) (es []store.Event, good int) {
	rs, good := decodeLog(data)
	for _, r := range rs {
		if !r.abort {
			es = append(es, r.e)
		}
	}
	return es, good
}

// replayable is the events of rs to index after a restart, when the last
// batch that committed is committed: those recorded outside a transaction,
// and those of batches that committed.
func replayable(rs []logRecord, committed int64) []store.Event {
	aborted := map[int64]bool{}
	for _, r := range rs {
		if r.abort {
			aborted[r.batch] = true
		}
	}
	var es []store.Event
	for _, r := range rs {
		if !r.abort && (r.batch == 0 || r.batch <= committed && !aborted[r.batch]) {
			es = append(es, r.e)
		}
	}
	return es
}

// eventsOf counts the events of rs.
func eventsOf(rs []logRecord) int {
	n := 0
	for _, r := range rs {
		if !r.abort {
			n++
		}
	}
	return n
}

// decodeRecord decodes a payload.
func decodeRecord(p string) (r logRecord, ok bool) {
	d := decoder{p: p}
	switch d.byte() {
	case recordVersion:
	case recordAhead:
		r.batch = int64(d.uvarint())
		if r.batch <= 0 {
			return r, false
		}
	case recordAbort:
		r.batch, r.abort = int64(d.uvarint()), true
		return r, !d.bad && r.batch > 0 && len(d.p) == 0
	default:
		return r, false
	}
	r.e, ok = d.event()
	return r, ok
}

// decodeEvent decodes the payload of an event recorded outside a transaction.
func decodeEvent(p string) (e store.Event, ok bool) {
	d := decoder{p: p}
	if d.byte() != recordVersion {
		return e, false
	}
	return d.event()
}

// event decodes the rest of an event's payload. The strings of the event
// share p's memory: one allocation per event rather than one per field.
func (d *decoder) event() (e store.Event, ok bool) {
	for _, s := range [...]*string{&e.ID, &e.Kind, &e.Type, &e.Name, &e.ClientID, &e.AppName, &e.TransactionID,
		&e.UserID, &e.PersonID, &e.ClientIP, &e.UserAgent, &e.AgentUser, &e.Partition} {
		*s = d.string()
	}
	ms := d.varint()
	e.Occurred = time.UnixMilli(ms).UTC()
	// Each pair takes at least two bytes: a garbage count cannot size a huge map.
	if n := d.uvarint(); n > 0 && !d.bad && n <= uint64(len(d.p)/2) {
		e.Context = make(map[string]string, n)
		for range n {
			k := d.string()
			e.Context[k] = d.string()
		}
	} else if n > 0 {
		d.bad = true
	}
	return e, !d.bad && len(d.p) == 0
}

// decoder reads a payload; a read past its end sets bad and yields zeros.
type decoder struct {
	p   string
	bad bool
}

func (d *decoder) byte() byte {
	if len(d.p) == 0 {
		d.bad = true
		return 0
	}
	b := d.p[0]
	d.p = d.p[1:]
	return b
}

func (d *decoder) uvarint() uint64 {
	var x uint64
	for i := 0; i < binary.MaxVarintLen64; i++ {
		if i >= len(d.p) {
			break
		}
		b := d.p[i]
		if i == binary.MaxVarintLen64-1 && b > 1 {
			break // overflows 64 bits
		}
		x |= uint64(b&0x7f) << (7 * i)
		if b < 0x80 {
			d.p = d.p[i+1:]
			return x
		}
	}
	d.bad = true
	return 0
}

func (d *decoder) varint() int64 {
	u := d.uvarint()
	return int64(u>>1) ^ -int64(u&1)
}

func (d *decoder) string() string {
	n := d.uvarint()
	if d.bad || n > uint64(len(d.p)) {
		d.bad = true
		return ""
	}
	s := d.p[:n]
	d.p = d.p[n:]
	return s
}
