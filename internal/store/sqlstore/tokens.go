package sqlstore

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/latchkey/latchkey/internal/store"
)

// CreateGrant inserts a grant; a StoredClient grant only while its client
// exists (createGrantForStoredClient).
func (db *DB) CreateGrant(ctx context.Context, g store.Grant) error {
	if g.StoredClient {
		return db.createGrantForStoredClient(ctx, g)
	}
	return db.writeOrHold(ctx, `INSERT INTO grants (id, client_id, subject, scopes, auth_level, amr, data, created_at,
		expires_at, revoked_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
		g.ID, g.ClientID, g.Subject, list(g.Scopes), g.AuthLevel, list(g.AMR), g.Data,
		micros(g.CreatedAt), micros(g.ExpiresAt), micros(g.RevokedAt))
}

// GetGrant returns one grant.
func (db *DB) GetGrant(ctx context.Context, id string) (store.Grant, error) {
	g, err := scanGrant(db.queryRow(ctx, `SELECT `+grantColumns+` FROM grants WHERE id = ?`, id))
	return g, db.scanErr(err)
}

const grantColumns = `id, client_id, subject, scopes, auth_level, amr, data, created_at, expires_at, revoked_at`

// tokenGrantQuery joins a token to its grant; the tables share column names.
var tokenGrantQuery = `SELECT ` + qualify("tokens", tokenColumns) + `, ` + qualify("grants", grantColumns) + `
	FROM tokens JOIN grants ON grants.id = tokens.grant_id WHERE tokens.hash = ?`

var tokenGrantPersonQuery = `SELECT ` + qualify("persons", personColumns) + `, ` + qualify("tokens", tokenColumns) +
	`, ` + qualify("grants", grantColumns) + ` FROM tokens JOIN grants ON grants.id = tokens.grant_id
	JOIN persons ON persons.id = tokens.subject WHERE tokens.hash = ?`

// qualify prefixes each column of a comma-separated list with its table.
func qualify(table, columns string) string {
	cols := strings.Split(columns, ",")
	for i, c := range cols {
		cols[i] = table + "." + strings.TrimSpace(c)
	}
	return strings.Join(cols, ", ")
}

func scanGrant(s scanner, before ...any) (store.Grant, error) {
	var g store.Grant
	var scopes, amr string
	var created, expires, revoked int64
	dest := append(before, &g.ID, &g.ClientID, &g.Subject, &scopes, &g.AuthLevel, &amr, &g.Data, &created, &expires, &revoked)
	if err := s.Scan(dest...); err != nil {
		return g, err
	}
	var err error
	if g.Scopes, err = fromList(scopes); err != nil {
		return g, err
	}
	if g.AMR, err = fromList(amr); err != nil {
		return g, err
	}
	g.Data = fromBlob(g.Data)
	g.CreatedAt, g.ExpiresAt, g.RevokedAt = fromMicros(created), fromMicros(expires), fromMicros(revoked)
	return g, nil
}

// SetGrantData replaces a grant's flow data.
func (db *DB) SetGrantData(ctx context.Context, id string, data []byte) error {
	err := db.execOne(ctx, `UPDATE grants SET data = ? WHERE id = ?`, data, id)
	db.invalidate(invalidation{grant: id})
	return err
}

// RevokeGrant revokes a grant and every token it issued, in one transaction.
func (db *DB) RevokeGrant(ctx context.Context, id string, now time.Time) error {
	return db.Tx(ctx, func(st store.Store) error {
		return st.(*DB).revokeGrantRows(ctx, id, now)
	})
}

// revokeGrantRows marks grant id and its live tokens revoked at now (in a
// transaction): ErrNotFound when there is no such grant.
func (db *DB) revokeGrantRows(ctx context.Context, id string, now time.Time) error {
	if err := db.execOne(ctx, `UPDATE grants SET revoked_at = CASE WHEN revoked_at = 0 THEN ? ELSE revoked_at END
		WHERE id = ?`, micros(now), id); err != nil {
		return err
	}
	_, err := db.exec(ctx, `UPDATE tokens SET revoked_at = ? WHERE grant_id = ? AND revoked_at = 0`, micros(now), id)
	db.invalidate(invalidation{grant: id})
	return err
}

const tokenColumns = `hash, kind, grant_id, client_id, subject, scopes, issued_at, expires_at, usage_limit,
	usage_count, used_at, revoked_at`

// tokenFields holds a token row's columns while it is scanned.
type tokenFields struct {
	t                              store.Token
	scopes                         string
	issued, expires, used, revoked int64
}

func (f *tokenFields) dest() []any {
	return []any{&f.t.Hash, &f.t.Kind, &f.t.GrantID, &f.t.ClientID, &f.t.Subject, &f.scopes, &f.issued, &f.expires,
		&f.t.UsageLimit, &f.t.UsageCount, &f.used, &f.revoked}
}

func (f *tokenFields) token() (store.Token, error) {
	var err error
	f.t.Scopes, err = fromList(f.scopes)
	f.t.IssuedAt, f.t.ExpiresAt = fromMicros(f.issued), fromMicros(f.expires)
	f.t.UsedAt, f.t.RevokedAt = fromMicros(f.used), fromMicros(f.revoked)
	return f.t, err
}

func scanToken(s scanner) (store.Token, error) {
	var f tokenFields
	if err := s.Scan(f.dest()...); err != nil {
		return f.t, err
	}
	return f.token()
}

// CreateToken inserts a token.
func (db *DB) CreateToken(ctx context.Context, t store.Token) error {
	return db.writeOrHold(ctx, `INSERT INTO tokens (`+tokenColumns+`) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
		t.Hash, t.Kind, t.GrantID, t.ClientID, t.Subject, list(t.Scopes), micros(t.IssuedAt), micros(t.ExpiresAt),
		t.UsageLimit, t.UsageCount, micros(t.UsedAt), micros(t.RevokedAt))
}

