package journey_test

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/latchkey/latchkey/internal/admin"
	"github.com/latchkey/latchkey/internal/cimconfig"
	"github.com/latchkey/latchkey/internal/client"
	"github.com/latchkey/latchkey/internal/identity"
	"github.com/latchkey/latchkey/internal/journey"
	"github.com/latchkey/latchkey/internal/mail/smtpsink"
	"github.com/latchkey/latchkey/internal/password"
	"github.com/latchkey/latchkey/internal/request"
	"github.com/latchkey/latchkey/internal/server/servertest"
	"github.com/latchkey/latchkey/internal/store"
)

// journeysOn is a server with sign-up, password reset and email
// activation on, mails going to a real SMTP server process, and an API
// user for the import API.
func journeysOn(t *testing.T, backend string) (*servertest.Server, *smtpsink.Process) {
	t.Helper()
	s, sink := mailServer(t, backend, nil)
	yes, typ := true, cimconfig.ActivationEmail
	err := s.App.Journeys().Config.Update(context.Background(), []string{cimconfig.UnitFeatures}, func(snap *cimconfig.Snapshot) error {
		snap.Features = &cimconfig.Features{SignUpEnabled: &yes, PasswordResetEnabled: &yes,
			PersonActivation: &cimconfig.PersonActivation{Enabled: &yes, Type: &typ}}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return s, sink
}

var nextAddr atomic.Int64

// from is a request from an address of its own, so that the per-address
// mail throttle of one test's many requests does not decide the test.
func from() request.Facts {
	n := nextAddr.Add(1)
	return request.Facts{Addr: fmt.Sprintf("198.51.%d.%d", n/250, n%250+1), Time: time.Now()}
}

// mailed waits for the n-th mail to `to` with subject and returns it.
func mailed(t *testing.T, sink *smtpsink.Process, n int, to, subject string) smtpsink.Mail {
	t.Helper()
	got := sink.WaitFor(n, wait, func(m smtpsink.Mail) bool { return m.To == to && m.Header.Get("Subject") == subject })
	return got[n-1]
}

// linkOf is the token of the mail's link to path.
func linkOf(t *testing.T, s *servertest.Server, m smtpsink.Mail, path string) string {
	t.Helper()
	u, err := url.Parse(m.Link(s.URL + path + "?"))
	if err != nil || u.Query().Get("token") == "" {
		t.Fatalf("no %s link in the mail:\n%s", path, m.Raw)
	}
	return u.Query().Get("token")
}

const (
	victim         = "victim@example.com"
	attackerPass   = "the attacker's own passphrase 1"
	victimPass     = "the victim's own passphrase 2"
	activateSubj   = "Activate your account"
	resetSubj      = "Reset your password"
	invitationSubj = "You are invited"
)

// The pre-account takeover (issue 59): an attacker signs up with the
// victim's address and a password of their choice; the victim asks for
// the activation mail and follows it. The attacker's password must not
// sign in then — it is not even stored — and the victim's, chosen on the
// activation page, does; the profile the attacker typed is what the
// victim overwrites there, and the mails greet the address, not the
// attacker's name.
func TestSquattedSignUpIsTakenBackByTheLinkHolder(t *testing.T) {
	for _, backend := range servertest.Backends {
		t.Run(backend, func(t *testing.T) {
			s, sink := journeysOn(t, backend)
			ctx := context.Background()
			j := s.App.Journeys()

			err := j.SignUp(ctx, from(), journey.SignUpForm{Email: victim, Password: attackerPass, FirstName: "Eve", LastName: "Attacker"}, "", "")
			if err != nil {
				t.Fatal(err)
			}
			squat, err := s.Store.GetPersonByEmail(ctx, "", victim)
			if err != nil || squat.Status != identity.StatusCreated || squat.PasswordHash != "" {
				t.Fatalf("after the attacker's sign-up: %+v, %v; want CREATED without a password", squat, err)
			}
			if _, err := j.Identity.CheckPassword(ctx, from(), victim, attackerPass); !errors.Is(err, identity.ErrBadCredentials) {
				t.Errorf("the attacker's password before activation: %v", err)
			}

			// The victim asks for the activation mail and follows it.
			if err := j.ResendActivation(ctx, from(), victim, "", ""); err != nil {
				t.Fatal(err)
			}
			m := mailed(t, sink, 2, victim, activateSubj)
			if strings.Contains(string(m.Raw), "Eve") || strings.Contains(string(m.Raw), "Attacker") {
				t.Errorf("the activation mail carries the attacker's name:\n%s", m.Raw)
			}
			link := linkOf(t, s, m, journey.PathActivate)
			kind, form, err := j.ActivationForm(ctx, link)
			if err != nil || kind != store.PersonTokenActivation || form.FirstName != "Eve" {
				t.Fatalf("the activation page: %s %+v %v; want the pending names to confirm", kind, form, err)
			}
			// No password, no activation: the link is not spent by it.
			if _, err := j.Activate(ctx, from(), link, journey.SignUpForm{FirstName: "Vera"}, ""); !errors.As(err, new(*journey.PasswordError)) {
				t.Fatalf("activation without a password: %v, want a PasswordError", err)
			}
			p, err := j.Activate(ctx, from(), link, journey.SignUpForm{Password: victimPass, FirstName: "Vera", LastName: "Victim"}, "")
			if err != nil {
				t.Fatal(err)
			}
			if p.Status != identity.StatusActivated || p.FirstName != "Vera" || p.LastName != "Victim" || !p.Profile.Emails[0].Verified {
				t.Errorf("after activation: %+v", p)
			}
			if _, err := j.Identity.CheckPassword(ctx, from(), victim, attackerPass); !errors.Is(err, identity.ErrBadCredentials) {
				t.Errorf("the attacker's password after activation: %v, want ErrBadCredentials", err)
			}
			if got, err := j.Identity.CheckPassword(ctx, from(), victim, victimPass); err != nil || got.ID != squat.ID {
				t.Errorf("the victim's password after activation: %v", err)
			}
			if _, err := j.Activate(ctx, from(), link, journey.SignUpForm{Password: attackerPass}, ""); !errors.Is(err, journey.ErrLinkUsed) {
				t.Errorf("the link again: %v, want ErrLinkUsed", err)
			}
		})
	}
}

// An account made before this rule (or imported CREATED, or signed up
// while activation was off) may hold a password and, from while
// activation was off, sessions and tokens: activation replaces the
// password by the link holder's and ends everything the account held.
func TestActivationEndsWhatTheUnprovenAccountHeld(t *testing.T) {
	for _, backend := range servertest.Backends {
		t.Run(backend, func(t *testing.T) {
			s, sink := journeysOn(t, backend)
			ctx := context.Background()
			j := s.App.Journeys()
			const ref = "1e2f3a4b-5c6d-4e7f-8a9b-0c1d2e3f4a5b"
			importPersons(t, s, imported{ref, victim, "CREATED"})
			if err := s.Store.UpdatePerson(ctx, ref, func(p store.Person) (store.Person, error) {
				p.PasswordHash = mustHash(t, attackerPass)
				return p, nil
			}); err != nil {
				t.Fatal(err)
			}
			now := time.Now().UTC()
			if err := s.Store.CreateSession(ctx, store.Session{Hash: []byte("squatter-session"), PersonID: ref, AuthTime: now,
				ExpiresAt: now.Add(time.Hour)}); err != nil {
				t.Fatal(err)
			}
			if err := s.Store.CreateGrant(ctx, store.Grant{ID: "squatter-grant", ClientID: "app", Subject: ref, CreatedAt: now,
				ExpiresAt: now.Add(time.Hour)}); err != nil {
				t.Fatal(err)
			}

			if err := j.ResendActivation(ctx, from(), victim, "", ""); err != nil {
				t.Fatal(err)
			}
			link := linkOf(t, s, mailed(t, sink, 1, victim, activateSubj), journey.PathActivate)
			if _, err := j.Activate(ctx, from(), link, journey.SignUpForm{Password: victimPass, FirstName: "Vera"}, ""); err != nil {
				t.Fatal(err)
			}
			if _, err := j.Identity.CheckPassword(ctx, from(), victim, attackerPass); !errors.Is(err, identity.ErrBadCredentials) {
				t.Errorf("the password set before activation: %v, want ErrBadCredentials", err)
			}
			if _, err := s.Store.GetSession(ctx, []byte("squatter-session")); !errors.Is(err, store.ErrNotFound) {
				t.Errorf("the unproven account's session after activation: %v", err)
			}
			if g, err := s.Store.GetGrant(ctx, "squatter-grant"); err != nil || g.RevokedAt.IsZero() {
				t.Errorf("the unproven account's grant after activation: %+v, %v; want revoked", g, err)
			}
		})
	}
}

// An unverified sign-up never keeps the address's owner out: signing up
// again for an address whose account is still CREATED mails a fresh
// activation link (the older one ends), with the same answer as any
// sign-up, and writes nothing of the form; forgetting the password of
// such an account mails the activation link too. An activated account's
// address gets nothing from a sign-up.
func TestSignUpAgainWhileUnprovenMailsTheLink(t *testing.T) {
	for _, backend := range servertest.Backends {
		t.Run(backend, func(t *testing.T) {
			s, sink := journeysOn(t, backend)
			ctx := context.Background()
			j := s.App.Journeys()
			if err := j.SignUp(ctx, from(), journey.SignUpForm{Email: victim, FirstName: "Eve"}, "", ""); err != nil {
				t.Fatal(err)
			}
			first := linkOf(t, s, mailed(t, sink, 1, victim, activateSubj), journey.PathActivate)

			// The owner signs up: the same answer, and a fresh link.
			if err := j.SignUp(ctx, from(), journey.SignUpForm{Email: "Victim@Example.com", FirstName: "Vera"}, "", ""); err != nil {
				t.Fatalf("sign-up of a squatted address: %v, want the answer of a success", err)
			}
			second := linkOf(t, s, mailed(t, sink, 2, victim, activateSubj), journey.PathActivate)
			if _, err := j.CheckLink(ctx, store.PersonTokenActivation, first); !errors.Is(err, journey.ErrLinkInvalid) {
				t.Errorf("the first link after the second was mailed: %v, want ErrLinkInvalid", err)
			}
			if p, _ := s.Store.GetPersonByEmail(ctx, "", victim); p.FirstName != "Eve" {
				t.Errorf("the second sign-up wrote its form: %+v", p)
			}

			// Forgot password on the unproven account: the activation link.
			if err := j.RequestPasswordReset(ctx, from(), victim, "", ""); err != nil {
				t.Fatal(err)
			}
			third := linkOf(t, s, mailed(t, sink, 3, victim, activateSubj), journey.PathActivate)
			if _, err := j.CheckLink(ctx, store.PersonTokenActivation, second); !errors.Is(err, journey.ErrLinkInvalid) {
				t.Errorf("the second link after the third: %v", err)
			}
			if _, err := j.Activate(ctx, from(), third, journey.SignUpForm{Password: victimPass, FirstName: "Vera"}, ""); err != nil {
				t.Fatal(err)
			}

			// The owner's own mails count against the recipient's throttle
			// as any sign-up's: a fourth within the hour is refused.
			err := j.SignUp(ctx, from(), journey.SignUpForm{Email: victim, FirstName: "Eve"}, "", "")
			if err == nil || !strings.Contains(err.Error(), "too_many_attempts") {
				t.Errorf("a fourth mail to the address within the hour: %v, want throttled", err)
			}

			// An activated account: a sign-up of its address mails nothing
			// (a marker mail queued after it arrives after it would have).
			const owner = "owner@example.com"
			if err := j.SignUp(ctx, from(), journey.SignUpForm{Email: owner}, "", ""); err != nil {
				t.Fatal(err)
			}
			link := linkOf(t, s, mailed(t, sink, 1, owner, activateSubj), journey.PathActivate)
			if _, err := j.Activate(ctx, from(), link, journey.SignUpForm{Password: victimPass}, ""); err != nil {
				t.Fatal(err)
			}
			if err := j.SignUp(ctx, from(), journey.SignUpForm{Email: owner, FirstName: "Eve"}, "", ""); err != nil {
				t.Fatal(err)
			}
			if err := j.SignUp(ctx, from(), journey.SignUpForm{Email: "marker@example.com"}, "", ""); err != nil {
				t.Fatal(err)
			}
			mailed(t, sink, 1, "marker@example.com", activateSubj)
			if got := subjects(sink)[owner]; len(got) != 1 {
				t.Errorf("mails to an activated account's address: %q, want its one activation mail", got)
			}
			for _, m := range sink.Mails() {
				if m.Header.Get("Subject") == resetSubj {
					t.Errorf("a reset mail went to %s", m.To)
				}
			}
		})
	}
}

func mustHash(t *testing.T, pw string) string {
	t.Helper()
	h, err := password.Hash(pw)
	if err != nil {
		t.Fatal(err)
	}
	return h
}

// A link or code mailed before a block never works after the unblock, for
// every kind of mailed secret and every path that blocks: the CLI's
// (identity.SetStatus), the admin API's PATCH (admin.Service.PatchPerson)
// and the import API's. The rule is the store's (UpdatePerson ends the
// links of a person it leaves BLOCKED), so no path can miss it.
func TestLinksEndAtABlock(t *testing.T) {
	for _, backend := range servertest.Backends {
		t.Run(backend, func(t *testing.T) {
			s, sink := journeysOn(t, backend)
			ctx := context.Background()
			j := s.App.Journeys()
			adm := &admin.Service{Store: client.NewStatic(s.Store, nil), Events: j.Events, Now: time.Now}
			setStatus := map[string]func(t *testing.T, p imported, status string){
				"cli": func(t *testing.T, p imported, status string) {
					if _, err := j.Identity.SetStatus(ctx, p.ref, status, "cli:test"); err != nil {
						t.Fatal(err)
					}
				},
				"admin": func(t *testing.T, p imported, status string) {
					if _, _, err := adm.PatchPerson(ctx, admin.Actor{Name: "test"}, p.ref, admin.PersonPatch{Status: &status}); err != nil {
						t.Fatal(err)
					}
				},
				"import": func(t *testing.T, p imported, status string) {
					p.status = status
					importPersons(t, s, p)
				},
			}
			session := []byte("the browser session that asked for the code")
			kinds := []struct {
				kind, status string
				send         func(t *testing.T, p imported) string // the mailed secret
				use          func(secret string, p imported) error
				refused      error
			}{
				{store.PersonTokenPasswordReset, identity.StatusActivated, func(t *testing.T, p imported) string {
					if err := j.RequestPasswordReset(ctx, from(), p.email, "", ""); err != nil {
						t.Fatal(err)
					}
					return linkOf(t, s, mailed(t, sink, 1, p.email, resetSubj), journey.PathReset)
				}, func(link string, _ imported) error {
					_, err := j.ResetPassword(ctx, from(), link, victimPass, "")
					return err
				}, journey.ErrLinkInvalid},
				{store.PersonTokenActivation, identity.StatusCreated, func(t *testing.T, p imported) string {
					if err := j.ResendActivation(ctx, from(), p.email, "", ""); err != nil {
						t.Fatal(err)
					}
					return linkOf(t, s, mailed(t, sink, 1, p.email, activateSubj), journey.PathActivate)
				}, func(link string, _ imported) error {
					_, err := j.Activate(ctx, from(), link, journey.SignUpForm{Password: victimPass, FirstName: "Vera"}, "")
					return err
				}, journey.ErrLinkInvalid},
				{store.PersonTokenInvitation, identity.StatusInvited, func(t *testing.T, p imported) string {
					return linkOf(t, s, mailed(t, sink, 1, p.email, invitationSubj), journey.PathActivate) // mailed by the import
				}, func(link string, _ imported) error {
					_, err := j.Activate(ctx, from(), link, journey.SignUpForm{Password: victimPass}, "")
					return err
				}, journey.ErrLinkInvalid},
				{store.PersonTokenEmailOTP, identity.StatusActivated, func(t *testing.T, p imported) string {
					person, err := s.Store.GetPerson(ctx, p.ref)
					if err != nil {
						t.Fatal(err)
					}
					if err := j.SendEmailCode(ctx, from(), person, session, ""); err != nil {
						t.Fatal(err)
					}
					return mailed(t, sink, 1, p.email, "Your sign-in code").Code()
				}, func(code string, p imported) error {
					person, err := s.Store.GetPerson(ctx, p.ref)
					if err != nil {
						return err
					}
					return j.CheckEmailCode(ctx, from(), person, session, code)
				}, journey.ErrBadEmailCode},
			}
			for _, path := range []string{"cli", "admin", "import"} {
				for i, k := range kinds {
					t.Run(path+"/"+k.kind, func(t *testing.T) {
						p := imported{uuidFor(path, i), path + "-" + k.kind + "@example.com", k.status}
						importPersons(t, s, p)
						secret := k.send(t, p)
						if k.kind != store.PersonTokenEmailOTP {
							if _, err := j.CheckLink(ctx, k.kind, secret); err != nil {
								t.Fatalf("the link before the block: %v", err)
							}
						}
						setStatus[path](t, p, identity.StatusBlocked)
						setStatus[path](t, p, k.status)
						if err := k.use(secret, p); !errors.Is(err, k.refused) {
							t.Errorf("the %s mailed before a block, used after the unblock: %v, want %v", k.kind, err, k.refused)
						}
						if got, _ := s.Store.GetPerson(ctx, p.ref); got.Status != k.status {
							t.Errorf("status after the refused use: %s, want %s", got.Status, k.status)
						}
					})
				}
			}
		})
	}
}

// uuidFor is a fixed UUID per test case (the import wants a UUID).
func uuidFor(path string, i int) string {
	n := map[string]int{"cli": 1, "admin": 2, "import": 3}[path]
	return fmt.Sprintf("%08x-0000-4000-8000-%012x", n, i)
}

// Sign-up refuses an address in fullwidth or other compatibility
// characters at its field (it would be a second account looking like
// case@…'s); the mail-asking forms answer it as any unknown address.
func TestSignUpRefusesLookAlikeAddresses(t *testing.T) {
	s, sink := journeysOn(t, "sqlite")
	ctx := context.Background()
	j := s.App.Journeys()
	if err := j.SignUp(ctx, from(), journey.SignUpForm{Email: "case@example.com"}, "", ""); err != nil {
		t.Fatal(err)
	}
	mailed(t, sink, 1, "case@example.com", activateSubj)
	for _, look := range []string{"\uff43ase@example.com", "case@\uff45xample.com", "\u212aase@example.com"} {
		err := j.SignUp(ctx, from(), journey.SignUpForm{Email: look}, "", "")
		var fe journey.FieldErrors
		if !errors.As(err, &fe) || !strings.Contains(fe["email"], "compatibility characters") {
			t.Errorf("sign-up of %q: %v, want an error at the email field", look, err)
		}
		if ps, _ := s.Store.FindPersons(ctx, look); len(ps) != 0 {
			t.Errorf("sign-up of %q made a person", look)
		}
		if err := j.ResendActivation(ctx, from(), look, "", ""); err != nil {
			t.Errorf("resend to %q: %v, want the answer of any address", look, err)
		}
		if err := j.RequestPasswordReset(ctx, from(), look, "", ""); err != nil {
			t.Errorf("forgot for %q: %v, want the answer of any address", look, err)
		}
	}
	if err := j.SignUp(ctx, from(), journey.SignUpForm{Email: "marker@example.com"}, "", ""); err != nil {
		t.Fatal(err)
	}
	mailed(t, sink, 1, "marker@example.com", activateSubj)
	if n := len(sink.Mails()); n != 2 {
		t.Errorf("%d mails, want the two sign-ups' only", n)
	}
}

// The activation page confirms the sign-up form's fields under the same
// rules: with the mobile number and its confirmation on, the page is
// filled with the number the account holds, repeated in the confirmation,
// so confirming it as shown activates; a changed number needs its
// confirmation, and a new number is not verified.
func TestActivationConfirmsTheSignUpFields(t *testing.T) {
	s, sink := journeysOn(t, "sqlite")
	ctx := context.Background()
	j := s.App.Journeys()
	yes := true
	if err := j.Config.Update(ctx, []string{cimconfig.UnitAttributes}, func(snap *cimconfig.Snapshot) error {
		snap.Attributes = &cimconfig.Attributes{SignUpFormFields: &cimconfig.SignUpFormFields{MobileNumberEnabled: &yes,
			MobileNumberConfirmationEnabled: &yes}}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	const phone, other = "+31612345678", "+31687654321"
	for _, who := range []string{"keeps@example.com", "changes@example.com"} {
		if err := j.SignUp(ctx, from(), journey.SignUpForm{Email: who, FirstName: "Nina", Phone: phone, PhoneConfirm: phone}, "", ""); err != nil {
			t.Fatal(err)
		}
	}

	link := linkOf(t, s, mailed(t, sink, 1, "keeps@example.com", activateSubj), journey.PathActivate)
	_, f, err := j.ActivationForm(ctx, link)
	if err != nil || f.Phone != phone || f.PhoneConfirm != phone {
		t.Fatalf("the activation form: %+v, %v; want the number and its confirmation filled", f, err)
	}
	f.Password = victimPass
	if p, err := j.Activate(ctx, from(), link, f, ""); err != nil || len(p.Profile.Phones) != 1 || p.Profile.Phones[0].Value != phone {
		t.Errorf("activation as the page shows it: %+v, %v", p, err)
	}

	link = linkOf(t, s, mailed(t, sink, 1, "changes@example.com", activateSubj), journey.PathActivate)
	_, f, err = j.ActivationForm(ctx, link)
	if err != nil {
		t.Fatal(err)
	}
	f.Password, f.Phone = victimPass, other
	var fe journey.FieldErrors
	if _, err := j.Activate(ctx, from(), link, f, ""); !errors.As(err, &fe) || fe["phone_confirm"] == "" {
		t.Fatalf("a changed number without its confirmation: %v, want an error at phone_confirm", err)
	}
	f.PhoneConfirm = other
	p, err := j.Activate(ctx, from(), link, f, "")
	if err != nil || len(p.Profile.Phones) != 1 || p.Profile.Phones[0].Value != other || p.Profile.Phones[0].Verified {
		t.Errorf("a changed, confirmed number: %+v, %v; want it, unverified", p.Profile.Phones, err)
	}
}

// A mailed step-up code asked for with a person read before a block (the
// step-up page read it, then the block committed) is never made: the
// code's write locks the person and checks the status, as the links do.
func TestNoEmailCodeForAPersonBlockedMeanwhile(t *testing.T) {
	s, sink := journeysOn(t, "sqlite")
	ctx := context.Background()
	j := s.App.Journeys()
	const ref = "2f3a4b5c-6d7e-4f80-9a1b-2c3d4e5f6a7b"
	importPersons(t, s, imported{ref, "stale@example.com", identity.StatusActivated})
	stale, err := s.Store.GetPerson(ctx, ref)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := j.Identity.SetStatus(ctx, ref, identity.StatusBlocked, "cli:test"); err != nil {
		t.Fatal(err)
	}
	if err := j.SendEmailCode(ctx, from(), stale, []byte("a session read before the block"), ""); err != nil {
		t.Fatalf("a code for a person blocked since: %v, want nothing sent and no error", err)
	}
	// A marker mail queued after it arrives after the code would have.
	if err := j.SignUp(ctx, from(), journey.SignUpForm{Email: "marker@example.com"}, "", ""); err != nil {
		t.Fatal(err)
	}
	mailed(t, sink, 1, "marker@example.com", activateSubj)
	if got := subjects(sink)["stale@example.com"]; len(got) != 0 {
		t.Errorf("mails to the blocked person: %q, want none", got)
	}
}
