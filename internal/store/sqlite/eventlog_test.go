package sqlite

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/latchkey/latchkey/internal/store"
)

func testEvent(i int) store.Event {
	return store.Event{
		ID: fmt.Sprintf("ev-%06d", i), Kind: store.EventOAuth, Type: "TOKEN_INTROSPECTION_SUCCESS",
		Name: "Token introspection success", ClientID: "client-1", AppName: "App One",
		TransactionID: fmt.Sprintf("tx-%06d", i), UserID: "Alice@Example.com", PersonID: "person-1",
		ClientIP: "192.0.2.10", UserAgent: "curl/8.5.0", AgentUser: "agent", Partition: "",
		Context:  map[string]string{"scope": "openid profile", "acr": "2"},
		Occurred: time.UnixMilli(1_790_000_000_000 + int64(i)).UTC(),
	}
}

func testLogger(t testing.TB) *slog.Logger { return slog.New(slog.NewTextHandler(t.Output(), nil)) }

func openTestStore(t testing.TB) *Store {
	st, err := Open(context.Background(), filepath.Join(t.TempDir(), "db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

// openTestLog opens a log on st that Close ends with the test (before st).
func openTestLog(t testing.TB, st *Store, path string, opt eventLogOptions) *eventLog {
	var l *eventLog
	var err error
	if opt == defaultEventLogOptions() {
		l, err = openEventLog(context.Background(), path, st.DB, testLogger(t))
	} else {
		l, err = openEventLogWith(context.Background(), path, st.DB, testLogger(t), opt)
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := l.Close(); err != nil {
			t.Error(err)
		}
	})
	return l
}

// abandonedLog is a log the test leaves as a crash would: no Flush, no
// Close; only its file descriptor is released when the test ends.
func abandonedLog(t testing.TB, st *Store, path string) *eventLog {
	opt := defaultEventLogOptions()
	opt.noIndexer = true
	l, err := openEventLogWith(context.Background(), path, st.DB, testLogger(t), opt)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.f.Close() })
	return l
}

