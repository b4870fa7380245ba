package sqlstore

import (
	"context"
	"time"

	"github.com/latchkey/latchkey/internal/store"
)

const mailColumns = `id, kind, person_id, recipient, body, attempts, next_attempt_at, lease_owner, lease_until,
	last_error, created_at, sent_at`

func scanMail(r scanner) (store.Mail, error) {
	var m store.Mail
	var next, until, created, sent int64
	err := r.Scan(&m.ID, &m.Kind, &m.PersonID, &m.Recipient, &m.Body, &m.Attempts, &next, &m.LeaseOwner, &until,
		&m.LastError, &created, &sent)
	m.Body = fromBlob(m.Body)
	m.NextAttemptAt, m.LeaseUntil, m.CreatedAt, m.SentAt = fromMicros(next), fromMicros(until), fromMicros(created), fromMicros(sent)
	return m, err
}

// EnqueueMail inserts a mail.
func (db *DB) EnqueueMail(ctx context.Context, m store.Mail) error {
	_, err := db.exec(ctx, `INSERT INTO outbox (`+mailColumns+`) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
		m.ID, m.Kind, m.PersonID, m.Recipient, m.Body, m.Attempts, micros(m.NextAttemptAt), m.LeaseOwner,
		micros(m.LeaseUntil), m.LastError, micros(m.CreatedAt), micros(m.SentAt))
	return err
}

// ClaimMails leases due mails in one statement. On PostgreSQL the inner
// SELECT skips rows another instance's claim holds locked (SKIP LOCKED), so
// concurrent claims neither wait for each other nor take the same mail; on
// SQLite the statement runs under the single writer.
func (db *DB) ClaimMails(ctx context.Context, owner string, now time.Time, lease time.Duration, limit int) ([]store.Mail, error) {
	skipLocked := ""
	if db.d.ForUpdate != "" {
		skipLocked = db.d.ForUpdate + " SKIP LOCKED"
	}
	t := micros(now)
	rs, err := db.queryWrite(ctx, `UPDATE outbox SET lease_owner = ?, lease_until = ?, attempts = attempts + 1
		WHERE id IN (SELECT id FROM outbox WHERE sent_at = 0 AND next_attempt_at <= ? AND lease_until <= ?
			ORDER BY next_attempt_at, id LIMIT ?`+skipLocked+`)
		RETURNING `+mailColumns, owner, micros(now.Add(lease)), t, t, limit)
	if err != nil {
		return nil, err
	}
	defer rs.Close()
	var out []store.Mail
	for rs.Next() {
		m, err := scanMail(rs)
		if err != nil {
			return nil, err
		}
		out = append(out, m)
	}
	return out, db.d.Translate(rs.Err())
}

// EndMailAttempt finishes the mail (sent or given up) or gives its lease
// back with a new due time.
func (db *DB) EndMailAttempt(ctx context.Context, id, owner string, a store.MailAttempt) error {
	if a.RetryAt.IsZero() {
		res, err := db.exec(ctx, `UPDATE outbox SET sent_at = ?, body = ?, last_error = ? WHERE id = ? AND lease_owner = ? AND sent_at = 0`,
			micros(a.At), []byte{}, truncateError(a.Error), id, owner)
		return oneRow(res, err)
	}
	res, err := db.exec(ctx, `UPDATE outbox SET next_attempt_at = ?, lease_until = 0, last_error = ?
		WHERE id = ? AND lease_owner = ? AND sent_at = 0`, micros(a.RetryAt), truncateError(a.Error), id, owner)
	return oneRow(res, err)
}

// GetMail reads one mail.
func (db *DB) GetMail(ctx context.Context, id string) (store.Mail, error) {
	m, err := scanMail(db.queryRowWrite(ctx, `SELECT `+mailColumns+` FROM outbox WHERE id = ?`, id))
	if err != nil {
		return store.Mail{}, db.scanErr(err)
	}
	return m, nil
}

// oneRow turns "no row changed" into ErrNotFound.
func oneRow(res interface{ RowsAffected() (int64, error) }, err error) error {
	if err != nil {
		return err
	}
	n, err := res.RowsAffected()
	if err != nil {
		return err
	}
	if n == 0 {
		return store.ErrNotFound
	}
	return nil
}

const personTokenColumns = `hash, kind, person_id, created_at, expires_at, used_at`

func scanPersonToken(r scanner) (store.PersonToken, error) {
	var t store.PersonToken
	var created, expires, used int64
	err := r.Scan(&t.Hash, &t.Kind, &t.PersonID, &created, &expires, &used)
	t.CreatedAt, t.ExpiresAt, t.UsedAt = fromMicros(created), fromMicros(expires), fromMicros(used)
	return t, err
}

// CreatePersonToken inserts a token.
func (db *DB) CreatePersonToken(ctx context.Context, t store.PersonToken) error {
	_, err := db.exec(ctx, `INSERT INTO person_tokens (`+personTokenColumns+`) VALUES (?, ?, ?, ?, ?, ?)`,
		t.Hash, t.Kind, t.PersonID, micros(t.CreatedAt), micros(t.ExpiresAt), micros(t.UsedAt))
	return err
}

// GetPersonToken reads a token.
func (db *DB) GetPersonToken(ctx context.Context, hash []byte) (store.PersonToken, error) {
	t, err := scanPersonToken(db.queryRowWrite(ctx, `SELECT `+personTokenColumns+` FROM person_tokens WHERE hash = ?`, hash))
	if err != nil {
		return store.PersonToken{}, db.scanErr(err)
	}
	return t, nil
}

// UsePersonToken uses a token in one conditional UPDATE: the first use
// wins, every other use finds used_at set.
func (db *DB) UsePersonToken(ctx context.Context, hash []byte, kind string, now time.Time) (store.PersonToken, error) {
	t, err := scanPersonToken(db.queryRowWrite(ctx, `UPDATE person_tokens SET used_at = ?
		WHERE hash = ? AND kind = ? AND used_at = 0 AND expires_at > ? RETURNING `+personTokenColumns,
		micros(now), hash, kind, micros(now)))
	if err != nil {
		return store.PersonToken{}, db.scanErr(err)
	}
	return t, nil
}

// DeletePersonTokens removes a person's unused tokens of kind.
func (db *DB) DeletePersonTokens(ctx context.Context, personID, kind string) error {
	_, err := db.exec(ctx, `DELETE FROM person_tokens WHERE person_id = ? AND kind = ? AND used_at = 0`, personID, kind)
	return err
}

// deleteUnusedPersonTokens removes every unused token of a person, of
// every kind (a block ends them all).
func (db *DB) deleteUnusedPersonTokens(ctx context.Context, personID string) error {
	_, err := db.exec(ctx, `DELETE FROM person_tokens WHERE person_id = ? AND used_at = 0`, personID)
	return err
}

// journeyRetention is how long used or expired person tokens and sent mails
// are kept: a link followed again within it gets "already used" or
// "expired" rather than "unknown", and a sent mail's record shows it went.
const journeyRetention = 7 * 24 * time.Hour

// deleteExpiredJourneys is DeleteExpired's part for the outbox and the
// person tokens.
func (db *DB) deleteExpiredJourneys(ctx context.Context, now time.Time) (int64, error) {
	return db.deleteBefore(ctx, micros(now.Add(-journeyRetention)),
		`DELETE FROM person_tokens WHERE expires_at < ?`,
		`DELETE FROM outbox WHERE sent_at > 0 AND sent_at < ?`)
}

// truncateError bounds a stored error text (an SMTP server's reply).
func truncateError(s string) string {
	if len(s) > 500 {
		return s[:500]
	}
	return s
}
