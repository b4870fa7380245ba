package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os"
)

// Backup writes a consistent snapshot of the database at path to out, and
// of its event log (events answered, not yet indexed) to out+"-events",
// beside a running server: it writes nothing to the live files
// (docs/DEPLOY.md, "Backups").
//
// The snapshot is taken first and the log copied second, while Backup holds
// the log's guard, which keeps the server from removing records from the
// log (openGuard): every record not indexed when the snapshot began is
// still there. Records written after it are of requests answered after
// it: a restore replays those recorded outside a transaction (they change
// nothing else) and drops those of transactions the snapshot does not
// hold (their batch is past the snapshot's event_log_batch). An event in
// both is indexed once (a replay skips ids already indexed). A record
// being written as the log is copied is a torn tail, which a replay drops:
// its request was not yet answered.
func Backup(ctx context.Context, path, out string) error {
	if _, err := os.Stat(path); err != nil {
		return fmt.Errorf("sqlite: %w", err)
	}
	if _, err := os.Stat(out); err == nil {
		return fmt.Errorf("backup: %s exists; name a new file", out)
	}
	guard, err := openGuard(path + "-events")
	if err != nil {
		return fmt.Errorf("backup: %w", err)
	}
	defer guard.Close() // closing releases the lock
	if err := guardExclusive(guard); err != nil {
		return fmt.Errorf("backup: event log: %w", err)
	}
	// A read-only connection: SQLite's VACUUM INTO reads one transaction's
	// snapshot (WAL readers do not block the writer) into a new file.
	q := url.Values{"mode": {"ro"}, "_pragma": {"busy_timeout(10000)"}}
	db, err := sql.Open("sqlite", "file:"+path+"?"+q.Encode())
	if err != nil {
		return fmt.Errorf("backup: %w", err)
	}
	defer db.Close()
	if _, err := db.ExecContext(ctx, `VACUUM INTO ?`, out); err != nil {
		os.Remove(out)
		return fmt.Errorf("backup: %w", err)
	}
	if err := copyFile(path+"-events", out+"-events"); err != nil {
		os.Remove(out)
		os.Remove(out + "-events")
		return fmt.Errorf("backup: event log: %w", err)
	}
	return os.Chmod(out, 0o600)
}

// copyFile copies src to dst (0600); a missing src copies nothing.
func copyFile(src, dst string) error {
	b, err := os.ReadFile(src)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	return os.WriteFile(dst, b, 0o600)
}

// openGuard opens the backup guard of the event log at path: a server
// holds it shared while records leave the log (compaction, an erasure's
// rewrite, the truncation after a replay or at close); Backup holds it
// exclusively from before its snapshot until the log is copied.
func openGuard(path string) (*os.File, error) {
	f, err := os.OpenFile(path+"-guard", os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("sqlite: event log: %w", err)
	}
	return f, nil
}