// GetToken returns a token by hash.
func (db *DB) GetToken(ctx context.Context, hash []byte) (store.Token, error) {
	t, err := scanToken(db.queryRow(ctx, `SELECT `+tokenColumns+` FROM tokens WHERE hash = ?`, hash))
	return t, db.scanErr(err)
}

// GetTokenGrant returns a token and its grant in one query (introspection's
// single round trip).
func (db *DB) GetTokenGrant(ctx context.Context, hash []byte) (store.Token, store.Grant, error) {
	return db.cachedTokenGrant(ctx, hash, false)
}

// GetTokenGrantToChange: a live token's entry would be dropped by the
// change that follows (and its grant's index kept until the cache starts
// over), so only a revoked token's is kept.
func (db *DB) GetTokenGrantToChange(ctx context.Context, hash []byte) (store.Token, store.Grant, error) {
	return db.cachedTokenGrant(ctx, hash, true)
}

func (db *DB) cachedTokenGrant(ctx context.Context, hash []byte, revokedOnly bool) (store.Token, store.Grant, error) {
	c := db.shared.tokens
	if c == nil || db.inTx {
		return db.readTokenGrant(ctx, hash)
	}
	e, ok, seq, gen, err := db.cachedToken(ctx, hash)
	if err != nil {
		return store.Token{}, store.Grant{}, err
	}
	if ok {
		return e.t, e.g, nil
	}
	t, g, err := db.readTokenGrant(ctx, hash)
	if err == nil && (!revokedOnly || !t.RevokedAt.IsZero()) {
		c.put(seq, gen, t, g)
	}
	return t, g, err
}

// cachedToken is the token cache's current entry of hash, if it has one,
// with what a put after a read needs (seq, gen). The cache must be in use.
func (db *DB) cachedToken(ctx context.Context, hash []byte) (e cachedToken, ok bool, seq uint64, gen int64, err error) {
	c := db.shared.tokens
	if c.Generation != nil {
		// Before the row is read: an entry is never newer than its tag.
		if gen, err = c.Generation(ctx); err != nil {
			return e, false, 0, 0, err
		}
	}
	e, ok, seq = c.get(hash)
	return e, ok && e.gen == gen, seq, gen, nil
}

// Generations are PostgreSQL's client and token generations, read by one
// statement: a request that authenticates its client and then looks up a
// token (introspection) waits for one read, not two.
type Generations struct{ Client, Token int64 }

// Generations reads both generations.
func (db *DB) Generations(ctx context.Context) (Generations, error) {
	var g Generations
	err := db.queryRow(ctx, generationsQuery).Scan(&g.Client, &g.Token)
	return g, db.scanErr(err)
}

