package sqlstore

import (
	"context"
	"strings"
	"time"

	"github.com/latchkey/latchkey/internal/store"
)

// ErasePerson erases a person in one transaction (store.Store.ErasePerson):
// this package's tables. SQLite's event log is the sqlite package's.
func (db *DB) ErasePerson(ctx context.Context, personID string, now time.Time,
	fn func(tx store.Store, p store.Person) error) (store.PersonRevocation, error) {
	var out store.PersonRevocation
	err := db.Tx(ctx, func(st store.Store) error {
		tx := st.(*DB)
		// The row first, as issuance and status changes take it: a
		// concurrent issuance commits before (and is revoked here) or
		// finds no person.
		p, err := tx.LockPerson(ctx, personID)
		if err != nil {
			return err
		}
		if out, err = tx.RevokePerson(ctx, personID, now); err != nil {
			return err
		}
		if err := tx.DeletePerson(ctx, personID); err != nil {
			return err
		}
		x := store.NewErasure(p)
		for _, q := range []string{
			// Grants keep their rows (revocation and replay checks), not
			// their flow data: it caches the person's details for
			// introspection.
			`UPDATE grants SET data = NULL WHERE subject = ? AND subject <> ''`,
			`DELETE FROM auth_codes WHERE subject = ?`,
			`DELETE FROM device_codes WHERE subject = ?`,
			`DELETE FROM person_tokens WHERE person_id = ?`,
			`DELETE FROM outbox WHERE person_id = ? AND person_id <> ''`,
			// A person the config file seeded: its fingerprint.
			`DELETE FROM server_meta WHERE name = '` + seedPrefix + `' || ?`,
		} {
			if _, err := tx.exec(ctx, q, personID); err != nil {
				return err
			}
		}
		// The cached answers of the person's tokens hold the flow data.
		tx.invalidate(invalidation{all: true})
		for _, email := range x.Emails {
			// Throttle keys name an email address as a part after ':'
			// and before '|' or the end (login:pair:<email>|<address>).
			if _, err := tx.exec(ctx, `DELETE FROM throttle WHERE replace(key || '|', ':' || ? || '|', '') <> key || '|'`,
				email); err != nil {
				return err
			}
		}
		if err := tx.scrubEvents(ctx, x); err != nil {
			return err
		}
		return fn(tx, p)
	})
	return out, err
}

// scrubEvents applies x to the events table, through the user and agent
// indexes (each statement names the partial index's condition).
func (db *DB) scrubEvents(ctx context.Context, x store.Erasure) error {
	users := append([]string{strings.ToLower(x.PersonID)}, x.Emails...)
	agents := append(append([]string{x.PersonID}, x.Emails...), x.Spelled...)
	set := `UPDATE events SET client_ip = '', user_agent = '', context = '{}',
		user_id = CASE WHEN user_id_lower IN (` + marks(len(x.Emails)) + `) THEN ? ELSE user_id END,
		user_id_lower = CASE WHEN user_id_lower IN (` + marks(len(x.Emails)) + `) THEN ? ELSE user_id_lower END,
		person_id = CASE WHEN lower(person_id) IN (` + marks(len(x.Emails)) + `) THEN ? ELSE person_id END,
		agent_user = CASE WHEN lower(agent_user) IN (` + marks(len(x.Emails)) + `) THEN ? ELSE agent_user END`
	setArgs := func() []any {
		var a []any
		for _, v := range []string{x.PersonID, strings.ToLower(x.PersonID), x.PersonID, x.PersonID} {
			a = append(a, anys(x.Emails)...)
			a = append(a, v)
		}
		return a
	}
	kinds := []any{store.EventOAuth, store.EventPerson}
	if _, err := db.exec(ctx, set+` WHERE kind IN (?, ?) AND user_id_lower IN (`+marks(len(users))+`) AND user_id_lower <> ''`,
		append(append(setArgs(), kinds...), anys(users)...)...); err != nil {
		return err
	}
	// Agents are matched as stored (the agent index is case-sensitive):
	// the ID, and the addresses as the profile spells them.
	_, err := db.exec(ctx, set+` WHERE kind IN (?, ?) AND agent_user IN (`+marks(len(agents))+`) AND agent_user <> ''`,
		append(append(setArgs(), kinds...), anys(agents)...)...)
	return err
}

// marks is n comma-separated placeholders; "NULL" for none (IN (NULL)
// matches nothing).
func marks(n int) string {
	if n == 0 {
		return "NULL"
	}
	return "?" + strings.Repeat(", ?", n-1)
}

// FindPersons returns the persons with email in every partition.
func (db *DB) FindPersons(ctx context.Context, email string) ([]store.Person, error) {
	rows, err := db.query(ctx, `SELECT `+personColumns+` FROM persons WHERE email_lower = ? ORDER BY partition_id`,
		strings.ToLower(email))
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []store.Person
	for rows.Next() {
		p, err := scanPerson(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, p)
	}
	return out, db.d.Translate(rows.Err())
}

// ListSessions returns a person's live sessions, newest first.
func (db *DB) ListSessions(ctx context.Context, personID string, now time.Time) ([]store.Session, error) {
	rows, err := db.query(ctx, `SELECT hash, person_id, auth_level, amr, auth_time, expires_at FROM sessions
		WHERE person_id = ? AND expires_at > ? ORDER BY auth_time DESC, hash`, personID, micros(now))
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []store.Session
	for rows.Next() {
		var s store.Session
		var amr string
		var auth, expires int64
		if err := rows.Scan(&s.Hash, &s.PersonID, &s.AuthLevel, &amr, &auth, &expires); err != nil {
			return nil, err
		}
		if s.AMR, err = fromList(amr); err != nil {
			return nil, err
		}
		s.AuthTime, s.ExpiresAt = fromMicros(auth), fromMicros(expires)
		out = append(out, s)
	}
	return out, db.d.Translate(rows.Err())
}

// ListPersonGrants returns a person's live grants, newest first (through
// the partial index grants_subject).
func (db *DB) ListPersonGrants(ctx context.Context, personID string, now time.Time) ([]store.Grant, error) {
	rows, err := db.query(ctx, `SELECT `+grantColumns+` FROM grants WHERE subject = ? AND subject <> ''
		AND revoked_at = 0 AND expires_at > ? ORDER BY created_at DESC, id`, personID, micros(now))
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []store.Grant
	for rows.Next() {
		g, err := scanGrant(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, g)
	}
	return out, db.d.Translate(rows.Err())
}

// createGrantForStoredClient inserts g while its client exists, holding
// the client's row (KeyShare) until the transaction ends. One statement:
// on PostgreSQL a DELETE in flight makes it wait, and it then finds the
// row gone (and inserts nothing) or there.
func (db *DB) createGrantForStoredClient(ctx context.Context, g store.Grant) error {
	res, err := db.exec(ctx, `INSERT INTO grants (id, client_id, subject, scopes, auth_level, amr, data, created_at,
		expires_at, revoked_at) SELECT ?, id, ?, ?, ?, ?, ?, ?, ?, ? FROM clients WHERE id = ?`+db.d.KeyShare,
		g.ID, g.Subject, list(g.Scopes), g.AuthLevel, list(g.AMR), g.Data,
		micros(g.CreatedAt), micros(g.ExpiresAt), micros(g.RevokedAt), g.ClientID)
	if err != nil {
		return err
	}
	n, err := affected(res)
	if err == nil && n == 0 {
		err = store.ErrNotFound
	}
	return err
}
