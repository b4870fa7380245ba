// Package admin manages clients and persons at run time (docs/ADMIN.md):
// the admin API (/api/v1/clients, /api/v1/persons), dynamic client
// registration (RFC 7591, RFC 7592: /oauth/register) and the operator's
// commands. Service holds every rule and knows no HTTP; the handlers
// (http.go, register_http.go) parse, call it and answer. Clients go
// through the same rules as the config file's (client.Registration), and
// every change is written with its event in one transaction.
package admin

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/latchkey/latchkey/internal/client"
	"github.com/latchkey/latchkey/internal/events"
	"github.com/latchkey/latchkey/internal/outbound"
	"github.com/latchkey/latchkey/internal/request"
	"github.com/latchkey/latchkey/internal/store"
	"github.com/latchkey/latchkey/internal/token"
)

// Service holds the admin rules.
type Service struct {
	// Store is the client layer: the config file's clients in front of
	// the store (read-only), which tells the client cache of every write.
	Store   *client.Static
	Secrets *token.Hasher
	Events  *events.Recorder
	Now     func() time.Time
	// AccountRemoved, when set, runs in the erasure's transaction with the
	// person as they were (their row is already gone in tx): the hook for
	// the account_removed notification (internal/journey). A mail it
	// enqueues is kept; the person's earlier mails are deleted before it
	// runs. Its error undoes the erasure.
	AccountRemoved func(ctx context.Context, tx store.Store, p store.Person) error
	// Registration configures dynamic client registration; the zero
	// value has it off.
	Registration Registration
	// Outbound holds the rule of URLs latchkey fetches (jwks_uri): https,
	// no internal address, but outbound.allow. nil: no exceptions.
	Outbound *outbound.Client
}

// Errors of the rules; the handlers map them to statuses.
var (
	// ErrNotFound: no client or person with that ID (404).
	ErrNotFound = errors.New("admin: not found")
	// ErrConflict: the ID or email address is taken (409).
	ErrConflict = errors.New("admin: conflict")
	// ErrReadOnly: a client of the config file; change it there (409).
	ErrReadOnly = errors.New("admin: the client is defined in the config file")
	// ErrChangedSinceRevision: If-Match named a revision that is not the current one (412).
	ErrChangedSinceRevision = errors.New("admin: the client changed since that revision")
)

// InvalidError is input that breaks a rule (400): Field names the member
// as the body spells it.
type InvalidError struct {
	Field string
	Msg   string
}

func (e *InvalidError) Error() string { return e.Msg }

func invalid(field, format string, args ...any) error {
	return &InvalidError{Field: field, Msg: fmt.Sprintf(format, args...)}
}

// Actor is who asks for a change: its name is the events'
// event_agent_user (an API user, a client ID, "cli:<user>"), Facts the
// request's address and user agent (zero for the CLI).
type Actor struct {
	Name  string
	Facts request.Facts
}

func (s *Service) now() time.Time {
	if s.Now != nil {
		return s.Now().UTC()
	}
	return time.Now().UTC()
}

// notFound maps the store's ErrNotFound to ErrNotFound.
func notFound(err error) error {
	if errors.Is(err, store.ErrNotFound) {
		return ErrNotFound
	}
	return err
}
