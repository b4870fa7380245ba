package sqlstore

import (
	"context"
	"encoding/json"
	"strings"
	"time"

	"github.com/latchkey/latchkey/internal/store"
)

const personColumns = `id, partition_id, email, password_hash, first_name, last_name, status, custom_attributes,
	profile, totp_secret, created_at, updated_at`

func scanPerson(s scanner) (store.Person, error) {
	var f personFields
	if err := s.Scan(f.dest()...); err != nil {
		return f.p, err
	}
	return f.person()
}

// personFields holds a person row's columns while it is scanned.
type personFields struct {
	p                store.Person
	custom, profile  string
	created, updated int64
}

func (f *personFields) dest() []any {
	p := &f.p
	return []any{&p.ID, &p.Partition, &p.Email, &p.PasswordHash, &p.FirstName, &p.LastName, &p.Status, &f.custom,
		&f.profile, &p.TOTPSecret, &f.created, &f.updated}
}

func (f *personFields) person() (store.Person, error) {
	p := f.p
	if err := json.Unmarshal([]byte(f.custom), &p.Custom); err != nil {
		return p, err
	}
	if len(p.Custom) == 0 {
		p.Custom = nil
	}
	if err := json.Unmarshal([]byte(f.profile), &p.Profile); err != nil {
		return p, err
	}
	p.TOTPSecret = fromBlob(p.TOTPSecret)
	p.CreatedAt, p.UpdatedAt = fromMicros(f.created), fromMicros(f.updated)
	return p, nil
}

func profileJSON(p store.PersonProfile) (string, error) {
	b, err := json.Marshal(p)
	return string(b), err
}

