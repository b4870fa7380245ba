package sqlstore

import (
	"context"
	"encoding/json"
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

const identityColumns = `partition_id, idp_id, external_person_id, person_id, attributes, unproven, created_at`

func scanIdentity(s scanner) (store.ExternalIdentity, error) {
	var e store.ExternalIdentity
	var attrs string
	var created int64
	if err := s.Scan(&e.Partition, &e.IdPID, &e.ExternalID, &e.PersonID, &attrs, &e.Unproven, &created); err != nil {
		return e, err
	}
	if err := json.Unmarshal([]byte(attrs), &e.Attributes); err != nil {
		return e, err
	}
	if len(e.Attributes) == 0 {
		e.Attributes = nil
	}
	e.CreatedAt = fromMicros(created)
	return e, nil
}

// FindIdentity reads a linked identity by its unique key.
func (db *DB) FindIdentity(ctx context.Context, partition, idpID, externalID string) (store.ExternalIdentity, error) {
	e, err := scanIdentity(db.queryRow(ctx, `SELECT `+identityColumns+` FROM person_identities
		WHERE partition_id = ? AND idp_id = ? AND external_person_id = ?`, partition, idpID, externalID))
	if err != nil {
		return store.ExternalIdentity{}, db.scanErr(err)
	}
	return e, nil
}

// SetIdentityAttributes replaces a linked identity's attributes.
func (db *DB) SetIdentityAttributes(ctx context.Context, partition, idpID, externalID string, attrs map[string]string) error {
	res, err := db.exec(ctx, `UPDATE person_identities SET attributes = ?
		WHERE partition_id = ? AND idp_id = ? AND external_person_id = ?`, stringMap(attrs), partition, idpID, externalID)
	if err != nil {
		return err
	}
	if n, err := res.RowsAffected(); err != nil {
		return err
	} else if n == 0 {
		return store.ErrNotFound
	}
	return nil
}
