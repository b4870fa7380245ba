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
	if _, err := uuid.Parse(p.Profile.ReferenceID); err != nil || len(p.Profile.ReferenceID) != 36 {
		return c, fail(CodePersonIDRequired, clip(p.Profile.ReferenceID), "profile.reference_id must be a UUID")
	}
	ref := uuid.MustParse(p.Profile.ReferenceID).String()
	c.ref = ref

	switch p.Status {
	case identity.StatusCreated, identity.StatusInvited, identity.StatusActivated, identity.StatusBlocked:
	case identity.StatusInactive:
		return c, fail(CodeInactive, ref, "accounts in INACTIVE status cannot be imported")
	default:
		return c, fail(CodeUnknown, ref, "status %q is not one of CREATED, INVITED, ACTIVATED, BLOCKED", clip(p.Status))
	}

	person, perr := CheckProfile(p.Profile, now)
	if perr != nil {
		return c, fail(perr.Code, ref, "%s", perr.Msg)
	}
	person.Status = p.Status
	c.person = person

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

// clip keeps values echoed in messages short.
func clip(s string) string {
	if len(s) > 64 {
		s = s[:64] + "..."
	}
	return strings.ToValidUTF8(s, "?")
}
