package personimport

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/google/uuid"

	"github.com/latchkey/latchkey/internal/identity"
	"github.com/latchkey/latchkey/internal/store"
)

// ProfileError is a Profile that breaks a rule of the import: Code is the
// import's error code, Field the member as the JSON spells it (under
// "profile."), Msg the reason.
type ProfileError struct {
	Code  int
	Field string
	Msg   string
}

func (e *ProfileError) Error() string { return e.Msg }

func profileErr(code int, field, format string, args ...any) *ProfileError {
	return &ProfileError{Code: code, Field: "profile." + field, Msg: fmt.Sprintf(format, args...)}
}

// CheckProfile checks a Profile by the import's rules and maps it to the
// store's person: ID (the canonical reference_id), Email (the primary
// address), FirstName, LastName, Custom and Profile; the rest is zero. The
// admin API's PATCH of a person calls it too, so that what one can import
// and what one can write there are the same.
func CheckProfile(pr *Profile, now time.Time) (store.Person, *ProfileError) {
	var p store.Person
	if pr == nil || pr.ReferenceID == "" {
		return p, profileErr(CodePersonIDRequired, "reference_id", "profile.reference_id is required")
	}
	id, err := uuid.Parse(pr.ReferenceID)
	if err != nil || len(pr.ReferenceID) != 36 {
		return p, profileErr(CodePersonIDRequired, "reference_id", "profile.reference_id must be a UUID")
	}
	p.ID = id.String() // canonical lower case: one person, one key

	if len(pr.EmailAddresses) > maxItems {
		return p, profileErr(CodeInvalidEmail, "email_addresses", "at most %d email addresses", maxItems)
	}
	primaries := 0
	seen := map[string]bool{}
	for _, e := range pr.EmailAddresses {
		if !identity.NormalEmail(e.Value) {
			return p, profileErr(CodeInvalidEmail, "email_addresses", "email address %q %s", clip(e.Value), identity.EmailProblemNFKC)
		}
		if !identity.ValidEmail(e.Value) {
			return p, profileErr(CodeInvalidEmail, "email_addresses", "email address %q is not valid", clip(e.Value))
		}
		// Addresses compare case-insensitively everywhere (login, lookup):
		// the same one twice would be two entries for one mailbox.
		if low := strings.ToLower(e.Value); seen[low] {
			return p, profileErr(CodeInvalidEmail, "email_addresses", "email address %q appears more than once", clip(e.Value))
		} else {
			seen[low] = true
		}
		if e.Primary {
			primaries++
			p.Email = e.Value
		}
	}
	switch {
	case len(pr.EmailAddresses) == 0 || primaries == 0:
		return p, profileErr(CodeNoPrimaryEmail, "email_addresses", "a primary email address is required")
	case primaries > 1:
		return p, profileErr(CodeNoPrimaryEmail, "email_addresses", "exactly one email address must be primary, not %d", primaries)
	}

	p.Profile = store.PersonProfile{Gender: pr.Gender, DateOfBirth: pr.DateOfBirth, PreferredLocale: pr.PreferredLocale}
	if e := checkRest(pr, &p.Profile, now); e != nil {
		return p, e
	}
	if n := pr.Name; n != nil {
		p.FirstName, p.LastName = n.FirstName, n.LastName
		// A display name that only repeats the one derived from the name
		// is not kept: the read derives it again, so reading a person and
		// writing back what was read changes nothing.
		if p.Profile.DisplayName == DerivedDisplayName(p.FirstName, p.LastName) {
			p.Profile.DisplayName = ""
		}
	}
	custom := map[string]string{}
	if len(pr.CustomAttributes) > maxAttributes {
		return p, profileErr(CodeUnknown, "custom_attributes", "at most %d custom attributes", maxAttributes)
	}
	for _, a := range pr.CustomAttributes {
		switch {
		case a.Name == "" || len(a.Name) > 128 || !utf8.ValidString(a.Name):
			return p, profileErr(CodeUnknown, "custom_attributes", "a custom attribute needs a name of 1 to 128 characters")
		case len(a.Value) > maxValue || !utf8.ValidString(a.Value):
			return p, profileErr(CodeUnknown, "custom_attributes", "custom attribute %q is longer than %d bytes", clip(a.Name), maxValue)
		}
		if _, dup := custom[a.Name]; dup {
			return p, profileErr(CodeUnknown, "custom_attributes", "custom attribute %q appears twice", clip(a.Name))
		}
		custom[a.Name] = a.Value
	}
	if len(custom) > 0 {
		p.Custom = custom
	}
	return p, nil
}

