package sqlstore

import (
	"context"
	"crypto/subtle"
	"errors"

	"github.com/latchkey/latchkey/internal/store"
)

// serverKeyFingerprint names the server_meta row of ClaimServerKey.
const serverKeyFingerprint = "server_key_fingerprint"

// ClaimServerKey inserts the fingerprint unless a row exists (the first
// claim wins atomically, on the primary key), then compares the row with it.
func (db *DB) ClaimServerKey(ctx context.Context, fingerprint []byte) error {
	if len(fingerprint) == 0 {
		return errors.New("store: empty server key fingerprint")
	}
	if _, err := db.exec(ctx, `INSERT INTO server_meta (name, value) VALUES (?, ?) ON CONFLICT (name) DO NOTHING`,
		serverKeyFingerprint, fingerprint); err != nil {
		return err
	}
	var recorded []byte
	// Read on the writer, the connection that just ran the insert.
	if err := db.queryRowWrite(ctx, `SELECT value FROM server_meta WHERE name = ?`, serverKeyFingerprint).
		Scan(&recorded); err != nil {
		return db.scanErr(err)
	}
	if subtle.ConstantTimeCompare(recorded, fingerprint) != 1 {
		return store.ErrServerKeyMismatch
	}
	return nil
}
