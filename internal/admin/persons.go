package admin

import (
	"context"
	"errors"
	"maps"
	"reflect"
	"slices"
	"strings"
	"time"

	"github.com/latchkey/latchkey/internal/events"
	"github.com/latchkey/latchkey/internal/identity"
	"github.com/latchkey/latchkey/internal/personimport"
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
// out stay. Profile is the import's Profile (personimport.Profile), whole:
// it replaces the stored profile and is checked by the import's own code
// (personimport.CheckProfile). The members one by one (email, first_name,
// ...) are the older, deprecated way: they are applied to the person's
// profile as read, which is then checked by the same code; a list or map
// sent replaces the stored one (RFC 7396). Profile and those members are
// not sent together.
type PersonPatch struct {
	Status  *string               `json:"status"`
	Profile *personimport.Profile `json:"profile"`

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

// members reports whether any profile member is sent one by one.
func (pp PersonPatch) members() bool {
	return pp.Email != nil || pp.FirstName != nil || pp.LastName != nil || pp.DisplayName != nil || pp.Initials != nil ||
		pp.Gender != nil || pp.DateOfBirth != nil || pp.PreferredLocale != nil || pp.EmailAddresses != nil ||
		pp.PhoneNumbers != nil || pp.Addresses != nil || pp.CustomAttributes != nil
}

// apply checks the patch and applies it to p.
func (pp PersonPatch) apply(p *store.Person, now time.Time) error {
	if pp.Status != nil {
		if !identity.KnownStatus(*pp.Status) {
			return invalid("status", "status %q is not one of %s, %s, %s, %s, %s", clip(*pp.Status), identity.StatusCreated,
				identity.StatusInvited, identity.StatusActivated, identity.StatusBlocked, identity.StatusInactive)
		}
		p.Status = *pp.Status
	}
	members := pp.members()
	var pr personimport.Profile
	switch {
	case pp.Profile != nil && members:
		return invalid("profile", "send the profile, or its members one by one, not both")
	case pp.Profile != nil:
		pr = *pp.Profile
		// Required as in the import (CheckProfile), and the path's person.
		if pr.ReferenceID != "" && !strings.EqualFold(pr.ReferenceID, p.ID) {
			return invalid("profile.reference_id", "profile.reference_id %q is not the person's id %s", clip(pr.ReferenceID), p.ID)
		}
		// The read shows a derived display name (first plus last name) for
		// a person without one; sent back unchanged it stays derived, so a
		// new first name does not leave the old one pinned in it.
		if n := pr.Name; n != nil && p.Profile.DisplayName == "" && n.DisplayName == personimport.DerivedDisplayName(p.FirstName, p.LastName) {
			copied := *n
			copied.DisplayName = ""
			pr.Name = &copied
		}
	case members:
		pr = pp.onto(*p)
	default:
		return nil
	}
	next, perr := personimport.CheckProfile(&pr, now)
	if perr != nil {
		field := perr.Field
		if pp.Profile == nil {
			field = pp.memberOf(field)
		}
		return invalid(field, "%s", perr.Msg)
	}
	p.Email, p.FirstName, p.LastName, p.Custom, p.Profile = next.Email, next.FirstName, next.LastName, next.Custom, next.Profile
	return nil
}

// onto applies the members sent one by one to the profile of p as read.
func (pp PersonPatch) onto(p store.Person) personimport.Profile {
	pr := personimport.ProfileOf(p)
	n := personimport.Name{FirstName: p.FirstName, LastName: p.LastName, Initials: p.Profile.Initials, DisplayName: p.Profile.DisplayName}
	for _, m := range []struct{ v, dst *string }{{pp.FirstName, &n.FirstName}, {pp.LastName, &n.LastName},
		{pp.Initials, &n.Initials}, {pp.DisplayName, &n.DisplayName}, {pp.Gender, &pr.Gender},
		{pp.DateOfBirth, &pr.DateOfBirth}, {pp.PreferredLocale, &pr.PreferredLocale}} {
		if m.v != nil {
			*m.dst = *m.v
		}
	}
	pr.Name = &n
	if pp.EmailAddresses != nil {
		pr.EmailAddresses = contacts(*pp.EmailAddresses)
		// A list without a primary address keeps the login email primary,
		// as these members did before the profile: the list was apart.
		if !slices.ContainsFunc(pr.EmailAddresses, func(c personimport.Contact) bool { return c.Primary }) && p.Email != "" {
			i := slices.IndexFunc(pr.EmailAddresses, func(c personimport.Contact) bool { return strings.EqualFold(c.Value, p.Email) })
			if i < 0 {
				pr.EmailAddresses = append([]personimport.Contact{{Value: p.Email, Primary: true}}, pr.EmailAddresses...)
			} else {
				pr.EmailAddresses[i].Primary = true
			}
		}
	}
	if pp.Email != nil {
		// The login email is the primary address: it takes the place of the
		// old one, and of a secondary entry of the same address, whose
		// verification it keeps.
		verified := false
		var kept []personimport.Contact
		for _, c := range pr.EmailAddresses {
			switch {
			case strings.EqualFold(c.Value, *pp.Email):
				verified = c.Verified != nil && *c.Verified
			case !c.Primary:
				kept = append(kept, c)
			}
		}
		pr.EmailAddresses = append([]personimport.Contact{{Value: *pp.Email, Primary: true, Verified: &verified}}, kept...)
	}
	if pp.PhoneNumbers != nil {
		pr.PhoneNumbers = contacts(*pp.PhoneNumbers)
	}
	if pp.Addresses != nil {
		pr.Addresses = nil
		for _, a := range *pp.Addresses {
			out := personimport.Address{HouseNumberAddition: a.HouseNumberAddition, StreetName: a.StreetName, City: a.City,
				PostalCode: a.PostalCode, Region: a.Region, CountryCode: a.CountryCode, CompanyName: a.CompanyName,
				Attentation: a.Attention, Primary: a.Primary}
			if a.HouseNumber != 0 {
				h := a.HouseNumber
				out.HouseNumber = &h
			}
			pr.Addresses = append(pr.Addresses, out)
		}
	}
	if pp.CustomAttributes != nil {
		pr.CustomAttributes = nil
		for _, name := range slices.Sorted(maps.Keys(*pp.CustomAttributes)) {
			pr.CustomAttributes = append(pr.CustomAttributes, personimport.Attribute{Name: name, Value: (*pp.CustomAttributes)[name]})
		}
	}
	return pr
}

// memberOf names the member sent one by one that a profile field's problem
// is about.
func (pp PersonPatch) memberOf(field string) string {
	field = strings.TrimPrefix(strings.TrimPrefix(field, "profile."), "name.")
	if field == "email_addresses" && pp.EmailAddresses == nil && pp.Email != nil {
		return "email"
	}
	return field
}

func contacts(cs []store.ContactPoint) []personimport.Contact {
	out := make([]personimport.Contact, 0, len(cs))
	for _, c := range cs {
		verified := c.Verified
		out = append(out, personimport.Contact{Value: c.Value, Primary: c.Primary, Verified: &verified})
	}
	return out
}

// errUnchanged ends the transaction of a patch that reads the same as the
// person before it: writing back what was read is no change.
var errUnchanged = errors.New("admin: unchanged")

// PatchPerson changes a person's status and profile in one transaction.
// A status that may not sign in (BLOCKED, INACTIVE, INVITED) revokes every
// session, grant and token of the person in it (identity.EnforceStatus:
// at once, on every instance). Events: person.PersonUpdatedEvent, and
// PersonBlockedEvent or PersonUnblockedEvent when the status moved to or
// from BLOCKED. A patch after which the person reads the same (status and
// personimport.ProfileOf) writes nothing and records no event. ErrConflict for an email taken in the partition.
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
			if p.Status == before.Status && reflect.DeepEqual(personimport.ProfileOf(p), personimport.ProfileOf(before)) {
				return p, errUnchanged
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
	case errors.Is(err, errUnchanged):
		// Nothing to write: no event, updated_at stays.
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
