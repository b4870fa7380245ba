package main

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/latchkey/latchkey/internal/config"
	"github.com/latchkey/latchkey/internal/store"
	"github.com/latchkey/latchkey/internal/store/backend"
	"github.com/latchkey/latchkey/internal/token"
)

// openStore opens cfg's database for a command that writes it. The
// embedded store is locked to a serving process, so on SQLite the error
// ends with sqliteHint: what to do instead.
func openStore(ctx context.Context, cfg *config.Config, sqliteHint string) (store.Store, error) {
	st, err := backend.Open(ctx, cfg.Database)
	if err != nil {
		if strings.HasPrefix(cfg.Database, "sqlite:") {
			return nil, fmt.Errorf("database%s: %w (%s)", cfg.Origin("database"), err, sqliteHint)
		}
		return nil, fmt.Errorf("database%s: %w", cfg.Origin("database"), err)
	}
	return st, nil
}

// claimServerKey refuses a key other than the one the database was set up
// with: what a command hashed or sealed under it would not open on any
// instance.
func claimServerKey(ctx context.Context, st store.Store, cfg *config.Config, key []byte) error {
	err := st.ClaimServerKey(ctx, token.Fingerprint(key))
	if errors.Is(err, store.ErrServerKeyMismatch) {
		return errServerKeyMismatch(cfg.SecretKeyFile)
	}
	return err
}
