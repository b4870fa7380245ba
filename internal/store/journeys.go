package store

import (
	"context"
	"time"
)

// Mail is one outgoing mail of the outbox. Body is opaque to the store (the
// mail package seals it with the server key); it is emptied once sent.
type Mail struct {
	ID            string // UUID; also the Message-ID, so receivers can drop a duplicate
	Kind          string // what caused it: password_reset, activation, welcome, ...
	PersonID      string // "" when none
	Recipient     string
	Body          []byte
	Attempts      int       // claims so far
	NextAttemptAt time.Time // due from then on
	LeaseOwner    string    // the instance that claimed it last
	LeaseUntil    time.Time // until then no other instance claims it
	LastError     string
	CreatedAt     time.Time
	SentAt        time.Time // zero until finished: sent, or given up (LastError says why)
}

// Outbox keeps the mails to send. A mail is enqueued in the transaction of
// the change that causes it, so the change and its mail commit together.
type Outbox interface {
	// EnqueueMail stores m (ErrConflict for a taken ID).
	EnqueueMail(ctx context.Context, m Mail) error
	// ClaimMails leases at most limit unsent mails that are due at now and
	// not leased by anyone (LeaseUntil <= now) to owner until now+lease,
	// counting an attempt, and returns them. Concurrent claims on any number
	// of instances never return the same mail within its lease (PostgreSQL:
	// FOR UPDATE SKIP LOCKED; SQLite: its single writer).
	ClaimMails(ctx context.Context, owner string, now time.Time, lease time.Duration, limit int) ([]Mail, error)
	// FinishMail records that owner is done with the mail at now — sent, or
	// given up (failure says why; "" when sent) — and empties its body.
	// ErrNotFound when owner does not hold the mail's lease anymore (another
	// instance claimed it after the lease ran out).
	FinishMail(ctx context.Context, id, owner string, now time.Time, failure string) error
	// DeferMail gives back owner's lease of a mail that could not be sent:
	// it is due again at next. ErrNotFound when owner does not hold the lease.
	DeferMail(ctx context.Context, id, owner string, next time.Time, lastError string) error
	// GetMail returns one mail (ErrNotFound when absent).
	GetMail(ctx context.Context, id string) (Mail, error)
}

// Person token kinds.
const (
	PersonTokenActivation    = "activation"
	PersonTokenInvitation    = "invitation"
	PersonTokenPasswordReset = "password_reset"
	PersonTokenEmailOTP      = "email_otp"
)

// PersonToken is a single-use, expiring secret a person received by mail,
// stored under its keyed hash.
type PersonToken struct {
	Hash      []byte
	Kind      string // PersonToken*
	PersonID  string
	CreatedAt time.Time
	ExpiresAt time.Time
	UsedAt    time.Time // zero until used
}

// PersonTokens stores the tokens of the mailed links and codes.
type PersonTokens interface {
	// CreatePersonToken returns ErrConflict for a taken hash.
	CreatePersonToken(ctx context.Context, t PersonToken) error
	// GetPersonToken returns ErrNotFound for an unknown hash.
	GetPersonToken(ctx context.Context, hash []byte) (PersonToken, error)
	// UsePersonToken marks the token of kind used at now when it is unused
	// and not expired, atomically: of concurrent uses exactly one succeeds.
	// Otherwise ErrNotFound (unknown, other kind, used or expired: read it
	// with GetPersonToken to say which).
	UsePersonToken(ctx context.Context, hash []byte, kind string, now time.Time) (PersonToken, error)
	// DeletePersonTokens removes the unused tokens of kind of a person (a
	// new link replaces the older ones; a reset ends every reset link).
	DeletePersonTokens(ctx context.Context, personID, kind string) error
}
