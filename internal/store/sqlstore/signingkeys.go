package sqlstore

import (
	"context"
	"fmt"
	"time"

	"github.com/latchkey/latchkey/internal/store"
)

// AddSigningKey checks that no key of k's generation or a later one is
// stored, inserts k and retires its predecessors, in one transaction. Two
// instances that read the same newest generation race on the unique
// generation column: PostgreSQL makes the second insert wait for the first
// transaction and then fail with a unique violation (ErrConflict); SQLite's
// single writer runs them one after the other, and the second sees the
// first's key. No lock service and no lock table are needed.
func (db *DB) AddSigningKey(ctx context.Context, k store.SigningKey, signedLifetime time.Duration) error {
	return db.Tx(ctx, func(st store.Store) error {
		tx := st.(*DB)
		var newest int64
		if err := tx.queryRow(ctx, `SELECT COALESCE(MAX(generation), 0) FROM signing_keys`).Scan(&newest); err != nil {
			return db.scanErr(err)
		}
		if k.Generation <= newest {
			return fmt.Errorf("signing key generation %d (newest stored: %d): %w", k.Generation, newest, store.ErrConflict)
		}
		if _, err := tx.exec(ctx, `INSERT INTO signing_keys (kid, generation, alg, sealed_private, public_jwk,
			created_at, publish_at, sign_from, retire_at, expire_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
			k.KID, k.Generation, k.Algorithm, k.SealedPrivate, string(k.PublicJWK), micros(k.CreatedAt),
			micros(k.PublishAt), micros(k.SignFrom), micros(k.RetireAt), micros(k.ExpireAt)); err != nil {
			return err
		}
		_, err := tx.exec(ctx, `UPDATE signing_keys SET retire_at = ?, expire_at = ? WHERE generation < ? AND retire_at = 0`,
			micros(k.SignFrom), micros(k.SignFrom.Add(signedLifetime)), k.Generation)
		return err
	})
}

// ListSigningKeys returns every stored key, oldest generation first.
func (db *DB) ListSigningKeys(ctx context.Context) ([]store.SigningKey, error) {
	rows, err := db.query(ctx, `SELECT kid, generation, alg, sealed_private, public_jwk, created_at, publish_at,
		sign_from, retire_at, expire_at FROM signing_keys ORDER BY generation`)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []store.SigningKey
	for rows.Next() {
		var k store.SigningKey
		var jwk string
		var created, publish, sign, retire, expire int64
		if err := rows.Scan(&k.KID, &k.Generation, &k.Algorithm, &k.SealedPrivate, &jwk, &created, &publish,
			&sign, &retire, &expire); err != nil {
			return nil, err
		}
		k.PublicJWK = []byte(jwk)
		k.CreatedAt, k.PublishAt, k.SignFrom = fromMicros(created), fromMicros(publish), fromMicros(sign)
		k.RetireAt, k.ExpireAt = fromMicros(retire), fromMicros(expire)
		out = append(out, k)
	}
	return out, rows.Err()
}

// RetireSigningKey checks, in one transaction, that kid is stored and in
// the JWKS and that a newer key signs by at and is not ended, then ends kid.
func (db *DB) RetireSigningKey(ctx context.Context, kid string, at time.Time) error {
	return db.Tx(ctx, func(st store.Store) error {
		tx := st.(*DB)
		var gen int64
		err := tx.queryRow(ctx, `SELECT generation FROM signing_keys WHERE kid = ? AND (expire_at = 0 OR expire_at > ?)`,
			kid, micros(at)).Scan(&gen)
		if err != nil {
			return db.scanErr(err)
		}
		var successors int
		if err := tx.queryRow(ctx, `SELECT COUNT(*) FROM signing_keys WHERE generation > ? AND sign_from <= ?
			AND (expire_at = 0 OR expire_at > ?)`, gen, micros(at), micros(at)).Scan(&successors); err != nil {
			return db.scanErr(err)
		}
		if successors == 0 {
			return fmt.Errorf("signing key %s: no newer key signs yet: %w", kid, store.ErrConflict)
		}
		_, err = tx.exec(ctx, `UPDATE signing_keys SET expire_at = ?,
			retire_at = CASE WHEN retire_at = 0 OR retire_at > ? THEN ? ELSE retire_at END WHERE kid = ?`,
			micros(at), micros(at), micros(at), kid)
		return err
	})
}
