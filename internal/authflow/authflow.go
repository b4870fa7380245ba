// Package authflow decides what must happen before a flow may issue
// anything for a person: sign in, step up, consent, issue, or refuse. It is
// the one place that decides: every issuance point (the authorization
// endpoint and its hosted pages, device verification, in-app approval, the
// password grant and refresh) asks Decide, and the hosted pages only render
// the step it names. It holds no HTTP and no storage: callers gather the
// facts, Decide applies the rules.
package authflow

import (
	"slices"
	"time"

	"github.com/latchkey/latchkey/internal/identity"
	"github.com/latchkey/latchkey/internal/scopes"
	"github.com/latchkey/latchkey/internal/store"
)

// Step is what must happen next.
type Step int

// Steps, in the order a browser flow meets them.
const (
	// Login: a person must sign in, or sign in again (a session below the
	// level that a password login reaches).
	Login Step = iota + 1
	// StepUp: the signed-in person must add a factor (Decision.Method).
	StepUp
	// Consent: the person must consent to the request.
	Consent
	// Issue: every rule holds; Decision.Approved returns the approval.
	Issue
	// Refuse: the flow cannot go on (Decision.Reason).
	Refuse
)

func (s Step) String() string {
	return [...]string{"", "login", "step-up", "consent", "issue", "refuse"}[s]
}

// Reason says why a flow is refused.
type Reason string

// Reasons of Refuse.
const (
	// ReasonInactive: the person may not sign in (blocked, inactive,
	// invited) or no longer exists.
	ReasonInactive Reason = "inactive"
	// ReasonLevel: the authentication done is below the level a scope
	// requires, and this flow has no way to raise it.
	ReasonLevel Reason = "level"
	// ReasonUnauthenticated: a flow without pages has no authenticated person.
	ReasonUnauthenticated Reason = "unauthenticated"
)

// Kind is the kind of flow; it decides what the flow can do about a step.
type Kind int

const (
	// Browser: the hosted pages (authorization code, implicit, device
	// verification) can sign a person in, step up and ask for consent.
	Browser Kind = iota
	// InApp: in-app device approval. The app's grant is the
	// authentication; its call is the person's approval.
	InApp
	// Password: the deprecated password grant. The password just checked
	// is the authentication; there are no pages and no consent.
	Password
	// Refresh: a refresh token. The grant's authentication, which was
	// consented to when the grant was made; a refresh never yields more.
	Refresh
)

// Step-up methods.
const (
	MethodTOTP  = "totp"  // a code of the person's authenticator app
	MethodEmail = "email" // a one-time code mailed to the person's address
)

// Step-up strategies (the identity configuration's step_up.stategy).
const (
	// StrategyStrongest offers only the strongest method that reaches the
	// level (the default).
	StrategyStrongest = "STRONGEST_AVAILABLE"
	// StrategyUserPreference lets the person choose among the methods
	// that reach the level.
	StrategyUserPreference = "USER_PREFERENCE"
)

// Policy is the configuration of authentication levels: the operator
// file's levels, completed by the identity configuration's step-up and
// activation settings.
type Policy struct {
	PasswordLevel int // the level a password login reaches
	TOTPLevel     int // the level a password login plus a TOTP code reaches; 0: no TOTP step-up
	// EmailLevel is the level a password login plus a mailed code reaches
	// (step_up.authentication_methods.email_authentication_level); 0: no
	// mailed codes.
	EmailLevel int
	// Strategy is StrategyStrongest or StrategyUserPreference ("": strongest).
	Strategy string
	// ActivationRequired: a CREATED person has not followed the mailed
	// activation link yet and may not sign in (features.person_activation).
	ActivationRequired bool
}

// MaySignIn reports whether a person of this status may sign in and hold
// tokens under p: identity.MaySignIn, and while activation is required a
// CREATED person may not. Every flow asks it through Decide; the login
// page asks it directly to tell a person to activate first.
func (p Policy) MaySignIn(status string) bool {
	return identity.MaySignIn(status) && !(p.ActivationRequired && status == identity.StatusCreated)
}

// Method is a step-up method and the level it reaches.
type Method struct {
	Name  string // MethodTOTP or MethodEmail
	Level int
}

// Authentication is what a person did to sign in.
type Authentication struct {
	Level int
	AMR   []string
	Time  time.Time
}

// Request is what is known about a flow when it asks.
type Request struct {
	Kind Kind
	// Scopes are the requested scope ids; Configured their configuration
	// (scopes without one are left out and have the defaults).
	Scopes     []string
	Configured []store.Scope
	// Person and Auth are nil before anyone signed in.
	Person *store.Person
	Auth   *Authentication
	// ConsentRequired: the client asks for the person's consent.
	ConsentRequired bool
	// ConsentEveryTime: consent is asked at every authorization, remembered
	// or not (device verification, shared/spec/NOTES.md).
	ConsentEveryTime bool
	// Remembered are the scopes the person consented to persistently for this client.
	Remembered []string
	// Consented: the person consented to this very request just now.
	Consented bool
	// AuthNotBefore: a browser flow wants an authentication at or after
	// this time (to the second; OpenID Connect prompt=login, max_age, an
	// id_token_hint of another person). Zero: any.
	AuthNotBefore time.Time
}

