// Package sqlite is latchkey's embedded store: SQLite through the pure-Go
// modernc.org/sqlite driver, in WAL mode, with one writer connection and a
// pool of read-only connections.
package sqlite

import (
	"context"
	"database/sql"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"time"

	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"

	"github.com/latchkey/latchkey/internal/store"
	"github.com/latchkey/latchkey/internal/store/sqlstore"
)

//go:embed migrations/*.sql
var migrationFiles embed.FS

// Migrations are the SQLite dialect's migrations.
func Migrations() ([]sqlstore.Migration, error) {
	sub, _ := fs.Sub(migrationFiles, "migrations")
	return sqlstore.LoadMigrations(sub)
}

// Store is the SQLite backend.
type Store struct {
	*sqlstore.DB
	file         *openFile     // nil for OpenReadOnly
	checkpointer *checkpointer // of the store that owns the connections
}

// Open opens (creating when needed) the database file at path and applies
// the migrations. The file serves one process: Open locks it against other
// processes (OpenReadOnly does not), which is what lets the process keep
// state derived from it in memory (the token cache). The stores a process
// opens on one file share its connections. Several latchkey processes share
// a PostgreSQL store instead.
func Open(ctx context.Context, path string) (*Store, error) {
	if path == "" {
		return nil, errors.New("sqlite: empty path")
	}
	if dir := filepath.Dir(path); dir != "" {
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return nil, fmt.Errorf("sqlite: %w", err)
		}
	}
	f, err := acquire(ctx, path)
	if err != nil {
		return nil, err
	}
	return &Store{DB: f.owner.DB, file: f}, nil
}

// OpenReadOnly opens the database file at path for reading, beside the
// process that has it open: no lock, no migrations, no writes. Events the
// other process has logged but not yet indexed are not seen.
func OpenReadOnly(ctx context.Context, path string) (*Store, error) {
	if _, err := os.Stat(path); err != nil {
		return nil, fmt.Errorf("sqlite: %w", err)
	}
	return open(ctx, path, true)
}

// Page caches per connection. The writer's cache stays full: it is most
// of the process's memory beyond the Go heap (16 MiB of pages cost 24 MiB
// of RSS), and 4 MiB writes as fast (docs/PERFORMANCE.md, "the writer's
// page cache"); the pages it drops are in the OS's page cache. A reader's
// cache is emptied whenever a commit happened since its last read, so under
// load its size changes nothing.
const (
	readerCache = "cache_size(-16384)"
	writerCache = "cache_size(-4096)"
)

func open(ctx context.Context, path string, readOnly bool) (*Store, error) {
	ms, err := Migrations()
	if err != nil {
		return nil, err
	}
	// Pragmas in the DSN apply to every connection of the pool.
	// synchronous=NORMAL in WAL mode is durable against process crashes (the
	// WAL is written before a commit returns); only an OS crash or power
	// loss can lose the last transactions. temp_store=MEMORY keeps the
	// statement and savepoint journals off the disk (the person import writes
	// every person in a savepoint). cache_size: see readerCache and
	// writerCache.
	pragmas := url.Values{}
	for _, p := range []string{"journal_mode(WAL)", "synchronous(NORMAL)", "busy_timeout(10000)", "foreign_keys(ON)",
		"temp_store(MEMORY)"} {
		pragmas.Add("_pragma", p)
	}
	readPragmas := url.Values{"_pragma": append([]string{"query_only(ON)", readerCache}, pragmas["_pragma"]...)}
	read, err := sql.Open("sqlite", "file:"+path+"?"+readPragmas.Encode())
	if err != nil {
		return nil, fmt.Errorf("sqlite: %w", err)
	}
	n := max(4, runtime.NumCPU()*2)
	read.SetMaxOpenConns(n)
	read.SetMaxIdleConns(n)
	d := &sqlstore.Dialect{Name: "sqlite", InProcess: true, IndexHints: true, InsertOrIgnore: true, CoalesceUses: true,
		Translate: translate, Migrations: ms,
		TablesQuery: `SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' ORDER BY name`}
	if readOnly {
		s := &Store{DB: sqlstore.New(d, read, read)}
		if err := s.Ping(ctx); err != nil {
			s.Close()
			return nil, fmt.Errorf("sqlite: open %s: %w", path, err)
		}
		return s, nil
	}
	// The writer checkpoints only as a backstop; see checkpointer.
	writePragmas := url.Values{"_pragma": append([]string{fmt.Sprintf("wal_autocheckpoint(%d)", writerAutoCheckpoint),
		writerCache}, pragmas["_pragma"]...)}
	write, err := sql.Open("sqlite", "file:"+path+"?"+writePragmas.Encode()+"&_txlock=immediate")
	if err != nil {
		read.Close()
		return nil, fmt.Errorf("sqlite: %w", err)
	}
	// One writer: SQLite serialises writers anyway, and a single connection
	// avoids SQLITE_BUSY between our own connections.
	write.SetMaxOpenConns(1)
	write.SetMaxIdleConns(1)
	write.SetConnMaxLifetime(0)

	d.GroupCommit = true // the single writer's callers share its commits
	s := &Store{DB: sqlstore.New(d, write, read)}
	if err := s.Ping(ctx); err != nil {
		s.Close()
		return nil, fmt.Errorf("sqlite: open %s: %w", path, err)
	}
	if err := s.Migrate(ctx); err != nil {
		s.Close()
		return nil, fmt.Errorf("sqlite: %w", err)
	}
	ck, err := sql.Open("sqlite", "file:"+path+"?"+pragmas.Encode())
	if err != nil {
		s.Close()
		return nil, fmt.Errorf("sqlite: %w", err)
	}
	s.checkpointer = startCheckpointer(ck)
	return s, nil
}

