// Package journey carries out the self-service identity journeys that the
// identity-management configuration switches on: password reset, sign-up,
// activation and invitation by mailed link, and the notification mails.
// Each change and the mail it causes are written in one transaction (the
// mail outbox); the hosted pages (internal/login) call these methods.
package journey

import (
	"context"
	"errors"

	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/latchkey/latchkey/internal/cimconfig"
	"github.com/latchkey/latchkey/internal/events"
	"github.com/latchkey/latchkey/internal/httpx"
	"github.com/latchkey/latchkey/internal/identity"
	"github.com/latchkey/latchkey/internal/mail"
	"github.com/latchkey/latchkey/internal/request"
	"github.com/latchkey/latchkey/internal/store"
	"github.com/latchkey/latchkey/internal/throttle"
	"github.com/latchkey/latchkey/internal/token"
)

// LinkToken is the kind of the secrets in mailed links (prefix for secret
// scanners, label for the keyed hash).
var LinkToken = token.Kind{Prefix: "lk_ml_", Label: "person_link"}

// Defaults of the journeys.
const (
	ResetLinkLifetime         = time.Hour
	DefaultActivationLifetime = 24 * time.Hour
	// Mail-sending forms (forgot password, sign-up, new activation link)
	// are throttled per address and per recipient: no address can flood
	// the outbox, and no mailbox can be flooded (docs/THROTTLES.md).
	MailWindow          = 15 * time.Minute
	MaxMailsPerAddress  = 10
	RecipientWindow     = time.Hour
	MaxMailsPerRecipent = 3
)

// Service runs the journeys.
type Service struct {
	Store    store.Store
	Identity *identity.Service
	Config   *cimconfig.Service
	Outbox   *mail.Outbox
	Mails    *mail.Composer
	Hasher   *token.Hasher
	Events   *events.Recorder
	Issuer   string
	Now      func() time.Time
	Log      *slog.Logger
}

// Errors of the journeys, safe to show.
var (
	ErrThrottled = &httpx.Error{Status: http.StatusTooManyRequests, Code: "too_many_attempts",
		Description: "Too many requests. Wait a few minutes and try again."}
	// ErrLinkInvalid: unknown, tampered, or of another kind.
	ErrLinkInvalid = errors.New("journey: link not valid")
	ErrLinkExpired = errors.New("journey: link expired")
	ErrLinkUsed    = errors.New("journey: link already used")
	// ErrOff: the journey is switched off in the configuration.
	ErrOff = errors.New("journey: switched off")
)

// Settings are what the configuration says about the journeys.
type Settings struct {
	SignUp             bool
	PasswordReset      bool
	Activation         bool // person_activation enabled with type EMAIL
	ActivationLifetime time.Duration
	snap               *cimconfig.Snapshot
}

func on(b *bool) bool { return b != nil && *b }

// Settings reads the current configuration.
func (s *Service) Settings(ctx context.Context) (Settings, error) {
	snap, err := s.Config.Snapshot(ctx)
	if err != nil {
		return Settings{}, err
	}
	st := Settings{ActivationLifetime: DefaultActivationLifetime, snap: snap}
	if f := snap.Features; f != nil {
		st.SignUp, st.PasswordReset = on(f.SignUpEnabled), on(f.PasswordResetEnabled)
		if a := f.PersonActivation; a != nil && on(a.Enabled) && (a.Type == nil || *a.Type == cimconfig.ActivationEmail) {
			st.Activation = true
			if a.ExpirationTime != nil && *a.ExpirationTime > 0 {
				st.ActivationLifetime = time.Duration(*a.ExpirationTime) * time.Second
			}
		}
	}
	return st, nil
}

// Notify reports whether a notification switch is on. The journeys' own
// mails (reset, activation and invitation links, codes) are the journey
// and always go; the switches govern the informational mails, which a
// unit never set does not send.
func (st Settings) Notify(kind string) bool {
	n := st.snap.EmailNotifications
	if kind == "invitation" {
		// An invitation is the journey's own mail: sent unless
		// account_invitation is switched off.
		return n == nil || n.AccountInvitation == nil || *n.AccountInvitation
	}
	if n == nil {
		return false
	}
	switch kind {
	case "welcome_web":
		return n.Welcome != nil && on(n.Welcome.OnWebEnabled)
	case "welcome_api":
		return n.Welcome != nil && on(n.Welcome.OnAPIEnabled)
	case "password_reset":
		return on(n.PasswordReset)
	case "password_updated":
		return n.AttributesUpdate != nil && (on(n.AttributesUpdate.OnPasswordUpdated) || on(n.AttributesUpdate.OnAllUpdated))
	case "account_removed":
		return on(n.AccountRemoved)
	case "step_up":
		return on(n.StepUpAuthentication)
	}
	return false
}

// mailLimits are the throttles of a mail-sending form, built from the
// address as typed: the same answer whether or not an account exists.
func mailLimits(facts request.Facts, email string) []throttle.Limit {
	return []throttle.Limit{
		{Key: "mail:ip:" + facts.AddrKey(), Max: MaxMailsPerAddress, Window: MailWindow},
		{Key: "mail:to:" + strings.ToLower(strings.TrimSpace(email)), Max: MaxMailsPerRecipent, Window: RecipientWindow},
	}
}

func (s *Service) reserveMail(ctx context.Context, facts request.Facts, email string) error {
	return throttled(throttle.Reserve(ctx, s.Store, s.Now(), mailLimits(facts, email)...), ErrThrottled)
}