// generationsQuery reads both generations, as columns client and token.
const generationsQuery = `SELECT (SELECT generation FROM client_generation WHERE id = 1) AS client,
		(SELECT COALESCE(SUM(generation), 0) FROM token_generation) AS token`

// GetTokenGrantSharePerson reads a token, its grant and its person, the
// person's row under a share lock: on PostgreSQL one round trip where a
// read and then SharePerson took two.
func (db *DB) GetTokenGrantSharePerson(ctx context.Context, hash []byte) (store.Token, store.Grant, store.Person, error) {
	q := tokenGrantPersonQuery
	if db.d.ForShare != "" {
		q += db.d.ForShare + ` OF persons`
	}
	return db.scanTokenGrantPerson(db.queryRowWrite(ctx, q, hash))
}

// GetTokenGrantPerson reads a token, its grant and its person in one
// read, without a lock.
func (db *DB) GetTokenGrantPerson(ctx context.Context, hash []byte) (store.Token, store.Grant, store.Person, error) {
	return db.scanTokenGrantPerson(db.queryRow(ctx, tokenGrantPersonQuery, hash))
}

// scanTokenGrantPerson scans a row of tokenGrantPersonQuery's columns,
// after the columns that before names.
func (db *DB) scanTokenGrantPerson(row scanner, before ...any) (store.Token, store.Grant, store.Person, error) {
	var pf personFields
	var tf tokenFields
	g, err := scanGrant(row, append(append(before, pf.dest()...), tf.dest()...)...)
	if err != nil {
		return store.Token{}, store.Grant{}, store.Person{}, db.scanErr(err)
	}
	t, err := tf.token()
	if err != nil {
		return t, g, store.Person{}, err
	}
	p, err := pf.person()
	return t, g, p, err
}

// tokenGrantPersonVersions is tokenGrantPersonQuery with the three rows'
// versions first (PostgreSQL's xmin: latchkey_guard_issue).
var tokenGrantPersonVersions = strings.Replace(tokenGrantPersonQuery, "SELECT ",
	"SELECT persons.xmin::text, tokens.xmin::text, grants.xmin::text, ", 1)

// GetTokenGrantGuardPerson is GetTokenGrantSharePerson for a transaction
// that issues from what it reads (a refresh). In a lazy transaction with
// nothing sent yet it reads without a lock, in a round trip it shares with
// concurrent ones (queryRowShared), so that its writes can be one
// statement sharing a commit; that statement commits only if the person's,
// the token's and the grant's rows are still the versions read, the
// person's under a share lock at the commit (latchkey_guard_issue), and
// otherwise fails with ErrReadChanged, on which Tx runs the function again
// with GetTokenGrantSharePerson's locking read. A statement that needs a
// transaction begun takes the share lock and checks the versions first.
// What a guarded read found is kept (guardedReads): a refresh of the same
// token sends no read while the rows are unchanged, its guard checks them.
func (db *DB) GetTokenGrantGuardPerson(ctx context.Context, hash []byte) (store.Token, store.Grant, store.Person, error) {
	l := db.lazy
	if !l.mayGuard() {
		return db.GetTokenGrantSharePerson(ctx, hash)
	}
	now := time.Now()
	r, ok := guardedRead{}, false
	if !l.reread {
		r, ok = db.shared.guarded.get(hash, now)
	}
	if ok {
		l.cachedRead = hash
	} else {
		var err error
		r.t, r.g, r.p, err = db.scanTokenGrantPerson(db.queryRowShared(ctx, tokenGrantPersonVersions, hash), &r.pv, &r.tv, &r.gv)
		if err != nil {
			return r.t, r.g, r.p, err
		}
		db.shared.guarded.put(hash, r, now)
	}
	// Completed with its last argument, wait, where it is sent.
	l.guard = &heldInsert{q: "SELECT latchkey_guard_issue(?, ?, ?, ?, ?, ?",
		args: []any{r.p.ID, r.pv, hash, r.tv, r.g.ID, r.gv}}
	return r.t, r.g, r.p, nil
}

// readTokenGrant reads a token and its grant; outside a transaction
// concurrent ones share round trips (queryRowShared).
func (db *DB) readTokenGrant(ctx context.Context, hash []byte) (store.Token, store.Grant, error) {
	var f tokenFields
	g, err := scanGrant(db.queryRowShared(ctx, tokenGrantQuery, hash), f.dest()...)
	if err != nil {
		return store.Token{}, store.Grant{}, db.scanErr(err)
	}
	t, err := f.token()
	return t, g, err
}