func countEvents(t testing.TB, st *Store) int {
	t.Helper()
	n, err := st.CountEvents(context.Background(), store.EventFilter{Kind: store.EventOAuth}, 1_000_000)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

func fileSize(t testing.TB, path string) int64 {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return fi.Size()
}

func appendAll(t testing.TB, l *eventLog, from, to int) {
	t.Helper()
	for i := from; i < to; i++ {
		if err := l.AppendEvents(context.Background(), testEvent(i)); err != nil {
			t.Fatal(err)
		}
	}
}

func TestIndexEvents(t *testing.T) {
	ctx := context.Background()
	st := openTestStore(t)
	es := make([]store.Event, 1200) // more than one statement
	for i := range es {
		es[i] = testEvent(i)
	}
	if err := st.IndexEvents(ctx, es[:700]...); err != nil {
		t.Fatal(err)
	}
	// Already indexed ids, and a duplicate within the call, are skipped.
	if err := st.IndexEvents(ctx, append(es[500:], es[1100])...); err != nil {
		t.Fatal(err)
	}
	if n := countEvents(t, st); n != len(es) {
		t.Fatalf("%d events, want %d", n, len(es))
	}
	// Only a taken id is skipped. The insert is an OR IGNORE, which would as
	// quietly skip a row that broke another constraint (a NULL in a NOT
	// NULL column): an event with every optional field empty is indexed.
	sparse := store.Event{ID: "ev-sparse", Kind: store.EventOAuth, Type: "TOKEN_INTROSPECTION_FAILED",
		Occurred: time.UnixMilli(1_790_000_000_000).UTC()}
	if err := st.IndexEvents(ctx, sparse); err != nil {
		t.Fatal(err)
	}
	got, err := st.SearchEvents(ctx, store.EventFilter{Kind: store.EventOAuth, Types: []string{sparse.Type}}, 0, 10)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || got[0].ID != sparse.ID || got[0].ClientID != "" || len(got[0].Context) != 0 {
		t.Fatalf("the sparse event reads back as %+v", got)
	}
	es = append(es, sparse)
	bad := testEvent(5000)
	bad.Kind = "other"
	if err := st.IndexEvents(ctx, testEvent(5001), bad); err == nil {
		t.Fatal("unknown kind accepted")
	}
	if n := countEvents(t, st); n != len(es) {
		t.Fatalf("%d events after a refused call, want %d", n, len(es))
	}
}

func TestEventLogRoundTrip(t *testing.T) {
	ctx := context.Background()
	st := openTestStore(t)
	path := filepath.Join(t.TempDir(), "events.log")
	l := openTestLog(t, st, path, defaultEventLogOptions())
	e := testEvent(1)
	e.Occurred = time.Now().In(time.FixedZone("CET", 3600)) // nanoseconds and a zone: the log keeps milliseconds, UTC
	p := store.Event{ID: "p-1", Kind: store.EventPerson, Type: "person.PersonCreatedEvent", Name: "Person Created",
		AgentUser: "admin", PersonID: "person-9", Partition: "part-2", Occurred: time.UnixMilli(1_790_000_000_000).UTC()}
	if err := l.AppendEvents(ctx, e, p); err != nil {
		t.Fatal(err)
	}
	if err := l.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	e.Occurred = time.UnixMilli(e.Occurred.UnixMilli()).UTC() // the table keeps milliseconds, in UTC
	got, err := st.SearchEvents(ctx, store.EventFilter{Kind: store.EventOAuth, UserID: "alice@example.com"}, 0, 10)
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff([]store.Event{e}, got); d != "" {
		t.Fatalf("oauth event (-want +got):\n%s", d)
	}
	got, err = st.SearchEvents(ctx, store.EventFilter{Kind: store.EventPerson}, 0, 10)
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff([]store.Event{p}, got); d != "" {
		t.Fatalf("person event (-want +got):\n%s", d)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if n := fileSize(t, path); n != 0 {
		t.Fatalf("file of %d bytes after Close, want 0", n)
	}
	if err := l.AppendEvents(ctx, testEvent(2)); !errors.Is(err, errLogClosed) {
		t.Fatalf("append after Close: %v", err)
	}
}

// concurrentAppends runs workers goroutines of each appends and checks that
// exactly those events are indexed.
func concurrentAppends(t *testing.T, opt eventLogOptions, workers, each int) {
	ctx := context.Background()
	st := openTestStore(t)
	path := filepath.Join(t.TempDir(), "events.log")
	l := openTestLog(t, st, path, opt)
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			for i := range each {
				if err := l.AppendEvents(ctx, testEvent(w*each+i)); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	if err := l.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	got, err := st.SearchEvents(ctx, store.EventFilter{Kind: store.EventOAuth}, 0, 2*workers*each)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, e := range got {
		if seen[e.ID] {
			t.Fatalf("event %s twice", e.ID)
		}
		seen[e.ID] = true
	}
	for i := range workers * each {
		if !seen[testEvent(i).ID] {
			t.Fatalf("event %d missing (%d of %d indexed)", i, len(seen), workers*each)
		}
	}
	if len(got) != workers*each {
		t.Fatalf("%d events, want %d", len(got), workers*each)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if n := fileSize(t, path); n != 0 {
		t.Fatalf("file of %d bytes after Close, want 0", n)
	}
}

func TestEventLogConcurrent(t *testing.T) {
	t.Run("defaults", func(t *testing.T) { concurrentAppends(t, defaultEventLogOptions(), 50, 200) })
	// Small thresholds: many indexes, compactions and back-pressure waits
	// race with the appends.
	t.Run("small thresholds", func(t *testing.T) {
		concurrentAppends(t, eventLogOptions{indexBatch: 50, indexDelay: time.Millisecond, maxPending: 200,
			compactSize: 8 << 10}, 20, 100)
	})
}

// Each caller searches for its own event right after Flush, while others
// append and flush.
func TestEventLogFlushReadYourWrites(t *testing.T) {
	ctx := context.Background()
	st := openTestStore(t)
	l := openTestLog(t, st, filepath.Join(t.TempDir(), "events.log"), defaultEventLogOptions())
	var wg sync.WaitGroup
	for w := range 20 {
		wg.Go(func() {
			for i := range 10 {
				e := testEvent(w*10 + i)
				if err := l.AppendEvents(ctx, e); err != nil {
					t.Error(err)
					return
				}
				if err := l.Flush(ctx); err != nil {
					t.Error(err)
					return
				}
				n, err := st.CountEvents(ctx, store.EventFilter{Kind: store.EventOAuth, TransactionID: e.TransactionID}, 10)
				if err != nil || n != 1 {
					t.Errorf("event %s after Flush: %d, %v", e.ID, n, err)
					return
				}
			}
		})
	}
	wg.Wait()
}

func TestEventLogCrashReplay(t *testing.T) {
	ctx := context.Background()
	st := openTestStore(t)
	path := filepath.Join(t.TempDir(), "events.log")
	l := abandonedLog(t, st, path)
	appendAll(t, l, 0, 10)
	if err := l.AppendEvents(ctx, testEvent(10), testEvent(11), testEvent(12)); err != nil {
		t.Fatal(err)
	}
	if n := countEvents(t, st); n != 0 {
		t.Fatalf("%d events indexed without an indexer", n)
	}
	// The process dies here: no Flush, no Close.
	l2 := openTestLog(t, st, path, defaultEventLogOptions())
	if n := countEvents(t, st); n != 13 {
		t.Fatalf("%d events after replay, want 13", n)
	}
	if n := fileSize(t, path); n != 0 {
		t.Fatalf("file of %d bytes after replay, want 0", n)
	}
	// The log goes on after a replay.
	appendAll(t, l2, 13, 15)
	if err := l2.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	if n := countEvents(t, st); n != 15 {
		t.Fatalf("%d events, want 15", n)
	}
}

func TestEventLogTornTail(t *testing.T) {
	full, _ := appendRecord(nil, testEvent(3))
	flipped := append([]byte(nil), full...)
	flipped[len(flipped)-1] ^= 1
	for name, tail := range map[string][]byte{
		"cut header":     full[:5],
		"cut payload":    full[:len(full)-3],
		"garbage":        []byte("\x10\x00\x00\x00 not a record at all, just bytes"),
		"bad checksum":   flipped,
		"huge length":    {0xff, 0xff, 0xff, 0x7f, 1, 2, 3, 4, 5},
		"zeros":          make([]byte, 64),
		"bad, then good": append(append([]byte(nil), flipped...), full...),
	} {
		t.Run(name, func(t *testing.T) {
			st := openTestStore(t)
			path := filepath.Join(t.TempDir(), "events.log")
			appendAll(t, abandonedLog(t, st, path), 0, 3)
			f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := f.Write(tail); err != nil {
				t.Fatal(err)
			}
			f.Close()
			openTestLog(t, st, path, defaultEventLogOptions())
			if n := countEvents(t, st); n != 3 {
				t.Fatalf("%d events after replay, want the 3 before the tail", n)
			}
			if n := fileSize(t, path); n != 0 {
				t.Fatalf("file of %d bytes after replay, want 0", n)
			}
		})
	}
}

func TestEventLogReplayIndexed(t *testing.T) {
	ctx := context.Background()
	st := openTestStore(t)
	path := filepath.Join(t.TempDir(), "events.log")
	l := abandonedLog(t, st, path)
	appendAll(t, l, 0, 20)
	if err := l.Flush(ctx); err != nil { // indexed; the file still holds them (it is small)
		t.Fatal(err)
	}
	appendAll(t, l, 20, 25) // and these are not indexed
	if fileSize(t, path) == 0 {
		t.Fatal("file empty before the crash")
	}
	openTestLog(t, st, path, defaultEventLogOptions())
	if n := countEvents(t, st); n != 25 {
		t.Fatalf("%d events after replay, want 25", n)
	}
}

func TestEventLogUnknownKind(t *testing.T) {
	ctx := context.Background()
	st := openTestStore(t)
	path := filepath.Join(t.TempDir(), "events.log")
	l := openTestLog(t, st, path, defaultEventLogOptions())
	bad := testEvent(2)
	bad.Kind = "other"
	if err := l.AppendEvents(ctx, testEvent(1), bad); err == nil {
		t.Fatal("unknown kind accepted")
	}
	if n := fileSize(t, path); n != 0 {
		t.Fatalf("file of %d bytes after a refusal, want 0", n)
	}
	if err := l.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	if n := countEvents(t, st); n != 0 {
		t.Fatalf("%d events after a refusal, want 0", n)
	}
}

func TestEventLogBackPressure(t *testing.T) {
	ctx := context.Background()
	t.Run("waits for Flush", func(t *testing.T) {
		st := openTestStore(t)
		opt := defaultEventLogOptions()
		opt.noIndexer, opt.maxPending = true, 10
		l := openTestLog(t, st, filepath.Join(t.TempDir(), "events.log"), opt)
		appendAll(t, l, 0, 10)
		short, cancel := context.WithTimeout(ctx, 20*time.Millisecond)
		defer cancel()
		if err := l.AppendEvents(short, testEvent(10)); !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("append beyond maxPending: %v, want held back until the deadline", err)
		}
		done := make(chan error, 1)
		go func() { done <- l.AppendEvents(ctx, testEvent(11)) }()
		select {
		case err := <-done:
			t.Fatalf("append beyond maxPending returned %v without waiting", err)
		case <-time.After(20 * time.Millisecond):
		}
		if err := l.Flush(ctx); err != nil {
			t.Fatal(err)
		}
		select {
		case err := <-done:
			if err != nil {
				t.Fatal(err)
			}
		case <-time.After(10 * time.Second):
			t.Fatal("append still held back after Flush")
		}
	})
	t.Run("indexer drains", func(t *testing.T) {
		st := openTestStore(t)
		// Neither the batch size nor the delay is reached: only the
		// back-pressure makes the indexer run.
		opt := eventLogOptions{indexBatch: 1 << 20, indexDelay: time.Hour, maxPending: 10, compactSize: 1 << 20}
		l := openTestLog(t, st, filepath.Join(t.TempDir(), "events.log"), opt)
		done := make(chan struct{})
		go func() {
			defer close(done)
			var wg sync.WaitGroup
			for w := range 10 {
				wg.Go(func() { appendAll(t, l, w*20, w*20+20) })
			}
			wg.Wait()
		}()
		select {
		case <-done:
		case <-time.After(20 * time.Second):
			t.Fatal("appends deadlocked under back-pressure")
		}
		if err := l.Flush(ctx); err != nil {
			t.Fatal(err)
		}
		if n := countEvents(t, st); n != 200 {
			t.Fatalf("%d events, want 200", n)
		}
	})
}

// A large file whose records are not all indexed is replaced by one that
// holds only those, and a crash then replays them.
func TestEventLogCompaction(t *testing.T) {
	st := openTestStore(t)
	path := filepath.Join(t.TempDir(), "events.log")
	l := abandonedLog(t, st, path)
	l.opt.compactSize = 1000
	appendAll(t, l, 0, 30)
	if err := l.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	if n := fileSize(t, path); n != 0 {
		t.Fatalf("file of %d bytes once all is indexed, want 0", n)
	}
	appendAll(t, l, 30, 60)
	l.sem <- struct{}{} // as the indexer does, but with the events still pending
	l.compact()
	<-l.sem
	l.pmu.Lock()
	pending := append([]byte(nil), l.pending...)
	l.pmu.Unlock()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !cmp.Equal(data, pending) {
		t.Fatalf("compacted file of %d bytes, want the %d pending bytes", len(data), len(pending))
	}
	appendAll(t, l, 60, 62) // to the new file
	openTestLog(t, st, path, defaultEventLogOptions())
	if n := countEvents(t, st); n != 62 {
		t.Fatalf("%d events after replay, want 62", n)
	}
}

func TestEventLogWriteFailure(t *testing.T) {
	ctx := context.Background()
	st := openTestStore(t)
	path := filepath.Join(t.TempDir(), "events.log")
	l := abandonedLog(t, st, path)
	appendAll(t, l, 0, 2)
	ro, err := os.Open(path) // write(2) and ftruncate(2) fail on it
	if err != nil {
		t.Fatal(err)
	}
	l.wmu.Lock()
	rw := l.f
	l.f = ro
	l.wmu.Unlock()
	t.Cleanup(func() { rw.Close() })
	if err := l.AppendEvents(ctx, testEvent(2)); err == nil {
		t.Fatal("failed write reported as success")
	}
	if err := l.AppendEvents(ctx, testEvent(3)); err == nil {
		t.Fatal("write accepted after a partial write could not be undone")
	}
	if err := l.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	if n := countEvents(t, st); n != 2 {
		t.Fatalf("%d events, want the 2 written", n)
	}
}

func FuzzEventLogReplay(f *testing.F) {
	one, _ := appendRecord(nil, testEvent(1))
	two, _ := appendRecord(append([]byte(nil), one...), store.Event{ID: "x", Kind: store.EventPerson})
	f.Add([]byte{})
	f.Add(one)
	f.Add(two)
	f.Add(two[:len(two)-1])
	f.Add(append(append([]byte(nil), one...), 0xff, 0xff, 0xff, 0xff))
	f.Add(one[recordHeader:]) // a bare payload
	table := crc32.MakeTable(crc32.Castagnoli)
	f.Fuzz(func(t *testing.T, data []byte) {
		es, good := decodeRecords(data)
		if good < 0 || good > len(data) {
			t.Fatalf("good prefix %d of %d bytes", good, len(data))
		}
		off := 0
		for _, e := range es {
			n := int(binary.LittleEndian.Uint32(data[off:]))
			framed := append(append([]byte(nil), data[off:off+4]...), data[off+8:off+8+n]...)
			if crc32.Checksum(framed, table) != binary.LittleEndian.Uint32(data[off+4:]) {
				t.Fatalf("record at %d returned with a checksum that does not match", off)
			}
			// What decodes re-encodes to a record that decodes the same.
			again, err := appendRecord(nil, e)
			if err != nil {
				t.Fatal(err)
			}
			back, _ := decodeRecords(again)
			if len(back) != 1 || !cmp.Equal(back[0], e) {
				t.Fatalf("record at %d does not round-trip: %+v", off, e)
			}
			off += 8 + n
		}
		if off != good {
			t.Fatalf("records fill %d bytes, good prefix %d", off, good)
		}
		// The checksum keeps most inputs from the payload decoder: feed it
		// the bytes directly too.
		if e, ok := decodeEvent(string(data)); ok {
			again, err := appendRecord(nil, e)
			if err != nil {
				t.Fatal(err)
			}
			if back, _ := decodeRecords(again); len(back) != 1 || !cmp.Equal(back[0], e) {
				t.Fatalf("payload does not round-trip: %+v", e)
			}
		}
	})
}

func BenchmarkEventLogAppend(b *testing.B) {
	ctx := context.Background()
	st := openTestStore(b)
	l := openTestLog(b, st, filepath.Join(b.TempDir(), "events.log"), defaultEventLogOptions())
	var next atomic.Int64
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			i := int(next.Add(1))
			if err := l.AppendEvents(ctx, testEvent(i)); err != nil {
				b.Error(err)
				return
			}
		}
	})
}

