package sqlite

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/latchkey/latchkey/internal/store"
	"github.com/latchkey/latchkey/internal/store/storetest"
)

func newStore(t *testing.T) store.Store {
	s, err := Open(context.Background(), filepath.Join(t.TempDir(), "latchkey.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func TestSQLite(t *testing.T) {
	storetest.RunTests(t, newStore)
	storetest.RunConcurrencyTests(t, newStore)
}

func TestSQLiteMigrateTwice(t *testing.T) {
	path := filepath.Join(t.TempDir(), "latchkey.db")
	for range 2 {
		s, err := Open(context.Background(), path)
		if err != nil {
			t.Fatal(err)
		}
		vs, err := s.AppliedVersions(context.Background())
		if err != nil || len(vs) == 0 {
			t.Fatalf("applied versions %v, %v", vs, err)
		}
		s.Close()
	}
}
