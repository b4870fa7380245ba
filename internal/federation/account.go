package federation

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/google/uuid"

	"github.com/latchkey/latchkey/internal/claim"
	"github.com/latchkey/latchkey/internal/events"
	"github.com/latchkey/latchkey/internal/identity"
	"github.com/latchkey/latchkey/internal/mail"
	"github.com/latchkey/latchkey/internal/request"
	"github.com/latchkey/latchkey/internal/store"
)

// Upstream is what an identity provider said of the person who signed in.
type Upstream struct {
	// Subject identifies the person at the provider: an OpenID Provider's
	// sub, an LDAP entry's DN. With the method it is the linked identity.
	Subject string
	// Attributes are the claims (ID token and UserInfo) or the fetched
	// directory attributes (the first value of each).
	Attributes map[string]any
	// EmailVerified: the provider vouches for the email attribute (an
	// OpenID Provider's email_verified=true; a directory whose method has
	// auto_email_verification).
	EmailVerified bool
}

// Person attributes an attribute mapping may fill (map_to).
const (
	ToEmail           = "email"
	ToFirstName       = "first_name"
	ToLastName        = "last_name"
	ToDisplayName     = "display_name"
	ToInitials        = "initials"
	ToGender          = "gender"
	ToDateOfBirth     = "date_of_birth"
	ToPhoneNumber     = "phone_number"
	ToPreferredLocale = "preferred_locale"
)

// defaultMappings map the standard attributes of each type (map_to ->
// map_from) when the method's attribute_mappings do not name that map_to.
var defaultMappings = map[string]map[string]string{
	TypeOIDC: {ToEmail: "email", ToFirstName: "given_name", ToLastName: "family_name", ToDisplayName: "name",
		ToPhoneNumber: "phone_number", ToPreferredLocale: "locale", ToDateOfBirth: "birthdate"},
	TypeLDAP: {ToEmail: "mail", ToFirstName: "givenName", ToLastName: "sn", ToDisplayName: "displayName",
		ToPhoneNumber: "telephoneNumber", ToPreferredLocale: "preferredLanguage"},
}

// notKept are upstream attributes never kept on the identity beside the
// protocol's claims (claim.Protocol: they say how the token was made, not
// who the person is): what the sign-in already read (the verification of
// the address), a directory entry's DN (the identity itself).
var notKept = []string{"email_verified", "phone_number_verified", "updated_at", "dn"}

// Bounds of what an upstream may write into a profile (as the import API's).
const (
	maxText       = 256
	maxValue      = 4096
	maxAttributes = 100
)

// mapping is the method's attribute rules, resolved.
type mapping struct {
	to       map[string]string // person attribute -> upstream attribute
	custom   map[string]string // custom attribute -> upstream attribute
	excluded []string          // upstream attributes never kept
}

func mappingOf(m Method) mapping {
	mp := mapping{to: maps.Clone(defaultMappings[m.Type]), custom: map[string]string{}}
	for _, am := range m.AttributeMappings {
		if am.MapTo != nil && am.MapFrom != nil && *am.MapFrom != "" {
			mp.to[*am.MapTo] = *am.MapFrom
		}
	}
	for _, cm := range m.CustomAttributeMappings {
		if cm.AttributeToMapFrom != nil && cm.AttributeToMapTo != nil && *cm.AttributeToMapTo != "" {
			mp.custom[*cm.AttributeToMapTo] = *cm.AttributeToMapFrom
		}
	}
	mp.excluded = m.ExcludedUnmappedAttributes
	return mp
}

// text reads an attribute as a bounded, printable string ("" when absent).
func text(attrs map[string]any, name string) string {
	v, ok := attrs[name]
	if !ok {
		return ""
	}
	var s string
	switch x := v.(type) {
	case string:
		s = x
	case bool:
		s = strconv.FormatBool(x)
	case float64:
		s = strconv.FormatFloat(x, 'f', -1, 64)
	case []string:
		if len(x) > 0 {
			s = x[0]
		}
	case []any:
		if len(x) > 0 {
			if str, ok := x[0].(string); ok {
				s = str
			}
		}
	default:
		return "" // objects (address) are not kept
	}
	s = strings.TrimSpace(s)
	if !utf8.ValidString(s) {
		return ""
	}
	return s
}

func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

