package journey

import (
	"context"
	"errors"
	"net/url"
	"strings"

	"github.com/latchkey/latchkey/internal/events"
	"github.com/latchkey/latchkey/internal/identity"
	"github.com/latchkey/latchkey/internal/mail"
	"github.com/latchkey/latchkey/internal/password"
	"github.com/latchkey/latchkey/internal/request"
	"github.com/latchkey/latchkey/internal/store"
)

// Paths of the password reset pages.
const (
	PathForgot = "/password/forgot"
	PathReset  = "/password/reset"
)

// RequestPasswordReset mails a reset link to the account of email, if there
// is one that may sign in. The answer is the same for every email (only the
// throttle refuses, and its keys do not depend on the account); request is
// the pending authorization request to return to ("" for none).
func (s *Service) RequestPasswordReset(ctx context.Context, facts request.Facts, email, lang, request string) error {
	st, err := s.Settings(ctx)
	if err != nil {
		return err
	}
	if !st.PasswordReset {
		return ErrOff
	}
	p, found, err := s.mailTarget(ctx, facts, email)
	if err != nil || !found || !identity.MaySignIn(p.Status) {
		return err
	}
	if p.Status == identity.StatusCreated && st.Activation {
		// The address is not proven yet: the activation link, whose
		// holder chooses the password, is what this person needs (a reset
		// would leave the account CREATED, and the owner of a squatted
		// address out).
		err := s.Store.Tx(ctx, func(tx store.Store) error {
			return s.sendActivation(ctx, tx, facts, st, p, lang, request, store.PersonTokenActivation)
		})
		if errors.Is(err, errNotOwed) {
			return nil
		}
		if err == nil {
			s.wake()
		}
		return err
	}
	q := url.Values{}
	if request != "" {
		q.Set("request", request)
	}
	if lang != "" {
		q.Set("language", lang)
	}
	err = s.Store.Tx(ctx, func(tx store.Store) error {
		link, p, err := s.link(ctx, tx, store.PersonTokenPasswordReset, p.ID, PathReset, ResetLinkLifetime, q)
		if err != nil {
			return err
		}
		if err := s.enqueue(ctx, tx, "password_reset", lang, p, mail.Data{Link: link, Minutes: minutes(ResetLinkLifetime)}); err != nil {
			return err
		}
		return s.recordPerson(ctx, tx, facts, events.PersonPasswordResetRequested, p, nil)
	})
	if errors.Is(err, errNotOwed) {
		return nil // blocked since it was read: nothing is sent
	}
	if err == nil {
		s.wake()
	}
	return err
}

// ResetPassword sets a new password with a reset link: the link is spent,
// the password must meet the policy, and everything the person held
// (refresh tokens, grants, browser sessions) is revoked in the same
// transaction, so whoever knew the old password is signed out everywhere.
func (s *Service) ResetPassword(ctx context.Context, facts request.Facts, link, newPassword, lang string) (store.Person, error) {
	st, err := s.Settings(ctx)
	if err != nil {
		return store.Person{}, err
	}
	if !st.PasswordReset {
		return store.Person{}, ErrOff
	}
	if _, err := s.CheckLink(ctx, store.PersonTokenPasswordReset, link); err != nil {
		return store.Person{}, err
	}
	if err := s.checkPassword(ctx, newPassword); err != nil {
		return store.Person{}, err
	}
	hash, err := password.Hash(newPassword)
	if err != nil {
		return store.Person{}, err
	}
	var p store.Person
	err = s.Store.Tx(ctx, func(tx store.Store) error {
		t, err := s.use(ctx, tx, store.PersonTokenPasswordReset, link)
		if err != nil {
			return err
		}
		if err := tx.UpdatePerson(ctx, t.PersonID, func(old store.Person) (store.Person, error) {
			if !identity.MaySignIn(old.Status) {
				return old, ErrLinkInvalid // blocked since the link was sent
			}
			old.PasswordHash = hash
			for i := range old.Profile.Emails {
				if strings.EqualFold(old.Profile.Emails[i].Value, old.Email) {
					old.Profile.Emails[i].Verified = true // the link reached the address
				}
			}
			p = old
			return old, nil
		}); err != nil {
			if errors.Is(err, store.ErrNotFound) {
				return ErrLinkInvalid
			}
			return err
		}
		if err := tx.DeletePersonTokens(ctx, p.ID, store.PersonTokenPasswordReset); err != nil {
			return err
		}
		if _, err := tx.RevokePerson(ctx, p.ID, s.Now().UTC()); err != nil {
			return err
		}
		// The link proved the address: an upstream identity linked while
		// it was unproven (store.ExternalIdentity.Unproven) ends, as at
		// activation.
		if _, err := tx.EndUnprovenIdentities(ctx, p.ID); err != nil {
			return err
		}
		if st.Notify("password_reset") || st.Notify("password_updated") {
			if err := s.enqueue(ctx, tx, "password_changed", lang, p, mail.Data{}); err != nil {
				return err
			}
		}
		return s.recordPerson(ctx, tx, facts, events.PersonPasswordReset, p, nil)
	})
	if err != nil {
		return store.Person{}, err
	}
	s.wake()
	return p, nil
}

// PasswordError is a new password that breaks the policy; its message is
// for the person.
type PasswordError struct{ Message string }

func (e *PasswordError) Error() string { return e.Message }

// MaxPasswordLength bounds what is hashed whatever the policy says.
const MaxPasswordLength = 4096

func (s *Service) checkPassword(ctx context.Context, pw string) error {
	if pw == "" {
		return &PasswordError{Message: "Enter a password."}
	}
	if len(pw) > MaxPasswordLength {
		return &PasswordError{Message: "The password is too long."}
	}
	if s.Identity.PasswordPolicy == nil {
		return nil
	}
	err := s.Identity.PasswordPolicy(ctx, pw)
	if err == nil {
		return nil
	}
	var pe interface{ Error() string }
	if isPolicy(err) {
		pe = err
		return &PasswordError{Message: pe.Error()}
	}
	return err
}