// RevokeToken revokes one token.
func (db *DB) RevokeToken(ctx context.Context, hash []byte, now time.Time) error {
	const q = `UPDATE tokens SET revoked_at = CASE WHEN revoked_at = 0 THEN ? ELSE revoked_at END WHERE hash = ?`
	var err error
	if db.lazy != nil && len(db.lazy.pending) == 0 {
		// Held, so that a revocation and its event are one statement. Only
		// when nothing is held before it: the parts of one WITH share a
		// snapshot, and it would miss a token inserted by a held insert.
		err = db.writeOrHold(ctx, q, micros(now), hash)
	} else {
		_, err = db.exec(ctx, q, micros(now), hash)
	}
	db.invalidate(invalidation{token: hash})
	return err
}

// RevokeLiveToken revokes clientID's live token hash of kind at now (a
// refresh token with its grant and the grant's other tokens) and appends
// ev, its TransactionID and UserID the token's grant and subject, without
// reading the token first: on PostgreSQL one statement, which shares a
// commit outside a transaction, where a read and then the transaction
// took two round trips or more. When it revokes nothing (no such token,
// another client's, one of the other kind, one revoked already, or a
// subject outside ASCII on PostgreSQL: migrations 0033 and 0034) it writes
// nothing and reports false, and its caller reads the token to say why. A
// token the cache holds as revoked is not tried: a repeated revocation
// costs no write but its event.
func (db *DB) RevokeLiveToken(ctx context.Context, kind string, hash []byte, clientID string, now time.Time, ev store.Event) (bool, error) {
	if kind != store.KindAccess && kind != store.KindRefresh {
		return false, fmt.Errorf("sqlstore: no such token kind %q", kind)
	}
	if err := store.CheckEventKinds([]store.Event{ev}); err != nil {
		return false, err // (PostgreSQL's statement inserts it itself)
	}
	if c := db.shared.tokens; c != nil && !db.inTx {
		e, ok, _, _, err := db.cachedToken(ctx, hash)
		if err != nil {
			return false, err
		}
		if ok && !e.t.RevokedAt.IsZero() {
			return false, nil
		}
	}
	if db.d.Pipe != nil {
		return db.revokeLiveInOne(ctx, kind, hash, clientID, now, ev)
	}
	var revoked bool
	err := db.Tx(ctx, func(st store.Store) error {
		tx := st.(*DB)
		out := ev
		revoked = false
		err := tx.queryRowWrite(ctx, `UPDATE tokens SET revoked_at = ?
			WHERE hash = ? AND client_id = ? AND kind = ? AND revoked_at = 0 RETURNING grant_id, subject`,
			micros(now), hash, clientID, kind).Scan(&out.TransactionID, &out.UserID)
		if errors.Is(err, sql.ErrNoRows) {
			return nil
		}
		if err != nil {
			return tx.scanErr(err)
		}
		revoked = true
		tx.invalidate(invalidation{token: hash})
		if kind == store.KindRefresh {
			// (A grant gone already: the token alone, as on PostgreSQL.)
			if err := tx.revokeGrantRows(ctx, out.TransactionID, now); err != nil && !errors.Is(err, store.ErrNotFound) {
				return err
			}
		}
		return tx.AppendEvents(ctx, out)
	})
	return revoked && err == nil, err
}

