// Package identity owns person accounts and their credentials: password
// checks with throttling, hash upgrades, and the seed persons of the config.
package identity

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/latchkey/latchkey/internal/config"
	"github.com/latchkey/latchkey/internal/events"
	"github.com/latchkey/latchkey/internal/password"
	"github.com/latchkey/latchkey/internal/request"
	"github.com/latchkey/latchkey/internal/seal"
	"github.com/latchkey/latchkey/internal/store"
	"github.com/latchkey/latchkey/internal/throttle"
	"github.com/latchkey/latchkey/internal/token"
	"github.com/latchkey/latchkey/internal/totp"
)

// Person statuses.
const (
	StatusCreated   = "CREATED"
	StatusInvited   = "INVITED"
	StatusActivated = "ACTIVATED"
	StatusBlocked   = store.PersonBlocked // a write of it ends the person's mailed links (store.Persons)
	StatusInactive  = store.PersonInactive
)

// MaySignIn reports whether a person of this status may sign in and hold
// tokens. An INVITED person has not accepted the invitation yet.
func MaySignIn(status string) bool { return status == StatusCreated || status == StatusActivated }

// The built-in identity provider: latchkey's own username and password.
// Its id is fixed so that imports and the identity-providers listing agree
// on every instance.
const (
	PasswordIdPID   = "6f1c2a9e-3b7d-4e58-9a40-2d8c5b1e7f03"
	PasswordIdPType = "USERNAME_AND_PASSWORD"
	PasswordIdPName = "Username and password"
)

// Login throttling (docs/THROTTLES.md). Failures are counted per account
// and address together, per address, and per account; the account counter
// is slower and does not apply to a known device (a browser where the
// account signed in before, DeviceCookie), so an attacker's failures from
// elsewhere do not lock its owner out. Each attempt is reserved before the
// password is checked, so concurrent attempts cannot exceed a limit; a
// successful attempt gives its reservation back.
const (
	ThrottleWindow            = 15 * time.Minute
	MaxFailsPerAccountAddress = 5
	MaxFailsPerIP             = 50
	// The per-account back-off: distributed guessing gets 20 tries an hour
	// (under 500 a day), while the owner, on a known device, is not counted
	// here at all.
	AccountThrottleWindow = time.Hour
	MaxFailsPerAccount    = 20
	// A known device has its own counter instead, so a stolen device
	// cookie buys no more guesses than one address has.
	MaxFailsPerDevice = 5
)

// Service checks credentials.
type Service struct {
	Store  store.Store
	Events *events.Recorder
	Now    func() time.Time
	// TOTP opens the sealed TOTP secrets of persons (step-up).
	TOTP *seal.Sealer
	// Devices signs the known-device cookies; nil: no device is known and
	// every login counts against the per-account back-off.
	Devices *token.Hasher
	// Keys makes keyed hashes under the server key: a seeded person's
	// fingerprint (SeedPersons). nil: every start hashes the seeded passwords.
	Keys *token.Hasher
	// PasswordPolicy applies the password policy wherever a password is set
	// (nil: no policy).
	PasswordPolicy func(ctx context.Context, password string) error
	// Verify checks a password against a PHC hash (password.Verify; tests
	// count the work with it).
	Verify func(phc, pw string) (bool, error)
	// OnDelete runs in the transaction that deletes a person, with the
	// person as it was before its row goes (journey.Service.AccountRemoved
	// mails the account_removed notification); nil: nothing.
	OnDelete func(ctx context.Context, tx store.Store, p store.Person) error
	// dummy is verified for unknown accounts, and beside any hash weaker
	// than it, so that every attempt costs at least one argon2id at today's
	// parameters: timing must not reveal which emails exist or which
	// accounts were imported.
	dummy string
}

// New returns a Service.
func New(st store.Store, rec *events.Recorder, now func() time.Time) (*Service, error) {
	return &Service{Store: st, Events: rec, Now: now, Verify: password.Verify, dummy: password.TimingDummy}, nil
}

// Errors of CheckPassword. Neither says whether the account exists.
var (
	// ErrBadCredentials: a wrong email or password, or an account that
	// may not sign in.
	ErrBadCredentials = errors.New("identity: the email address or password is wrong")
	// ErrThrottled: too many failed attempts (ThrottledError carries
	// when to try again).
	ErrThrottled = errors.New("identity: too many failed attempts")
)

// ThrottledError is ErrThrottled (errors.Is) with the time until the
// attempt may be made again.
type ThrottledError struct{ RetryAfter time.Duration }

func (e *ThrottledError) Error() string        { return ErrThrottled.Error() }
func (e *ThrottledError) Is(target error) bool { return target == ErrThrottled }

