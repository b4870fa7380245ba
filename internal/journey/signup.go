package journey

import (
	"context"
	"errors"
	"net/url"
	"regexp"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/google/uuid"

	"github.com/latchkey/latchkey/internal/events"
	"github.com/latchkey/latchkey/internal/identity"
	"github.com/latchkey/latchkey/internal/lazyre"
	"github.com/latchkey/latchkey/internal/mail"
	"github.com/latchkey/latchkey/internal/password"
	"github.com/latchkey/latchkey/internal/request"
	"github.com/latchkey/latchkey/internal/store"
)

// Paths of the sign-up and activation pages.
const (
	PathSignUp   = "/signup"
	PathActivate = "/activate"
)

// SignUpForm is what the sign-up page collects.
type SignUpForm struct {
	Email, EmailConfirm, Password, FirstName, LastName, Phone, PhoneConfirm, BirthDate string
}

// Fields says which fields the sign-up page shows and which it requires.
type Fields struct {
	// Password: the sign-up page asks for the password. With activation
	// on it does not: a password set before the address is proven would
	// be the squatter's (pre-account takeover), so the holder of the
	// mailed link chooses it on the activation page.
	Password                                     bool
	EmailConfirm, Phone, PhoneConfirm, BirthDate bool
	FirstNameRequired, LastNameRequired          bool
	PhoneRequired                                bool
	// AnyOf are the profile's required_attributes_validation_rules that
	// the form can satisfy (attribute types FIRST_NAME, LAST_NAME, PHONE,
	// MOBILE_NUMBER, BIRTH_DATE).
	AnyOf [][]string
}

// FormFields derives the sign-up form from the attributes and profile units.
func (st Settings) FormFields() Fields {
	var f Fields
	if a := st.snap.Attributes; a != nil {
		if m := a.PersonCreationMandatoryFields; m != nil {
			f.FirstNameRequired, f.LastNameRequired, f.PhoneRequired = on(m.FirstNameRequired), on(m.LastNameRequired), on(m.MobileNumberRequired)
		}
		if s := a.SignUpFormFields; s != nil {
			f.Phone, f.PhoneConfirm, f.EmailConfirm = on(s.MobileNumberEnabled), on(s.MobileNumberConfirmationEnabled), on(s.EmailConfirmationEnabled)
		}
	}
	if p := st.snap.Profile; p != nil {
		for _, rule := range p.RequiredAttributesValidationRules {
			var known []string
			for _, typ := range rule.AnyOf {
				switch typ {
				case "PHONE", "MOBILE_NUMBER":
					f.Phone = true
				case "BIRTH_DATE":
					f.BirthDate = true
				case "FIRST_NAME", "LAST_NAME":
				default:
					continue // not collected by the page
				}
				known = append(known, typ)
			}
			if len(known) > 0 {
				f.AnyOf = append(f.AnyOf, known)
			}
		}
	}
	f.Phone = f.Phone || f.PhoneRequired
	f.PhoneConfirm = f.PhoneConfirm && f.Phone
	f.Password = !st.Activation
	return f
}

// FieldErrors maps a form field to what is wrong with it.
type FieldErrors map[string]string

func (e FieldErrors) Error() string { return "journey: the form has errors" }

const maxName = 100

var (
	phonePattern = lazyre.New(`^\+?[0-9][0-9 ()-]{5,19}$`)
)

func cleanText(s string) (string, bool) {
	s = strings.TrimSpace(s)
	return s, utf8.ValidString(s) && !strings.ContainsFunc(s, unicode.IsControl) && utf8.RuneCountInString(s) <= maxName
}

// validate checks the form; the password policy is checked by the caller.
func (st Settings) validate(f *SignUpForm) FieldErrors {
	fields := st.FormFields()
	errs := FieldErrors{}
	f.Email = strings.TrimSpace(f.Email)
	switch {
	case mail.CheckAddress(f.Email) != nil:
		errs["email"] = "Enter a valid email address."
	case !identity.NormalEmail(f.Email):
		errs["email"] = "Type the address in plain characters: this one has fullwidth or other compatibility characters, so it would look like another address."
	case !st.emailAllowed(f.Email):
		errs["email"] = "This email address is not accepted here."
	}
	if fields.EmailConfirm && !strings.EqualFold(strings.TrimSpace(f.EmailConfirm), f.Email) {
		errs["email_confirm"] = "The email addresses do not match."
	}
	st.validateProfile(fields, f, errs)
	if len(errs) == 0 {
		return nil
	}
	return errs
}

