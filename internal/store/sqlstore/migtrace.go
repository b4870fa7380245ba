package sqlstore

import (
	"context"
	"time"
)

// MigrationTrace is told of each migration Migrate applies to a store
// that already had a schema (an upgrade; a new store's first migrations
// are not told): before it runs and once it committed. A migration that
// rebuilds an index of a large table runs for minutes, and the process
// says meanwhile what it is doing. Each is named as Migration.String
// names it.
type MigrationTrace struct {
	Start func(migration string)
	Done  func(migration string, took time.Duration)
}

type migrationTraceKey struct{}

// WithMigrationTrace returns ctx carrying t, for the Open (and Migrate)
// it is passed to.
func WithMigrationTrace(ctx context.Context, t *MigrationTrace) context.Context {
	return context.WithValue(ctx, migrationTraceKey{}, t)
}

func migrationTraceOf(ctx context.Context) *MigrationTrace {
	t, _ := ctx.Value(migrationTraceKey{}).(*MigrationTrace)
	return t
}