// revokeLiveInOne is RevokeLiveToken as one statement (PostgreSQL): the
// rows of latchkey_revoke_access or latchkey_revoke_refresh feed the
// event's insert. Outside a transaction it commits itself, sharing the
// commit (execShared), and the function checks the generations the request
// decided on first.
func (db *DB) revokeLiveInOne(ctx context.Context, kind string, hash []byte, clientID string, now time.Time, ev store.Event) (bool, error) {
	expect := noExpectation
	o := db.shared.optimism
	if o != nil && !db.inTx {
		if g, ok := o.Expected(ctx); ok {
			expect = g
		} else if err := o.Confirm(ctx); err != nil {
			return false, err
		}
	}
	fn := "latchkey_revoke_access"
	if kind == store.KindRefresh {
		fn = "latchkey_revoke_refresh"
	}
	e := eventArgs(ev)
	args := append([]any{hash, clientID, micros(now), expect.Client, expect.Token}, e[:6]...) // id … app_name
	args = append(args, e[9:]...)                                                             // person_id … occurred
	n, err := db.execShared(ctx, `WITH revoked AS (SELECT grant_id, subject FROM `+fn+`(?, ?, ?, ?, ?)),
		event AS (INSERT INTO events (`+eventRowColumns+`)
			SELECT ?, ?, ?, ?, ?, ?, grant_id, subject, lower(subject COLLATE "C"), ?, ?, ?, ?, ?, ?, ?::bigint FROM revoked)
		SELECT grant_id FROM revoked`, args...)
	if expect != noExpectation && (err == nil || errors.Is(err, store.ErrRunAgain)) {
		o.Settle(ctx, err == nil)
	}
	if err != nil || n == 0 {
		return false, err
	}
	// The grant's other tokens need no invalidation of their own here: the
	// cache answers an entry only under the token generation it was read
	// under (TokenCache.Generation), and the function's UPDATE moved it.
	db.invalidate(invalidation{token: hash})
	return true, nil
}

// UseRefreshToken marks an unused refresh token used. The conditional
// UPDATE is the single-use guarantee: concurrent callers serialise on the
// row and only one sees used_at = 0.
func (db *DB) UseRefreshToken(ctx context.Context, hash []byte, now time.Time) (store.Token, error) {
	return db.updateToken(ctx, hash, `UPDATE tokens SET used_at = ? WHERE hash = ? AND used_at = 0
		RETURNING `+tokenColumns, micros(now), hash)
}

// updateToken runs a conditional UPDATE ... RETURNING on one token. When the
// condition fails it returns the token as it is with ErrConflict (or
// ErrNotFound when there is no such token).
func (db *DB) updateToken(ctx context.Context, hash []byte, q string, args ...any) (store.Token, error) {
	t, err := db.updateTokenRow(ctx, hash, q, args...)
	db.invalidate(invalidation{token: hash})
	return t, err
}

// updateTokenRow is updateToken without the cache invalidation: for a
// change no cached answer is read for (a use's count).
func (db *DB) updateTokenRow(ctx context.Context, hash []byte, q string, args ...any) (store.Token, error) {
	t, err := scanToken(db.queryRowWrite(ctx, q, args...))
	if err == nil {
		return t, nil
	}
	if !errors.Is(err, sql.ErrNoRows) {
		return t, db.scanErr(err)
	}
	t, err = scanToken(db.queryRowWrite(ctx, `SELECT `+tokenColumns+` FROM tokens WHERE hash = ?`, hash))
	if err != nil {
		return t, db.scanErr(err)
	}
	return t, store.ErrConflict
}

// SpendTokenUse counts one use of a limited token, and appends ev (when
// not nil) with it, in the write that counts it; ErrConflict when
// exhausted.
func (db *DB) SpendTokenUse(ctx context.Context, hash []byte, ev *store.Event) (store.Token, error) {
	if ev != nil {
		if err := store.CheckEventKinds([]store.Event{*ev}); err != nil {
			return store.Token{}, err // (PostgreSQL's statement inserts it itself)
		}
	}
	return db.countTokenUse(ctx, hash, ev)
}

// countTokenUse counts one use, and appends ev (if any) with it.
func (db *DB) countTokenUse(ctx context.Context, hash []byte, ev *store.Event) (store.Token, error) {
	if db.d.CoalesceUses && !db.inTx {
		// The shared write runs without the caller's context: it checks
		// the generations the caller decided on, where it can, and the
		// caller confirms them first where it cannot.
		expect := noExpectation
		if o := db.shared.optimism; o != nil && db.d.ReturningFrom {
			if g, ok := o.Expected(ctx); ok {
				expect = g
			}
		} else if err := db.confirmWrite(ctx); err != nil {
			return store.Token{}, err
		}
		return db.coalescedUse(ctx, hash, expect, ev)
	}
	// The token's cache entry stays (TokenCache.put): nothing reads its count.
	const q = `UPDATE tokens SET usage_count = usage_count + 1
		WHERE hash = ? AND usage_limit > 0 AND usage_count < usage_limit RETURNING ` + tokenColumns
	if ev == nil {
		return db.updateTokenRow(ctx, hash, q, hash)
	}
	var t store.Token
	err := db.Tx(ctx, func(st store.Store) error {
		tx := st.(*DB)
		var err error
		if t, err = tx.updateTokenRow(ctx, hash, q, hash); err != nil {
			return err
		}
		return tx.AppendEvents(ctx, *ev)
	})
	return t, err
}

