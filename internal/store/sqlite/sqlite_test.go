package sqlite

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

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

// TestOpenLocksTheFileToOneProcess: a second process cannot open the file
// while this one has it (its token cache would miss the other's writes);
// stores of one process share the file, and read-only opens are free.
func TestOpenLocksTheFileToOneProcess(t *testing.T) {
	if path := os.Getenv("LATCHKEY_SQLITE_LOCK_CHILD"); path != "" {
		_, err := Open(context.Background(), path)
		if err == nil {
			t.Fatal("a second process opened the locked file")
		}
		if !strings.Contains(err.Error(), "in use by another process") {
			t.Fatalf("error: %v", err)
		}
		return
	}
	path := filepath.Join(t.TempDir(), "db")
	a, err := Open(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	b, err := Open(context.Background(), path)
	if err != nil {
		t.Fatalf("a second store of the same process: %v", err)
	}
	child := func() error {
		cmd := exec.Command(os.Args[0], "-test.run=^TestOpenLocksTheFileToOneProcess$", "-test.count=1")
		cmd.Env = append(os.Environ(), "LATCHKEY_SQLITE_LOCK_CHILD="+path)
		out, err := cmd.CombinedOutput()
		if err != nil {
			return fmt.Errorf("%v: %s", err, out)
		}
		return nil
	}
	if err := child(); err != nil {
		t.Fatalf("child: %v", err)
	}
	ro, err := OpenReadOnly(context.Background(), path)
	if err != nil {
		t.Fatalf("read-only beside the owner: %v", err)
	}
	ro.Close()

	// Both stores answer from one token cache: a revocation through one
	// shows through the other at once.
	ctx := context.Background()
	g := store.Grant{ID: "g", ClientID: "c", CreatedAt: time.Now(), ExpiresAt: time.Now().Add(time.Hour)}
	tk := store.Token{Hash: []byte("h"), Kind: store.KindAccess, GrantID: "g", ClientID: "c", IssuedAt: g.CreatedAt,
		ExpiresAt: g.ExpiresAt}
	if err := a.CreateGrant(ctx, g); err != nil {
		t.Fatal(err)
	}
	if err := a.CreateToken(ctx, tk); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if _, _, err := a.GetTokenGrant(ctx, tk.Hash); err != nil {
			t.Fatal(err)
		}
	}
	if err := b.RevokeGrant(ctx, "g", time.Now()); err != nil {
		t.Fatal(err)
	}
	if _, g, err := a.GetTokenGrant(ctx, tk.Hash); err != nil || g.RevokedAt.IsZero() {
		t.Fatalf("revoked through the other store: %v, revoked at %v", err, g.RevokedAt)
	}

	// The lock goes with the last store of the process.
	a.Close()
	if err := child(); err != nil {
		t.Fatalf("child with one store still open: %v", err)
	}
	b.Close()
	cmd := exec.Command(os.Args[0], "-test.run=^TestOpenLocksTheFileToOneProcess$", "-test.count=1")
	cmd.Env = append(os.Environ(), "LATCHKEY_SQLITE_LOCK_CHILD="+path)
	if out, err := cmd.CombinedOutput(); err == nil {
		t.Fatalf("after the last Close the child should have opened the file: %s", out)
	}
}

// TestCheckpointerCopiesTheWAL: committed pages reach the database file
// without the writer checkpointing (its threshold is far off), so commits
// never wait for a checkpoint's fsyncs.
func TestCheckpointerCopiesTheWAL(t *testing.T) {
	path := filepath.Join(t.TempDir(), "db")
	st, err := Open(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	size := func() int64 {
		fi, err := os.Stat(path)
		if err != nil {
			t.Fatal(err)
		}
		return fi.Size()
	}
	before := size()
	es := make([]store.Event, 2000)
	for i := range es {
		es[i] = store.Event{ID: fmt.Sprintf("0190a5c4-0000-7000-8000-%012d", i), Kind: store.EventOAuth, Type: "T",
			UserAgent: strings.Repeat("x", 500), Occurred: time.UnixMilli(int64(i))}
	}
	if err := st.AppendEvents(context.Background(), es...); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(10 * checkpointInterval); size() < before+1<<20; time.Sleep(checkpointInterval / 4) {
		if time.Now().After(deadline) {
			t.Fatalf("database file still %d bytes (was %d): the WAL was not checkpointed", size(), before)
		}
	}
}

// A token with a usage limit is read from memory too: introspecting it
// costs its use's statement, not a read besides (storetest checks that its
// uses and revocation still hold).
func TestLimitedTokenReadsFromMemory(t *testing.T) {
	s, err := Open(context.Background(), filepath.Join(t.TempDir(), "latchkey.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ctx := context.Background()
	now := time.Now()
	g := store.Grant{ID: "g", ClientID: "c", CreatedAt: now, ExpiresAt: now.Add(time.Hour)}
	tk := store.Token{Hash: []byte("h"), Kind: store.KindAccess, GrantID: "g", ClientID: "c", IssuedAt: now,
		ExpiresAt: now.Add(time.Hour), UsageLimit: 10}
	if err := s.CreateGrant(ctx, g); err != nil {
		t.Fatal(err)
	}
	if err := s.CreateToken(ctx, tk); err != nil {
		t.Fatal(err)
	}
	var statements atomic.Int64
	s.ObserveStatements(func(string, time.Duration) { statements.Add(1) })
	for i := 1; i <= 3; i++ {
		before := statements.Load()
		if _, _, err := s.GetTokenGrant(ctx, tk.Hash); err != nil {
			t.Fatal(err)
		}
		if n := statements.Load() - before; i > 1 && n != 0 {
			t.Errorf("read %d of a limited token after a use: %d statements, want 0", i, n)
		}
		if got, err := s.SpendTokenUse(ctx, tk.Hash, nil); err != nil || got.UsageCount != i {
			t.Fatalf("use %d: count %d, %v", i, got.UsageCount, err)
		}
	}
}
