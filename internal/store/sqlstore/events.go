package sqlstore

import (
	"context"
	"encoding/json"
	"strconv"
	"strings"
	"time"

	"github.com/latchkey/latchkey/internal/store"
)

const eventColumns = `id, kind, type, name, client_id, app_name, transaction_id, user_id, person_id, client_ip,
	user_agent, agent_user, partition_id, context, occurred`

// eventSource is the FROM clause of a search for f. With IndexHints it names
// the index of the most selective equality filter: SQLite has no statistics
// of its own (and a sampled ANALYZE misjudges sorted indexes), so unhinted
// it may serve "one client, one type, two days" from the type index and
// visit every event of that type in the range. Each hinted index is
// (kind, column, occurred, id): it also serves the date range and, read
// backwards, yields the order. PostgreSQL's planner has statistics and
// chooses itself.
func (db *DB) eventSource(f store.EventFilter) string {
	if !db.d.IndexHints {
		return " FROM events"
	}
	switch {
	case f.TransactionID != "":
		return " FROM events INDEXED BY events_transaction"
	case f.UserID != "":
		return " FROM events INDEXED BY events_user"
	case f.AgentUser != "":
		return " FROM events INDEXED BY events_agent"
	case f.ClientID != "":
		return " FROM events INDEXED BY events_client"
	case len(f.Types) == 1:
		return " FROM events INDEXED BY events_type"
	}
	return " FROM events" // several types: SQLite's IN lookups on events_type, or the order of events_occurred
}

// where builds the WHERE clause of f with "?" placeholders.
func eventWhere(f store.EventFilter) (string, []any) {
	conds := []string{"kind = ?"}
	args := []any{f.Kind}
	add := func(cond string, a ...any) { conds = append(conds, cond); args = append(args, a...) }
	// The user, transaction and agent indexes leave out events with an
	// empty value: a search on one names that condition, so that the
	// planner (and SQLite's INDEXED BY) may use the partial index.
	if f.UserID != "" {
		add("user_id_lower = ? AND user_id_lower <> ''", strings.ToLower(f.UserID))
	}
	if f.ClientID != "" {
		add("client_id = ?", f.ClientID)
	}
	if f.TransactionID != "" {
		add("transaction_id = ? AND transaction_id <> ''", f.TransactionID)
	}
	if f.AgentUser != "" {
		add("agent_user = ? AND agent_user <> ''", f.AgentUser)
	}
	if len(f.Types) > 0 {
		add("type IN (?"+strings.Repeat(", ?", len(f.Types)-1)+")", anys(f.Types)...)
	}
	if len(f.ExcludeTypes) > 0 {
		add("type NOT IN (?"+strings.Repeat(", ?", len(f.ExcludeTypes)-1)+")", anys(f.ExcludeTypes)...)
	}
	if !f.From.IsZero() {
		add("occurred >= ?", f.From.UnixMilli())
	}
	if !f.To.IsZero() {
		if f.ToExclusive {
			add("occurred < ?", f.To.UnixMilli())
		} else {
			add("occurred <= ?", f.To.UnixMilli())
		}
	}
	return " WHERE " + strings.Join(conds, " AND "), args
}

func anys(v []string) []any {
	out := make([]any, len(v))
	for i, s := range v {
		out[i] = s
	}
	return out
}

// SearchEvents returns a page of events, latest first.
func (db *DB) SearchEvents(ctx context.Context, f store.EventFilter, offset, limit int) ([]store.Event, error) {
	out, _, err := db.searchEvents(ctx, f, offset, limit, false)
	return out, err
}

// pageGeneration is the deletion generation (CountEvents) as a column of a
// page: read once per statement, as it does not depend on the row; -1
// without its row, which leaves the count to CountEvents.
const pageGeneration = `COALESCE((SELECT generation FROM event_deletions WHERE id = 1), -1)`

// searchEvents is SearchEvents; withGen also reads the deletion generation
// in the page's statement (gen is -1 when the page is empty).
func (db *DB) searchEvents(ctx context.Context, f store.EventFilter, offset, limit int, withGen bool) (out []store.Event, gen int64, err error) {
	where, args := eventWhere(f)
	cols := eventColumns
	if withGen {
		cols += ", " + pageGeneration
	}
	page := ` ORDER BY occurred DESC, id DESC LIMIT ? OFFSET ?`
	if offset == 0 && kindOnly(f) {
		// A whole kind's first page names its size: PostgreSQL plans a
		// statement whose LIMIT is a parameter at every run (its generic
		// plan's estimate, without the bound, loses to each custom one),
		// and planning cost several times the index scan of 20 rows. This
		// one has one plan whatever the kind, so its generic plan is kept.
		page = ` ORDER BY occurred DESC, id DESC LIMIT ` + strconv.Itoa(limit)
	} else {
		args = append(args, limit, offset)
	}
	rows, err := db.query(ctx, `SELECT `+cols+db.eventSource(f)+where+page, args...)
	if err != nil {
		return nil, 0, err
	}
	defer rows.Close()
	out = []store.Event{}
	gen = -1
	for rows.Next() {
		var e store.Event
		var occurred int64
		var flowContext string
		dest := []any{&e.ID, &e.Kind, &e.Type, &e.Name, &e.ClientID, &e.AppName, &e.TransactionID, &e.UserID,
			&e.PersonID, &e.ClientIP, &e.UserAgent, &e.AgentUser, &e.Partition, &flowContext, &occurred}
		if withGen {
			dest = append(dest, &gen)
		}
		if err := rows.Scan(dest...); err != nil {
			return nil, 0, err
		}
		if flowContext != "{}" {
			if err := json.Unmarshal([]byte(flowContext), &e.Context); err != nil {
				return nil, 0, err
			}
		}
		e.Occurred = time.UnixMilli(occurred).UTC()
		out = append(out, e)
	}
	return out, gen, db.d.Translate(rows.Err())
}