// BenchmarkEventLogEncoding compares the record encoding with JSON (encode
// and decode of one event), which it was chosen over.
func BenchmarkEventLogEncoding(b *testing.B) {
	e := testEvent(1)
	b.Run("binary", func(b *testing.B) {
		var buf []byte
		b.ReportAllocs()
		for b.Loop() {
			buf, _ = appendRecord(buf[:0], e)
			if es, _ := decodeRecords(buf); len(es) != 1 {
				b.Fatal("no record")
			}
		}
		b.ReportMetric(float64(len(buf)), "bytes/record")
	})
	b.Run("json", func(b *testing.B) {
		var p []byte
		b.ReportAllocs()
		for b.Loop() {
			p, _ = json.Marshal(e)
			var out store.Event
			if err := json.Unmarshal(p, &out); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(len(p)+8), "bytes/record")
	})
}

// TestEraseScrubsTheLog: records indexed before an erasure leave the file,
// and records written while the erasing transaction runs are scrubbed
// before they are indexed; records of others stay as they were.
func TestEraseScrubsTheLog(t *testing.T) {
	st := openTestStore(t)
	opt := defaultEventLogOptions()
	opt.noIndexer = true
	path := filepath.Join(t.TempDir(), "log")
	l := openTestLog(t, st, path, opt)
	ctx := context.Background()
	about := func(i int, user string) store.Event {
		e := testEvent(i)
		e.UserID, e.PersonID = user, user
		return e
	}
	if err := l.AppendEvents(ctx, about(1, "p1"), about(2, "someone")); err != nil {
		t.Fatal(err)
	}
	x := store.Erasure{PersonID: "p1", Emails: []string{"alice@example.com"}}
	err := l.erase(ctx, func() (store.Erasure, error) {
		// Written while the erasing transaction runs: not indexed yet.
		return x, l.AppendEvents(ctx, about(3, "p1"), about(4, "Alice@Example.com"), about(5, "someone"))
	})
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	es, good := decodeRecords(b)
	if good != len(b) || len(es) != 3 {
		t.Fatalf("the log holds %d records (%d of %d bytes good), want the 3 written during the erasure", len(es), good, len(b))
	}
	for _, e := range es {
		mine := e.ID != "ev-000005"
		if scrubbed := e.ClientIP == "" && e.UserAgent == "" && e.Context == nil; scrubbed != mine {
			t.Errorf("record %s scrubbed = %v: %+v", e.ID, scrubbed, e)
		}
		if mine && e.UserID != "p1" {
			t.Errorf("record %s user_id %q, want the person ID", e.ID, e.UserID)
		}
	}
	if err := l.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	got, err := st.DB.SearchEvents(ctx, store.EventFilter{Kind: store.EventOAuth, UserID: "p1"}, 0, 10)
	if err != nil {
		t.Fatal(err)
	}
	// Event 1 was indexed before the (here: table-less) erasure, so only
	// the log's copies are the erasure's business in this test.
	for _, e := range got {
		if e.ID != "ev-000001" && (e.ClientIP != "" || e.Context != nil) {
			t.Errorf("indexed after the erasure with its data: %+v", e)
		}
	}
	if len(got) != 3 {
		t.Errorf("%d events of p1 in the table, want 3", len(got))
	}
}