// checkRest checks the rest of the profile and fills out.
func checkRest(pr *Profile, out *store.PersonProfile, now time.Time) *ProfileError {
	if !identity.ValidGender(pr.Gender) {
		return profileErr(CodeUnknown, "gender", "gender %q is not M, F or U", clip(pr.Gender))
	}
	if !identity.ValidDateOfBirth(pr.DateOfBirth, now) {
		return profileErr(CodeUnknown, "date_of_birth", "date_of_birth %q is not a past date YYYY-MM-DD", clip(pr.DateOfBirth))
	}
	if pr.PreferredLocale != "" && !localeRE.MatchString(pr.PreferredLocale) {
		return profileErr(CodeUnknown, "preferred_locale", "preferred_locale %q is not a locale code", clip(pr.PreferredLocale))
	}
	if n := pr.Name; n != nil {
		for _, f := range []struct{ name, v string }{{"first_name", n.FirstName}, {"last_name", n.LastName},
			{"initials", n.Initials}, {"display_name", n.DisplayName}} {
			if len(f.v) > maxText || !utf8.ValidString(f.v) {
				return profileErr(CodeUnknown, "name."+f.name, "name.%s is longer than %d bytes", f.name, maxText)
			}
		}
		out.Initials, out.DisplayName = n.Initials, n.DisplayName
	}
	for _, e := range pr.EmailAddresses {
		out.Emails = append(out.Emails, store.ContactPoint{Value: e.Value, Primary: e.Primary, Verified: e.Verified != nil && *e.Verified})
	}
	if len(pr.PhoneNumbers) > maxItems {
		return profileErr(CodeUnknown, "phone_numbers", "at most %d phone numbers", maxItems)
	}
	primaries := 0
	seen := map[string]bool{}
	for _, ph := range pr.PhoneNumbers {
		if !phoneRE.MatchString(ph.Value) {
			return profileErr(CodeUnknown, "phone_numbers", "phone number %q is not valid", clip(ph.Value))
		}
		if seen[ph.Value] {
			return profileErr(CodeUnknown, "phone_numbers", "phone number %q appears more than once", clip(ph.Value))
		}
		seen[ph.Value] = true
		if ph.Primary {
			primaries++
		}
		out.Phones = append(out.Phones, store.ContactPoint{Value: ph.Value, Primary: ph.Primary, Verified: ph.Verified != nil && *ph.Verified})
	}
	if primaries > 1 {
		return profileErr(CodeUnknown, "phone_numbers", "at most one phone number can be primary")
	}
	if len(pr.Addresses) > maxItems {
		return profileErr(CodeUnknown, "addresses", "at most %d addresses", maxItems)
	}
	for _, a := range pr.Addresses {
		if a.HouseNumber != nil && (*a.HouseNumber < 0 || *a.HouseNumber > 999_999) {
			return profileErr(CodeUnknown, "addresses", "an address's house_number must be between 0 and 999999")
		}
		if a.CountryCode != "" && !countryRE.MatchString(a.CountryCode) {
			return profileErr(CodeUnknown, "addresses", "country_code %q is not an ISO 3166-1 alpha-2 code", clip(a.CountryCode))
		}
		for _, v := range []string{a.HouseNumberAddition, a.StreetName, a.City, a.PostalCode, a.Region, a.CompanyName, a.Attentation} {
			if len(v) > maxText || !utf8.ValidString(v) {
				return profileErr(CodeUnknown, "addresses", "address fields are at most %d bytes", maxText)
			}
		}
		sa := store.PostalAddress{HouseNumberAddition: a.HouseNumberAddition, StreetName: a.StreetName, City: a.City,
			PostalCode: a.PostalCode, Region: a.Region, CountryCode: strings.ToUpper(a.CountryCode), CompanyName: a.CompanyName,
			Attention: a.Attentation, Primary: a.Primary}
		if a.HouseNumber != nil {
			sa.HouseNumber = *a.HouseNumber
		}
		if slices.Contains(out.Addresses, sa) {
			return profileErr(CodeUnknown, "addresses", "the same postal address appears more than once")
		}
		out.Addresses = append(out.Addresses, sa)
	}
	return nil
}

