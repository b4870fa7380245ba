package client

import (
	"context"
	"errors"
	"slices"
	"sort"

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
	// layer (a client cache's Forget); nil: nobody.
	Changed func(ids ...string)
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

// UpsertClient writes a client of the store; ErrReadOnly for a static one.
func (s *Static) UpsertClient(ctx context.Context, c store.Client) error {
	if _, ok := s.clients[c.ID]; ok {
		return ErrReadOnly
	}
	if err := s.Store.UpsertClient(ctx, c); err != nil {
		return err
	}
	s.changed(c.ID)
	return nil
}

// DeleteClient deletes a client of the store; ErrReadOnly for a static one.
func (s *Static) DeleteClient(ctx context.Context, id string) error {
	if _, ok := s.clients[id]; ok {
		return ErrReadOnly
	}
	if err := s.Store.DeleteClient(ctx, id); err != nil {
		return err
	}
	s.changed(id)
	return nil
}

func (s *Static) changed(id string) {
	if s.Changed != nil {
		s.Changed(id)
	}
}

// Tx runs fn in a transaction that sees the static clients too.
func (s *Static) Tx(ctx context.Context, fn func(store.Store) error) error {
	return s.Store.Tx(ctx, func(tx store.Store) error { return fn(s.over(tx)) })
}

// BulkTx is the store's BulkTx, with the static clients in front.
func (s *Static) BulkTx(ctx context.Context, fn func(store.Store) error) error {
	return s.Store.BulkTx(ctx, func(tx store.Store) error { return fn(s.over(tx)) })
}

// Savepoint is Tx's savepoint, with the static clients in front.
func (s *Static) Savepoint(ctx context.Context, fn func(store.Store) error) error {
	return s.Store.Savepoint(ctx, func(tx store.Store) error { return fn(s.over(tx)) })
}

func (s *Static) over(tx store.Store) store.Store {
	return &Static{Store: tx, clients: s.clients, Changed: s.Changed}
}
