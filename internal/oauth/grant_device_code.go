package oauth

import (
	"context"
	"errors"
	"time"

	"github.com/latchkey/latchkey/internal/events"
	"github.com/latchkey/latchkey/internal/request"
	"github.com/latchkey/latchkey/internal/store"
	"github.com/latchkey/latchkey/internal/token"
)

// pollOutcome is what a poll decided inside the locked update.
type pollOutcome int

const (
	pollPending pollOutcome = iota
	pollSlowDown
	pollIssue
)

// pollDevice is the device_code grant (RFC 8628 section 3.4 and 3.5).
func (s *Service) pollDevice(ctx context.Context, f request.Facts, client store.Client, form map[string]string) (*TokenResponse, error) {
	if form["device_code"] == "" {
		return nil, newError(ErrInvalidRequest, "The device_code parameter is required.")
	}
	hash := s.tokens().Key(token.DeviceCode, form["device_code"])
	now := f.Time.UTC()
	var outcome pollOutcome
	var resp *TokenResponse
	inactive := false
	// One transaction marks the code used and mints its tokens, as the code
	// exchange does: a failure in between rolls both back, and the person's
	// approval waits for the next poll instead of being lost.
	err := s.Store.Tx(ctx, func(tx store.Store) error {
		d, err := tx.UpdateDeviceCode(ctx, hash, func(d store.DeviceCode) (store.DeviceCode, error) {
			switch {
			case d.ClientID != client.ID:
				return d, newError(ErrInvalidGrant, "The device code is invalid.")
			case d.Status == store.DeviceUsed:
				return d, newError(ErrInvalidGrant, "The device code was already used.")
			case !now.Before(d.ExpiresAt):
				return d, newError(errExpiredToken, "The device code has expired.")
			case d.Status == store.DeviceDenied:
				return d, newError(ErrAccessDenied, "The person denied the request.")
			case d.Status == store.DeviceApproved:
				d.Status, outcome = store.DeviceUsed, pollIssue
				return d, nil
			}
			// The interval is the time between polls (RFC 8628 sections 3.2
			// and 3.5): the first poll has none before it and is never too fast.
			last := d.LastPolledAt
			d.LastPolledAt = now
			if !last.IsZero() && now.Sub(last) < time.Duration(d.Interval)*time.Second {
				d.Interval += slowDownStep
				outcome = pollSlowDown
			}
			return d, nil
		})
		if err != nil || outcome != pollIssue {
			return err
		}
		var g store.Grant
		resp, g, err = s.mint(ctx, tx, issue{client: client, subject: d.Subject, scopes: d.Scopes, requested: d.Scopes,
			authLevel: d.AuthLevel, amr: d.AMR, refresh: issuesRefresh(client)})
		if errors.Is(err, errPersonInactive) {
			// The person who approved was blocked or deleted since: commit
			// the code as used (the approval is spent) and issue nothing.
			inactive = true
			return nil
		}
		if err != nil {
			return err
		}
		return s.Events.RecordOAuth(ctx, tx, f, events.OAuth{Type: events.DeviceTokenCreated, ClientID: client.ID,
			AppName: client.Name, UserID: d.Subject, TransactionID: g.ID})
	})
	switch {
	case errors.Is(err, store.ErrNotFound):
		return nil, newError(ErrInvalidGrant, "The device code is invalid.")
	case err != nil:
		var oe *Error
		if errors.As(err, &oe) && oe.Code == errExpiredToken {
			s.record(ctx, f, events.OAuth{Type: events.DeviceExpired, ClientID: client.ID, AppName: client.Name})
		}
		return nil, err
	case inactive:
		s.record(ctx, f, events.OAuth{Type: events.DeviceDenied, ClientID: client.ID, AppName: client.Name})
		return nil, newError(ErrAccessDenied, "The account that approved the device cannot sign in.")
	case outcome == pollPending:
		return nil, newError(errAuthzPending, "The authorization request is still pending")
	case outcome == pollSlowDown:
		return nil, newError(errSlowDown, "Polling too fast: wait the interval between requests.")
	}
	return resp, nil
}
