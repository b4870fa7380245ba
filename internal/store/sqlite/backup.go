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
// beside a running server: it takes no lock and writes nothing to the
// live files (docs/DEPLOY.md, "Backups").
//
// The log is copied first and the database second. An event the server
// indexes in between leaves the log but is then in the database snapshot;
// copied into both, it is indexed once at restore (a replay skips ids
// already indexed). A record being written as the log is copied is a torn
// tail, which a replay drops: its request was not yet answered.
func Backup(ctx context.Context, path, out string) error {
	if _, err := os.Stat(path); err != nil {
		return fmt.Errorf("sqlite: %w", err)
	}
	if _, err := os.Stat(out); err == nil {
		return fmt.Errorf("backup: %s exists; name a new file", out)
	}
	if err := copyFile(path+"-events", out+"-events"); err != nil {
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
		os.Remove(out + "-events")
		return fmt.Errorf("backup: %w", err)
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
