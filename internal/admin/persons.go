package admin

import (
	"context"
	"errors"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/latchkey/latchkey/internal/events"
	"github.com/latchkey/latchkey/internal/identity"
	"github.com/latchkey/latchkey/internal/lazyre"
	"github.com/latchkey/latchkey/internal/store"
)

// Person is a person as the admin API answers it: the profile, status and
// linked identities; never a password hash or a TOTP secret.
type Person struct {
	store.Person
	Identities []store.ExternalIdentity
}

// FindPersons returns the persons with email in every partition.
func (s *Service) FindPersons(ctx context.Context, email string) ([]Person, error) {
	ps, err := s.Store.FindPersons(ctx, email)
	if err != nil {
		return nil, err
	}
	out := make([]Person, 0, len(ps))
	for _, p := range ps {
		ids, err := s.Store.ListIdentities(ctx, p.ID)
		if err != nil {
			return nil, err
		}
		out = append(out, Person{Person: p, Identities: ids})
	}
	return out, nil
}

// GetPerson returns one person.
func (s *Service) GetPerson(ctx context.Context, id string) (Person, error) {
	p, err := s.Store.GetPerson(ctx, id)
	if err != nil {
		return Person{}, notFound(err)
	}
	ids, err := s.Store.ListIdentities(ctx, id)
	return Person{Person: p, Identities: ids}, err
}

// PersonPatch is a PATCH of a person: members sent change, members left
// out stay (RFC 7396: a list or map sent replaces the stored one).
type PersonPatch struct {
	Status           *string                `json:"status"`
	Email            *string                `json:"email"`
	FirstName        *string                `json:"first_name"`
	LastName         *string                `json:"last_name"`
	DisplayName      *string                `json:"display_name"`
	Initials         *string                `json:"initials"`
	Gender           *string                `json:"gender"`
	DateOfBirth      *string                `json:"date_of_birth"`
	PreferredLocale  *string                `json:"preferred_locale"`
	EmailAddresses   *[]store.ContactPoint  `json:"email_addresses"`
	PhoneNumbers     *[]store.ContactPoint  `json:"phone_numbers"`
	Addresses        *[]store.PostalAddress `json:"addresses"`
	CustomAttributes *map[string]string     `json:"custom_attributes"`
}

var (
	phoneRE   = lazyre.New(`^\+?[0-9][0-9 ()./-]{2,30}$`)
	localeRE  = lazyre.New(`^[a-z]{2,3}([_-][A-Z]{2})?$`)
	countryRE = lazyre.New(`^[A-Za-z]{2}$`)
	customRE  = lazyre.New(`^[A-Za-z][A-Za-z0-9_.-]{0,63}$`)
)

const maxText = 255

