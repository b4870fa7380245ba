package sqlstore

import (
	"context"
	"crypto/subtle"
	"errors"

	"github.com/latchkey/latchkey/internal/store"
)

// serverKeyFingerprint names the server_meta row of ClaimServerKey.
const serverKeyFingerprint = "server_key_fingerprint"

// ClaimServerKey compares the recorded fingerprint with fingerprint; when
// none is recorded it inserts it (the first claim wins atomically, on the
// primary key) and compares again. The read comes first: every start but
// the first finds the row, and a write would cost a commit (on SQLite, a
// sync) on the way to ready.
func (db *DB) ClaimServerKey(ctx context.Context, fingerprint []byte) error {
	if len(fingerprint) == 0 {
		return errors.New("store: empty server key fingerprint")
	}
	recorded, err := db.serverKeyFingerprint(ctx)
	if errors.Is(err, store.ErrNotFound) {
		if _, err := db.exec(ctx, `INSERT INTO server_meta (name, value) VALUES (?, ?) ON CONFLICT (name) DO NOTHING`,
			serverKeyFingerprint, fingerprint); err != nil {
			return err
		}
		recorded, err = db.serverKeyFingerprint(ctx)
	}
	if err != nil {
		return err
	}
	if subtle.ConstantTimeCompare(recorded, fingerprint) != 1 {
		return store.ErrServerKeyMismatch
	}
	return nil
}

// serverKeyFingerprint reads the recorded fingerprint on the writer, the
// connection that runs the insert (SQLite's readers could lag behind it).
func (db *DB) serverKeyFingerprint(ctx context.Context) ([]byte, error) {
	var recorded []byte
	if err := db.queryRowWrite(ctx, `SELECT value FROM server_meta WHERE name = ?`, serverKeyFingerprint).
		Scan(&recorded); err != nil {
		return nil, db.scanErr(err)
	}
	return recorded, nil
}

// seedPrefix names the server_meta rows of seeded persons, by person ID
// (an email would outlive the person's erasure there).
const seedPrefix = "seeded_person:"

// SeedFingerprint reads a seeded person's fingerprint.
func (db *DB) SeedFingerprint(ctx context.Context, personID string) ([]byte, error) {
	var fp []byte
	if err := db.queryRow(ctx, `SELECT value FROM server_meta WHERE name = ?`, seedPrefix+personID).Scan(&fp); err != nil {
		return nil, db.scanErr(err)
	}
	return fp, nil
}

// SetSeedFingerprint records (or replaces) a seeded person's fingerprint.
func (db *DB) SetSeedFingerprint(ctx context.Context, personID string, fingerprint []byte) error {
	_, err := db.exec(ctx, `INSERT INTO server_meta (name, value) VALUES (?, ?)
		ON CONFLICT (name) DO UPDATE SET value = excluded.value`, seedPrefix+personID, fingerprint)
	return err
}