// EventSink is, outside a transaction, the append-only log: durable once
// written (as a commit with synchronous=NORMAL), indexed into the events
// table behind, in large batches, so that an answered request's event
// costs one shared write instead of a commit into the events table and its
// indexes. A read-only store has no log and answers the group commit.
func (s *Store) EventSink() store.EventAppender {
	if s.file == nil || s.file.events == nil {
		return s.DB.EventSink()
	}
	return s.file.events
}

// SearchEvents searches the events table once every logged event is in it.
func (s *Store) SearchEvents(ctx context.Context, f store.EventFilter, offset, limit int) ([]store.Event, error) {
	if err := s.flushEvents(ctx); err != nil {
		return nil, err
	}
	return s.DB.SearchEvents(ctx, f, offset, limit)
}

// CountEvents counts in the events table once every logged event is in it.
func (s *Store) CountEvents(ctx context.Context, f store.EventFilter, max int) (int, error) {
	if err := s.flushEvents(ctx); err != nil {
		return 0, err
	}
	return s.DB.CountEvents(ctx, f, max)
}

// EventPage reads a page and its count once every logged event is in the
// table.
func (s *Store) EventPage(ctx context.Context, f store.EventFilter, offset, limit, max int) ([]store.Event, int, error) {
	if err := s.flushEvents(ctx); err != nil {
		return nil, 0, err
	}
	return s.DB.EventPage(ctx, f, offset, limit, max)
}

func (s *Store) flushEvents(ctx context.Context) error {
	if s.file == nil || s.file.events == nil {
		return nil
	}
	return s.file.events.Flush(ctx)
}

// ErasePerson erases the person in the events table and in the event log
// (eventLog.erase): no copy of the person's data is left in either.
func (s *Store) ErasePerson(ctx context.Context, personID string, now time.Time,
	fn func(tx store.Store, p store.Person) error) (store.PersonRevocation, error) {
	if s.file == nil || s.file.events == nil {
		return s.DB.ErasePerson(ctx, personID, now, fn)
	}
	var out store.PersonRevocation
	err := s.file.events.erase(ctx, func() (store.Erasure, error) {
		var x store.Erasure
		var err error
		// The erasure's own events go into the table, after its scrub: the
		// log's rewrite below would scrub them too.
		out, err = s.DB.ErasePerson(sqlstore.WithoutWriteAhead(ctx), personID, now, func(tx store.Store, p store.Person) error {
			x = store.NewErasure(p)
			return fn(tx, p)
		})
		return x, err
	})
	return out, err
}

// FindText is the tables' FindText, and the event log's records too.
func (s *Store) FindText(ctx context.Context, needles ...string) ([]string, error) {
	found, err := s.DB.FindText(ctx, needles...)
	if err != nil || s.file == nil || s.file.events == nil {
		return found, err
	}
	b, err := os.ReadFile(s.file.events.path)
	if err != nil {
		return nil, err
	}
	text := strings.ToLower(string(b))
	for _, n := range needles {
		if strings.Contains(text, strings.ToLower(n)) {
			found = append(found, "event log "+s.file.events.path+": "+n)
		}
	}
	return found, nil
}

// Close closes the store; the last store of the process on its file closes
// the connections and the file's lock.
func (s *Store) Close() error {
	if s.file == nil {
		return s.closeConns()
	}
	f := s.file
	s.file = nil
	return f.release()
}

// closeConns stops the checkpointer and closes the pools.
func (s *Store) closeConns() error {
	var err error
	if s.checkpointer != nil {
		err = s.checkpointer.stop()
	}
	return errors.Join(err, s.DB.Close())
}

// translate maps SQLite constraint violations to store.ErrConflict.
func translate(err error) error {
	if err == nil {
		return nil
	}
	var se *sqlite.Error
	if errors.As(err, &se) {
		switch se.Code() {
		case sqlite3.SQLITE_CONSTRAINT_UNIQUE, sqlite3.SQLITE_CONSTRAINT_PRIMARYKEY:
			return fmt.Errorf("%w: %v", store.ErrConflict, err)
		}
	}
	return err
}
