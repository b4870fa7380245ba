package personimport

import (
	"encoding/base64"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/google/uuid"

	"github.com/latchkey/latchkey/internal/identity"
	"github.com/latchkey/latchkey/internal/lazyre"
	"github.com/latchkey/latchkey/internal/password"
	"github.com/latchkey/latchkey/internal/store"
	"github.com/latchkey/latchkey/internal/totp"
)

// Bounds of one person: generous for real profiles, small enough that one
// request of the maximum size stays a few tens of megabytes.
const (
	maxText       = 256
	maxValue      = 4096
	maxItems      = 20
	maxAttributes = 100
)

var (
	localeRE  = lazyre.New(`^[A-Za-z]{2,3}([-_][A-Za-z0-9]{2,8}){0,3}$`)
	phoneRE   = lazyre.New(`^\+?[0-9 ()\-.]{3,32}$`)
	countryRE = lazyre.New(`^[A-Za-z]{2}$`)
)

// candidate is a person that passed validation, ready to be written.
type candidate struct {
	index   int
	ref     string
	person  store.Person // Partition set by the caller
	totp    []byte       // plaintext secret; sealed when written
	links   []store.ExternalIdentity
	hasHash bool
}

// fail builds the failure of a person; every message names the reference id.
func fail(code int, ref, format string, args ...any) *Failure {
	if ref == "" {
		ref = "(no reference_id)"
	}
	return &Failure{ErrorCode: code, ErrorMessage: "person " + ref + ": " + fmt.Sprintf(format, args...)}
}

// validate checks one person and maps it to the store's model. idps maps
// the known identity provider ids to their types.
func validate(p Person, prf string, idps map[string]string, now time.Time) (candidate, *Failure) {
	var c candidate
	if p.Profile == nil || p.Profile.ReferenceID == "" {
		return c, fail(CodePersonIDRequired, "", "profile.reference_id is required")
	}
	pr := p.Profile
	id, err := uuid.Parse(pr.ReferenceID)
	if err != nil || len(pr.ReferenceID) != 36 {
		return c, fail(CodePersonIDRequired, clip(pr.ReferenceID), "profile.reference_id must be a UUID")
	}
	ref := id.String() // canonical lower case: one person, one key
	c.ref = ref

	switch p.Status {
	case identity.StatusCreated, identity.StatusInvited, identity.StatusActivated, identity.StatusBlocked:
	case identity.StatusInactive:
		return c, fail(CodeInactive, ref, "accounts in INACTIVE status cannot be imported")
	default:
		return c, fail(CodeUnknown, ref, "status %q is not one of CREATED, INVITED, ACTIVATED, BLOCKED", clip(p.Status))
	}

	if len(pr.EmailAddresses) > maxItems {
		return c, fail(CodeInvalidEmail, ref, "at most %d email addresses", maxItems)
	}
	primary := ""
	primaries := 0
	for _, e := range pr.EmailAddresses {
		if !identity.NormalEmail(e.Value) {
			return c, fail(CodeInvalidEmail, ref, "email address %q %s", clip(e.Value), identity.EmailProblemNFKC)
		}
		if !identity.ValidEmail(e.Value) {
			return c, fail(CodeInvalidEmail, ref, "email address %q is not valid", clip(e.Value))
		}
		if e.Primary {
			primaries++
			primary = e.Value
		}
	}
	switch {
	case len(pr.EmailAddresses) == 0 || primaries == 0:
		return c, fail(CodeNoPrimaryEmail, ref, "a primary email address is required")
	case primaries > 1:
		return c, fail(CodeNoPrimaryEmail, ref, "exactly one email address must be primary, not %d", primaries)
	}

	profile := store.PersonProfile{Gender: pr.Gender, DateOfBirth: pr.DateOfBirth, PreferredLocale: pr.PreferredLocale}
	if msg := checkProfile(pr, &profile, now); msg != "" {
		return c, fail(CodeUnknown, ref, "%s", msg)
	}
	custom := map[string]string{}
	if len(pr.CustomAttributes) > maxAttributes {
		return c, fail(CodeUnknown, ref, "at most %d custom attributes", maxAttributes)
	}
	for _, a := range pr.CustomAttributes {
		switch {
		case a.Name == "" || len(a.Name) > 128 || !utf8.ValidString(a.Name):
			return c, fail(CodeUnknown, ref, "a custom attribute needs a name of 1 to 128 characters")
		case len(a.Value) > maxValue || !utf8.ValidString(a.Value):
			return c, fail(CodeUnknown, ref, "custom attribute %q is longer than %d bytes", a.Name, maxValue)
		}
		if _, dup := custom[a.Name]; dup {
			return c, fail(CodeUnknown, ref, "custom attribute %q appears twice", a.Name)
		}
		custom[a.Name] = a.Value
	}
	if len(custom) == 0 {
		custom = nil
	}

	c.person = store.Person{ID: ref, Email: primary, Status: p.Status, Custom: custom, Profile: profile}
	if n := pr.Name; n != nil {
		c.person.FirstName, c.person.LastName = n.FirstName, n.LastName
	}

	if h := p.HashedPassword; h != nil {
		if p.Status == identity.StatusInvited {
			return c, fail(CodeInvitedPassword, ref, "an INVITED account cannot be coupled to username and password")
		}
		digest, err1 := base64.StdEncoding.DecodeString(h.Digest)
		salt, err2 := base64.StdEncoding.DecodeString(h.Salt)
		if err1 != nil || err2 != nil {
			return c, fail(CodeUnknown, ref, "hashed_password: digest and salt must be base64")
		}
		phc, err := password.PBKDF2PHC(prf, digest, salt, h.NrOfIterations)
		if err != nil {
			return c, fail(CodeUnknown, ref, "hashed_password: %v", err)
		}
		c.person.PasswordHash, c.hasHash = phc, true
	}
	if p.StepUp != nil && p.StepUp.TOTP != nil {
		secret, err := totp.DecodeSecret(p.StepUp.TOTP.SecretKey)
		if err != nil {
			return c, fail(CodeUnknown, ref, "step_up.totp.secret_key: %v", err)
		}
		c.totp = secret
	}
	for _, i := range p.Identities {
		typ, ok := idps[strings.ToLower(i.IdPID)]
		if !ok {
			return c, fail(CodeUnknownIdP, ref, "no identity provider %q", clip(i.IdPID))
		}
		if i.ExternalPersonID == "" || len(i.ExternalPersonID) > maxText || !utf8.ValidString(i.ExternalPersonID) {
			return c, fail(CodeUnknown, ref, "identities: external_person_id must have 1 to %d characters", maxText)
		}
		if typ == identity.PasswordIdPType && p.Status == identity.StatusInvited {
			return c, fail(CodeInvitedPassword, ref, "an INVITED account cannot be coupled to username and password")
		}
		c.links = append(c.links, store.ExternalIdentity{IdPID: strings.ToLower(i.IdPID), ExternalID: i.ExternalPersonID, PersonID: ref})
	}
	return c, nil
}