// apply writes the mapped attributes of u into p: attribute_mappings into
// the profile, custom_attribute_mappings into the custom attributes, and
// nothing else. It reports the email the upstream gave ("" for none) so
// the caller decides about it.
func (mp mapping) apply(p *store.Person, u Upstream) string {
	get := func(to string) string { return clip(text(u.Attributes, mp.to[to]), maxText) }
	set := func(dst *string, to string) {
		if v := get(to); v != "" {
			*dst = v
		}
	}
	set(&p.FirstName, ToFirstName)
	set(&p.LastName, ToLastName)
	set(&p.Profile.DisplayName, ToDisplayName)
	set(&p.Profile.Initials, ToInitials)
	set(&p.Profile.PreferredLocale, ToPreferredLocale)
	if v := get(ToDateOfBirth); len(v) == 10 && v[4] == '-' && v[7] == '-' {
		p.Profile.DateOfBirth = v
	}
	switch strings.ToLower(get(ToGender)) {
	case "":
	case "m", "male":
		p.Profile.Gender = "M"
	case "f", "female":
		p.Profile.Gender = "F"
	default:
		p.Profile.Gender = "U"
	}
	if v := get(ToPhoneNumber); v != "" && !slices.ContainsFunc(p.Profile.Phones, func(c store.ContactPoint) bool { return c.Value == v }) {
		p.Profile.Phones = append(p.Profile.Phones, store.ContactPoint{Value: v, Primary: len(p.Profile.Phones) == 0})
	}
	custom := maps.Clone(p.Custom)
	if custom == nil {
		custom = map[string]string{}
	}
	for _, name := range slices.Sorted(maps.Keys(mp.custom)) {
		if v := text(u.Attributes, mp.custom[name]); v != "" {
			custom[clip(name, 128)] = clip(v, maxValue)
		}
	}
	if len(custom) == 0 {
		custom = nil
	}
	p.Custom = custom
	email := get(ToEmail)
	if email != "" && mail.CheckAddress(email) != nil {
		email = ""
	}
	return email
}

// Refusals of SignIn, as the client hears them.
var (
	errNoSubject = &Error{Code: "access_denied", Cause: "invalid_subject",
		Description: "The identity provider did not say who signed in."}
	errNoEmail = &Error{Code: "access_denied", Cause: "email_missing",
		Description: "The identity provider gave no email address, which a new account needs."}
	errUnverified = &Error{Code: "access_denied", Cause: "email_not_verified",
		Description: "An account with this email address exists; the identity provider did not verify the address, so it was not coupled."}
	errNotCoupled = &Error{Code: "access_denied", Cause: "account_exists",
		Description: "An account with this email address exists and is not coupled to this identity provider."}
	errEmailNFKC = &Error{Code: "access_denied", Cause: "email_not_normalized",
		Description: "The identity provider gave an email address written with fullwidth or other compatibility characters, which would look like another account's address."}
	errInactive    = &Error{Code: "access_denied", Cause: "account_inactive", Description: "The account cannot sign in."}
	errOtherLinked = &Error{Code: "access_denied", Cause: "account_linked",
		Description: "The account with this email address is coupled to another account of this identity provider."}
)

// Outcome is a successful upstream sign-in.
type Outcome struct {
	Person  store.Person
	Created bool // a new person
	Coupled bool // linked to an existing account by its verified email now
	Updated bool // synchronise_attributes changed the profile
}

// SignIn turns an upstream identity into the person it signs in as:
//   - an identity linked to a person (imported, or linked before) is that
//     person; with synchronise_attributes the mapped attributes are
//     written again at every sign-in;
//   - else, with automated_external_identity_coupling_enabled, an account
//     whose email is the upstream's is coupled — only when the upstream
//     vouches for the email (Upstream.EmailVerified), or anyone able to
//     register that address upstream would take the account over;
//   - else a new person is created from the mapped attributes: ACTIVATED
//     with auto_activation_enabled (CREATED otherwise), the email verified
//     with auto_email_verification or when the upstream verified it.
//
// A person who may not sign in is refused (errInactive), as is a new
// identity whose email belongs to an account it may not couple to.
func (s *Service) SignIn(ctx context.Context, f request.Facts, m Method, u Upstream) (Outcome, error) {
	if u.Subject == "" || len(u.Subject) > 255 {
		return Outcome{}, errNoSubject
	}
	snap, err := s.Config.Snapshot(ctx)
	if err != nil {
		return Outcome{}, err
	}
	rules := accountRules{coupling: snap.Features != nil && on(snap.Features.AutomatedExternalIdentityCouplingEnabled),
		multiple: snap.Features != nil && on(snap.Features.BindMultipleExternalAccountsWithOneCIMAccount)}
	var out Outcome
	// Two first sign-ins of one identity at once: the loser's insert
	// conflicts, and its second round finds the winner's link.
	for range 2 {
		out = Outcome{}
		err = s.Store.Tx(ctx, func(tx store.Store) error { return s.signIn(ctx, tx, f, m, u, rules, &out) })
		if !errors.Is(err, store.ErrConflict) {
			break
		}
	}
	if err != nil {
		return Outcome{}, err
	}
	if !identity.MaySignIn(out.Person.Status) {
		return Outcome{}, errInactive
	}
	return out, nil
}

