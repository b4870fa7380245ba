package sqlstore

import (
	"context"
	"encoding/json"
	"strings"
	"time"

	"github.com/latchkey/latchkey/internal/store"
)

const scopeColumns = `id, authentication_level, usage_limit, service_endpoint, verification_failed_endpoint,
	persistent_consent, descriptions, created_at, updated_at`

func scanScope(s scanner) (store.Scope, error) {
	var sc store.Scope
	var desc string
	var created, updated int64
	if err := s.Scan(&sc.ID, &sc.AuthenticationLevel, &sc.UsageLimit, &sc.ServiceEndpoint, &sc.VerificationFailedEndpoint,
		&sc.PersistentConsent, &desc, &created, &updated); err != nil {
		return sc, err
	}
	if err := json.Unmarshal([]byte(desc), &sc.Descriptions); err != nil {
		return sc, err
	}
	if len(sc.Descriptions) == 0 {
		sc.Descriptions = nil
	}
	sc.CreatedAt, sc.UpdatedAt = fromMicros(created), fromMicros(updated)
	return sc, nil
}

// stringMap stores a string map as JSON text; nil and empty are "{}".
func stringMap(m map[string]string) string {
	if len(m) == 0 {
		return "{}"
	}
	b, _ := json.Marshal(m) // map[string]string always marshals
	return string(b)
}

// CreateScope inserts a scope.
func (db *DB) CreateScope(ctx context.Context, s store.Scope) error {
	now := micros(time.Now())
	return db.scopeTx(ctx, func(tx *DB) error {
		_, err := tx.exec(ctx, `INSERT INTO scopes (`+scopeColumns+`) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`,
			s.ID, s.AuthenticationLevel, s.UsageLimit, s.ServiceEndpoint, s.VerificationFailedEndpoint, s.PersistentConsent,
			stringMap(s.Descriptions), now, now)
		return err
	})
}

// scopeTx runs a scope write in a transaction that bumps the client
// generation: every instance's scope cache checks it (ScopeCache).
func (db *DB) scopeTx(ctx context.Context, fn func(tx *DB) error) error {
	return db.clientTx(ctx, func(tx *DB) error {
		defer tx.scopesChanged()
		return fn(tx)
	})
}

// GetScopes returns the configured scopes among ids, by ID.
func (db *DB) GetScopes(ctx context.Context, ids []string) ([]store.Scope, error) {
	if len(ids) == 0 {
		return nil, nil
	}
	if out, ok, err := db.cachedScopes(ctx, ids); ok || err != nil {
		return out, err
	}
	q := `SELECT ` + scopeColumns + ` FROM scopes WHERE id IN (?` + strings.Repeat(", ?", len(ids)-1) + `) ORDER BY id`
	args := make([]any, len(ids))
	for i, id := range ids {
		args[i] = id
	}
	return db.scopes(ctx, q, args...)
}

// ListScopes returns every scope by ID.
func (db *DB) ListScopes(ctx context.Context) ([]store.Scope, error) {
	return db.scopes(ctx, `SELECT `+scopeColumns+` FROM scopes ORDER BY id`)
}

func (db *DB) scopes(ctx context.Context, q string, args ...any) ([]store.Scope, error) {
	rows, err := db.query(ctx, q, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []store.Scope
	for rows.Next() {
		s, err := scanScope(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, s)
	}
	return out, db.d.Translate(rows.Err())
}

// ReplaceScope replaces a scope's fields.
func (db *DB) ReplaceScope(ctx context.Context, s store.Scope) error {
	return db.scopeTx(ctx, func(tx *DB) error {
		return tx.execOne(ctx, `UPDATE scopes SET authentication_level = ?, usage_limit = ?, service_endpoint = ?,
		verification_failed_endpoint = ?, persistent_consent = ?, descriptions = ?, updated_at = ? WHERE id = ?`,
			s.AuthenticationLevel, s.UsageLimit, s.ServiceEndpoint, s.VerificationFailedEndpoint, s.PersistentConsent,
			stringMap(s.Descriptions), micros(time.Now()), s.ID)
	})
}

// DeleteScope removes a scope.
func (db *DB) DeleteScope(ctx context.Context, id string) error {
	return db.scopeTx(ctx, func(tx *DB) error { return tx.execOne(ctx, `DELETE FROM scopes WHERE id = ?`, id) })
}
