package server

import (
	"context"
	"fmt"
	"time"

	"github.com/latchkey/latchkey/internal/seal"
	"github.com/latchkey/latchkey/internal/signing"
)

// startKeys builds the signing keys of the oidc config and makes sure one
// signs: on an empty store the first start creates it (and it signs at
// once); a due rotation happens here too. It runs after the server key is
// claimed, so no key is ever sealed under a key the database does not
// belong to.
func (s *Server) startKeys(ctx context.Context, serverKey []byte) error {
	sealer, err := seal.New(serverKey, signing.SealPurpose)
	if err != nil {
		return err
	}
	o := s.cfg.OIDC
	s.keys, err = signing.New(s.store, sealer, signing.Config{
		Algorithm:         o.SigningAlgorithm,
		RotationPeriod:    time.Duration(o.KeyRotationPeriod),
		PublishAhead:      time.Duration(o.KeyPublishAhead),
		MaxSignedLifetime: time.Duration(o.MaxSignedLifetime),
	}, s.now)
	if err != nil {
		return err
	}
	if err := s.keys.EnsureKeys(ctx); err != nil {
		return fmt.Errorf("signing keys: %w", err)
	}
	// Only the rotations of the running server are logged: a start that
	// then fails (a port in use) must end with its one error line
	// (OPERATOR.md), and latchkey keys list shows every key anyway.
	s.keys.Log = s.log
	return nil
}

// Keys are the keys that sign ID tokens and JWT access tokens.
func (s *Server) Keys() *signing.Keys { return s.keys }

// MaintainKeys rotates the signing keys when due, checking every interval
// until ctx ends. Every instance runs it; concurrent rotations add one key.
func (s *Server) MaintainKeys(ctx context.Context, interval time.Duration) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if err := s.keys.EnsureKeys(ctx); err != nil && ctx.Err() == nil {
			s.log.Warn("signing key rotation check failed", "err", err)
		}
	}
}
