package storetest

import (
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/latchkey/latchkey/internal/store"
)

func testTxCommit(t *testing.T, s store.Store) {
	err := s.Tx(ctx(), func(tx store.Store) error {
		if err := tx.UpsertClient(ctx(), store.Client{ID: "c1", TokenEndpointAuthMethod: "none"}); err != nil {
			return err
		}
		// Reads inside the transaction see its writes; nested Tx joins it.
		return tx.Tx(ctx(), func(inner store.Store) error {
			_, err := inner.GetClient(ctx(), "c1")
			return err
		})
	})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.GetClient(ctx(), "c1"); err != nil {
		t.Errorf("committed client not found: %v", err)
	}
}

func testTxRollback(t *testing.T, s store.Store) {
	boom := errors.New("boom")
	err := s.Tx(ctx(), func(tx store.Store) error {
		if err := tx.UpsertClient(ctx(), store.Client{ID: "c1", TokenEndpointAuthMethod: "none"}); err != nil {
			return err
		}
		if err := tx.CreateGrant(ctx(), grant("g1")); err != nil {
			return err
		}
		return boom
	})
	if !errors.Is(err, boom) {
		t.Fatalf("Tx = %v, want fn's error", err)
	}
	if _, err := s.GetClient(ctx(), "c1"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("rolled-back client exists: %v", err)
	}
	if _, err := s.GetGrant(ctx(), "g1"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("rolled-back grant exists: %v", err)
	}
}

func testTxPanic(t *testing.T, s store.Store) {
	func() {
		defer func() {
			if recover() == nil {
				t.Error("the panic was swallowed")
			}
		}()
		_ = s.Tx(ctx(), func(tx store.Store) error {
			if err := tx.UpsertClient(ctx(), store.Client{ID: "c1", TokenEndpointAuthMethod: "none"}); err != nil {
				return err
			}
			panic("boom")
		})
	}()
	if _, err := s.GetClient(ctx(), "c1"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("client written by a panicking transaction exists: %v", err)
	}
}

func testSavepoint(t *testing.T, s store.Store) {
	err := s.Tx(ctx(), func(tx store.Store) error {
		if err := tx.UpsertClient(ctx(), store.Client{ID: "c1", TokenEndpointAuthMethod: "none"}); err != nil {
			return err
		}
		// A constraint violation inside a savepoint: PostgreSQL aborts the
		// transaction unless the savepoint is rolled back.
		err := tx.Savepoint(ctx(), func(sp store.Store) error {
			if err := sp.UpsertClient(ctx(), store.Client{ID: "c2", TokenEndpointAuthMethod: "none"}); err != nil {
				return err
			}
			if err := sp.CreateGrant(ctx(), grant("g1")); err != nil {
				return err
			}
			return sp.CreateGrant(ctx(), grant("g1"))
		})
		if !errors.Is(err, store.ErrConflict) {
			t.Errorf("Savepoint = %v, want ErrConflict", err)
		}
		if err := tx.Savepoint(ctx(), func(sp store.Store) error {
			return sp.UpsertClient(ctx(), store.Client{ID: "c3", TokenEndpointAuthMethod: "none"})
		}); err != nil {
			return err
		}
		return tx.UpsertClient(ctx(), store.Client{ID: "c4", TokenEndpointAuthMethod: "none"})
	})
	if err != nil {
		t.Fatal(err)
	}
	for id, want := range map[string]bool{"c1": true, "c2": false, "c3": true, "c4": true} {
		_, err := s.GetClient(ctx(), id)
		if got := err == nil; got != want {
			t.Errorf("client %s exists = %v, want %v (%v)", id, got, want, err)
		}
	}
	if _, err := s.GetGrant(ctx(), "g1"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("grant of the rolled-back savepoint exists: %v", err)
	}
}

// testTxIsolationRace: concurrent transactions that fail, panic or succeed
// keep exactly their own outcome (SQLite's group commit runs them in one
// database transaction, each in a savepoint; those run by BulkTx,
// every third, alone).
func testTxIsolationRace(t *testing.T, s store.Store) {
	const n = 40
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() {
				if p := recover(); p != nil && i%10 != 0 {
					t.Errorf("transaction %d: unexpected panic %v", i, p)
				}
			}()
			boom := errors.New("boom")
			run := s.Tx
			if i%3 == 0 {
				run = s.BulkTx
			}
			err := run(ctx(), func(tx store.Store) error {
				if err := tx.UpsertClient(ctx(), store.Client{ID: fmt.Sprintf("c%02d", i), TokenEndpointAuthMethod: "none"}); err != nil {
					return err
				}
				switch {
				case i%10 == 0:
					panic("boom")
				case i%2 == 1:
					return boom
				}
				return nil
			})
			if want := map[bool]error{true: boom, false: nil}[i%2 == 1]; !errors.Is(err, want) && !(err == nil && want == nil) {
				t.Errorf("transaction %d: %v, want %v", i, err, want)
			}
		}()
	}
	wg.Wait()
	for i := range n {
		_, err := s.GetClient(ctx(), fmt.Sprintf("c%02d", i))
		if exists, want := err == nil, i%2 == 0 && i%10 != 0; exists != want {
			t.Errorf("client of transaction %d exists = %v, want %v", i, exists, want)
		}
	}
}