// accountRules are the features that decide about existing accounts.
type accountRules struct {
	coupling bool // automated_external_identity_coupling_enabled
	multiple bool // bind_multiple_external_accounts_with_one_cim_account
}

// unmapped are the attributes of u that no mapping of mp took: kept on the
// linked identity (store.ExternalIdentity.Attributes), never on the person,
// so that an upstream's own display_name, email or role can never stand in
// for the profile or for a custom attribute the operator releases. The
// protocol's claims and excluded_unmapped_attributes are dropped.
func (mp mapping) unmapped(u Upstream) map[string]string {
	mapped := map[string]bool{}
	for _, from := range mp.to {
		mapped[from] = true
	}
	for _, from := range mp.custom {
		mapped[from] = true
	}
	kept := map[string]string{}
	for _, name := range slices.Sorted(maps.Keys(u.Attributes)) {
		if mapped[name] || claim.Protocol(name) || slices.Contains(notKept, name) || slices.Contains(mp.excluded, name) ||
			name == "" || len(name) > 128 || len(kept) >= maxAttributes {
			continue
		}
		if v := text(u.Attributes, name); v != "" {
			kept[name] = clip(v, maxValue)
		}
	}
	if len(kept) == 0 {
		return nil
	}
	return kept
}

func (s *Service) signIn(ctx context.Context, tx store.Store, f request.Facts, m Method, u Upstream, rules accountRules, out *Outcome) error {
	mp := mappingOf(m)
	kept := mp.unmapped(u)
	channel := strings.ToLower(m.Type)
	ctxInfo := map[string]string{"idp": m.ID, "channel": channel}
	linked := func(link store.ExternalIdentity) error {
		p, err := tx.LockPerson(ctx, link.PersonID)
		if err != nil {
			return err
		}
		if !identity.MaySignIn(p.Status) {
			return errInactive // nothing written for a person who may not sign in
		}
		out.Person = p
		if on(m.SynchroniseAttributes) {
			if err := s.synchronise(ctx, tx, f, mp, u, out, ctxInfo); err != nil {
				return err
			}
			if !maps.Equal(link.Attributes, kept) {
				if err := tx.SetIdentityAttributes(ctx, link.Partition, link.IdPID, link.ExternalID, kept); err != nil {
					return err
				}
			}
		}
		return s.Events.RecordPerson(ctx, tx, f, events.Person{Type: events.PersonExternalLogin, PersonID: p.ID, AgentUser: p.ID,
			Partition: p.Partition, Context: ctxInfo})
	}
	link, err := tx.FindIdentity(ctx, "", m.IdPID(), u.Subject)
	switch {
	case err == nil:
		return linked(link)
	case !errors.Is(err, store.ErrNotFound):
		return err
	}

	now := s.Now().UTC()
	fresh := store.Person{ID: uuid.NewString(), Status: identity.StatusCreated, CreatedAt: now, UpdatedAt: now}
	email := mp.apply(&fresh, u)
	if email == "" {
		return errNoEmail
	}
	if !identity.NormalEmail(email) {
		// "ｃase@…" would make a second account that looks like "case@…"'s
		// (or fail to couple to it): refused, as everywhere an email is set.
		return errEmailNFKC
	}
	existing, err := tx.GetPersonByEmail(ctx, "", email)
	switch {
	case err == nil:
		// A concurrent first sign-in of this identity may have made the
		// account since the look-up above (PostgreSQL reads each statement
		// at its own snapshot): then it is this identity's.
		if link, err := tx.FindIdentity(ctx, "", m.IdPID(), u.Subject); err == nil {
			return linked(link)
		} else if !errors.Is(err, store.ErrNotFound) {
			return err
		}
		if !rules.coupling {
			return errNotCoupled
		}
		if !u.EmailVerified {
			return errUnverified
		}
		if !identity.MaySignIn(existing.Status) {
			return errInactive
		}
		if !rules.multiple {
			// One account of this provider per person, unless
			// bind_multiple_external_accounts_with_one_cim_account.
			ids, err := tx.ListIdentities(ctx, existing.ID)
			if err != nil {
				return err
			}
			if slices.ContainsFunc(ids, func(e store.ExternalIdentity) bool { return e.IdPID == m.IdPID() }) {
				return errOtherLinked
			}
		}
		if err := tx.LinkIdentity(ctx, store.ExternalIdentity{IdPID: m.IdPID(), ExternalID: u.Subject, PersonID: existing.ID,
			Attributes: kept, CreatedAt: now}); err != nil {
			return err
		}
		out.Person, out.Coupled = existing, true
		if err := s.Events.RecordPerson(ctx, tx, f, events.Person{Type: events.PersonIdentityCoupled, PersonID: existing.ID,
			AgentUser: existing.ID, Partition: existing.Partition, Context: ctxInfo}); err != nil {
			return err
		}
		if on(m.SynchroniseAttributes) {
			return s.synchronise(ctx, tx, f, mp, u, out, ctxInfo)
		}
		return nil
	case !errors.Is(err, store.ErrNotFound):
		return err
	}

	fresh.Email = email
	proven := on(m.AutoEmailVerification) || u.EmailVerified
	fresh.Profile.Emails = []store.ContactPoint{{Value: email, Primary: true, Verified: proven}}
	if on(m.AutoActivationEnabled) {
		fresh.Status = identity.StatusActivated
	}
	if err := tx.CreatePerson(ctx, fresh); err != nil {
		return err
	}
	// An unproven email (the upstream lets anyone register any address):
	// the link is unproven too, and ends when the address's owner proves
	// it by mail (journey's activation and reset) — else whoever
	// registered it upstream would keep signing in to the account its
	// owner takes back.
	if err := tx.LinkIdentity(ctx, store.ExternalIdentity{IdPID: m.IdPID(), ExternalID: u.Subject, PersonID: fresh.ID,
		Attributes: kept, Unproven: !proven, CreatedAt: now}); err != nil {
		return err
	}
	out.Person, out.Created = fresh, true
	return s.Events.RecordPerson(ctx, tx, f, events.Person{Type: events.PersonCreated, PersonID: fresh.ID, AgentUser: fresh.ID,
		Context: ctxInfo})
}