// throttled answers a throttle's refusal as as (a 429), with the refusal's
// Retry-After; other errors pass.
func throttled(err error, as *httpx.Error) error {
	var refused *throttle.Refused
	if errors.As(err, &refused) {
		e := httpx.TooManyRequests(as.Code, as.Description, refused.RetryAfter)
		e.Cause = as
		return e
	}
	return err
}

// mailTarget is the person a mail asked for by email goes to: the attempt
// is throttled first, and found is false for a malformed or unknown address
// — which the caller answers like a success, so no form reveals an account.
func (s *Service) mailTarget(ctx context.Context, facts request.Facts, email string) (p store.Person, found bool, err error) {
	email = strings.TrimSpace(email)
	if err := s.reserveMail(ctx, facts, email); err != nil {
		return p, false, err
	}
	if mail.CheckAddress(email) != nil {
		return p, false, nil
	}
	p, err = s.Store.GetPersonByEmail(ctx, "", email)
	if errors.Is(err, store.ErrNotFound) {
		return p, false, nil
	}
	return p, err == nil, err
}

// errNotOwed: the person may not be sent a link of this kind (anymore):
// the caller sends nothing and answers as for any email.
var errNotOwed = errors.New("journey: no link is owed to the person")

// owed reports whether a person of status may be sent a link of kind.
func owed(kind, status string) bool {
	switch kind {
	case store.PersonTokenPasswordReset:
		return identity.MaySignIn(status)
	case store.PersonTokenActivation:
		return status == identity.StatusCreated
	case store.PersonTokenInvitation:
		return status == identity.StatusInvited
	}
	return false
}

// link mints a single-use link token of kind for a person inside tx and
// returns its URL with the person as locked. The person's row is locked
// and the status checked first (errNotOwed): a block (store.Persons'
// UpdatePerson, which takes the same row and ends every link) commits
// either before — and no link is made — or after, and ends this one.
func (s *Service) link(ctx context.Context, tx store.Store, kind, personID, path string, ttl time.Duration, q url.Values) (string, store.Person, error) {
	p, err := tx.LockPerson(ctx, personID)
	if errors.Is(err, store.ErrNotFound) {
		return "", p, errNotOwed
	}
	if err != nil {
		return "", p, err
	}
	if !owed(kind, p.Status) {
		return "", p, errNotOwed
	}
	if err := tx.DeletePersonTokens(ctx, personID, kind); err != nil { // a new link replaces the older ones
		return "", p, err
	}
	value, hash := s.Hasher.Mint(LinkToken)
	now := s.Now().UTC()
	if err := tx.CreatePersonToken(ctx, store.PersonToken{Hash: hash, Kind: kind, PersonID: personID, CreatedAt: now,
		ExpiresAt: now.Add(ttl)}); err != nil {
		return "", p, err
	}
	if q == nil {
		q = url.Values{}
	}
	q.Set("token", value)
	return s.Issuer + path + "?" + q.Encode(), p, nil
}

// enqueue composes a mail for p and writes it through tx.
func (s *Service) enqueue(ctx context.Context, tx store.Store, kind, lang string, p store.Person, d mail.Data) error {
	msg, err := s.Mails.Compose(kind, lang, p.Email, strings.TrimSpace(p.FirstName+" "+p.LastName), d)
	if err != nil {
		return err
	}
	return s.Outbox.Enqueue(ctx, tx, kind, p.ID, msg)
}

// recordPerson writes a person event through st (the change's transaction).
func (s *Service) recordPerson(ctx context.Context, st events.Appender, facts request.Facts, typ string, p store.Person, extra map[string]string) error {
	return s.Events.RecordPerson(ctx, st, facts, events.Person{Type: typ, PersonID: p.ID, AgentUser: p.ID,
		Partition: p.Partition, Context: extra})
}

// CheckLink tells whether a mailed link of kind is usable, without using it.
func (s *Service) CheckLink(ctx context.Context, kind, value string) (store.PersonToken, error) {
	return s.checkLink(ctx, s.Store, kind, value)
}

// checkLink reads through st: inside a transaction it must be the
// transaction (SQLite's only writer connection is held by it).
func (s *Service) checkLink(ctx context.Context, st store.Store, kind, value string) (store.PersonToken, error) {
	if !strings.HasPrefix(value, LinkToken.Prefix) || len(value) > 128 {
		return store.PersonToken{}, ErrLinkInvalid
	}
	t, err := st.GetPersonToken(ctx, s.Hasher.HashOf(LinkToken, value))
	switch {
	case errors.Is(err, store.ErrNotFound):
		return t, ErrLinkInvalid
	case err != nil:
		return t, err
	case t.Kind != kind:
		return t, ErrLinkInvalid
	case !t.UsedAt.IsZero():
		return t, ErrLinkUsed
	case !s.Now().Before(t.ExpiresAt):
		return t, ErrLinkExpired
	}
	return t, nil
}

// use spends a link inside tx; the reason when it cannot.
func (s *Service) use(ctx context.Context, tx store.Store, kind, value string) (store.PersonToken, error) {
	if _, err := s.checkLink(ctx, tx, kind, value); err != nil {
		return store.PersonToken{}, err
	}
	t, err := tx.UsePersonToken(ctx, s.Hasher.HashOf(LinkToken, value), kind, s.Now().UTC())
	if errors.Is(err, store.ErrNotFound) {
		return t, ErrLinkUsed // another request used it a moment ago
	}
	return t, err
}

// wake sends the mails just committed without waiting for the next poll.
func (s *Service) wake() { s.Outbox.Wake() }

// Wake sends the mails a caller's transaction just committed
// (personimport.Mailer).
func (s *Service) Wake() { s.wake() }

func minutes(d time.Duration) int { return int((d + time.Minute - 1) / time.Minute) }