// EventPage is SearchEvents and CountEvents(f, max) in fewer statements.
// A page that ends before limit holds the last of the matches, so its
// length is the count. Otherwise a whole kind's search reads the deletion
// generation with the page, and the remembered count it vouches for
// answers without a statement of its own; it is read before the count, as
// CountEvents reads it.
func (db *DB) EventPage(ctx context.Context, f store.EventFilter, offset, limit, max int) ([]store.Event, int, error) {
	whole := kindOnly(f)
	page, gen, err := db.searchEvents(ctx, f, offset, limit, whole)
	if err != nil {
		return nil, 0, err
	}
	if len(page) < limit && (len(page) > 0 || offset == 0) {
		return page, min(offset+len(page), max), nil
	}
	var n int
	if whole && gen >= 0 {
		n, err = db.countKind(ctx, f, max, gen)
	} else {
		n, err = db.CountEvents(ctx, f, max)
	}
	if err != nil {
		return nil, 0, err
	}
	return page, n, nil
}

// CountEvents counts up to max matching events.
//
// A count of all of a kind's events is remembered once it reaches its
// bound (the unfiltered search, on a table that holds more than the bound,
// would otherwise count the bound's rows at every page): inserts only raise
// it and no update changes an event's kind, so it holds until a deletion,
// which bumps event_deletions (a trigger, on every instance's table). The
// generation is read before the count it vouches for: a deletion that
// commits after that read leaves a later generation.
func (db *DB) CountEvents(ctx context.Context, f store.EventFilter, max int) (int, error) {
	if !kindOnly(f) {
		return db.countMatches(ctx, f, max)
	}
	var gen int64
	if err := db.queryRow(ctx, `SELECT generation FROM event_deletions WHERE id = 1`).Scan(&gen); err != nil {
		return 0, db.scanErr(err)
	}
	return db.countKind(ctx, f, max, gen)
}

// countKind counts a whole kind's events up to max, given the deletion
// generation read before it.
func (db *DB) countKind(ctx context.Context, f store.EventFilter, max int, gen int64) (int, error) {
	if c, ok := db.shared.kindCounts.Load(f.Kind); ok && c.(kindCount).gen == gen && c.(kindCount).atLeast >= max {
		return max, nil
	}
	n, err := db.countMatches(ctx, f, max)
	if err == nil && n == max {
		db.shared.kindCounts.Store(f.Kind, kindCount{gen: gen, atLeast: n})
	}
	return n, err
}

func (db *DB) countMatches(ctx context.Context, f store.EventFilter, max int) (int, error) {
	where, args := eventWhere(f)
	var n int
	err := db.queryRow(ctx, `SELECT COUNT(*) FROM (SELECT 1`+db.eventSource(f)+where+` LIMIT ?) AS matched`, append(args, max)...).Scan(&n)
	if err != nil {
		return 0, db.scanErr(err)
	}
	return n, nil
}

// kindCount is a kind's count of events that reached a bound, at a
// deletion generation.
type kindCount struct {
	gen     int64
	atLeast int
}

// kindOnly reports whether f selects every event of its kind.
func kindOnly(f store.EventFilter) bool {
	return f.UserID == "" && f.ClientID == "" && f.TransactionID == "" && f.AgentUser == "" &&
		len(f.Types) == 0 && len(f.ExcludeTypes) == 0 && f.From.IsZero() && f.To.IsZero()
}

// DeleteEventsBefore removes a batch of old events. Naming both kinds lets
// the (kind, occurred) index find them: one range per kind.
func (db *DB) DeleteEventsBefore(ctx context.Context, t time.Time, limit int) (int64, error) {
	res, err := db.exec(ctx, `DELETE FROM events WHERE id IN (SELECT id FROM events WHERE kind IN (?, ?) AND occurred < ? LIMIT ?)`,
		store.EventOAuth, store.EventPerson, t.UnixMilli(), limit)
	if err != nil {
		return 0, err
	}
	return affected(res)
}
