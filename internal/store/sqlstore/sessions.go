package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"slices"
	"strings"
	"time"

	"github.com/latchkey/latchkey/internal/store"
)

// CreateAuthRequest stores a pending authorization request.
func (db *DB) CreateAuthRequest(ctx context.Context, r store.AuthRequest) error {
	_, err := db.exec(ctx, `INSERT INTO auth_requests (id, client_id, data, created_at, expires_at) VALUES (?, ?, ?, ?, ?)`,
		r.ID, r.ClientID, r.Data, micros(r.CreatedAt), micros(r.ExpiresAt))
	return err
}

// GetAuthRequest returns a pending request.
func (db *DB) GetAuthRequest(ctx context.Context, id string) (store.AuthRequest, error) {
	var r store.AuthRequest
	var created, expires int64
	err := db.queryRow(ctx, `SELECT id, client_id, data, created_at, expires_at FROM auth_requests WHERE id = ?`, id).
		Scan(&r.ID, &r.ClientID, &r.Data, &created, &expires)
	r.Data = fromBlob(r.Data)
	r.CreatedAt, r.ExpiresAt = fromMicros(created), fromMicros(expires)
	return r, db.scanErr(err)
}

// DeleteAuthRequest removes a pending request.
func (db *DB) DeleteAuthRequest(ctx context.Context, id string) error {
	return db.execOne(ctx, `DELETE FROM auth_requests WHERE id = ?`, id)
}

// execOne runs a statement that must touch one row: none is ErrNotFound.
func (db *DB) execOne(ctx context.Context, q string, args ...any) error {
	res, err := db.exec(ctx, q, args...)
	if err != nil {
		return err
	}
	if n, err := affected(res); err != nil || n == 0 {
		if err == nil {
			err = store.ErrNotFound
		}
		return err
	}
	return nil
}

// CreateSession stores a login session.
func (db *DB) CreateSession(ctx context.Context, s store.Session) error {
	_, err := db.exec(ctx, `INSERT INTO sessions (hash, person_id, auth_level, amr, auth_time, expires_at, idp_id, upstream_id_token)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?)`, s.Hash, s.PersonID, s.AuthLevel, list(s.AMR), micros(s.AuthTime), micros(s.ExpiresAt),
		s.IdPID, s.UpstreamIDToken)
	return err
}

const sessionColumns = `hash, person_id, auth_level, amr, auth_time, expires_at, idp_id, upstream_id_token`

// getSession returns a session by hash, without its person.
func (db *DB) getSession(ctx context.Context, hash []byte) (store.Session, error) {
	var f sessionFields
	if err := db.queryRow(ctx, `SELECT `+sessionColumns+` FROM sessions WHERE hash = ?`, hash).Scan(f.dest()...); err != nil {
		return f.s, db.scanErr(err)
	}
	return f.session()
}

// sessionPersonQuery reads a session and its person.
var sessionPersonQuery = `SELECT ` + qualify("sessions", sessionColumns) + `, ` + qualify("persons", personColumns) +
	` FROM sessions JOIN persons ON persons.id = sessions.person_id WHERE sessions.hash = ?`

// GetSession returns a session with its person, in one read where the
// authorization endpoint made two; concurrent ones share round trips
// (queryRowShared).
func (db *DB) GetSession(ctx context.Context, hash []byte) (store.Session, error) {
	var f sessionFields
	var pf personFields
	err := db.queryRowShared(ctx, sessionPersonQuery, hash).Scan(append(f.dest(), pf.dest()...)...)
	if errors.Is(err, sql.ErrNoRows) {
		return db.getSession(ctx, hash) // no session, or its person is gone
	}
	if err != nil {
		return f.s, db.scanErr(err)
	}
	s, err := f.session()
	if err != nil {
		return s, err
	}
	p, err := pf.person()
	s.Person = &p
	return s, err
}

// sessionFields are the scan destinations of sessionColumns.
type sessionFields struct {
	s             store.Session
	amr           string
	auth, expires int64
}

