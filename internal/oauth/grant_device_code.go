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
	// A pending code's poll is decided on a plain read and written by a
	// compare-and-set, outside a transaction, so that polling holds no row
	// lock across round trips. When another poll or the person's decision
	// came between, the locked path below decides again; but a poll that
	// was too fast is too fast on the newer state too (a later poll's time
	// is later and the interval only grows), which the poll between wrote.
	// An approved code's web hooks are asked, and its JWT access token
	// signed, on the same read, before the transaction (prepare), which
	// decides.
	var prepared issue
	if d, err := s.Store.GetDeviceCode(ctx, hash); err == nil && d.ClientID == client.ID && now.Before(d.ExpiresAt) {
		switch d.Status {
		case store.DevicePending:
			next, outcome := nextPoll(d, now)
			wrote, err := s.Store.SetDevicePoll(ctx, hash, d, next)
			if err != nil {
				return nil, err
			}
			if wrote || outcome == pollSlowDown {
				return nil, pollError(outcome)
			}
		case store.DeviceApproved:
			prepared = deviceIssue(client, d)
			if err := s.prepare(ctx, &prepared, nil); err != nil {
				return nil, err
			}
		}
	}
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
			d, outcome = nextPoll(d, now)
			return d, nil
		})
		if err != nil || outcome != pollIssue {
			return err
		}
		is := deviceIssue(client, d)
		is.hooks, is.signed = prepared.hooks, prepared.signed
		var g store.Grant
		resp, g, err = s.mint(ctx, tx, is)
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
	case outcome != pollIssue:
		return nil, pollError(outcome)
	}
	return resp, nil
}

// deviceIssue is the issuance of approved device code d to client.
func deviceIssue(client store.Client, d store.DeviceCode) issue {
	return issue{client: client, subject: d.Subject, scopes: d.Scopes, requested: d.Scopes,
		authLevel: d.AuthLevel, amr: d.AMR, refresh: issuesRefresh(client)}
}

// nextPoll is a pending code after a poll at now, and the poll's outcome.
// The interval is the time between polls (RFC 8628 sections 3.2 and 3.5):
// the first poll has none before it and is never too fast.
func nextPoll(d store.DeviceCode, now time.Time) (store.DeviceCode, pollOutcome) {
	last := d.LastPolledAt
	d.LastPolledAt = now
	if !last.IsZero() && now.Sub(last) < time.Duration(d.Interval)*time.Second {
		d.Interval += slowDownStep
		return d, pollSlowDown
	}
	return d, pollPending
}

// pollError answers a poll that issued nothing.
func pollError(o pollOutcome) error {
	if o == pollSlowDown {
		return newError(errSlowDown, "Polling too fast: wait the interval between requests.")
	}
	return newError(errAuthzPending, "The authorization request is still pending")
}
