package sqlstore

import (
	"context"
	"time"

	"github.com/latchkey/latchkey/internal/store"
)

const federationColumns = `hash, kind, request_id, method_id, browser, target, created_at, expires_at`

// CreateFederationState stores the state of a round trip upstream.
func (db *DB) CreateFederationState(ctx context.Context, s store.FederationState) error {
	_, err := db.exec(ctx, `INSERT INTO federation_states (`+federationColumns+`) VALUES (?, ?, ?, ?, ?, ?, ?, ?)`,
		s.Hash, s.Kind, s.RequestID, s.MethodID, s.Browser, s.Target, micros(s.CreatedAt), micros(s.ExpiresAt))
	return err
}

// TakeFederationState deletes the unexpired state in one statement: of
// concurrent takes only the one whose DELETE removed the row gets it.
func (db *DB) TakeFederationState(ctx context.Context, hash []byte, now time.Time) (store.FederationState, error) {
	var s store.FederationState
	var created, expires int64
	err := db.queryRowWrite(ctx, `DELETE FROM federation_states WHERE hash = ? AND expires_at > ? RETURNING `+federationColumns,
		hash, micros(now)).Scan(&s.Hash, &s.Kind, &s.RequestID, &s.MethodID, &s.Browser, &s.Target, &created, &expires)
	if err != nil {
		return store.FederationState{}, db.scanErr(err)
	}
	s.CreatedAt, s.ExpiresAt = fromMicros(created), fromMicros(expires)
	return s, nil
}

// FindIdentity reads a linked identity by its unique key.
func (db *DB) FindIdentity(ctx context.Context, partition, idpID, externalID string) (store.ExternalIdentity, error) {
	var e store.ExternalIdentity
	var created int64
	err := db.queryRow(ctx, `SELECT partition_id, idp_id, external_person_id, person_id, created_at FROM person_identities
		WHERE partition_id = ? AND idp_id = ? AND external_person_id = ?`, partition, idpID, externalID).
		Scan(&e.Partition, &e.IdPID, &e.ExternalID, &e.PersonID, &created)
	if err != nil {
		return store.ExternalIdentity{}, db.scanErr(err)
	}
	e.CreatedAt = fromMicros(created)
	return e, nil
}