func (f *sessionFields) dest() []any {
	s := &f.s
	return []any{&s.Hash, &s.PersonID, &s.AuthLevel, &f.amr, &f.auth, &f.expires, &s.IdPID, &s.UpstreamIDToken}
}

func (f *sessionFields) session() (store.Session, error) {
	s := f.s
	s.UpstreamIDToken = fromBlob(s.UpstreamIDToken)
	var err error
	s.AMR, err = fromList(f.amr)
	s.AuthTime, s.ExpiresAt = fromMicros(f.auth), fromMicros(f.expires)
	return s, err
}

// DeleteSession removes a session (logout).
func (db *DB) DeleteSession(ctx context.Context, hash []byte) error {
	return db.execOne(ctx, `DELETE FROM sessions WHERE hash = ?`, hash)
}

// UpdateSession is a read-modify-write in one transaction (step-up raises the level).
func (db *DB) UpdateSession(ctx context.Context, hash []byte, fn func(store.Session) (store.Session, error)) error {
	return db.Tx(ctx, func(st store.Store) error {
		tx := st.(*DB)
		old, err := tx.getSession(ctx, hash)
		if err != nil {
			return err
		}
		s, err := fn(old)
		if err != nil {
			return err
		}
		_, err = tx.exec(ctx, `UPDATE sessions SET person_id = ?, auth_level = ?, amr = ?, auth_time = ?, expires_at = ?,
			idp_id = ?, upstream_id_token = ? WHERE hash = ?`, s.PersonID, s.AuthLevel, list(s.AMR), micros(s.AuthTime),
			micros(s.ExpiresAt), s.IdPID, s.UpstreamIDToken, hash)
		return err
	})
}

// SaveConsents records or refreshes consents.
func (db *DB) SaveConsents(ctx context.Context, cs []store.Consent) error {
	return db.Tx(ctx, func(st store.Store) error {
		tx := st.(*DB)
		for _, c := range cs {
			if _, err := tx.exec(ctx, `INSERT INTO consents (person_id, client_id, scope, granted_at) VALUES (?, ?, ?, ?)
				ON CONFLICT (person_id, client_id, scope) DO UPDATE SET granted_at = excluded.granted_at`,
				c.PersonID, c.ClientID, c.Scope, micros(c.GrantedAt)); err != nil {
				return err
			}
		}
		return nil
	})
}

// ListConsents returns a person's consents for a client, by scope.
func (db *DB) ListConsents(ctx context.Context, personID, clientID string) ([]store.Consent, error) {
	rows, err := db.query(ctx, `SELECT person_id, client_id, scope, granted_at FROM consents
		WHERE person_id = ? AND client_id = ? ORDER BY scope`, personID, clientID)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []store.Consent
	for rows.Next() {
		var c store.Consent
		var granted int64
		if err := rows.Scan(&c.PersonID, &c.ClientID, &c.Scope, &granted); err != nil {
			return nil, err
		}
		c.GrantedAt = fromMicros(granted)
		out = append(out, c)
	}
	return out, db.d.Translate(rows.Err())
}

// Take counts an attempt and answers whether it is within limit, in one
// upsert: the row lock (PostgreSQL) or the single writer (SQLite) orders
// concurrent takers, and each sees the count its own increment produced.
// The count stops at limit+1, so refused takes change nothing but what the
// next taker reads; a window that ended restarts at this attempt.
func (db *DB) Take(ctx context.Context, key string, window time.Duration, limit int, now time.Time) (bool, time.Duration, error) {
	t := micros(now)
	var hits, expires int64
	err := db.queryRowWrite(ctx, `INSERT INTO throttle (key, window_start, hits, expires_at) VALUES (?, ?, 1, ?)
		ON CONFLICT (key) DO UPDATE SET
			hits = CASE WHEN throttle.expires_at <= ? THEN 1
				WHEN throttle.hits > ? THEN throttle.hits ELSE throttle.hits + 1 END,
			window_start = CASE WHEN throttle.expires_at <= ? THEN excluded.window_start ELSE throttle.window_start END,
			expires_at = CASE WHEN throttle.expires_at <= ? THEN excluded.expires_at ELSE throttle.expires_at END
		RETURNING hits, expires_at`, key, t, t+window.Microseconds(), t, limit, t, t).Scan(&hits, &expires)
	if err := db.scanErr(err); err != nil {
		return false, 0, err
	}
	if hits <= int64(limit) {
		return true, 0, nil
	}
	return false, time.Duration(expires-t) * time.Microsecond, nil
}

