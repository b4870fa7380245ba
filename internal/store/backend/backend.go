// Package backend opens the store named by the config's database URL.
package backend

import (
	"context"
	"fmt"
	"strings"

	"github.com/latchkey/latchkey/internal/store"
	"github.com/latchkey/latchkey/internal/store/postgres"
	"github.com/latchkey/latchkey/internal/store/sqlite"
)

// Open opens and migrates the store of database: "sqlite:PATH" or
// "postgres://..." / "postgresql://...".
func Open(ctx context.Context, database string) (store.Store, error) {
	switch {
	case strings.HasPrefix(database, "sqlite:"):
		return sqlite.Open(ctx, strings.TrimPrefix(database, "sqlite:"))
	case strings.HasPrefix(database, "postgres://"), strings.HasPrefix(database, "postgresql://"):
		return postgres.Open(ctx, database)
	default:
		scheme, _, _ := strings.Cut(database, ":")
		return nil, fmt.Errorf("unsupported database %q (want sqlite:PATH or postgres://...)", scheme)
	}
}

// OpenReadOnly opens database for reading beside the process that serves
// it (an embedded store is locked to that process; see sqlite.Open).
func OpenReadOnly(ctx context.Context, database string) (store.Store, error) {
	if path, ok := strings.CutPrefix(database, "sqlite:"); ok {
		return sqlite.OpenReadOnly(ctx, path)
	}
	return Open(ctx, database)
}