// Decision is what must happen next.
type Decision struct {
	Step   Step
	Level  int    // the level the requested scopes require
	Method string // StepUp: the method to use (the first of Methods)
	// Methods are StepUp's offered methods, each reaching Level, strongest
	// first: one under StrategyStrongest, every one under
	// StrategyUserPreference (the person chooses).
	Methods []Method
	Reason  Reason // Refuse: why
	FailURL string // Refuse for ReasonLevel: the scope's verification_failed_endpoint or service_endpoint
	// approval is set only by Decide, only with Step Issue.
	approval Approval
}

// Approved returns the permission to issue when the step is Issue.
func (d Decision) Approved() (Approval, bool) { return d.approval, d.Step == Issue }

// Approval is permission to issue for a person. Only Decide makes one with
// a subject, so a function that issues from an Approval cannot be reached
// without the decision. The zero value approves nothing.
type Approval struct {
	subject  string
	scopes   []string
	level    int
	amr      []string
	authTime time.Time
}

// Subject is the person the approval is for ("" for the zero value).
func (a Approval) Subject() string { return a.subject }

// Scopes are the approved scopes.
func (a Approval) Scopes() []string { return a.scopes }

// Level is the authentication level the person reached.
func (a Approval) Level() int { return a.level }

// AMR lists how the person authenticated.
func (a Approval) AMR() []string { return a.amr }

// AuthTime is when the person authenticated.
func (a Approval) AuthTime() time.Time { return a.authTime }

// Decide applies the rules, in this order: a person must be signed in and
// allowed to sign in (p.MaySignIn); the authentication must reach the level every
// requested scope requires; the person must have consented when the client
// asks for it; then the flow may issue.
func Decide(p Policy, r Request) Decision {
	level, failURL := scopes.RequiredLevel(r.Configured)
	d := Decision{Level: level}
	if r.Person == nil || r.Auth == nil {
		if r.Kind == Browser {
			d.Step = Login
		} else {
			d.Step, d.Reason = Refuse, ReasonUnauthenticated
		}
		return d
	}
	if !p.MaySignIn(r.Person.Status) {
		d.Step, d.Reason = Refuse, ReasonInactive
		return d
	}
	if r.Kind == Browser && r.Auth.Time.Unix() < r.AuthNotBefore.Unix() {
		d.Step = Login // too long ago for this request: sign in again
		return d
	}
	if r.Auth.Level < level {
		switch {
		case r.Kind != Browser:
			// Only the pages can raise a level: a grant keeps the level it
			// was authenticated at, and a password is only a password.
		case level <= p.PasswordLevel:
			d.Step = Login
			return d
		case r.Auth.Level >= p.PasswordLevel:
			if ms := stepUpMethods(p, r.Person, level); len(ms) > 0 {
				d.Step, d.Method, d.Methods = StepUp, ms[0].Name, ms
				return d
			}
		}
		d.Step, d.Reason, d.FailURL = Refuse, ReasonLevel, failURL
		return d
	}
	if r.Kind == Browser && r.ConsentRequired && !r.Consented && needsConsent(r) {
		d.Step = Consent
		return d
	}
	d.Step = Issue
	d.approval = Approval{subject: r.Person.ID, scopes: slices.Clone(r.Scopes), level: r.Auth.Level,
		amr: slices.Clone(r.Auth.AMR), authTime: r.Auth.Time}
	return d
}

// stepUpMethods are the methods a person signed in with a password can use
// to reach level, strongest first; on a tie TOTP comes first (a secret on
// the person's device outweighs access to a mailbox).
func stepUpMethods(p Policy, person *store.Person, level int) []Method {
	var ms []Method
	if p.TOTPLevel >= level && person.TOTPSecret != nil {
		ms = append(ms, Method{Name: MethodTOTP, Level: p.TOTPLevel})
	}
	if p.EmailLevel >= level && person.Email != "" {
		ms = append(ms, Method{Name: MethodEmail, Level: p.EmailLevel})
	}
	slices.SortStableFunc(ms, func(a, b Method) int { return b.Level - a.Level })
	if len(ms) > 1 && p.Strategy != StrategyUserPreference {
		ms = ms[:1]
	}
	return ms
}

// Offers reports whether d offers method m, and the level m reaches.
func (d Decision) Offers(m string) (level int, ok bool) {
	if d.Step != StepUp {
		return 0, false
	}
	for _, x := range d.Methods {
		if x.Name == m {
			return x.Level, true
		}
	}
	return 0, false
}

// needsConsent: consent is asked unless every requested scope has
// persistent_consent and the person gave it before.
func needsConsent(r Request) bool {
	if r.ConsentEveryTime {
		return true
	}
	byID := scopes.ByID(r.Configured)
	for _, sc := range r.Scopes {
		if !byID[sc].PersistentConsent || !slices.Contains(r.Remembered, sc) {
			return true
		}
	}
	return false
}