const codeColumns = `hash, client_id, subject, redirect_uri, scopes, code_challenge, code_challenge_method,
	auth_level, amr, data, issued_at, expires_at, used_at, grant_id`

func scanCode(s scanner) (store.AuthCode, error) {
	var f codeFields
	if err := s.Scan(f.dest()...); err != nil {
		return f.c, err
	}
	return f.code()
}

// codeFields are the scan destinations of codeColumns.
type codeFields struct {
	c                     store.AuthCode
	scopes, amr           string
	issued, expires, used int64
}

func (f *codeFields) dest() []any {
	c := &f.c
	return []any{&c.Hash, &c.ClientID, &c.Subject, &c.RedirectURI, &f.scopes, &c.CodeChallenge,
		&c.CodeChallengeMethod, &c.AuthLevel, &f.amr, &c.Data, &f.issued, &f.expires, &f.used, &c.GrantID}
}

func (f *codeFields) code() (store.AuthCode, error) {
	c := f.c
	var err error
	if c.Scopes, err = fromList(f.scopes); err != nil {
		return c, err
	}
	c.AMR, err = fromList(f.amr)
	c.Data = fromBlob(c.Data)
	c.IssuedAt, c.ExpiresAt, c.UsedAt = fromMicros(f.issued), fromMicros(f.expires), fromMicros(f.used)
	return c, err
}

