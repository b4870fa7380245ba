package personimport

import (
	"bytes"
	"context"
	"errors"
	"testing"
	"time"

	"github.com/latchkey/latchkey/internal/store"
	"github.com/latchkey/latchkey/internal/store/postgres"
	"github.com/latchkey/latchkey/internal/store/postgres/pgtest"
)

func openStore(t *testing.T, backend string) store.Store {
	t.Helper()
	if backend == "sqlite" {
		return openSQLite(t)
	}
	st, err := postgres.Open(context.Background(), pgtest.NewDatabase(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

// TestImportThatBlocksRevokes: an import that sets an existing person to a
// status that may not sign in ends the person's tokens and sessions in the
// person's own savepoint — a person whose update fails keeps both.
func TestImportThatBlocksRevokes(t *testing.T) {
	const (
		jane  = "11111111-1111-4111-8111-111111111111"
		john  = "22222222-2222-4222-8222-222222222222"
		other = "33333333-3333-4333-8333-333333333333"
		idp   = "6f1c2a9e-3b7d-4e58-9a40-2d8c5b1e7f03" // identity.PasswordIdPID
	)
	for _, backend := range []string{"sqlite", "postgres"} {
		t.Run(backend, func(t *testing.T) {
			ctx := context.Background()
			st := openStore(t, backend)
			s := newService(t, st, &bytes.Buffer{})
			if res, err := s.Import(ctx, []Person{mk(jane, "jane@example.com"), mk(john, "john@example.com"), mk(other, "other@example.com")},
				Options{Agent: "admin"}); err != nil || len(res.Failures) != 0 {
				t.Fatalf("first import: %+v, %v", res, err)
			}
			now := time.Now()
			for _, id := range []string{jane, john} {
				g := store.Grant{ID: "g-" + id, ClientID: "c1", Subject: id, CreatedAt: now, ExpiresAt: now.Add(time.Hour)}
				if err := st.CreateGrant(ctx, g); err != nil {
					t.Fatal(err)
				}
				if err := st.CreateToken(ctx, store.Token{Hash: []byte("t-" + id), Kind: store.KindRefresh, GrantID: g.ID,
					ClientID: "c1", Subject: id, IssuedAt: now, ExpiresAt: now.Add(time.Hour)}); err != nil {
					t.Fatal(err)
				}
				if err := st.CreateSession(ctx, store.Session{Hash: []byte("s-" + id), PersonID: id, AuthTime: now,
					ExpiresAt: now.Add(time.Hour)}); err != nil {
					t.Fatal(err)
				}
			}
			blockJane := mk(jane, "jane@example.com")
			blockJane.Status = "BLOCKED"
			// John's update fails after his status was written: the
			// identity it links is another person's.
			if err := st.LinkIdentity(ctx, store.ExternalIdentity{IdPID: idp, ExternalID: "ext-taken", PersonID: other}); err != nil {
				t.Fatal(err)
			}
			blockJohn := mk(john, "john@example.com")
			blockJohn.Status = "BLOCKED"
			blockJohn.Identities = Identities{{IdPID: idp, ExternalPersonID: "ext-taken"}}
			res, err := s.Import(ctx, []Person{blockJane, blockJohn}, Options{Agent: "admin"})
			if err != nil {
				t.Fatal(err)
			}
			if len(res.SuccessfulReferenceIDs) != 1 || len(res.Failures) != 1 || res.Failures[0].ErrorCode != CodeIdentityCoupled {
				t.Fatalf("import: %+v", res)
			}
			active := func(id string) bool {
				tk, g, err := st.GetTokenGrant(ctx, []byte("t-"+id))
				if err != nil {
					t.Fatal(err)
				}
				return tk.Active(g, now)
			}
			if active(jane) {
				t.Error("the blocked person's refresh token is still active")
			}
			if _, err := st.GetSession(ctx, []byte("s-"+jane)); !errors.Is(err, store.ErrNotFound) {
				t.Errorf("the blocked person's session: %v, want ErrNotFound", err)
			}
			if !active(john) {
				t.Error("a failed update revoked the person's token")
			}
			if _, err := st.GetSession(ctx, []byte("s-"+john)); err != nil {
				t.Errorf("a failed update deleted the person's session: %v", err)
			}
			if p, _ := st.GetPerson(ctx, john); p.Status != "ACTIVATED" {
				t.Errorf("a failed update left status %s", p.Status)
			}
		})
	}
}
