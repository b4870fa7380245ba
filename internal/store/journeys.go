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

// MailAttempt is how an attempt to send a claimed mail ended
// (Outbox.EndMailAttempt).
type MailAttempt struct {
	At      time.Time // when it ended
	Error   string    // why it failed; "" when the mail was sent
	RetryAt time.Time // when to try again; zero: the mail is finished
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
	// EndMailAttempt records how owner's attempt at the mail ended. With
	// a.RetryAt zero the mail is finished at a.At — sent, or given up
	// (a.Error says why; "" when sent) — and its body emptied; otherwise
	// owner's lease is given back and the mail is due again at a.RetryAt,
	// with a.Error as its last error. ErrNotFound when owner does not hold
	// the mail's lease anymore (another instance claimed it after the
	// lease ran out), or the mail is finished already.
	EndMailAttempt(ctx context.Context, id, owner string, a MailAttempt) error
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