// synchronise writes the mapped attributes into out.Person; the email
// follows the upstream's unless another account holds it.
func (s *Service) synchronise(ctx context.Context, tx store.Store, f request.Facts, mp mapping, u Upstream, out *Outcome,
	ctxInfo map[string]string) error {
	p := out.Person
	next := p
	next.Profile.Phones = slices.Clone(p.Profile.Phones)
	email := mp.apply(&next, u)
	if !identity.NormalEmail(email) {
		email = "" // a look-alike address (NormalEmail): keep the current one
	}
	if email != "" && !strings.EqualFold(email, p.Email) {
		if other, err := tx.GetPersonByEmail(ctx, "", email); err == nil && other.ID != p.ID {
			email = "" // taken: keep the current address
		} else if err != nil && !errors.Is(err, store.ErrNotFound) {
			return err
		}
		if email != "" {
			next.Email = email
			next.Profile.Emails = []store.ContactPoint{{Value: email, Primary: true, Verified: u.EmailVerified}}
		}
	}
	if samePerson(p, next) {
		return nil
	}
	next.UpdatedAt = s.Now().UTC()
	if err := tx.UpdatePerson(ctx, p.ID, func(store.Person) (store.Person, error) { return next, nil }); err != nil {
		return fmt.Errorf("synchronise attributes: %w", err)
	}
	out.Person, out.Updated = next, true
	return s.Events.RecordPerson(ctx, tx, f, events.Person{Type: events.PersonUpdated, PersonID: p.ID, AgentUser: p.ID,
		Partition: p.Partition, Context: ctxInfo})
}

func samePerson(a, b store.Person) bool {
	return a.Email == b.Email && a.FirstName == b.FirstName && a.LastName == b.LastName && maps.Equal(a.Custom, b.Custom) &&
		a.Profile.DisplayName == b.Profile.DisplayName && a.Profile.Initials == b.Profile.Initials &&
		a.Profile.Gender == b.Profile.Gender && a.Profile.DateOfBirth == b.Profile.DateOfBirth &&
		a.Profile.PreferredLocale == b.Profile.PreferredLocale && slices.Equal(a.Profile.Phones, b.Profile.Phones) &&
		slices.Equal(a.Profile.Emails, b.Profile.Emails)
}