// loginLimits are the counters of one attempt. They depend on the email as
// typed and the client, never on whether the account exists, so a
// throttled answer is the same for every email.
func (s *Service) loginLimits(f request.Facts, email string) []throttle.Limit {
	account := strings.ToLower(email)
	addr := f.AddrKey()
	ls := []throttle.Limit{
		{Key: "login:pair:" + account + "|" + addr, Max: MaxFailsPerAccountAddress, Window: ThrottleWindow},
		{Key: "login:ip:" + addr, Max: MaxFailsPerIP, Window: ThrottleWindow},
	}
	if device := s.knownDevice(f.DeviceCookie, account); device != "" {
		return append(ls, throttle.Limit{Key: "login:device:" + account + "|" + device, Max: MaxFailsPerDevice, Window: ThrottleWindow})
	}
	return append(ls, throttle.Limit{Key: "login:account:" + account, Max: MaxFailsPerAccount, Window: AccountThrottleWindow})
}

// CheckPassword verifies email and password under the login throttles and
// upgrades an outdated hash to argon2id.
func (s *Service) CheckPassword(ctx context.Context, f request.Facts, email, pw string) (store.Person, error) {
	now := s.Now()
	email = strings.TrimSpace(email)
	limits := s.loginLimits(f, email)
	if err := throttle.Reserve(ctx, s.Store, now, limits...); err != nil {
		var refused *throttle.Refused
		if errors.As(err, &refused) {
			// No lookup and no hash: the same (cheap) answer whether or
			// not the account exists.
			s.record(ctx, f, events.LoginThrottled, "")
			return store.Person{}, &ThrottledError{RetryAfter: refused.RetryAfter}
		}
		return store.Person{}, err
	}
	p, err := s.Store.GetPersonByEmail(ctx, "", email)
	if err != nil && !errors.Is(err, store.ErrNotFound) {
		return store.Person{}, err
	}
	hash := p.PasswordHash
	if err != nil || hash == "" {
		hash = s.dummy
	}
	ok, verr := s.Verify(hash, pw)
	if hash != s.dummy && password.NeedsRehash(hash) {
		// A PBKDF2 or bcrypt hash (imported, not yet upgraded) is cheaper
		// than argon2id: pay the difference, or a fast answer would tell
		// that the email belongs to an imported account.
		_, _ = s.Verify(s.dummy, pw)
	}
	if err != nil || p.PasswordHash == "" || verr != nil || !ok || !MaySignIn(p.Status) {
		// The reservation stays: it was a failure.
		s.record(ctx, f, events.LoginFailed, p.ID)
		return store.Person{}, ErrBadCredentials
	}
	// A success gives its reservation back. This account at this address
	// (or on this device) proved itself: its own earlier typos are
	// forgiven too. The per-account back-off only loses this attempt: the
	// failures behind it may be someone else's.
	for _, l := range limits {
		var err error
		if strings.HasPrefix(l.Key, "login:pair:") || strings.HasPrefix(l.Key, "login:device:") {
			err = s.Store.Reset(ctx, l.Key)
		} else {
			err = throttle.Release(ctx, s.Store, l)
		}
		if err != nil {
			return store.Person{}, err
		}
	}
	if password.NeedsRehash(p.PasswordHash) {
		if err := s.setPassword(ctx, p.ID, pw); err != nil {
			return store.Person{}, err
		}
	}
	s.record(ctx, f, events.LoginSucceeded, p.ID)
	return p, nil
}

// GuardLogin runs check — a password checked elsewhere, such as by an LDAP
// directory — under the login throttles of account (the name as typed,
// prefixed with where it is checked), which share the per-address counter
// with password logins: a throttled attempt is refused before check runs.
// check's ErrBadCredentials is a failure and keeps its reservation; nil
// gives it back as a successful login does; any other error (the
// directory was down: not a guess) gives it back too and is returned.
func (s *Service) GuardLogin(ctx context.Context, f request.Facts, account string, check func() error) error {
	limits := s.loginLimits(f, account)
	if err := throttle.Reserve(ctx, s.Store, s.Now(), limits...); err != nil {
		var refused *throttle.Refused
		if errors.As(err, &refused) {
			return &ThrottledError{RetryAfter: refused.RetryAfter}
		}
		return err
	}
	err := check()
	if errors.Is(err, ErrBadCredentials) {
		return err
	}
	for _, l := range limits {
		var rerr error
		if err == nil && (strings.HasPrefix(l.Key, "login:pair:") || strings.HasPrefix(l.Key, "login:device:")) {
			rerr = s.Store.Reset(ctx, l.Key)
		} else {
			rerr = throttle.Release(ctx, s.Store, l)
		}
		if rerr != nil {
			return rerr
		}
	}
	return err
}

// ErrBadTOTP is the answer to a wrong, reused or throttled TOTP code: a
// throttled code is answered as a wrong one.
var ErrBadTOTP = errors.New("identity: the TOTP code is wrong or was already used")

