package bench

import (
	"bytes"
	"context"
	"database/sql"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/latchkey/latchkey/internal/store"
	"github.com/latchkey/latchkey/internal/store/backend"
	"github.com/latchkey/latchkey/internal/store/postgres/pgtest"
	"github.com/latchkey/latchkey/internal/token"
)

// rawDB opens database with its driver, beside the store.
func rawDB(t *testing.T, database string) *sql.DB {
	t.Helper()
	driver, dsn := "pgx", database
	if path, ok := strings.CutPrefix(database, "sqlite:"); ok {
		driver, dsn = "sqlite", "file:"+path
	}
	db, err := sql.Open(driver, dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

func maxTokenKey(t *testing.T, database string) []byte {
	db := rawDB(t, database)
	var key []byte
	if err := db.QueryRow(`SELECT hash FROM tokens ORDER BY hash DESC LIMIT 1`).Scan(&key); err != nil {
		t.Fatal(err)
	}
	return key
}

// The preloaded rows are rows the store reads as its own: a grant by its
// id, the events through the search, on both stores.
func TestPreload(t *testing.T) {
	for name, database := range map[string]func() string{
		"sqlite":   func() string { return "sqlite:" + filepath.Join(t.TempDir(), "latchkey.db") },
		"postgres": func() string { return pgtest.NewDatabase(t) },
	} {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			db := database()
			const n = 2_000
			var done []int
			p, err := Preload(ctx, db, Each(n), func(d int) { done = append(done, d) })
			if err != nil {
				t.Fatal(err)
			}
			if p.Rows != 3*n || p.Bytes <= 0 || len(done) != 1 || done[0] != n {
				t.Errorf("preloaded %+v, progress %v", p, done)
			}
			st, err := backend.Open(ctx, db)
			if err != nil {
				t.Fatal(err)
			}
			defer st.Close()
			for _, i := range []int{1, n} {
				id := p.GrantID(i)
				g, err := st.GetGrant(ctx, id)
				if err != nil || g.ClientID != fmt.Sprintf("bench-pre-%d", i%10) || len(g.Scopes) != 1 || !g.ExpiresAt.After(g.CreatedAt) {
					t.Errorf("grant %s: %+v, %v", id, g, err)
				}
			}
			// What the service writes next sorts after every preloaded row:
			// it is appended at each b-tree's right edge.
			if id := token.OrderedID(time.Now()); id <= p.GrantID(n) || p.GrantID(1) >= p.GrantID(n) {
				t.Errorf("grant ids out of order: %s, %s, then %s", p.GrantID(1), p.GrantID(n), id)
			}
			// Stamped, as the growth runs mint (token_keys: stamped): an unstamped
			// key is random and sorts anywhere.
			h, _ := token.NewHasher(make([]byte, token.KeySize))
			h.Stamped = true
			if _, key := h.Mint(token.AccessToken); bytes.Compare(key, maxTokenKey(t, db)) <= 0 {
				t.Error("a minted token key sorts before a preloaded one")
			}
			all, err := st.CountEvents(ctx, store.EventFilter{Kind: store.EventOAuth}, 10*n)
			if err != nil || all != n-n/20 {
				t.Errorf("%d OAuth events, %v; want %d", all, err, n-n/20)
			}
			page, err := st.SearchEvents(ctx, store.EventFilter{Kind: store.EventPerson, AgentUser: "admin"}, 0, 5)
			if err != nil || len(page) != 5 || page[0].Type != "person.PersonUpdatedEvent" {
				t.Errorf("person events: %+v, %v", page, err)
			}
		})
	}
}

// With more tokens and events than grants, consecutive ones share a
// grant: every token names a preloaded grant of its own client and
// person, and so does every event; no grant is left without a token.
func TestPreloadMoreTokensThanGrants(t *testing.T) {
	for name, database := range map[string]func() string{
		"sqlite":   func() string { return "sqlite:" + filepath.Join(t.TempDir(), "latchkey.db") },
		"postgres": func() string { return pgtest.NewDatabase(t) },
	} {
		t.Run(name, func(t *testing.T) {
			db := database()
			size := PreloadSize{Grants: 700, Tokens: 7_000, Events: 2_100}
			p, err := Preload(context.Background(), db, size, nil)
			if err != nil {
				t.Fatal(err)
			}
			if p.Rows != 700+7_000+2_100 || p.Size != size {
				t.Errorf("preloaded %+v", p)
			}
			conn := rawDB(t, db)
			for q, want := range map[string]int{
				`SELECT COUNT(*) FROM grants`: 700,
				`SELECT COUNT(*) FROM tokens`: 7_000,
				`SELECT COUNT(*) FROM events`: 2_100,
				`SELECT COUNT(*) FROM tokens t JOIN grants g ON g.id = t.grant_id
					WHERE g.client_id = t.client_id AND g.subject = t.subject`: 7_000,
				`SELECT COUNT(DISTINCT grant_id) FROM tokens`: 700,
				`SELECT COUNT(*) FROM events e JOIN grants g ON g.id = e.transaction_id
					WHERE g.client_id = e.client_id AND g.subject = e.user_id`: 2_100,
				`SELECT COUNT(DISTINCT transaction_id) FROM events`: 700,
			} {
				var got int
				if err := conn.QueryRow(q).Scan(&got); err != nil || got != want {
					t.Errorf("%s: %d, %v; want %d", q, got, err, want)
				}
			}
		})
	}
}
