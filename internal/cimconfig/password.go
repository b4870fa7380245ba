package cimconfig

import (
	"context"
	"errors"
	"strings"

	"github.com/latchkey/latchkey/internal/pwpolicy"
)

// PolicyError lists the rules a password breaks, with messages for people.
type PolicyError struct{ Violations []pwpolicy.Violation }

func (e *PolicyError) Error() string {
	msgs := make([]string, len(e.Violations))
	for i, v := range e.Violations {
		msgs[i] = v.Message
	}
	return strings.Join(msgs, " ")
}

// rules turns the stored policy into pwpolicy's rules.
func (pp *PasswordPolicy) rules() pwpolicy.Rules {
	b := func(p *bool) bool { return p != nil && *p }
	r := pwpolicy.Rules{LowerCaseCharRequired: b(pp.LowerCaseCharRequired), UpperCaseCharRequired: b(pp.UpperCaseCharRequired),
		SpecialCharRequired: b(pp.SpecialCharRequired), BreachedPasswordBlocked: b(pp.BreachedPasswordBlocked)}
	if pp.MinLength != nil {
		r.MinLength = int(*pp.MinLength)
	}
	if pp.MaxLength != nil {
		r.MaxLength = int(*pp.MaxLength)
	}
	return r
}

// CheckPassword applies the configured password policy (none when the
// unit was never set): a *PolicyError names every broken rule; other
// errors mean the check itself failed (a breached-password service that
// fails closed, or the store).
func (s *Service) CheckPassword(ctx context.Context, password string) error {
	snap, err := s.Snapshot(ctx)
	if err != nil {
		return err
	}
	if snap.PasswordPolicy == nil {
		return nil
	}
	var checker pwpolicy.BreachChecker
	if s.Breached != nil {
		checker = s.Breached
	}
	vs, err := snap.PasswordPolicy.rules().Check(ctx, password, checker)
	if err != nil {
		return err
	}
	if len(vs) > 0 {
		return &PolicyError{Violations: vs}
	}
	return nil
}

// IsPolicyError reports whether err is a broken password rule.
func IsPolicyError(err error) bool {
	var pe *PolicyError
	return errors.As(err, &pe)
}
