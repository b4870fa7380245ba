package sqlstore

import (
	"context"
	"time"

	"github.com/latchkey/latchkey/internal/store"
)

// maxGrantInvalidations: a person with more revoked grants than this drops
// the whole token cache instead of one entry list per grant.
const maxGrantInvalidations = 1000

// RevokePerson revokes a person's grants and their tokens and deletes the
// person's sessions, in one transaction. The queries name the condition of
// the partial index grants_subject (migration 0011), so the planner may use it.
func (db *DB) RevokePerson(ctx context.Context, personID string, now time.Time) (store.PersonRevocation, error) {
	var out store.PersonRevocation
	err := db.Tx(ctx, func(st store.Store) error {
		tx := st.(*DB)
		out = store.PersonRevocation{}
		if personID == "" {
			return nil // "" is the subject of client credentials, not a person
		}
		ids, err := tx.revokeGrants(ctx, `UPDATE grants SET revoked_at = ? WHERE subject = ? AND subject <> '' AND revoked_at = 0
			RETURNING id`, micros(now), personID)
		if err != nil {
			return err
		}
		out.Grants = int64(len(ids))
		// Tokens of grants revoked before are revoked too: a token row then
		// reads revoked on its own, whoever reads it.
		res, err := tx.exec(ctx, `UPDATE tokens SET revoked_at = ? WHERE revoked_at = 0 AND grant_id IN
			(SELECT id FROM grants WHERE subject = ? AND subject <> '')`, micros(now), personID)
		if err != nil {
			return err
		}
		if out.Tokens, err = affected(res); err != nil {
			return err
		}
		res, err = tx.exec(ctx, `DELETE FROM sessions WHERE person_id = ?`, personID)
		if err != nil {
			return err
		}
		out.Sessions, err = affected(res)
		return err
	})
	return out, err
}

// revokeGrants runs q, an UPDATE of grants RETURNING id, inside a
// transaction and returns the ids. The token cache answers introspection
// from memory (SQLite): what it holds of these grants is dropped once the
// transaction has ended.
func (db *DB) revokeGrants(ctx context.Context, q string, args ...any) ([]string, error) {
	rows, err := db.query(ctx, q, args...)
	if err != nil {
		return nil, err
	}
	var ids []string
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			rows.Close()
			return nil, err
		}
		ids = append(ids, id)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, db.d.Translate(err)
	}
	if len(ids) > maxGrantInvalidations {
		db.invalidate(invalidation{all: true})
	} else {
		for _, id := range ids {
			db.invalidate(invalidation{grant: id})
		}
	}
	return ids, nil
}
