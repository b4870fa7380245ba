package journey

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"math/big"
	"net/http"
	"slices"
	"time"

	"github.com/latchkey/latchkey/internal/authflow"
	"github.com/latchkey/latchkey/internal/events"
	"github.com/latchkey/latchkey/internal/httpx"
	"github.com/latchkey/latchkey/internal/identity"
	"github.com/latchkey/latchkey/internal/mail"
	"github.com/latchkey/latchkey/internal/request"
	"github.com/latchkey/latchkey/internal/store"
	"github.com/latchkey/latchkey/internal/throttle"
)

// The mailed one-time code of the step-up (docs/JOURNEYS.md, "Step-up by
// mailed code"; throttles in docs/THROTTLES.md).
const (
	EmailCodeLifetime = 10 * time.Minute
	EmailCodeDigits   = 6
	EmailCodeWindow   = 15 * time.Minute
	// MaxEmailCodeSends bounds the codes mailed to one person per window:
	// the person proved the password, but no session may flood a mailbox.
	MaxEmailCodeSends = 5
	// MaxEmailCodeFails bounds the wrong codes per person per window (as
	// for TOTP): 5 guesses of 10^6 codes.
	MaxEmailCodeFails = 5
)

// Step-up AMR values. A mailed code is a one-time password (RFC 8176
// "otp", written in the upper case of the spec's documented values, as the
// TOTP step-up writes it); "EMAIL" tells it from an authenticator app's.
const (
	AMROTP   = "OTP"
	AMREmail = "EMAIL"
)

var (
	// ErrBadEmailCode: the code is wrong, used, expired, or of another
	// session.
	ErrBadEmailCode = errors.New("journey: wrong or expired code")
	// ErrEmailCodeThrottled: too many codes asked for, or too many wrong
	// ones, in the window.
	ErrEmailCodeThrottled = &httpx.Error{Status: http.StatusTooManyRequests, Code: "too_many_attempts",
		Description: "Too many codes. Wait a few minutes and try again."}
)

// Policy completes the operator file's levels with the identity
// configuration: the mailed code's level and the step-up strategy
// (step_up), and whether a CREATED person must activate first
// (features.person_activation). oauth.Service.Settings calls it.
func (s *Service) Policy(ctx context.Context, base authflow.Policy) (authflow.Policy, error) {
	st, err := s.Settings(ctx)
	if err != nil {
		return base, err
	}
	p := base
	p.ActivationRequired = st.Activation
	if su := st.snap.StepUp; su != nil {
		if m := su.AuthenticationMethods; m != nil && m.EmailAuthenticationLevel != nil {
			p.EmailLevel = int(*m.EmailAuthenticationLevel)
		}
		if su.Stategy != nil {
			p.Strategy = *su.Stategy
		}
	}
	return p, nil
}

// emailCodeHash is the stored form of a code: keyed, and bound to the
// person and to the browser session that asked for it, so a code is good
// for that sign-in only and equal codes of two sessions never collide.
func (s *Service) emailCodeHash(personID string, session []byte, code string) []byte {
	return s.Hasher.Hash("email_otp", personID+"|"+hex.EncodeToString(session)+"|"+code)
}

func newEmailCode() (string, error) {
	n, err := rand.Int(rand.Reader, big.NewInt(1_000_000))
	if err != nil {
		return "", err
	}
	return fmt.Sprintf("%0*d", EmailCodeDigits, n.Int64()), nil
}