// checkProfile checks the rest of the profile and fills out; it returns a
// message for the first problem.
func checkProfile(pr *Profile, out *store.PersonProfile, now time.Time) string {
	if !identity.ValidGender(pr.Gender) {
		return fmt.Sprintf("gender %q is not M, F or U", clip(pr.Gender))
	}
	if !identity.ValidDateOfBirth(pr.DateOfBirth, now) {
		return fmt.Sprintf("date_of_birth %q is not a past date YYYY-MM-DD", clip(pr.DateOfBirth))
	}
	if pr.PreferredLocale != "" && !localeRE.MatchString(pr.PreferredLocale) {
		return fmt.Sprintf("preferred_locale %q is not a locale code", clip(pr.PreferredLocale))
	}
	if n := pr.Name; n != nil {
		for field, v := range map[string]string{"first_name": n.FirstName, "last_name": n.LastName, "initials": n.Initials, "display_name": n.DisplayName} {
			if len(v) > maxText || !utf8.ValidString(v) {
				return fmt.Sprintf("name.%s is longer than %d bytes", field, maxText)
			}
		}
		out.Initials, out.DisplayName = n.Initials, n.DisplayName
	}
	for _, e := range pr.EmailAddresses {
		out.Emails = append(out.Emails, store.ContactPoint{Value: e.Value, Primary: e.Primary, Verified: e.Verified != nil && *e.Verified})
	}
	if len(pr.PhoneNumbers) > maxItems {
		return fmt.Sprintf("at most %d phone numbers", maxItems)
	}
	primaries := 0
	for _, ph := range pr.PhoneNumbers {
		if !phoneRE.MatchString(ph.Value) {
			return fmt.Sprintf("phone number %q is not valid", clip(ph.Value))
		}
		if ph.Primary {
			primaries++
		}
		out.Phones = append(out.Phones, store.ContactPoint{Value: ph.Value, Primary: ph.Primary, Verified: ph.Verified != nil && *ph.Verified})
	}
	if primaries > 1 {
		return "at most one phone number can be primary"
	}
	if len(pr.Addresses) > maxItems {
		return fmt.Sprintf("at most %d addresses", maxItems)
	}
	for _, a := range pr.Addresses {
		if a.HouseNumber != nil && (*a.HouseNumber < 0 || *a.HouseNumber > 999_999) {
			return "an address's house_number must be between 0 and 999999"
		}
		if a.CountryCode != "" && !countryRE.MatchString(a.CountryCode) {
			return fmt.Sprintf("country_code %q is not an ISO 3166-1 alpha-2 code", clip(a.CountryCode))
		}
		for _, v := range []string{a.HouseNumberAddition, a.StreetName, a.City, a.PostalCode, a.Region, a.CompanyName, a.Attentation} {
			if len(v) > maxText || !utf8.ValidString(v) {
				return fmt.Sprintf("address fields are at most %d bytes", maxText)
			}
		}
		sa := store.PostalAddress{HouseNumberAddition: a.HouseNumberAddition, StreetName: a.StreetName, City: a.City,
			PostalCode: a.PostalCode, Region: a.Region, CountryCode: strings.ToUpper(a.CountryCode), CompanyName: a.CompanyName,
			Attention: a.Attentation, Primary: a.Primary}
		if a.HouseNumber != nil {
			sa.HouseNumber = *a.HouseNumber
		}
		out.Addresses = append(out.Addresses, sa)
	}
	return ""
}

// clip keeps values echoed in messages short.
func clip(s string) string {
	if len(s) > 64 {
		s = s[:64] + "..."
	}
	return strings.ToValidUTF8(s, "?")
}
