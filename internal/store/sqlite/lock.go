package sqlite

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sync"

	"github.com/latchkey/latchkey/internal/store/sqlstore"
)

// openFile is a database file this process has open: its lock against
// other processes and what the stores opened on it share.
type openFile struct {
	key    string
	lock   *os.File
	owner  *Store    // the store whose connections the process's stores of the file use
	events *eventLog // nil without the lock: the log is one process's
	refs   int
}

var errNoLocks = errors.New("no file locks on this platform")

var (
	filesMu sync.Mutex
	files   = map[string]*openFile{}
)

// acquire returns the open file of path, locking it against other
// processes and opening it the first time this process opens it.
func acquire(ctx context.Context, path string) (*openFile, error) {
	key, err := filepath.Abs(path)
	if err != nil {
		return nil, fmt.Errorf("sqlite: %w", err)
	}
	filesMu.Lock()
	defer filesMu.Unlock()
	if f := files[key]; f != nil {
		f.refs++
		return f, nil
	}
	lock, err := os.OpenFile(key+"-lock", os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("sqlite: %w", err)
	}
	locked := true
	if err := lockFile(lock); errors.Is(err, errNoLocks) {
		locked = false
	} else if err != nil {
		lock.Close()
		return nil, fmt.Errorf("sqlite: %s is in use by another process (%v): the embedded store serves one latchkey process; run several on PostgreSQL", path, err)
	}
	s, err := open(ctx, path, false)
	if err != nil {
		lock.Close()
		return nil, err
	}
	f := &openFile{key: key, lock: lock, owner: s, refs: 1}
	if locked {
		s.UseTokenCache(sqlstore.NewTokenCache())
		s.UseScopeCache(&sqlstore.ScopeCache{})
		if f.events, err = openEventLog(ctx, key+"-events", s.DB, slog.Default()); err != nil {
			s.closeConns()
			lock.Close()
			return nil, err
		}
		s.UseEventsAhead(f.events)
	}
	files[key] = f
	return f, nil
}

// release drops one store's hold; the last one closes the connections and
// unlocks the file.
func (f *openFile) release() error {
	filesMu.Lock()
	defer filesMu.Unlock()
	if f.refs--; f.refs > 0 {
		return nil
	}
	delete(files, f.key)
	var err error
	if f.events != nil {
		// Transactions insert their events again; one that took the log
		// before commits before Close's index, on the single writer.
		f.owner.UseEventsAhead(nil)
		err = f.events.Close() // indexes what is left: before the connections close
	}
	err = errors.Join(err, f.owner.closeConns())
	f.lock.Close() // closing the descriptor releases the lock
	return err
}