// Count returns the attempts of key's current window.
func (db *DB) Count(ctx context.Context, key string, window time.Duration, now time.Time) (int, time.Duration, error) {
	var n, expires int64
	t := micros(now)
	err := db.queryRow(ctx, `SELECT hits, expires_at FROM throttle WHERE key = ? AND expires_at > ?`, key, t).Scan(&n, &expires)
	if err := db.scanErr(err); errors.Is(err, store.ErrNotFound) {
		return 0, 0, nil
	} else if err != nil {
		return 0, 0, err
	}
	return int(n), time.Duration(expires-t) * time.Microsecond, nil
}

// Release gives back one attempt of key.
func (db *DB) Release(ctx context.Context, key string) error {
	_, err := db.exec(ctx, `UPDATE throttle SET hits = hits - 1 WHERE key = ? AND hits > 0`, key)
	return err
}

// Reset forgets a key.
func (db *DB) Reset(ctx context.Context, key string) error {
	_, err := db.exec(ctx, `DELETE FROM throttle WHERE key = ?`, key)
	return err
}

// eventBatch rows per INSERT: 14 parameters each stays far below both
// engines' parameter limits (SQLite 32766, PostgreSQL 65535).
const eventBatch = 500

// eventParams is the number of parameters of an event row.
const eventParams = 16

// AppendEvents appends events, many rows per statement.
func (db *DB) AppendEvents(ctx context.Context, es ...store.Event) error {
	if held, err := db.hold(es); held {
		return err
	}
	// In a transaction (or for one event), one prepared statement per row:
	// no SQL text to parse.
	return db.insertEvents(ctx, es, eventAppend, db.d.InProcess && (db.inTx || len(es) == 1))
}

// IndexEvents inserts events as AppendEvents does but skips those whose id
// is already there: SQLite's event log indexes its records behind the
// callers, and its replay after a crash may carry events that were indexed
// before the crash.
func (db *DB) IndexEvents(ctx context.Context, es ...store.Event) error {
	how := eventSkipTaken
	if db.d.InsertOrIgnore {
		how = eventOrIgnore
	}
	return db.insertEvents(ctx, es, how, false)
}

// insertEvents inserts es, one row per statement or many, each statement
// an insert as how says.
func (db *DB) insertEvents(ctx context.Context, es []store.Event, how eventInsert, perRow bool) error {
	if err := store.CheckEventKinds(es); err != nil {
		return err
	}
	// A few rows fit a cached VALUES statement, which plans faster.
	if db.d.ArrayInsert && !perRow && len(es)*eventParams > maxStmtParams {
		return db.insertEventArrays(ctx, es, how)
	}
	if perRow {
		for _, e := range es {
			if _, err := db.exec(ctx, eventInsertSQL(1, how), eventArgs(e)...); err != nil {
				return err
			}
		}
		return nil
	}
	var all []any
	for len(es) > 0 {
		n := min(len(es), eventBatch)
		if db.d.InProcess {
			n = eventShape(n)
		}
		all = all[:0]
		for _, e := range es[:n] {
			all = append(all, eventArgs(e)...)
		}
		if err := db.writeOrHold(ctx, eventInsertSQL(n, how), slices.Clone(all)...); err != nil {
			return err
		}
		es = es[n:]
	}
	return nil
}

// eventArgs are e's parameters, in the order of eventRowColumns.
func eventArgs(e store.Event) []any {
	return []any{e.ID, e.Kind, e.Type, e.Name, e.ClientID, e.AppName, e.TransactionID, e.UserID, lower(e.UserID),
		e.PersonID, e.ClientIP, e.UserAgent, e.AgentUser, e.Partition, stringMap(e.Context), e.Occurred.UnixMilli()}
}

