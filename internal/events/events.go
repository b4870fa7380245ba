// Package events records OAuth and person events in the append-only event
// store; the search APIs read them.
package events

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/latchkey/latchkey/internal/request"
	"github.com/latchkey/latchkey/internal/store"
)

// Recorder builds event records and appends them.
type Recorder struct {
	Now   func() time.Time
	NewID func() string
	// Log takes the failed writes of Observe; nil: slog.Default().
	Log *slog.Logger
	// Observe, when set, sees every event appended, with its request's
	// facts: the metrics count outcomes from the events, so no flow needs a
	// metrics call of its own. An event appended in a transaction that
	// later rolls back is seen too.
	Observe func(f request.Facts, e *store.Event)
}

// ObserveOAuth records an event outside any transaction (a refusal, an
// introspection result, a login attempt). A failed write is logged and
// dropped: the answer does not depend on the event store (catalogue.go).
func (rec *Recorder) ObserveOAuth(ctx context.Context, st Appender, f request.Facts, e OAuth) {
	if err := rec.RecordOAuth(ctx, st, f, e); err != nil {
		rec.failed(ctx, e.Type, err)
	}
}

// failed logs a failed write of an observed event, unless the request
// was canceled (its event may still have been written).
func (rec *Recorder) failed(ctx context.Context, typ string, err error) {
	if ctx.Err() != nil || errors.Is(err, store.ErrRunAgain) {
		return // (stale: the request runs again and records it then)
	}
	log := rec.Log
	if log == nil {
		log = slog.Default()
	}
	log.ErrorContext(ctx, "record event", "type", typ, "err", err)
}

// NewRecorder returns a Recorder on the wall clock and random UUIDs.
func NewRecorder() *Recorder {
	// Version 7 UUIDs grow with time: new events go to the end of the id
	// index instead of a random page, so a commit writes fewer pages.
	return &Recorder{Now: time.Now, NewID: func() string { return uuid.Must(uuid.NewV7()).String() }}
}

// OAuth is an OAuth event about to be recorded.
type OAuth struct {
	Type          string
	ClientID      string
	AppName       string
	TransactionID string
	UserID        string
	AgentUser     string
}

// RecordOAuth appends one OAuth event through st, which may be a
// transaction: the event then commits with the action it records. The
// request's facts supply client_ip and user_agent.
func (rec *Recorder) RecordOAuth(ctx context.Context, st Appender, f request.Facts, e OAuth) error {
	return rec.append(ctx, st, f, rec.oauthEvent(f, e))
}

// RecordOAuthBy records e through write, which writes the event with the
// action it records, in one statement (store.Store.RevokeLiveToken), and
// tells whether it did; nothing is recorded when it did not. Observe sees
// the event as built, before what write fills in from the action's rows.
func (rec *Recorder) RecordOAuthBy(f request.Facts, e OAuth, write func(store.Event) (bool, error)) (bool, error) {
	ev := rec.oauthEvent(f, e)
	done, err := write(ev)
	if done && err == nil && rec.Observe != nil {
		rec.Observe(f, &ev)
	}
	return done, err
}

// oauthEvent is e as the event to append.
func (rec *Recorder) oauthEvent(f request.Facts, e OAuth) store.Event {
	return store.Event{
		ID:            rec.NewID(),
		Kind:          store.EventOAuth,
		Type:          e.Type,
		Name:          DisplayName(e.Type),
		ClientID:      e.ClientID,
		AppName:       e.AppName,
		TransactionID: e.TransactionID,
		UserID:        e.UserID,
		AgentUser:     e.AgentUser,
		Occurred:      rec.Now().UTC(),
		ClientIP:      f.Addr,
		UserAgent:     f.UserAgent,
	}
}

func (rec *Recorder) append(ctx context.Context, st Appender, f request.Facts, ev store.Event) error {
	if err := st.AppendEvents(ctx, ev); err != nil {
		return err
	}
	if rec.Observe != nil {
		rec.Observe(f, &ev)
	}
	return nil
}

// DisplayName turns TOKEN_REQUEST_ACCESS_TOKEN_CREATED into
// "Token Request Access Token Created".
func DisplayName(typ string) string {
	words := strings.Split(strings.ToLower(typ), "_")
	for i, w := range words {
		if w != "" {
			words[i] = strings.ToUpper(w[:1]) + w[1:]
		}
	}
	return strings.Join(words, " ")
}

// Appender is where events go: a store's event sink (store.Store.EventSink)
// or a transaction.
type Appender = store.EventAppender
