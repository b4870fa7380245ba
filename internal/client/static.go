package client

import (
	"context"
	"errors"
	"slices"
	"sort"
	"time"

	"github.com/latchkey/latchkey/internal/store"
)

// ErrReadOnly: a write to a client that the config file defines.
var ErrReadOnly = errors.New("client: defined in the config file, read-only")

// Static puts the config file's clients in front of a store (Dex's
// storage/static.go). They are answered from memory, are never written to
// the store, and cannot be changed or deleted through it; every other
// client is the store's. Clients created at run time thus live beside the
// file's and are not overwritten when an instance starts; a stored client
// with a static client's id is hidden by it. Each instance hashes the
// file's secrets under its own server key at start, so instances that
// share a database must share the key file (docs/DESIGN.md).
type Static struct {
	store.Store
	clients map[string]store.Client
	// Changed is told the id of a client written or deleted through the
	// layer (a client cache's Forget), once the write has committed; nil:
	// nobody.
	Changed func(ids ...string)
	// pending collects, inside a transaction, the ids written in it: they
	// are told after it ends (told before the commit, a cache could read
	// the old row again and keep it).
	pending *[]string
}

// NewStatic returns st with the static clients cs in front of it.
func NewStatic(st store.Store, cs []store.Client) *Static {
	m := make(map[string]store.Client, len(cs))
	for _, c := range cs {
		m[c.ID] = c
	}
	return &Static{Store: st, clients: m}
}

// GetClient answers a static client, else the store's.
func (s *Static) GetClient(ctx context.Context, id string) (store.Client, error) {
	if c, ok := s.clients[id]; ok {
		return c, nil
	}
	return s.Store.GetClient(ctx, id)
}

// ListClients lists the static clients and the store's others, by id.
func (s *Static) ListClients(ctx context.Context) ([]store.Client, error) {
	stored, err := s.Store.ListClients(ctx)
	if err != nil {
		return nil, err
	}
	out := slices.DeleteFunc(stored, func(c store.Client) bool { _, ok := s.clients[c.ID]; return ok })
	for _, c := range s.clients {
		out = append(out, c)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out, nil
}

// IsStatic reports whether id names a client of the config file.
func (s *Static) IsStatic(id string) bool { _, ok := s.clients[id]; return ok }

// UpsertClient writes a client of the store; ErrReadOnly for a static one.
func (s *Static) UpsertClient(ctx context.Context, c store.Client) error {
	if s.IsStatic(c.ID) {
		return ErrReadOnly
	}
	if err := s.Store.UpsertClient(ctx, c); err != nil {
		return err
	}
	s.changed(c.ID)
	return nil
}

// CreateClient creates a client of the store; store.ErrConflict for the
// ID of a static one (it would be hidden behind it).
func (s *Static) CreateClient(ctx context.Context, c store.Client) error {
	if s.IsStatic(c.ID) {
		return store.ErrConflict
	}
	if err := s.Store.CreateClient(ctx, c); err != nil {
		return err
	}
	s.changed(c.ID)
	return nil
}

// UpdateClient updates a client of the store; ErrReadOnly for a static one.
func (s *Static) UpdateClient(ctx context.Context, id string, fn func(store.Client) (store.Client, error)) (store.Client, error) {
	if s.IsStatic(id) {
		return store.Client{}, ErrReadOnly
	}
	c, err := s.Store.UpdateClient(ctx, id, fn)
	if err != nil {
		return c, err
	}
	s.changed(id)
	return c, nil
}

// DeleteClient deletes a client of the store; ErrReadOnly for a static one.
func (s *Static) DeleteClient(ctx context.Context, id string, now time.Time) (store.ClientRevocation, error) {
	if s.IsStatic(id) {
		return store.ClientRevocation{}, ErrReadOnly
	}
	r, err := s.Store.DeleteClient(ctx, id, now)
	if err != nil {
		return r, err
	}
	s.changed(id)
	return r, nil
}

// ErrGone: an issuance for a client that was deleted since it was read
// (CreateGrant).
var ErrGone = errors.New("client: the client was deleted")

// CreateGrant writes a grant. A stored client's grant is written only
// while the client exists, holding it against a concurrent delete
// (store.Grant.StoredClient): deleting a client during an issuance never
// leaves an active token. ErrGone when it was deleted.
func (s *Static) CreateGrant(ctx context.Context, g store.Grant) error {
	g.StoredClient = !s.IsStatic(g.ClientID)
	err := s.Store.CreateGrant(ctx, g)
	if errors.Is(err, store.ErrNotFound) {
		return ErrGone
	}
	return err
}

func (s *Static) changed(id string) {
	switch {
	case s.pending != nil:
		*s.pending = append(*s.pending, id)
	case s.Changed != nil:
		s.Changed(id)
	}
}

// Tx runs fn in a transaction that sees the static clients too.
func (s *Static) Tx(ctx context.Context, fn func(store.Store) error) error {
	return s.inTx(ctx, s.Store.Tx, fn)
}

// BulkTx is the store's BulkTx, with the static clients in front.
func (s *Static) BulkTx(ctx context.Context, fn func(store.Store) error) error {
	return s.inTx(ctx, s.Store.BulkTx, fn)
}

// Savepoint is Tx's savepoint, with the static clients in front.
func (s *Static) Savepoint(ctx context.Context, fn func(store.Store) error) error {
	return s.inTx(ctx, s.Store.Savepoint, fn)
}

// inTx runs fn through run (a transaction of the store) with the static
// clients in front, and tells Changed of the clients it wrote once the
// outermost transaction has ended (committed or not: dropping a cache
// entry is always safe).
func (s *Static) inTx(ctx context.Context, run func(context.Context, func(store.Store) error) error, fn func(store.Store) error) error {
	if s.pending != nil { // nested: the outer transaction tells
		return run(ctx, func(tx store.Store) error { return fn(s.over(tx, s.pending)) })
	}
	var ids []string
	err := run(ctx, func(tx store.Store) error { return fn(s.over(tx, &ids)) })
	if len(ids) > 0 && s.Changed != nil {
		s.Changed(ids...)
	}
	return err
}

func (s *Static) over(tx store.Store, pending *[]string) store.Store {
	return &Static{Store: tx, clients: s.clients, Changed: s.Changed, pending: pending}
}