// validateProfile checks the profile fields of the form (names, phone,
// birth date, the any_of rules) into errs: the sign-up page's, and the
// activation page's, where the link holder confirms them.
func (st Settings) validateProfile(fields Fields, f *SignUpForm, errs FieldErrors) {
	var ok bool
	if f.FirstName, ok = cleanText(f.FirstName); !ok {
		errs["first_name"] = "Enter a name of at most 100 characters."
	} else if f.FirstName == "" && fields.FirstNameRequired {
		errs["first_name"] = "Enter your first name."
	}
	if f.LastName, ok = cleanText(f.LastName); !ok {
		errs["last_name"] = "Enter a name of at most 100 characters."
	} else if f.LastName == "" && fields.LastNameRequired {
		errs["last_name"] = "Enter your last name."
	}
	f.Phone = strings.TrimSpace(f.Phone)
	switch {
	case !fields.Phone:
		f.Phone = ""
	case f.Phone != "" && !phonePattern.MatchString(f.Phone):
		errs["phone"] = "Enter a phone number of digits, such as +31612345678."
	case f.Phone == "" && fields.PhoneRequired:
		errs["phone"] = "Enter your mobile number."
	case fields.PhoneConfirm && strings.TrimSpace(f.PhoneConfirm) != f.Phone:
		errs["phone_confirm"] = "The phone numbers do not match."
	}
	f.BirthDate = strings.TrimSpace(f.BirthDate)
	if !fields.BirthDate {
		f.BirthDate = ""
	} else if f.BirthDate != "" {
		if d, err := time.Parse("2006-01-02", f.BirthDate); err != nil || d.Year() < 1900 || d.After(time.Now()) {
			errs["birth_date"] = "Enter a date such as 1990-02-28."
		}
	}
	for _, rule := range fields.AnyOf {
		if !satisfied(rule, f) {
			errs["profile"] = "Fill in at least one of: " + strings.ToLower(strings.ReplaceAll(strings.Join(rule, ", "), "_", " ")) + "."
		}
	}
}

func satisfied(rule []string, f *SignUpForm) bool {
	for _, typ := range rule {
		switch {
		case typ == "FIRST_NAME" && f.FirstName != "", typ == "LAST_NAME" && f.LastName != "",
			(typ == "PHONE" || typ == "MOBILE_NUMBER") && f.Phone != "", typ == "BIRTH_DATE" && f.BirthDate != "":
			return true
		}
	}
	return false
}

// emailAllowed applies custom_email_validation: the part before the last
// @ must match before_at_regex and the part after it after_at_regex, each
// as a whole.
func (st Settings) emailAllowed(email string) bool {
	f := st.snap.Features
	if f == nil || f.CustomEmailValidation == nil || !on(f.CustomEmailValidation.Enabled) {
		return true
	}
	at := strings.LastIndexByte(email, '@')
	for _, part := range []struct {
		re    *string
		value string
	}{{f.CustomEmailValidation.BeforeAtRegex, email[:at]}, {f.CustomEmailValidation.AfterAtRegex, email[at+1:]}} {
		if part.re == nil || *part.re == "" {
			continue
		}
		re, err := regexp.Compile(`^(?:` + *part.re + `)$`) // validated when stored
		if err != nil || !re.MatchString(part.value) {
			return false
		}
	}
	return true
}

