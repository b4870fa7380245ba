package server

import (
	"context"
	"math/rand/v2"
	"time"
)

// retentionBatch keeps each delete short, so the sweep never holds SQLite's
// writer (or PostgreSQL row locks) long enough to stall requests.
const retentionBatch = 1000

// Maintain sweeps expired records and, with events.retention set, old events
// every interval until ctx ends. Several instances may sweep at once: the
// deletes are idempotent. The first sweep comes after a random wait of
// half to one interval (firstSweep).
func (s *Server) Maintain(ctx context.Context, interval time.Duration) {
	wait := firstSweep(interval)
	for {
		select {
		case <-ctx.Done():
			return
		case <-time.After(wait):
		}
		if _, err := s.Sweep(ctx); err != nil && ctx.Err() == nil {
			s.log.Warn("maintenance sweep failed", "err", err)
		}
		wait = interval
	}
}

// firstSweep is how long a start waits before its first sweep: a server
// that has just started serves before it sweeps (on PostgreSQL the sweep's
// deletes held the only connection and the database's CPU while the first
// requests, a balancer's readiness check among them, waited), and
// instances restarted together do not sweep together. Nothing waits on a
// sweep: between sweeps, as after any downtime, expired records stay in
// the store and are refused when read.
func firstSweep(interval time.Duration) time.Duration {
	return interval/2 + rand.N(interval/2+1)
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