// apply checks the patch and applies it to p.
func (pp PersonPatch) apply(p *store.Person, now time.Time) error {
	if pp.Status != nil {
		if !identity.KnownStatus(*pp.Status) {
			return invalid("status", "status %q is not one of %s, %s, %s, %s, %s", clip(*pp.Status), identity.StatusCreated,
				identity.StatusInvited, identity.StatusActivated, identity.StatusBlocked, identity.StatusInactive)
		}
		p.Status = *pp.Status
	}
	if pp.Email != nil {
		if !identity.NormalEmail(*pp.Email) {
			return invalid("email", "email %q %s", clip(*pp.Email), identity.EmailProblemNFKC)
		}
		if !identity.ValidEmail(*pp.Email) {
			return invalid("email", "email %q is not an email address", clip(*pp.Email))
		}
		p.Email = *pp.Email
	}
	for field, kv := range map[string]struct {
		v   *string
		dst *string
	}{"first_name": {pp.FirstName, &p.FirstName}, "last_name": {pp.LastName, &p.LastName},
		"display_name": {pp.DisplayName, &p.Profile.DisplayName}, "initials": {pp.Initials, &p.Profile.Initials}} {
		if kv.v == nil {
			continue
		}
		if len(*kv.v) > maxText || !utf8.ValidString(*kv.v) {
			return invalid(field, "%s is longer than %d bytes", field, maxText)
		}
		*kv.dst = *kv.v
	}
	if pp.Gender != nil {
		if !identity.ValidGender(*pp.Gender) {
			return invalid("gender", "gender %q is not M, F or U", clip(*pp.Gender))
		}
		p.Profile.Gender = *pp.Gender
	}
	if pp.DateOfBirth != nil {
		if !identity.ValidDateOfBirth(*pp.DateOfBirth, now) {
			return invalid("date_of_birth", "date_of_birth %q is not a past date YYYY-MM-DD", clip(*pp.DateOfBirth))
		}
		p.Profile.DateOfBirth = *pp.DateOfBirth
	}
	if pp.PreferredLocale != nil {
		if v := *pp.PreferredLocale; v != "" && !localeRE.MatchString(v) {
			return invalid("preferred_locale", "preferred_locale %q is not a locale code (e.g. en, nl_NL)", clip(v))
		}
		p.Profile.PreferredLocale = *pp.PreferredLocale
	}
	if pp.EmailAddresses != nil {
		if err := checkContacts("email_addresses", *pp.EmailAddresses, identity.ValidEmail); err != nil {
			return err
		}
		p.Profile.Emails = *pp.EmailAddresses
	}
	if pp.PhoneNumbers != nil {
		if err := checkContacts("phone_numbers", *pp.PhoneNumbers, phoneRE.MatchString); err != nil {
			return err
		}
		p.Profile.Phones = *pp.PhoneNumbers
	}
	if pp.Addresses != nil {
		as := *pp.Addresses
		if len(as) > maxListItems {
			return invalid("addresses", "addresses: at most %d", maxListItems)
		}
		for i, a := range as {
			if a.HouseNumber < 0 || a.HouseNumber > 999_999 {
				return invalid("addresses", "addresses: house_number must be between 0 and 999999")
			}
			if a.CountryCode != "" && !countryRE.MatchString(a.CountryCode) {
				return invalid("addresses", "addresses: country_code %q is not an ISO 3166-1 alpha-2 code", clip(a.CountryCode))
			}
			for _, v := range []string{a.HouseNumberAddition, a.StreetName, a.City, a.PostalCode, a.Region, a.CompanyName, a.Attention} {
				if len(v) > maxText || !utf8.ValidString(v) {
					return invalid("addresses", "addresses: every field is at most %d bytes", maxText)
				}
			}
			as[i].CountryCode = strings.ToUpper(a.CountryCode)
		}
		p.Profile.Addresses = as
	}
	if pp.CustomAttributes != nil {
		m := *pp.CustomAttributes
		if len(m) > maxListItems {
			return invalid("custom_attributes", "custom_attributes: at most %d", maxListItems)
		}
		for k, v := range m {
			if !customRE.MatchString(k) || len(v) > maxItemLength || !utf8.ValidString(v) {
				return invalid("custom_attributes", "custom_attributes: %q must be a name of letters, digits, _ . - with a value of at most %d bytes",
					clip(k), maxItemLength)
			}
		}
		if len(m) == 0 {
			m = nil
		}
		p.Custom = m
	}
	return nil
}

func checkContacts(field string, cs []store.ContactPoint, valid func(string) bool) error {
	if len(cs) > maxListItems {
		return invalid(field, "%s: at most %d", field, maxListItems)
	}
	primaries := 0
	for _, c := range cs {
		if field == "email_addresses" && !identity.NormalEmail(c.Value) {
			return invalid(field, "%s: %q %s", field, clip(c.Value), identity.EmailProblemNFKC)
		}
		if !valid(c.Value) {
			return invalid(field, "%s: %q is not valid", field, clip(c.Value))
		}
		if c.Primary {
			primaries++
		}
	}
	if primaries > 1 {
		return invalid(field, "%s: at most one can be primary", field)
	}
	return nil
}