// SignUp creates an account from the form. An email that has an account
// gets no second one and the same answer as a success (no mail either
// way reveals it on the page). With activation on, the account is CREATED
// without a password and an activation link is mailed, whose holder
// chooses the password (Activate); an email whose account is still
// CREATED — unproven, perhaps squatted by someone who typed another's
// address — gets a fresh activation link, so an unverified sign-up never
// keeps the address's owner out. Without activation the account is
// ACTIVATED at once with the form's password.
func (s *Service) SignUp(ctx context.Context, facts request.Facts, f SignUpForm, lang, request string) error {
	st, err := s.Settings(ctx)
	if err != nil {
		return err
	}
	if !st.SignUp {
		return ErrOff
	}
	if errs := st.validate(&f); errs != nil {
		return errs
	}
	var hash string
	if !st.Activation {
		if err := s.checkPassword(ctx, f.Password); err != nil {
			return err
		}
	}
	if err := s.reserveMail(ctx, facts, f.Email); err != nil {
		return err
	}
	if !st.Activation {
		if hash, err = password.Hash(f.Password); err != nil {
			return err
		}
	}
	now := s.Now().UTC()
	p := store.Person{ID: uuid.NewString(), Email: f.Email, PasswordHash: hash, FirstName: f.FirstName, LastName: f.LastName,
		Status: identity.StatusActivated, CreatedAt: now, UpdatedAt: now,
		Profile: store.PersonProfile{Emails: []store.ContactPoint{{Value: f.Email, Primary: true}}, DateOfBirth: f.BirthDate,
			PreferredLocale: lang}}
	if f.Phone != "" {
		p.Profile.Phones = []store.ContactPoint{{Value: f.Phone, Primary: true}}
	}
	if st.Activation {
		p.Status = identity.StatusCreated
	}
	err = s.Store.Tx(ctx, func(tx store.Store) error {
		if err := tx.CreatePerson(ctx, p); err != nil {
			return err
		}
		if err := tx.LinkIdentity(ctx, store.ExternalIdentity{IdPID: identity.PasswordIdPID, ExternalID: p.ID, PersonID: p.ID,
			CreatedAt: now}); err != nil {
			return err
		}
		if err := s.recordPerson(ctx, tx, facts, events.PersonCreated, p, map[string]string{"channel": "sign_up"}); err != nil {
			return err
		}
		if st.Activation {
			return s.sendActivation(ctx, tx, facts, st, p, lang, request, store.PersonTokenActivation)
		}
		if st.Notify("welcome_web") {
			return s.enqueue(ctx, tx, "welcome", lang, p, mail.Data{})
		}
		return nil
	})
	if errors.Is(err, store.ErrConflict) {
		// The email has an account: the same answer as a success. One
		// still waiting for its address to be proven gets a fresh link
		// (the throttle above counted this mail); the form's other
		// fields are not written — its profile is confirmed, or
		// overwritten, by whoever follows the link.
		if !st.Activation {
			return nil
		}
		err = s.Store.Tx(ctx, func(tx store.Store) error {
			old, err := tx.GetPersonByEmail(ctx, "", f.Email)
			if errors.Is(err, store.ErrNotFound) {
				return nil // deleted since
			}
			if err != nil || old.Status != identity.StatusCreated {
				return err
			}
			return s.sendActivation(ctx, tx, facts, st, old, lang, request, store.PersonTokenActivation)
		})
	}
	if errors.Is(err, errNotOwed) {
		return nil
	}
	if err == nil {
		s.wake()
	}
	return err
}

// sendActivation mails an activation (or invitation) link through tx.
func (s *Service) sendActivation(ctx context.Context, tx store.Store, facts request.Facts, st Settings, p store.Person,
	lang, request, kind string) error {
	q := url.Values{}
	if request != "" {
		q.Set("request", request)
	}
	if lang != "" {
		q.Set("language", lang)
	}
	link, p, err := s.link(ctx, tx, kind, p.ID, PathActivate, st.ActivationLifetime, q)
	if err != nil {
		return err
	}
	mailKind := "activation"
	if kind == store.PersonTokenActivation {
		// Whoever signed up typed the names, perhaps not the address's
		// owner: the mail greets the address, and carries no text of theirs.
		p.FirstName, p.LastName = "", ""
	}
	if kind == store.PersonTokenInvitation {
		mailKind = "invitation"
		if err := s.recordPerson(ctx, tx, facts, events.PersonInvitationSent, p, nil); err != nil {
			return err
		}
	}
	return s.enqueue(ctx, tx, mailKind, lang, p, mail.Data{Link: link, Minutes: minutes(st.ActivationLifetime)})
}

// ResendActivation mails a new activation (CREATED) or invitation (INVITED)
// link to email's account when it is waiting for one; the same answer
// for every email.
func (s *Service) ResendActivation(ctx context.Context, facts request.Facts, email, lang, request string) error {
	st, err := s.Settings(ctx)
	if err != nil {
		return err
	}
	p, found, err := s.mailTarget(ctx, facts, email)
	if err != nil || !found {
		return err
	}
	kind := ""
	switch {
	case p.Status == identity.StatusInvited:
		kind = store.PersonTokenInvitation
	case p.Status == identity.StatusCreated && st.Activation:
		kind = store.PersonTokenActivation
	default:
		return nil
	}
	err = s.Store.Tx(ctx, func(tx store.Store) error {
		return s.sendActivation(ctx, tx, facts, st, p, lang, request, kind)
	})
	if errors.Is(err, errNotOwed) {
		return nil // blocked or activated since it was read
	}
	if err == nil {
		s.wake()
	}
	return err
}

// ActivationForm is what the page of an activation or invitation link
// shows: the link's kind and, for an activation, the profile the account
// holds now, for the link holder to confirm or overwrite. Opening a link
// does not spend it.
func (s *Service) ActivationForm(ctx context.Context, link string) (kind string, f SignUpForm, err error) {
	t, err := s.activationLink(ctx, link)
	if err != nil || t.Kind != store.PersonTokenActivation {
		return t.Kind, f, err
	}
	p, err := s.Store.GetPerson(ctx, t.PersonID)
	if errors.Is(err, store.ErrNotFound) {
		return t.Kind, f, ErrLinkInvalid
	}
	if err != nil {
		return t.Kind, f, err
	}
	f = SignUpForm{Email: p.Email, FirstName: p.FirstName, LastName: p.LastName, BirthDate: p.Profile.DateOfBirth}
	if ph, ok := primaryContact(p.Profile.Phones); ok {
		// The confirmation repeats what the account holds: the link holder
		// retypes both only to change the number.
		f.Phone, f.PhoneConfirm = ph.Value, ph.Value
	}
	return t.Kind, f, nil
}