// DerivedDisplayName is the display name of a person without one: first
// plus last name (the spec's Profile; the name claim of OpenID Connect).
func DerivedDisplayName(first, last string) string {
	return strings.TrimSpace(first + " " + last)
}

// ProfileOf is the import Profile of a stored person: what reads show, so
// that what was imported reads back equal, and what was read can be written
// back (CheckProfile) unchanged. The login email is always the primary
// email address (a person made by sign-up, the config file or a login
// method may hold it only there); custom attributes are sorted by name;
// lists are never null; an unset house number is left out (0 is not kept
// apart from absent), and verified is always given.
func ProfileOf(p store.Person) Profile {
	pr := Profile{ReferenceID: p.ID, EmailAddresses: []Contact{}, Gender: p.Profile.Gender, DateOfBirth: p.Profile.DateOfBirth,
		PhoneNumbers: []Contact{}, Addresses: []Address{}, CustomAttributes: []Attribute{}, PreferredLocale: p.Profile.PreferredLocale}
	login := false
	for _, e := range p.Profile.Emails {
		// Primary is the login email, whatever an older write left flagged.
		primary := p.Email != "" && strings.EqualFold(e.Value, p.Email)
		if primary && login {
			continue // stored twice by an older write: the read shows it once
		}
		login = login || primary
		pr.EmailAddresses = append(pr.EmailAddresses, Contact{Value: e.Value, Primary: primary, Verified: ptr(e.Verified)})
	}
	if !login && p.Email != "" {
		pr.EmailAddresses = append([]Contact{{Value: p.Email, Primary: true, Verified: ptr(false)}}, pr.EmailAddresses...)
	}
	n := Name{FirstName: p.FirstName, LastName: p.LastName, Initials: p.Profile.Initials, DisplayName: p.Profile.DisplayName}
	if n.DisplayName == "" {
		n.DisplayName = DerivedDisplayName(n.FirstName, n.LastName)
	}
	if n != (Name{}) {
		pr.Name = &n
	}
	for _, ph := range p.Profile.Phones {
		pr.PhoneNumbers = append(pr.PhoneNumbers, Contact{Value: ph.Value, Primary: ph.Primary, Verified: ptr(ph.Verified)})
	}
	for _, a := range p.Profile.Addresses {
		out := Address{HouseNumberAddition: a.HouseNumberAddition, StreetName: a.StreetName, City: a.City, PostalCode: a.PostalCode,
			Region: a.Region, CountryCode: a.CountryCode, CompanyName: a.CompanyName, Attentation: a.Attention, Primary: a.Primary}
		if a.HouseNumber != 0 {
			out.HouseNumber = ptr(a.HouseNumber)
		}
		pr.Addresses = append(pr.Addresses, out)
	}
	for name, value := range p.Custom {
		pr.CustomAttributes = append(pr.CustomAttributes, Attribute{Name: name, Value: value})
	}
	slices.SortFunc(pr.CustomAttributes, func(a, b Attribute) int { return cmp.Compare(a.Name, b.Name) })
	return pr
}

func ptr[T any](v T) *T { return &v }
