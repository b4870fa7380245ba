package storetest

import (
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/latchkey/latchkey/internal/store"
)

func testScopes(t *testing.T, s store.Store) {
	full := store.Scope{ID: "read_all-1", AuthenticationLevel: 2, UsageLimit: 5, ServiceEndpoint: "https://svc.example/x",
		VerificationFailedEndpoint: "https://svc.example/failed", PersistentConsent: true,
		Descriptions: map[string]string{"en": "Read everything", "nl_NL": "Alles lezen"}}
	bare := store.Scope{ID: "bare"}
	for _, sc := range []store.Scope{full, bare} {
		if err := s.CreateScope(ctx(), sc); err != nil {
			t.Fatal(err)
		}
	}
	ignore := cmpopts.IgnoreFields(store.Scope{}, "CreatedAt", "UpdatedAt")
	got, err := getScope(s, full.ID)
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(full, got, ignore); d != "" {
		t.Errorf("round trip (-want +got):\n%s", d)
	}
	if err := s.CreateScope(ctx(), bare); !errors.Is(err, store.ErrConflict) {
		t.Errorf("duplicate: %v, want ErrConflict", err)
	}
	some, err := s.GetScopes(ctx(), []string{"bare", "unknown", full.ID})
	if err != nil || len(some) != 2 || some[0].ID != "bare" {
		t.Errorf("GetScopes = %+v, %v", some, err)
	}
	if none, err := s.GetScopes(ctx(), nil); err != nil || len(none) != 0 {
		t.Errorf("GetScopes(nil) = %v, %v", none, err)
	}
	replaced := store.Scope{ID: full.ID, UsageLimit: 1}
	if err := s.ReplaceScope(ctx(), replaced); err != nil {
		t.Fatal(err)
	}
	got, _ = getScope(s, full.ID)
	if d := cmp.Diff(replaced, got, ignore); d != "" {
		t.Errorf("after replace (-want +got):\n%s", d)
	}
	if err := s.ReplaceScope(ctx(), store.Scope{ID: "nope"}); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("replace unknown: %v", err)
	}
	if err := s.DeleteScope(ctx(), "bare"); err != nil {
		t.Fatal(err)
	}
	if err := s.DeleteScope(ctx(), "bare"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("delete twice: %v", err)
	}
	all, err := s.ListScopes(ctx())
	if err != nil || len(all) != 1 || all[0].ID != full.ID {
		t.Errorf("ListScopes = %+v, %v", all, err)
	}
}

func testCreateScopeRace(t *testing.T, s store.Store) {
	wins := race(t, 10, func() error { return s.CreateScope(ctx(), store.Scope{ID: "same"}) }, store.ErrConflict)
	if wins != 1 {
		t.Errorf("%d of 10 concurrent creates succeeded, want 1", wins)
	}
}

// testScopeReadsSeeWrites: GetScopes (which SQLite answers from memory)
// sees every scope write once its statement or transaction has returned,
// and a transaction sees its own writes.
func testScopeReadsSeeWrites(t *testing.T, s store.Store) {
	limit := func(st store.Store, id string) int {
		t.Helper()
		got, err := st.GetScopes(ctx(), []string{id})
		if err != nil {
			t.Fatal(err)
		}
		if len(got) == 0 {
			return -1
		}
		return got[0].UsageLimit
	}
	if got := limit(s, "counted"); got != -1 {
		t.Fatalf("before create: limit %d, want no scope", got)
	}
	if err := s.CreateScope(ctx(), store.Scope{ID: "counted", UsageLimit: 3}); err != nil {
		t.Fatal(err)
	}
	if got := limit(s, "counted"); got != 3 {
		t.Errorf("after create: limit %d, want 3", got)
	}
	err := s.Tx(ctx(), func(tx store.Store) error {
		if got := limit(tx, "counted"); got != 3 {
			t.Errorf("in a transaction before its write: limit %d, want 3", got)
		}
		if err := tx.ReplaceScope(ctx(), store.Scope{ID: "counted", UsageLimit: 7}); err != nil {
			return err
		}
		if got := limit(tx, "counted"); got != 7 {
			t.Errorf("in the transaction after its write: limit %d, want 7", got)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if got := limit(s, "counted"); got != 7 {
		t.Errorf("after the transaction: limit %d, want 7", got)
	}
	errRollback := errors.New("roll back")
	err = s.Tx(ctx(), func(tx store.Store) error {
		if err := tx.ReplaceScope(ctx(), store.Scope{ID: "counted", UsageLimit: 9}); err != nil {
			return err
		}
		return errRollback
	})
	if !errors.Is(err, errRollback) {
		t.Fatal(err)
	}
	if got := limit(s, "counted"); got != 7 {
		t.Errorf("after a rolled-back replace: limit %d, want 7", got)
	}
	if err := s.DeleteScope(ctx(), "counted"); err != nil {
		t.Fatal(err)
	}
	if got := limit(s, "counted"); got != -1 {
		t.Errorf("after delete: limit %d, want no scope", got)
	}
}

// getScope reads one scope through GetScopes; ErrNotFound when it is not
// configured.
func getScope(s store.Store, id string) (store.Scope, error) {
	got, err := s.GetScopes(ctx(), []string{id})
	if err != nil {
		return store.Scope{}, err
	}
	if len(got) == 0 {
		return store.Scope{}, store.ErrNotFound
	}
	return got[0], nil
}
