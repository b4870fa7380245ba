package sqlstore

import (
	"context"
	"encoding/json"
	"strings"
	"time"

	"github.com/latchkey/latchkey/internal/store"
)

const personColumns = `id, email, password_hash, first_name, last_name, status, custom_attributes, created_at, updated_at`

func scanPerson(s scanner) (store.Person, error) {
	var p store.Person
	var custom string
	var created, updated int64
	if err := s.Scan(&p.ID, &p.Email, &p.PasswordHash, &p.FirstName, &p.LastName, &p.Status, &custom, &created, &updated); err != nil {
		return p, err
	}
	if err := json.Unmarshal([]byte(custom), &p.Custom); err != nil {
		return p, err
	}
	if len(p.Custom) == 0 {
		p.Custom = nil
	}
	p.CreatedAt, p.UpdatedAt = fromMicros(created), fromMicros(updated)
	return p, nil
}

// CreatePerson inserts a person; the ID and the lower-cased email are unique.
func (db *DB) CreatePerson(ctx context.Context, p store.Person) error {
	now := time.Now().UTC()
	if p.CreatedAt.IsZero() {
		p.CreatedAt = now
	}
	if p.UpdatedAt.IsZero() {
		p.UpdatedAt = p.CreatedAt
	}
	_, err := db.exec(ctx, `INSERT INTO persons (`+personColumns+`, email_lower) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
		p.ID, p.Email, p.PasswordHash, p.FirstName, p.LastName, p.Status, stringMap(p.Custom), micros(p.CreatedAt),
		micros(p.UpdatedAt), strings.ToLower(p.Email))
	return err
}

// GetPerson returns one person.
func (db *DB) GetPerson(ctx context.Context, id string) (store.Person, error) {
	p, err := scanPerson(db.queryRow(ctx, `SELECT `+personColumns+` FROM persons WHERE id = ?`, id))
	return p, db.scanErr(err)
}

// GetPersonByEmail matches the email case-insensitively.
func (db *DB) GetPersonByEmail(ctx context.Context, email string) (store.Person, error) {
	p, err := scanPerson(db.queryRow(ctx, `SELECT `+personColumns+` FROM persons WHERE email_lower = ?`, strings.ToLower(email)))
	return p, db.scanErr(err)
}

// UpdatePerson is a read-modify-write in one transaction.
func (db *DB) UpdatePerson(ctx context.Context, id string, fn func(store.Person) (store.Person, error)) error {
	return db.Tx(ctx, func(st store.Store) error {
		tx := st.(*DB)
		old, err := tx.GetPerson(ctx, id)
		if err != nil {
			return err
		}
		p, err := fn(old)
		if err != nil {
			return err
		}
		p.ID, p.CreatedAt, p.UpdatedAt = old.ID, old.CreatedAt, time.Now().UTC()
		_, err = tx.exec(ctx, `UPDATE persons SET email = ?, email_lower = ?, password_hash = ?, first_name = ?,
			last_name = ?, status = ?, custom_attributes = ?, updated_at = ? WHERE id = ?`,
			p.Email, strings.ToLower(p.Email), p.PasswordHash, p.FirstName, p.LastName, p.Status, stringMap(p.Custom),
			micros(p.UpdatedAt), id)
		return err
	})
}
