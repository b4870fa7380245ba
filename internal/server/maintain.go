package server

import (
	"context"
	"time"
)

// retentionBatch keeps each delete short, so the sweep never holds SQLite's
// writer (or PostgreSQL row locks) long enough to stall requests.
const retentionBatch = 1000

// Maintain sweeps expired records and, with events.retention set, old events
// every interval until ctx ends. Several instances may sweep at once: the
// deletes are idempotent.
func (s *Server) Maintain(ctx context.Context, interval time.Duration) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		if _, err := s.Sweep(ctx); err != nil && ctx.Err() == nil {
			s.log.Warn("maintenance sweep failed", "err", err)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// Sweep runs one maintenance pass and reports how many records it removed.
func (s *Server) Sweep(ctx context.Context) (int64, error) {
	now := s.now()
	total, err := s.store.DeleteExpired(ctx, now)
	if err != nil {
		return total, err
	}
	if s.cfg.Events.Retention <= 0 {
		return total, nil
	}
	cut := now.Add(-time.Duration(s.cfg.Events.Retention))
	for ctx.Err() == nil {
		n, err := s.store.DeleteEventsBefore(ctx, cut, retentionBatch)
		total += n
		if err != nil || n < retentionBatch {
			return total, err
		}
	}
	return total, ctx.Err()
}