// MaxTOTPFails is how many wrong codes a person may enter per ThrottleWindow.
const MaxTOTPFails = 5

// HasTOTP reports whether the person can step up with a TOTP code.
func (s *Service) HasTOTP(p store.Person) bool { return s.TOTP != nil && p.TOTPSecret != nil }

// CheckTOTP verifies a person's TOTP code (RFC 6238, one step of drift
// either side). A code is accepted once: the step it matched is recorded for
// every instance, so a replayed code fails. Wrong codes are throttled per person.
func (s *Service) CheckTOTP(ctx context.Context, f request.Facts, p store.Person, code string) error {
	if !s.HasTOTP(p) {
		return ErrBadTOTP
	}
	now := s.Now()
	limit := throttle.Limit{Key: "totp:fail:" + p.ID, Max: MaxTOTPFails, Window: ThrottleWindow}
	// Reserved before the code is checked, so concurrent guesses stay
	// within the limit; a throttled code is answered as a wrong one.
	if err := throttle.Reserve(ctx, s.Store, now, limit); err != nil {
		if !errors.As(err, new(*throttle.Refused)) {
			return err
		}
		s.record(ctx, f, events.TOTPFailed, p.ID)
		return ErrBadTOTP
	}
	secret, err := s.TOTP.Open(p.TOTPSecret, []byte(p.ID))
	if err != nil {
		return fmt.Errorf("totp secret of person %s: %w", p.ID, err)
	}
	if counter, ok := totp.Verify(secret, strings.TrimSpace(code), now); ok {
		// Single use of a step, as for client assertion ids: recorded
		// until the code can no longer match.
		err := s.Store.UseAssertionID(ctx, "totp:"+p.ID, strconv.FormatUint(counter, 10), now.Add(3*totp.Step), now)
		if err == nil {
			s.record(ctx, f, events.TOTPSucceeded, p.ID)
			return throttle.Release(ctx, s.Store, limit)
		}
		if !errors.Is(err, store.ErrConflict) {
			return err
		}
	}
	s.record(ctx, f, events.TOTPFailed, p.ID)
	return ErrBadTOTP
}

func (s *Service) setPassword(ctx context.Context, id, pw string) error {
	h, err := password.Hash(pw)
	if err != nil {
		return err
	}
	return s.Store.UpdatePerson(ctx, id, func(p store.Person) (store.Person, error) {
		p.PasswordHash = h
		return p, nil
	})
}

func (s *Service) record(ctx context.Context, f request.Facts, typ, personID string) {
	s.Events.ObserveOAuth(ctx, s.Store.EventSink(), f, events.OAuth{Type: typ, UserID: personID})
}

// SeedPersons creates the config's persons, or updates name and password of
// those that exist (matched by email).
func (s *Service) SeedPersons(ctx context.Context, persons []config.Person) error {
	for _, cp := range persons {
		if !NormalEmail(cp.Email) {
			return fmt.Errorf("person %q: the email %s", cp.Email, EmailProblemNFKC)
		}
		if s.PasswordPolicy != nil {
			if err := s.PasswordPolicy(ctx, cp.Password); err != nil {
				return fmt.Errorf("person %s: %w", cp.Email, err)
			}
		}
		p, err := s.Store.GetPersonByEmail(ctx, "", cp.Email)
		if err == nil && s.seededAsConfigured(ctx, cp, p) {
			continue
		}
		if err != nil && !errors.Is(err, store.ErrNotFound) {
			return fmt.Errorf("person %s: %w", cp.Email, err)
		}
		h, herr := password.Hash(cp.Password)
		if herr != nil {
			return herr
		}
		now := s.Now().UTC()
		id := p.ID
		switch {
		case errors.Is(err, store.ErrNotFound):
			id = uuid.NewString()
			err = s.Store.Tx(ctx, func(tx store.Store) error {
				if err := tx.CreatePerson(ctx, store.Person{
					ID: id, Email: cp.Email, PasswordHash: h, FirstName: cp.FirstName,
					LastName: cp.LastName, Status: StatusActivated, CreatedAt: now, UpdatedAt: now,
				}); err != nil {
					return err
				}
				return s.Events.RecordPerson(ctx, tx, request.Facts{}, events.Person{Type: events.PersonCreated, PersonID: id, AgentUser: "config"})
			})
		case err == nil:
			err = s.Store.UpdatePerson(ctx, p.ID, func(p store.Person) (store.Person, error) {
				p.PasswordHash, p.FirstName, p.LastName = h, cp.FirstName, cp.LastName
				return p, nil
			})
		}
		if err != nil {
			return fmt.Errorf("person %s: %w", cp.Email, err)
		}
		if s.Keys != nil {
			if err := s.Store.SetSeedFingerprint(ctx, id, s.Keys.Hash(seedLabel, seedInput(cp, h))); err != nil {
				return fmt.Errorf("person %s: %w", cp.Email, err)
			}
		}
	}
	return nil
}