// activationLink checks a link of either kind the activation page takes.
func (s *Service) activationLink(ctx context.Context, link string) (store.PersonToken, error) {
	t, err := s.CheckLink(ctx, store.PersonTokenActivation, link)
	if errors.Is(err, ErrLinkInvalid) {
		t, err = s.CheckLink(ctx, store.PersonTokenInvitation, link)
	}
	return t, err
}

func primaryContact(cs []store.ContactPoint) (store.ContactPoint, bool) {
	for _, c := range cs {
		if c.Primary {
			return c, true
		}
	}
	return store.ContactPoint{}, false
}

// Activate spends an activation or invitation link: the account becomes
// ACTIVATED with the password the link holder chooses (f.Password, under
// the policy) — never one set before the address was proven, which was
// perhaps typed by someone else (a pre-account takeover). An activation
// also takes the profile fields of the sign-up form from f (validated as
// at sign-up: the holder confirms or overwrites what an unproven sign-up
// wrote); an invitation takes only the password (the operator wrote the
// profile). Whatever the account held before — sessions, grants, tokens
// from when activation was off — is revoked in the same transaction. It
// returns the activated person.
func (s *Service) Activate(ctx context.Context, facts request.Facts, link string, f SignUpForm, lang string) (store.Person, error) {
	st, err := s.Settings(ctx)
	if err != nil {
		return store.Person{}, err
	}
	t, err := s.activationLink(ctx, link)
	if err != nil {
		return store.Person{}, err
	}
	fields := st.FormFields()
	if t.Kind == store.PersonTokenActivation {
		errs := FieldErrors{}
		if st.validateProfile(fields, &f, errs); len(errs) > 0 {
			return store.Person{}, errs
		}
	}
	if err := s.checkPassword(ctx, f.Password); err != nil {
		return store.Person{}, err
	}
	hash, err := password.Hash(f.Password)
	if err != nil {
		return store.Person{}, err
	}
	var p store.Person
	err = s.Store.Tx(ctx, func(tx store.Store) error {
		if _, err := s.use(ctx, tx, t.Kind, link); err != nil {
			return err
		}
		if err := tx.UpdatePerson(ctx, t.PersonID, func(old store.Person) (store.Person, error) {
			want := identity.StatusCreated
			if t.Kind == store.PersonTokenInvitation {
				want = identity.StatusInvited
			}
			if old.Status != want {
				return old, ErrLinkInvalid // blocked, or activated another way since
			}
			old.Status = identity.StatusActivated
			old.PasswordHash = hash
			if t.Kind == store.PersonTokenActivation {
				applyProfile(fields, f, &old)
			}
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
		// The unproven account's sessions and tokens (a CREATED person
		// signs in while activation is off) end: only the link holder's
		// password opens the account from now on.
		if _, err := tx.RevokePerson(ctx, p.ID, s.Now().UTC()); err != nil {
			return err
		}
		// Nor does an upstream identity linked while the address was
		// unproven (store.ExternalIdentity.Unproven).
		if _, err := tx.EndUnprovenIdentities(ctx, p.ID); err != nil {
			return err
		}
		if err := s.recordPerson(ctx, tx, facts, events.PersonActivated, p, map[string]string{"via": t.Kind}); err != nil {
			return err
		}
		if st.Notify("welcome_web") {
			return s.enqueue(ctx, tx, "welcome", lang, p, mail.Data{})
		}
		return nil
	})
	if err != nil {
		return store.Person{}, err
	}
	s.wake()
	return p, nil
}

// applyProfile writes the profile fields the form shows from f into p;
// fields the form does not show (and every other member) stay.
func applyProfile(fields Fields, f SignUpForm, p *store.Person) {
	p.FirstName, p.LastName = f.FirstName, f.LastName
	if fields.BirthDate {
		p.Profile.DateOfBirth = f.BirthDate
	}
	if fields.Phone {
		old, had := primaryContact(p.Profile.Phones)
		phones := []store.ContactPoint{}
		if f.Phone != "" {
			phones = append(phones, store.ContactPoint{Value: f.Phone, Primary: true, Verified: had && old.Value == f.Phone && old.Verified})
		}
		for _, c := range p.Profile.Phones {
			if !c.Primary && c.Value != f.Phone {
				phones = append(phones, c)
			}
		}
		if len(phones) == 0 {
			phones = nil
		}
		p.Profile.Phones = phones
	}
}
