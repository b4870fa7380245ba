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
	if mail.CheckAddress(f.Email) != nil {
		errs["email"] = "Enter a valid email address."
	} else if !st.emailAllowed(f.Email) {
		errs["email"] = "This email address is not accepted here."
	}
	if fields.EmailConfirm && !strings.EqualFold(strings.TrimSpace(f.EmailConfirm), f.Email) {
		errs["email_confirm"] = "The email addresses do not match."
	}
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
	if len(errs) == 0 {
		return nil
	}
	return errs
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
// and an activation link is mailed; otherwise it is ACTIVATED at once.
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
	if err := s.checkPassword(ctx, f.Password); err != nil {
		return err
	}
	if err := s.reserveMail(ctx, facts, f.Email); err != nil {
		return err
	}
	hash, err := password.Hash(f.Password)
	if err != nil {
		return err
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
		// The email has an account: the same answer as a success.
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
	link, err := s.link(ctx, tx, kind, p.ID, PathActivate, st.ActivationLifetime, q)
	if err != nil {
		return err
	}
	mailKind := "activation"
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
	if err == nil {
		s.wake()
	}
	return err
}

// Activate spends an activation or invitation link: the account becomes
// ACTIVATED. An invitation also sets the person's first password (pw),
// which must meet the policy. It returns the activated person.
func (s *Service) Activate(ctx context.Context, facts request.Facts, link, pw, lang string) (store.Person, error) {
	st, err := s.Settings(ctx)
	if err != nil {
		return store.Person{}, err
	}
	t, err := s.CheckLink(ctx, store.PersonTokenActivation, link)
	if errors.Is(err, ErrLinkInvalid) {
		t, err = s.CheckLink(ctx, store.PersonTokenInvitation, link)
	}
	if err != nil {
		return store.Person{}, err
	}
	var hash string
	if t.Kind == store.PersonTokenInvitation {
		if err := s.checkPassword(ctx, pw); err != nil {
			return store.Person{}, err
		}
		if hash, err = password.Hash(pw); err != nil {
			return store.Person{}, err
		}
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
			if hash != "" {
				old.PasswordHash = hash
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
