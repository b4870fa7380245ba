package client_test

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/latchkey/latchkey/internal/client"
	"github.com/latchkey/latchkey/internal/store"
	"github.com/latchkey/latchkey/internal/store/postgres"
	"github.com/latchkey/latchkey/internal/store/postgres/pgtest"
	"github.com/latchkey/latchkey/internal/store/sqlite"
)

// BenchmarkClientLookup measures the hot paths' client read (token and
// introspection requests each make two): straight from the store, from
// the cache alone (SQLite's way: one process writes), and from the cache
// checked against the client generation (PostgreSQL's way: every lookup
// asks for a generation read that began after it, shared between the
// concurrent lookups). docs/ADMIN.md has the figures.
//
//	go test -run '^$' -bench ClientLookup -cpu 1,8 ./internal/client/
func BenchmarkClientLookup(b *testing.B) {
	ctx := context.Background()
	for _, backend := range []string{"sqlite", "postgres"} {
		var st store.Store
		var err error
		if backend == "sqlite" {
			st, err = sqlite.Open(ctx, filepath.Join(b.TempDir(), "bench.db"))
		} else {
			st, err = postgres.Open(ctx, pgtest.NewDatabase(b))
		}
		if err != nil {
			b.Fatal(err)
		}
		c := store.Client{ID: "bench", Name: "Bench", TokenEndpointAuthMethod: client.AuthClientSecretBasic,
			SecretHash: make([]byte, 32), GrantTypes: []string{client.GrantClientCredentials}, Scopes: []string{"read", "write"},
			RedirectURIs: []string{"https://app.example/cb"}, AccessTokenLifetime: time.Hour, RefreshTokenLifetime: time.Hour}
		if err := st.CreateClient(ctx, c); err != nil {
			b.Fatal(err)
		}
		cached := &client.Cache{Source: st, TTL: 5 * time.Second, Now: time.Now}
		checked := &client.Cache{Source: st, TTL: 5 * time.Second, Now: time.Now,
			Generation: (&client.Fresh[int64]{Read: st.(interface {
				ClientGeneration(context.Context) (int64, error)
			}).ClientGeneration}).Get}
		for _, tc := range []struct {
			name string
			src  client.Source
		}{{"store", st}, {"cache", cached}, {"cache+generation", checked}} {
			b.Run(backend+"/"+tc.name, func(b *testing.B) {
				b.RunParallel(func(pb *testing.PB) {
					for pb.Next() {
						if _, err := tc.src.GetClient(ctx, "bench"); err != nil {
							b.Error(err)
							return
						}
					}
				})
			})
		}
		st.Close()
	}
}