// eventShapes are the rows of the multi-row event inserts an in-process
// engine (SQLite) runs, largest first: a batch is cut into them, so that
// their few statements are prepared once and cached (statements with more
// parameters than maxStmtParams are not, and SQLite would parse a batch of
// any other size again each time).
var eventShapes = [...]int{64, 16, 4, 1}

// eventShape is the largest of eventShapes not above n (n > 0).
func eventShape(n int) int {
	for _, s := range eventShapes {
		if s <= n {
			return s
		}
	}
	return 1
}

// eventShapeSQL holds the texts of eventShapes' inserts, of every kind:
// they are cached whatever their parameters (cacheable).
var eventShapeSQL = func() map[string]bool {
	m := map[string]bool{}
	for _, how := range eventInserts {
		for _, n := range eventShapes {
			m[eventInsertSQL(n, how)] = true
		}
	}
	return m
}()

// eventInsert is how an insert of event rows begins and ends.
type eventInsert struct{ head, tail string }

var (
	// eventAppend inserts every row, and fails on an id already there.
	eventAppend = eventInsert{head: "INSERT INTO events"}
	// eventSkipTaken and eventOrIgnore skip the rows whose id is there
	// (IndexEvents). With ON CONFLICT DO NOTHING the other constraints can
	// still abort a statement midway, so SQLite journals every page a
	// multi-row insert changes in order to undo it; OR IGNORE leaves no
	// constraint that aborts, so SQLite keeps no such journal
	// (Dialect.InsertOrIgnore).
	eventSkipTaken = eventInsert{head: "INSERT INTO events", tail: " ON CONFLICT (id) DO NOTHING"}
	eventOrIgnore  = eventInsert{head: "INSERT OR IGNORE INTO events"}

	eventInserts = [...]eventInsert{eventAppend, eventSkipTaken, eventOrIgnore}
)

// eventInsertSQL is the insert of n event rows, as how says.
func eventInsertSQL(n int, how eventInsert) string {
	cols := how.head + ` (` + eventRowColumns + `) VALUES `
	const row = "(?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
	if n == 1 && how.tail == "" {
		return cols + row
	}
	var b strings.Builder
	b.Grow(len(cols) + n*(len(row)+2) + len(how.tail))
	b.WriteString(cols)
	for i := range n {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(row)
	}
	b.WriteString(how.tail)
	return b.String()
}

// insertEventArrays inserts es in one statement whose text does not depend
// on how many there are (PostgreSQL: a column array per parameter): one
// prepared statement serves every batch, where a VALUES list per batch
// size would be parsed, planned and closed each time.
func (db *DB) insertEventArrays(ctx context.Context, es []store.Event, how eventInsert) error {
	return db.writeOrHold(ctx, how.head+` (`+eventRowColumns+`)
		SELECT * FROM unnest(`+eventArrayParams+`)`+how.tail, eventArrays(es)...)
}

// eventRowColumns are the columns an event row is inserted with, in the
// order of eventArrays and of eventInsertSQL's parameters.
const eventRowColumns = `id, kind, type, name, client_id, app_name, transaction_id, user_id,
			user_id_lower, person_id, client_ip, user_agent, agent_user, partition_id, context, occurred`

// eventArrayParams are the parameters of eventArrays, typed for unnest.
const eventArrayParams = `?::text[], ?::text[], ?::text[], ?::text[], ?::text[], ?::text[], ?::text[], ?::text[],
			?::text[], ?::text[], ?::text[], ?::text[], ?::text[], ?::text[], ?::text[], ?::bigint[]`