// PatchPerson changes a person's status and profile in one transaction.
// A status that may not sign in (BLOCKED, INACTIVE, INVITED) revokes every
// session, grant and token of the person in it (identity.EnforceStatus:
// at once, on every instance). Events: person.PersonUpdatedEvent, and
// PersonBlockedEvent or PersonUnblockedEvent when the status moved to or
// from BLOCKED. ErrConflict for an email taken in the partition.
func (s *Service) PatchPerson(ctx context.Context, a Actor, id string, pp PersonPatch) (Person, store.PersonRevocation, error) {
	var (
		r          store.PersonRevocation
		before     store.Person
		after      store.Person
		now        = s.now()
		patchError error
	)
	err := s.Store.Tx(ctx, func(tx store.Store) error {
		err := tx.UpdatePerson(ctx, id, func(p store.Person) (store.Person, error) {
			before = p
			if err := pp.apply(&p, now); err != nil {
				patchError = err
				return p, err
			}
			after = p
			return p, nil
		})
		if err != nil {
			return err
		}
		if r, err = identity.EnforceStatus(ctx, tx, id, after.Status, now); err != nil {
			return err
		}
		record := func(typ string) error {
			return s.Events.RecordPerson(ctx, tx, a.Facts, events.Person{Type: typ, PersonID: id, AgentUser: a.Name,
				Partition: after.Partition})
		}
		if err := record(events.PersonUpdated); err != nil {
			return err
		}
		switch {
		case before.Status != identity.StatusBlocked && after.Status == identity.StatusBlocked:
			return record(events.PersonBlocked)
		case before.Status == identity.StatusBlocked && after.Status != identity.StatusBlocked:
			return record(events.PersonUnblocked)
		}
		return nil
	})
	switch {
	case patchError != nil && errors.Is(err, patchError):
		return Person{}, r, patchError
	case errors.Is(err, store.ErrConflict):
		return Person{}, r, ErrConflict
	case err != nil:
		return Person{}, r, notFound(err)
	}
	out, err := s.GetPerson(ctx, id)
	return out, r, err
}

// Sessions are what a person holds: login sessions and live grants.
type Sessions struct {
	Sessions []store.Session
	Grants   []store.Grant
}

// ListSessions returns the person's live sessions and grants.
func (s *Service) ListSessions(ctx context.Context, id string) (Sessions, error) {
	if _, err := s.Store.GetPerson(ctx, id); err != nil {
		return Sessions{}, notFound(err)
	}
	now := s.now()
	ss, err := s.Store.ListSessions(ctx, id, now)
	if err != nil {
		return Sessions{}, err
	}
	gs, err := s.Store.ListPersonGrants(ctx, id, now)
	return Sessions{Sessions: ss, Grants: gs}, err
}

// EndSessions ends every session and grant of a person at once (on every
// instance), with person.PersonSessionsEndedEvent; the status stays.
func (s *Service) EndSessions(ctx context.Context, a Actor, id string) (store.PersonRevocation, error) {
	var r store.PersonRevocation
	err := s.Store.Tx(ctx, func(tx store.Store) error {
		// The row first, as issuance takes it: an issuance in flight
		// commits before (and is revoked here).
		p, err := tx.LockPerson(ctx, id)
		if err != nil {
			return err
		}
		if r, err = tx.RevokePerson(ctx, id, s.now()); err != nil {
			return err
		}
		return s.Events.RecordPerson(ctx, tx, a.Facts, events.Person{Type: events.PersonSessionsEnded, PersonID: id,
			AgentUser: a.Name, Partition: p.Partition})
	})
	return r, notFound(err)
}

// ErasePerson erases a person (GDPR article 17, docs/ADMIN.md): the
// profile and credentials are gone, every session, grant and token is
// revoked, and no stored event keeps any personal datum of them, only the
// person ID (store.Store.ErasePerson). person.PersonErasedEvent records
// it, and AccountRemoved (the notification) runs in the same transaction.
func (s *Service) ErasePerson(ctx context.Context, a Actor, id string) (store.PersonRevocation, error) {
	r, err := s.Store.ErasePerson(ctx, id, s.now(), func(tx store.Store, p store.Person) error {
		if s.AccountRemoved != nil {
			if err := s.AccountRemoved(ctx, tx, p); err != nil {
				return err
			}
		}
		return s.Events.RecordPerson(ctx, tx, a.Facts, events.Person{Type: events.PersonErased, PersonID: p.ID,
			AgentUser: a.Name, Partition: p.Partition})
	})
	return r, notFound(err)
}