const seedLabel = "latchkey seeded person"

// seedInput is what a seeded person's fingerprint covers: the configured
// email and password and the hash stored for them.
func seedInput(cp config.Person, phc string) string {
	return strings.ToLower(cp.Email) + "\x00" + cp.Password + "\x00" + phc
}

// seededAsConfigured reports whether p is as the configuration file seeds
// it: its names, and a stored hash that the last seeding made from the
// configured password (the recorded fingerprint, a keyed hash under the
// server key, covers both). Then a start need not hash the password again
// (an argon2id hash, most of a start's time) nor write the person. A
// password the person changed since, or another one in the file, does not
// match, and the file's password is set again, as at every start before.
func (s *Service) seededAsConfigured(ctx context.Context, cp config.Person, p store.Person) bool {
	if s.Keys == nil || p.FirstName != cp.FirstName || p.LastName != cp.LastName {
		return false
	}
	fp, err := s.Store.SeedFingerprint(ctx, p.ID)
	return err == nil && s.Keys.Verify(seedLabel, seedInput(cp, p.PasswordHash), fp)
}

// KnownStatus reports whether status is one of the person statuses.
func KnownStatus(status string) bool {
	switch status {
	case StatusCreated, StatusInvited, StatusActivated, StatusBlocked, StatusInactive:
		return true
	}
	return false
}

// ErrUnknownStatus: SetStatus was given a status that is not one of the five.
var ErrUnknownStatus = errors.New("identity: unknown person status")

// EnforceStatus ends everything a person holds — sessions, grants, access
// and refresh tokens — when status may not sign in. Every writer of a
// person's status calls it in the transaction that writes the status
// (after UpdatePerson, which holds the person's row): the status and the
// revocation commit together, and an issuance that waited on the row sees
// the new status (oauth's lockPerson).
func EnforceStatus(ctx context.Context, tx store.Store, personID, status string, now time.Time) (store.PersonRevocation, error) {
	if MaySignIn(status) {
		return store.PersonRevocation{}, nil
	}
	return tx.RevokePerson(ctx, personID, now)
}

// SetStatus sets a person's status; agent is who did it (the person
// event's event_agent_user). A status that may not sign in (BLOCKED,
// INACTIVE, INVITED) revokes everything the person holds in the same
// transaction — also when the person had that status already, so that
// blocking again sweeps anything left. ErrNotFound (store) for an unknown
// person.
func (s *Service) SetStatus(ctx context.Context, personID, status, agent string) (store.PersonRevocation, error) {
	if !KnownStatus(status) {
		return store.PersonRevocation{}, fmt.Errorf("%w %q (want one of %s, %s, %s, %s, %s)", ErrUnknownStatus, status,
			StatusCreated, StatusInvited, StatusActivated, StatusBlocked, StatusInactive)
	}
	var out store.PersonRevocation
	err := s.Store.Tx(ctx, func(tx store.Store) error {
		var partition string
		changed := false
		if err := tx.UpdatePerson(ctx, personID, func(p store.Person) (store.Person, error) {
			partition, changed = p.Partition, p.Status != status
			p.Status = status
			return p, nil
		}); err != nil {
			return err
		}
		var err error
		if out, err = EnforceStatus(ctx, tx, personID, status, s.Now().UTC()); err != nil {
			return err
		}
		if !changed {
			return nil
		}
		return s.Events.RecordPerson(ctx, tx, request.Facts{}, events.Person{Type: events.PersonUpdated, PersonID: personID,
			AgentUser: agent, Partition: partition})
	})
	return out, err
}

// DeletePerson deletes a person with their identities and remembered
// consents and revokes everything they held, in one transaction; agent is
// who did it. ErrNotFound (store) for an unknown person.
func (s *Service) DeletePerson(ctx context.Context, personID, agent string) (store.PersonRevocation, error) {
	var out store.PersonRevocation
	err := s.Store.Tx(ctx, func(tx store.Store) error {
		// The row first, as issuance and status changes take it: a
		// concurrent issuance either commits before (and is revoked here)
		// or finds no person.
		p, err := tx.LockPerson(ctx, personID)
		if err != nil {
			return err
		}
		if out, err = tx.RevokePerson(ctx, personID, s.Now().UTC()); err != nil {
			return err
		}
		if s.OnDelete != nil {
			if err := s.OnDelete(ctx, tx, p); err != nil {
				return err
			}
		}
		if err := tx.DeletePerson(ctx, personID); err != nil {
			return err
		}
		return s.Events.RecordPerson(ctx, tx, request.Facts{}, events.Person{Type: events.PersonDeleted, PersonID: personID,
			AgentUser: agent, Partition: p.Partition})
	})
	return out, err
}