// eventArrays are es as one array per column (eventRowColumns).
func eventArrays(es []store.Event) []any {
	var ids, kinds, types, names, clients, apps, txs, users, usersLower, persons, ips, agents, agentUsers, partitions, contexts []string
	occurred := make([]int64, 0, len(es))
	for _, e := range es {
		ids, kinds, types, names = append(ids, e.ID), append(kinds, e.Kind), append(types, e.Type), append(names, e.Name)
		clients, apps, txs = append(clients, e.ClientID), append(apps, e.AppName), append(txs, e.TransactionID)
		users, usersLower, persons = append(users, e.UserID), append(usersLower, lower(e.UserID)), append(persons, e.PersonID)
		ips, agents, agentUsers = append(ips, e.ClientIP), append(agents, e.UserAgent), append(agentUsers, e.AgentUser)
		partitions, contexts = append(partitions, e.Partition), append(contexts, stringMap(e.Context))
		occurred = append(occurred, e.Occurred.UnixMilli())
	}
	return []any{ids, kinds, types, names, clients, apps, txs, users, usersLower, persons, ips, agents, agentUsers, partitions,
		contexts, occurred}
}

// insertEventsExpecting inserts each event of es whose expected
// generations (noExpectation: none) are those the statement reads, and
// returns those: one statement, so the read and the inserts share a
// snapshot, and an event is never inserted after a change it did not see.
func (db *DB) insertEventsExpecting(ctx context.Context, es []store.Event, expect []Generations) (Generations, error) {
	if err := store.CheckEventKinds(es); err != nil {
		return Generations{}, err
	}
	clientGens, tokenGens := make([]int64, len(es)), make([]int64, len(es))
	for i, e := range expect {
		clientGens[i], tokenGens[i] = e.Client, e.Token
	}
	var found Generations
	err := db.queryRowWrite(ctx, `WITH g AS (`+generationsQuery+`),
		ins AS (INSERT INTO events (`+eventRowColumns+`)
		SELECT v.id, v.kind, v.type, v.name, v.client_id, v.app_name, v.transaction_id, v.user_id, v.user_id_lower,
			v.person_id, v.client_ip, v.user_agent, v.agent_user, v.partition_id, v.context, v.occurred
		FROM unnest(`+eventArrayParams+`, ?::bigint[], ?::bigint[]) AS v(`+eventRowColumns+`, client_gen, token_gen), g
		WHERE v.client_gen < 0 OR v.client_gen = g.client AND v.token_gen = g.token)
		SELECT client, token FROM g`,
		append(eventArrays(es), clientGens, tokenGens)...).Scan(&found.Client, &found.Token)
	return found, db.scanErr(err)
}

// deleteBefore runs each DELETE of qs with the cut-off cut and reports how
// many rows they removed in all.
func (db *DB) deleteBefore(ctx context.Context, cut int64, qs ...string) (int64, error) {
	var total int64
	for _, q := range qs {
		res, err := db.exec(ctx, q, cut)
		if err != nil {
			return total, err
		}
		n, err := affected(res)
		if err != nil {
			return total, err
		}
		total += n
	}
	return total, nil
}

// DeleteExpired removes expired short-lived records.
func (db *DB) DeleteExpired(ctx context.Context, now time.Time) (int64, error) {
	total, err := db.deleteBefore(ctx, micros(now),
		`DELETE FROM client_assertion_ids WHERE expires_at < ?`,
		`DELETE FROM auth_requests WHERE expires_at < ?`,
		`DELETE FROM sessions WHERE expires_at < ?`,
		`DELETE FROM auth_codes WHERE expires_at < ?`,
		`DELETE FROM device_codes WHERE expires_at < ?`,
		`DELETE FROM tokens WHERE grant_id IN (SELECT id FROM grants WHERE expires_at < ?)`,
		`DELETE FROM grants WHERE expires_at < ?`,
		`DELETE FROM throttle WHERE expires_at < ?`,
		`DELETE FROM signing_keys WHERE expire_at > 0 AND expire_at < ?`,
		`DELETE FROM federation_states WHERE expires_at < ?`)
	if err != nil {
		return total, err
	}
	n, err := db.deleteExpiredJourneys(ctx, now)
	total += n
	if err != nil {
		return total, err
	}
	db.invalidate(invalidation{all: true}) // expired rows: no cached answer of them is active anyway
	return total, nil
}
