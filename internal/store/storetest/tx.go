package storetest

import (
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

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

// testTxInsertsOnly covers transactions made of inserts and plain reads,
// which PostgreSQL sends as one statement without BEGIN (lazytx.go): reads
// see the transaction's own inserts, an insert that fails fails the whole
// Tx with its own error and writes nothing, and a failed function writes
// nothing either.
func testTxInsertsOnly(t *testing.T, s store.Store) {
	if err := s.CreateGrant(ctx(), grant("taken")); err != nil {
		t.Fatal(err)
	}
	// A read before any write, then inserts only: all committed.
	err := s.Tx(ctx(), func(tx store.Store) error {
		if _, err := tx.GetGrant(ctx(), "g1"); !errors.Is(err, store.ErrNotFound) {
			return fmt.Errorf("GetGrant before the insert: %v", err)
		}
		if err := tx.CreateGrant(ctx(), grant("g1")); err != nil {
			return err
		}
		if err := tx.CreateToken(ctx(), tok("t1", store.KindAccess, "g1")); err != nil {
			return err
		}
		return tx.AppendEvents(ctx(), store.Event{ID: "e-held-1", Kind: store.EventOAuth, Type: "T", Name: "t", Occurred: t0})
	})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.GetToken(ctx(), []byte("t1")); err != nil {
		t.Errorf("committed token: %v", err)
	}
	// Reads inside the transaction see its inserts.
	err = s.Tx(ctx(), func(tx store.Store) error {
		if err := tx.CreateGrant(ctx(), grant("g2")); err != nil {
			return err
		}
		if _, err := tx.GetGrant(ctx(), "g2"); err != nil {
			return fmt.Errorf("the transaction does not see its own insert: %v", err)
		}
		return tx.CreateToken(ctx(), tok("t2", store.KindAccess, "g2"))
	})
	if err != nil {
		t.Fatal(err)
	}
	// A conflicting insert fails the Tx with ErrConflict and nothing of it is written.
	err = s.Tx(ctx(), func(tx store.Store) error {
		if err := tx.CreateToken(ctx(), tok("t3", store.KindAccess, "taken")); err != nil {
			return err
		}
		return tx.CreateGrant(ctx(), grant("taken"))
	})
	if !errors.Is(err, store.ErrConflict) {
		t.Fatalf("Tx with a conflicting insert = %v, want ErrConflict", err)
	}
	if _, err := s.GetToken(ctx(), []byte("t3")); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("the token of a failed transaction was written: %v", err)
	}
	// The same after a read that follows the failing insert.
	err = s.Tx(ctx(), func(tx store.Store) error {
		if err := tx.CreateToken(ctx(), tok("t4", store.KindAccess, "taken")); err != nil {
			return err
		}
		if err := tx.CreateGrant(ctx(), grant("taken")); err != nil {
			return err
		}
		_, err := tx.GetToken(ctx(), []byte("t4"))
		return err
	})
	if !errors.Is(err, store.ErrConflict) {
		t.Fatalf("Tx with a conflicting insert, then a read = %v, want ErrConflict", err)
	}
	if _, err := s.GetToken(ctx(), []byte("t4")); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("the token of a failed transaction was written: %v", err)
	}
	// A function that fails after its inserts writes nothing.
	boom := errors.New("boom")
	err = s.Tx(ctx(), func(tx store.Store) error {
		if err := tx.CreateGrant(ctx(), grant("g5")); err != nil {
			return err
		}
		return boom
	})
	if !errors.Is(err, boom) {
		t.Fatalf("Tx = %v, want boom", err)
	}
	if _, err := s.GetGrant(ctx(), "g5"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("the grant of a failed transaction was written: %v", err)
	}
	// A savepoint whose insert conflicts undoes only itself.
	err = s.Tx(ctx(), func(tx store.Store) error {
		if err := tx.CreateGrant(ctx(), grant("g6")); err != nil {
			return err
		}
		if err := tx.Savepoint(ctx(), func(sp store.Store) error {
			if err := sp.CreateToken(ctx(), tok("t6-undone", store.KindAccess, "g6")); err != nil {
				return err
			}
			return sp.CreateGrant(ctx(), grant("taken"))
		}); !errors.Is(err, store.ErrConflict) {
			return fmt.Errorf("savepoint: %v, want ErrConflict", err)
		}
		return tx.CreateToken(ctx(), tok("t6", store.KindAccess, "g6"))
	})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.GetToken(ctx(), []byte("t6")); err != nil {
		t.Errorf("the token after the savepoint: %v", err)
	}
	if _, err := s.GetToken(ctx(), []byte("t6-undone")); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("the undone savepoint's token was written: %v", err)
	}
	// Revocations among a transaction's writes (PostgreSQL may hold one
	// and send it with what follows): a token revoked, then another
	// inserted and revoked, then the first revoked again, then an event.
	t7 := t0.Add(time.Minute)
	err = s.Tx(ctx(), func(tx store.Store) error {
		for _, step := range []func() error{
			func() error { return tx.RevokeToken(ctx(), []byte("t1"), t7) },
			func() error { return tx.CreateToken(ctx(), tok("t7", store.KindAccess, "g6")) },
			func() error { return tx.RevokeToken(ctx(), []byte("t7"), t7) },
			func() error { return tx.RevokeToken(ctx(), []byte("t1"), t7.Add(time.Minute)) },
			func() error {
				return tx.AppendEvents(ctx(), store.Event{ID: "e-held-7", Kind: store.EventOAuth, Type: "T", Name: "t", Occurred: t7})
			},
		} {
			if err := step(); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, h := range []string{"t1", "t7"} {
		if got, err := s.GetToken(ctx(), []byte(h)); err != nil || !got.RevokedAt.Equal(t7) {
			t.Errorf("token %s revoked in a transaction: revoked at %v, %v; want %v", h, got.RevokedAt, err, t7)
		}
	}
}