// CreatePerson inserts a person; the ID and, within the partition, the
// lower-cased email are unique.
func (db *DB) CreatePerson(ctx context.Context, p store.Person) error {
	now := time.Now().UTC()
	if p.CreatedAt.IsZero() {
		p.CreatedAt = now
	}
	if p.UpdatedAt.IsZero() {
		p.UpdatedAt = p.CreatedAt
	}
	profile, err := profileJSON(p.Profile)
	if err != nil {
		return err
	}
	_, err = db.exec(ctx, `INSERT INTO persons (`+personColumns+`, email_lower) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
		p.ID, p.Partition, p.Email, p.PasswordHash, p.FirstName, p.LastName, p.Status, stringMap(p.Custom), profile,
		p.TOTPSecret, micros(p.CreatedAt), micros(p.UpdatedAt), strings.ToLower(p.Email))
	return err
}

// GetPerson returns one person.
func (db *DB) GetPerson(ctx context.Context, id string) (store.Person, error) {
	p, err := scanPerson(db.queryRow(ctx, `SELECT `+personColumns+` FROM persons WHERE id = ?`, id))
	return p, db.scanErr(err)
}

// GetPersonByEmail matches the email case-insensitively within partition.
func (db *DB) GetPersonByEmail(ctx context.Context, partition, email string) (store.Person, error) {
	p, err := scanPerson(db.queryRow(ctx, `SELECT `+personColumns+` FROM persons WHERE partition_id = ? AND email_lower = ?`,
		partition, strings.ToLower(email)))
	return p, db.scanErr(err)
}

// UpdatePerson is a read-modify-write in one transaction.
func (db *DB) UpdatePerson(ctx context.Context, id string, fn func(store.Person) (store.Person, error)) error {
	return db.Tx(ctx, func(st store.Store) error {
		tx := st.(*DB)
		old, err := scanPerson(tx.queryRow(ctx, `SELECT `+personColumns+` FROM persons WHERE id = ?`+tx.d.ForUpdate, id))
		if err = tx.scanErr(err); err != nil {
			return err
		}
		p, err := fn(old)
		if err != nil {
			return err
		}
		p.ID, p.Partition, p.CreatedAt, p.UpdatedAt = old.ID, old.Partition, old.CreatedAt, time.Now().UTC()
		profile, err := profileJSON(p.Profile)
		if err != nil {
			return err
		}
		_, err = tx.exec(ctx, `UPDATE persons SET email = ?, email_lower = ?, password_hash = ?, first_name = ?,
			last_name = ?, status = ?, custom_attributes = ?, profile = ?, totp_secret = ?, updated_at = ? WHERE id = ?`,
			p.Email, strings.ToLower(p.Email), p.PasswordHash, p.FirstName, p.LastName, p.Status, stringMap(p.Custom),
			profile, p.TOTPSecret, micros(p.UpdatedAt), id)
		if err != nil {
			return err
		}
		if p.Status == store.PersonBlocked || p.Status == store.PersonInactive {
			// A block ends every mailed link of the person (store.Persons).
			return tx.deleteUnusedPersonTokens(ctx, id)
		}
		return nil
	})
}

// LinkIdentity records an external identity of a person.
func (db *DB) LinkIdentity(ctx context.Context, e store.ExternalIdentity) error {
	if e.CreatedAt.IsZero() {
		e.CreatedAt = time.Now().UTC()
	}
	// One statement decides: a new link is inserted, the same link again
	// changes nothing, a link to another person comes back as a conflict.
	var owner string
	err := db.queryRowWrite(ctx, `INSERT INTO person_identities (`+identityColumns+`)
		VALUES (?, ?, ?, ?, ?, ?, ?)
		ON CONFLICT (partition_id, idp_id, external_person_id) DO UPDATE SET person_id = person_identities.person_id
		RETURNING person_id`, e.Partition, e.IdPID, e.ExternalID, e.PersonID, stringMap(e.Attributes), e.Unproven, micros(e.CreatedAt)).Scan(&owner)
	if err != nil {
		return db.scanErr(err)
	}
	if owner != e.PersonID {
		return store.ErrConflict
	}
	return nil
}

// ListIdentities returns a person's linked identities, oldest first.
func (db *DB) ListIdentities(ctx context.Context, personID string) ([]store.ExternalIdentity, error) {
	rows, err := db.query(ctx, `SELECT `+identityColumns+`
		FROM person_identities WHERE person_id = ? ORDER BY created_at, idp_id, external_person_id`, personID)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []store.ExternalIdentity
	for rows.Next() {
		e, err := scanIdentity(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, e)
	}
	return out, db.d.Translate(rows.Err())
}

// EndUnprovenIdentities removes a person's links marked unproven.
func (db *DB) EndUnprovenIdentities(ctx context.Context, personID string) (int, error) {
	res, err := db.exec(ctx, `DELETE FROM person_identities WHERE person_id = ? AND unproven`, personID)
	if err != nil {
		return 0, err
	}
	n, err := res.RowsAffected()
	return int(n), err
}

// LockPerson reads a person FOR UPDATE (PostgreSQL); SQLite's writer
// transaction already excludes every other writer.
func (db *DB) LockPerson(ctx context.Context, id string) (store.Person, error) {
	p, err := scanPerson(db.queryRowWrite(ctx, `SELECT `+personColumns+` FROM persons WHERE id = ?`+db.d.ForUpdate, id))
	return p, db.scanErr(err)
}

// SharePerson reads a person FOR SHARE (PostgreSQL): an UPDATE or DELETE of
// the row waits for the transaction, other SharePerson calls do not.
func (db *DB) SharePerson(ctx context.Context, id string) (store.Person, error) {
	p, err := scanPerson(db.queryRowWrite(ctx, `SELECT `+personColumns+` FROM persons WHERE id = ?`+db.d.ForShare, id))
	return p, db.scanErr(err)
}

// DeletePerson removes a person, their identities, consents and mailed tokens.
func (db *DB) DeletePerson(ctx context.Context, id string) error {
	return db.Tx(ctx, func(st store.Store) error {
		tx := st.(*DB)
		if err := tx.execOne(ctx, `DELETE FROM persons WHERE id = ?`, id); err != nil {
			return err
		}
		if _, err := tx.exec(ctx, `DELETE FROM person_identities WHERE person_id = ?`, id); err != nil {
			return err
		}
		if _, err := tx.exec(ctx, `DELETE FROM person_tokens WHERE person_id = ?`, id); err != nil {
			return err
		}
		_, err := tx.exec(ctx, `DELETE FROM consents WHERE person_id = ?`, id)
		return err
	})
}
