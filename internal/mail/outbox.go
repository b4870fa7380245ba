package mail

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/google/uuid"

	"github.com/latchkey/latchkey/internal/seal"
	"github.com/latchkey/latchkey/internal/store"
)

// Outbox defaults.
const (
	DefaultPoll       = time.Second
	DefaultRetryAfter = 30 * time.Second
	MaxRetryAfter     = time.Hour
	// GiveUpAfter: a mail that could not be sent for this long is given up
	// (a link in it has expired long before).
	GiveUpAfter = 72 * time.Hour
	claimBatch  = 20
)

// Outbox writes mails into the store and sends them behind.
//
// Sending is at least once, and once in all but one case: a mail is leased
// to one instance at a time (the lease outlasts a send's timeout), and is
// marked finished right after the server accepted it. Only an instance that
// dies between the server's acceptance and that mark leaves a mail that is
// sent again when its lease runs out; its Message-ID is the same, so a
// receiving system can drop the copy.
type Outbox struct {
	Store  store.Store
	Sealer *seal.Sealer // seals bodies at rest: they hold single-use links
	Sender Sender       // nil: mails wait in the outbox (no smtp configured)
	From   string
	Now    func() time.Time
	Log    *slog.Logger
	// Owner names this instance in leases (a random id per process).
	Owner string
	// Lease is how long a claimed mail is this instance's; it must outlast
	// a send (the SMTP timeout). Default: twice SendTimeout.
	Lease       time.Duration
	SendTimeout time.Duration
	Poll        time.Duration // default DefaultPoll
	RetryAfter  time.Duration // first back-off, doubling to MaxRetryAfter
	// Finished is told when a mail is sent (err nil) or failed (attempt
	// failed; final when the mail is given up). Nil: nothing.
	Finished func(ctx context.Context, m store.Mail, err error, final bool)

	wake chan struct{}
}

// NewOwner is a fresh lease owner id.
func NewOwner() string { return uuid.NewString() }

func (o *Outbox) lease() time.Duration {
	if o.Lease > 0 {
		return o.Lease
	}
	t := o.SendTimeout
	if t <= 0 {
		t = 30 * time.Second
	}
	return 2 * t
}

// Enqueue encodes msg and stores it through st — the transaction of the
// change that causes the mail, so both commit or neither. Call Wake after
// the commit to send it without waiting for the next poll.
func (o *Outbox) Enqueue(ctx context.Context, st store.Store, kind, personID string, msg Message) error {
	id := uuid.NewString()
	now := o.Now().UTC()
	raw, err := msg.Encode(o.From, id, now)
	if err != nil {
		return err
	}
	return st.EnqueueMail(ctx, store.Mail{ID: id, Kind: kind, PersonID: personID, Recipient: msg.To,
		Body: o.Sealer.Seal(raw, []byte(id)), NextAttemptAt: now, CreatedAt: now})
}

// Wake makes Run look for due mails now.
func (o *Outbox) Wake() {
	if o.wake == nil {
		return
	}
	select {
	case o.wake <- struct{}{}:
	default:
	}
}

// Init prepares Wake; call it before Run and before any Wake.
func (o *Outbox) Init() {
	if o.wake == nil {
		o.wake = make(chan struct{}, 1)
	}
}

// Run sends due mails until ctx ends: at every poll and every Wake.
func (o *Outbox) Run(ctx context.Context) {
	o.Init()
	poll := o.Poll
	if poll <= 0 {
		poll = DefaultPoll
	}
	t := time.NewTicker(poll)
	defer t.Stop()
	for {
		if _, err := o.SendDue(ctx); err != nil && ctx.Err() == nil {
			o.Log.Warn("mail outbox: claim failed", "err", err)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		case <-o.wake:
		}
	}
}

// SendDue claims due mails and sends them, batch after batch, until none is
// due; it reports how many were sent.
func (o *Outbox) SendDue(ctx context.Context) (int, error) {
	if o.Sender == nil {
		return 0, nil
	}
	sent := 0
	for ctx.Err() == nil {
		ms, err := o.Store.ClaimMails(ctx, o.Owner, o.Now().UTC(), o.lease(), claimBatch)
		if err != nil || len(ms) == 0 {
			return sent, err
		}
		for _, m := range ms {
			if o.send(ctx, m) {
				sent++
			}
		}
	}
	return sent, ctx.Err()
}

// send sends one claimed mail and records the outcome.
func (o *Outbox) send(ctx context.Context, m store.Mail) bool {
	// The outcome is written even when ctx ends meanwhile (shutdown).
	done := context.WithoutCancel(ctx)
	raw, err := o.Sealer.Open(m.Body, []byte(m.ID))
	if err == nil {
		sendCtx, cancel := context.WithTimeout(ctx, o.lease()/2)
		err = o.Sender.Send(sendCtx, m.Recipient, raw)
		cancel()
	}
	now := o.Now().UTC()
	if err == nil {
		if ferr := o.Store.EndMailAttempt(done, m.ID, o.Owner, store.MailAttempt{At: now}); ferr != nil {
			o.Log.Warn("mail outbox: sent, but could not mark it sent", "mail", m.ID, "err", ferr)
		}
		o.tell(done, m, nil, false)
		return true
	}
	var perm *PermanentError
	final := errors.As(err, &perm) || now.Sub(m.CreatedAt) >= GiveUpAfter
	// The reply of the server never holds the message, so it may be logged.
	o.Log.Warn("mail outbox: send failed", "mail", m.ID, "kind", m.Kind, "attempt", m.Attempts, "final", final, "err", err)
	if final {
		err2 := o.Store.EndMailAttempt(done, m.ID, o.Owner, store.MailAttempt{At: now, Error: err.Error()})
		if err2 != nil {
			o.Log.Warn("mail outbox: could not give the mail up", "mail", m.ID, "err", err2)
		}
	} else if err2 := o.Store.EndMailAttempt(done, m.ID, o.Owner,
		store.MailAttempt{At: now, Error: err.Error(), RetryAt: now.Add(o.backoff(m.Attempts))}); err2 != nil {
		o.Log.Warn("mail outbox: could not defer the mail", "mail", m.ID, "err", err2)
	}
	o.tell(done, m, err, final)
	return false
}

func (o *Outbox) tell(ctx context.Context, m store.Mail, err error, final bool) {
	if o.Finished != nil {
		o.Finished(ctx, m, err, final)
	}
}

// backoff is the wait after the attempt-th failed attempt: RetryAfter,
// doubled each time, at most MaxRetryAfter.
func (o *Outbox) backoff(attempt int) time.Duration {
	d := o.RetryAfter
	if d <= 0 {
		d = DefaultRetryAfter
	}
	for i := 1; i < attempt && d < MaxRetryAfter; i++ {
		d *= 2
	}
	return min(d, MaxRetryAfter)
}