// SendEmailCode mails p a new one-time code for the step-up of the browser
// session whose hash is session. The code and its mail are written in one
// transaction, and a new code replaces the unused older ones.
func (s *Service) SendEmailCode(ctx context.Context, f request.Facts, p store.Person, session []byte, lang string) error {
	if mail.CheckAddress(p.Email) != nil {
		return ErrBadEmailCode // authflow offers no mailed code without an address
	}
	limit := throttle.Limit{Key: "emailcode:send:" + p.ID, Max: MaxEmailCodeSends, Window: EmailCodeWindow}
	if err := throttle.Reserve(ctx, s.Store, s.Now(), limit); err != nil {
		return throttled(err, ErrEmailCodeThrottled)
	}
	now := s.Now().UTC()
	for attempt := 0; ; attempt++ {
		code, err := newEmailCode()
		if err != nil {
			return err
		}
		err = s.Store.Tx(ctx, func(tx store.Store) error {
			// As for the mailed links (link): the row is locked and the
			// status checked first, so a block that commits meanwhile
			// either ends this code or leaves none to make.
			locked, err := tx.LockPerson(ctx, p.ID)
			if errors.Is(err, store.ErrNotFound) {
				return errNotOwed
			}
			if err != nil {
				return err
			}
			if !identity.MaySignIn(locked.Status) {
				return errNotOwed
			}
			if err := tx.DeletePersonTokens(ctx, p.ID, store.PersonTokenEmailOTP); err != nil {
				return err
			}
			if err := tx.CreatePersonToken(ctx, store.PersonToken{Hash: s.emailCodeHash(p.ID, session, code),
				Kind: store.PersonTokenEmailOTP, PersonID: p.ID, CreatedAt: now, ExpiresAt: now.Add(EmailCodeLifetime)}); err != nil {
				return err
			}
			return s.enqueue(ctx, tx, "email_code", lang, p, mail.Data{Code: code, Minutes: minutes(EmailCodeLifetime)})
		})
		// A used code of this session with the same digits keeps its row
		// (single use): draw another.
		if errors.Is(err, store.ErrConflict) && attempt < 3 {
			continue
		}
		if errors.Is(err, errNotOwed) {
			return nil // blocked or gone since the session was read: nothing is sent
		}
		if err == nil {
			s.wake()
		}
		return err
	}
}

// CheckEmailCode spends the code p typed for the step-up of session. Wrong
// codes are counted per person before the check (concurrent guesses stay
// within the limit); a right one gives its count back.
func (s *Service) CheckEmailCode(ctx context.Context, f request.Facts, p store.Person, session []byte, code string) error {
	limit := throttle.Limit{Key: "emailcode:fail:" + p.ID, Max: MaxEmailCodeFails, Window: EmailCodeWindow}
	if err := throttle.Reserve(ctx, s.Store, s.Now(), limit); err != nil {
		s.observe(ctx, f, events.TOTPFailed, p.ID)
		return throttled(err, ErrEmailCodeThrottled)
	}
	if len(code) != EmailCodeDigits || !isDigits(code) {
		s.observe(ctx, f, events.TOTPFailed, p.ID)
		return ErrBadEmailCode
	}
	_, err := s.Store.UsePersonToken(ctx, s.emailCodeHash(p.ID, session, code), store.PersonTokenEmailOTP, s.Now().UTC())
	if errors.Is(err, store.ErrNotFound) {
		s.observe(ctx, f, events.TOTPFailed, p.ID)
		return ErrBadEmailCode
	}
	if err != nil {
		return err
	}
	s.observe(ctx, f, events.EmailCodeSucceeded, p.ID)
	return throttle.Release(ctx, s.Store, limit)
}

func isDigits(s string) bool {
	for _, r := range s {
		if r < '0' || r > '9' {
			return false
		}
	}
	return true
}

func (s *Service) observe(ctx context.Context, f request.Facts, typ, personID string) {
	s.Events.ObserveOAuth(ctx, s.Store.EventSink(), f, events.OAuth{Type: typ, UserID: personID})
}

// SteppedUp records a completed step-up of the browser session whose hash
// is session: its level rises to level, amr gains the method's values, and
// when step_up_authentication is switched on the person is told by mail,
// in the same transaction. It returns the raised session.
func (s *Service) SteppedUp(ctx context.Context, session []byte, p store.Person, level int, amr []string, lang string) (store.Session, error) {
	st, err := s.Settings(ctx) // read before the transaction (SQLite's writer)
	if err != nil {
		return store.Session{}, err
	}
	var raised store.Session
	err = s.Store.Tx(ctx, func(tx store.Store) error {
		if err := tx.UpdateSession(ctx, session, func(sess store.Session) (store.Session, error) {
			sess.AuthLevel = max(sess.AuthLevel, level)
			for _, v := range amr {
				if !slices.Contains(sess.AMR, v) {
					sess.AMR = append(sess.AMR, v)
				}
			}
			raised = sess
			return sess, nil
		}); err != nil {
			return err
		}
		if !st.Notify("step_up") {
			return nil
		}
		return s.enqueue(ctx, tx, "step_up", lang, p, mail.Data{})
	})
	if err == nil && st.Notify("step_up") {
		s.wake()
	}
	return raised, err
}