// CreateAuthCode inserts a code.
func (db *DB) CreateAuthCode(ctx context.Context, c store.AuthCode) error {
	return db.writeOrHold(ctx, `INSERT INTO auth_codes (`+codeColumns+`) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
		c.Hash, c.ClientID, c.Subject, c.RedirectURI, list(c.Scopes), c.CodeChallenge, c.CodeChallengeMethod,
		c.AuthLevel, list(c.AMR), c.Data, micros(c.IssuedAt), micros(c.ExpiresAt), micros(c.UsedAt), c.GrantID)
}

// getAuthCode reads a code.
func (db *DB) getAuthCode(ctx context.Context, hash []byte) (store.AuthCode, error) {
	c, err := scanCode(db.queryRow(ctx, `SELECT `+codeColumns+` FROM auth_codes WHERE hash = ?`, hash))
	return c, db.scanErr(err)
}

// GetAuthCodePerson reads a code and its person in one read, without a lock.
func (db *DB) GetAuthCodePerson(ctx context.Context, hash []byte) (store.AuthCode, store.Person, error) {
	var cf codeFields
	var pf personFields
	if err := db.queryRow(ctx, codePersonQuery, hash).Scan(append(cf.dest(), pf.dest()...)...); err != nil {
		return store.AuthCode{}, store.Person{}, db.scanErr(err)
	}
	c, err := cf.code()
	if err != nil {
		return c, store.Person{}, err
	}
	p, err := pf.person()
	return c, p, err
}

// UseAuthCode marks an unused code used (single use, as UseRefreshToken).
func (db *DB) UseAuthCode(ctx context.Context, hash []byte, now time.Time) (store.AuthCode, error) {
	c, err := scanCode(db.queryRowWrite(ctx, `UPDATE auth_codes SET used_at = ? WHERE hash = ? AND used_at = 0
		RETURNING `+codeColumns, micros(now), hash))
	if err == nil {
		return c, nil
	}
	if !errors.Is(err, sql.ErrNoRows) {
		return c, db.scanErr(err)
	}
	c, err = scanCode(db.queryRowWrite(ctx, `SELECT `+codeColumns+` FROM auth_codes WHERE hash = ?`, hash))
	if err != nil {
		return c, db.scanErr(err)
	}
	return c, store.ErrConflict
}

// codePersonQuery reads a code and its person; codePersonVersion, the
// person's version first (PostgreSQL's xmin: latchkey_guard_code).
var (
	codePersonQuery = `SELECT ` + qualify("auth_codes", codeColumns) + `, ` + qualify("persons", personColumns) +
		` FROM auth_codes JOIN persons ON persons.id = auth_codes.subject WHERE auth_codes.hash = ?`
	codePersonVersion = strings.Replace(codePersonQuery, "SELECT ", "SELECT persons.xmin::text, ", 1)
)

// UseAuthCodeGuardPerson reads the code and its person, the person's row
// under a share lock, then uses the code (UseAuthCode): the order of a
// person's erasure, which locks the person and then deletes the codes.
//
// In a lazy transaction with nothing sent yet it reads both without a
// lock, in a round trip it shares with concurrent reads (queryRowShared),
// and holds the use (codeUse), so that the transaction's writes are
// one statement sharing a commit. That statement begins with the use and
// commits only if the use updated the code — no other exchange used it
// since the read — and the person's row is still the version read, under
// a share lock (latchkey_guard_code); otherwise it fails with
// ErrReadChanged, on which Tx runs the function again with locking reads.
// The code's SetAuthCodeGrant joins the held use.
func (db *DB) UseAuthCodeGuardPerson(ctx context.Context, hash []byte, now time.Time) (store.AuthCode, store.Person, error) {
	l := db.lazy
	guarded := l.mayGuard()
	var version string
	var cf codeFields
	var pf personFields
	q, read, dest := codePersonQuery, db.queryRowWrite, append(cf.dest(), pf.dest()...)
	switch {
	case guarded:
		q, read, dest = codePersonVersion, db.queryRowShared, append([]any{&version}, dest...)
	case db.d.ForShare != "":
		q += db.d.ForShare + ` OF persons`
	}
	err := read(ctx, q, hash).Scan(dest...)
	var c store.AuthCode
	var p store.Person
	switch {
	case errors.Is(err, sql.ErrNoRows):
		// No code, or its person is gone: the code alone.
		if c, err = db.getAuthCode(ctx, hash); err != nil {
			return c, p, err
		}
	case err != nil:
		return c, p, db.scanErr(err)
	default:
		if c, err = cf.code(); err != nil {
			return c, p, err
		}
		if p, err = pf.person(); err != nil {
			return c, p, err
		}
	}
	if !c.UsedAt.IsZero() {
		return c, store.Person{}, store.ErrConflict // used_at never goes back to 0
	}
	if !guarded {
		c, err = db.UseAuthCode(ctx, hash, now)
		return c, p, err
	}
	l.use = &codeUse{hash: hash, at: micros(now)}
	var id, v any // NULL: the person is gone, the exchange is refused
	if p.ID != "" {
		id, v = p.ID, version
	}
	l.guard = &heldInsert{q: "SELECT latchkey_guard_code((SELECT count(*) FROM burn), ?, ?", args: []any{id, v}}
	c.UsedAt = fromMicros(micros(now))
	return c, p, nil
}

// codeUse is a guarded code's use, held: the first part of the statement
// the transaction's guard ends (as "burn"), or sent with its BEGIN.
type codeUse struct {
	hash    []byte
	at      int64
	grantID string
}

// statement is the use as a WITH's part. wait: in a transaction already
// begun, which waits for the code's row; sharing a commit, a row another
// transaction holds is skipped, so the guard finds the code unused and
// fails, and the function runs again in a transaction of its own.
func (u *codeUse) statement(wait bool) heldInsert {
	q := `UPDATE auth_codes SET used_at = ?, grant_id = ? WHERE hash = (SELECT hash FROM auth_codes
		WHERE hash = ? AND used_at = 0 FOR UPDATE SKIP LOCKED) RETURNING 1`
	if wait {
		q = `UPDATE auth_codes SET used_at = ?, grant_id = ? WHERE hash = ? AND used_at = 0 RETURNING 1`
	}
	return heldInsert{q: q, args: []any{u.at, u.grantID, u.hash}}
}

// SetAuthCodeGrant records the grant an exchanged code created.
func (db *DB) SetAuthCodeGrant(ctx context.Context, hash []byte, grantID string) error {
	const q = `UPDATE auth_codes SET grant_id = ? WHERE hash = ?`
	if db.lazy != nil {
		if u := db.lazy.use; u != nil && bytes.Equal(u.hash, hash) {
			// Not a second update of the row in the statement of its
			// use, which PostgreSQL would apply only one of.
			u.grantID = grantID
			return nil
		}
		// The transaction has used this code (UseAuthCode): the update
		// goes with its held inserts, the grant's among them.
		return db.writeOrHold(ctx, q, grantID, hash)
	}
	return db.execOne(ctx, q, grantID, hash)
}
