package authflow_test

import (
	"slices"
	"testing"
	"time"

	"github.com/latchkey/latchkey/internal/authflow"
	"github.com/latchkey/latchkey/internal/store"
)

var policy = authflow.Policy{PasswordLevel: 1, TOTPLevel: 2}

func TestDecide(t *testing.T) {
	now := time.Now()
	active := &store.Person{ID: "p1", Status: "ACTIVATED"}
	withTOTP := &store.Person{ID: "p1", Status: "ACTIVATED", TOTPSecret: []byte("sealed")}
	password := &authflow.Authentication{Level: 1, AMR: []string{"DEFAULT"}, Time: now}
	stepped := &authflow.Authentication{Level: 2, AMR: []string{"DEFAULT", "OTP"}, Time: now}
	vault := store.Scope{ID: "vault", AuthenticationLevel: 2, VerificationFailedEndpoint: "https://svc.example/failed"}
	top := store.Scope{ID: "top", AuthenticationLevel: 3, ServiceEndpoint: "https://svc.example/top"}
	read := store.Scope{ID: "read", PersistentConsent: true}
	for _, tc := range []struct {
		name string
		req  authflow.Request
		want authflow.Step
		why  authflow.Reason
		url  string
	}{
		{"nobody signed in: login", authflow.Request{Scopes: []string{"read"}}, authflow.Login, "", ""},
		{"nobody signed in, no pages: refused", authflow.Request{Kind: authflow.Refresh}, authflow.Refuse, authflow.ReasonUnauthenticated, ""},
		{"blocked person: refused", authflow.Request{Person: &store.Person{ID: "p", Status: "BLOCKED"}, Auth: password}, authflow.Refuse, authflow.ReasonInactive, ""},
		{"invited person: refused", authflow.Request{Person: &store.Person{ID: "p", Status: "INVITED"}, Auth: stepped}, authflow.Refuse, authflow.ReasonInactive, ""},
		{"inactive person, refresh: refused", authflow.Request{Kind: authflow.Refresh, Person: &store.Person{ID: "p", Status: "INACTIVE"}, Auth: password}, authflow.Refuse, authflow.ReasonInactive, ""},
		{"created person, no levels: issue", authflow.Request{Scopes: []string{"x"}, Person: &store.Person{ID: "p", Status: "CREATED"}, Auth: password}, authflow.Issue, "", ""},
		{"password session, level-2 scope, person with TOTP: step up",
			authflow.Request{Scopes: []string{"vault"}, Configured: []store.Scope{vault}, Person: withTOTP, Auth: password}, authflow.StepUp, "", ""},
		{"the step-up is not skipped by having consented",
			authflow.Request{Scopes: []string{"vault"}, Configured: []store.Scope{vault}, Person: withTOTP, Auth: password, ConsentRequired: true, Consented: true}, authflow.StepUp, "", ""},
		{"password session, level-2 scope, no TOTP secret: refused to the failure endpoint",
			authflow.Request{Scopes: []string{"vault"}, Configured: []store.Scope{vault}, Person: active, Auth: password}, authflow.Refuse, authflow.ReasonLevel, "https://svc.example/failed"},
		{"level above what TOTP reaches: refused to the service endpoint",
			authflow.Request{Scopes: []string{"top"}, Configured: []store.Scope{top}, Person: withTOTP, Auth: stepped}, authflow.Refuse, authflow.ReasonLevel, "https://svc.example/top"},
		{"stepped-up session: issue", authflow.Request{Scopes: []string{"vault"}, Configured: []store.Scope{vault}, Person: withTOTP, Auth: stepped}, authflow.Issue, "", ""},
		{"session below the password level: log in again",
			authflow.Request{Scopes: []string{"x"}, Configured: []store.Scope{{ID: "x", AuthenticationLevel: 1}}, Person: active, Auth: &authflow.Authentication{Level: 0}}, authflow.Login, "", ""},
		{"password grant, level-2 scope: refused, no step-up without pages",
			authflow.Request{Kind: authflow.Password, Scopes: []string{"vault"}, Configured: []store.Scope{vault}, Person: withTOTP, Auth: password}, authflow.Refuse, authflow.ReasonLevel, "https://svc.example/failed"},
		{"refresh of a password grant for a scope now at level 2: refused",
			authflow.Request{Kind: authflow.Refresh, Scopes: []string{"vault"}, Configured: []store.Scope{vault}, Person: withTOTP, Auth: password}, authflow.Refuse, authflow.ReasonLevel, "https://svc.example/failed"},
		{"in-app approval by a password grant of a level-2 device: refused",
			authflow.Request{Kind: authflow.InApp, Scopes: []string{"vault"}, Configured: []store.Scope{vault}, Person: withTOTP, Auth: password}, authflow.Refuse, authflow.ReasonLevel, "https://svc.example/failed"},
		{"in-app approval needs no consent page", authflow.Request{Kind: authflow.InApp, Scopes: []string{"y"}, Person: active, Auth: password, ConsentRequired: true}, authflow.Issue, "", ""},
		{"consent asked", authflow.Request{Scopes: []string{"y"}, Person: active, Auth: password, ConsentRequired: true}, authflow.Consent, "", ""},
		{"consent given in this request", authflow.Request{Scopes: []string{"y"}, Person: active, Auth: password, ConsentRequired: true, Consented: true}, authflow.Issue, "", ""},
		{"persistent consent remembered", authflow.Request{Scopes: []string{"read"}, Configured: []store.Scope{read}, Person: active, Auth: password,
			ConsentRequired: true, Remembered: []string{"read"}}, authflow.Issue, "", ""},
		{"remembered consent does not cover a scope without persistent_consent", authflow.Request{Scopes: []string{"read", "y"}, Configured: []store.Scope{read}, Person: active, Auth: password,
			ConsentRequired: true, Remembered: []string{"read", "y"}}, authflow.Consent, "", ""},
		{"device verification asks every time", authflow.Request{Scopes: []string{"read"}, Configured: []store.Scope{read}, Person: active, Auth: password,
			ConsentRequired: true, ConsentEveryTime: true, Remembered: []string{"read"}}, authflow.Consent, "", ""},
		{"client without consent: issue", authflow.Request{Scopes: []string{"y"}, Person: active, Auth: password}, authflow.Issue, "", ""},
		{"authentication older than the request wants (prompt=login, max_age): log in again",
			authflow.Request{Scopes: []string{"y"}, Person: active, Auth: password, AuthNotBefore: now.Add(time.Second)}, authflow.Login, "", ""},
		{"authentication in the same second as the limit: issue",
			authflow.Request{Scopes: []string{"y"}, Person: active, Auth: password, AuthNotBefore: now.Truncate(time.Second)}, authflow.Issue, "", ""},
		{"a too-old authentication does not skip the status check",
			authflow.Request{Person: &store.Person{ID: "p", Status: "BLOCKED"}, Auth: password, AuthNotBefore: now.Add(time.Hour)}, authflow.Refuse, authflow.ReasonInactive, ""},
		{"a refresh keeps its authentication, whatever the limit",
			authflow.Request{Kind: authflow.Refresh, Scopes: []string{"y"}, Person: active, Auth: password, AuthNotBefore: now.Add(time.Hour)}, authflow.Issue, "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := authflow.Decide(policy, tc.req)
			if d.Step != tc.want || d.Reason != tc.why || d.FailURL != tc.url {
				t.Fatalf("Decide = %v %q %q, want %v %q %q", d.Step, d.Reason, d.FailURL, tc.want, tc.why, tc.url)
			}
			a, ok := d.Approved()
			if ok != (tc.want == authflow.Issue) || ok != (a.Subject() != "") {
				t.Fatalf("Approved = %+v, %v", a, ok)
			}
			if tc.want == authflow.StepUp && d.Method != authflow.MethodTOTP {
				t.Errorf("step-up method %q", d.Method)
			}
		})
	}
}

// The step-up methods offered: each reaches the level, strongest first,
// one under STRONGEST_AVAILABLE, all under USER_PREFERENCE; the emailed
// code needs email_authentication_level and an address, TOTP a secret.
func TestStepUpMethods(t *testing.T) {
	now := time.Now()
	password := &authflow.Authentication{Level: 1, AMR: []string{"DEFAULT"}, Time: now}
	both := &store.Person{ID: "p", Status: "ACTIVATED", Email: "a@example.com", TOTPSecret: []byte("sealed")}
	mailOnly := &store.Person{ID: "p", Status: "ACTIVATED", Email: "a@example.com"}
	noAddress := &store.Person{ID: "p", Status: "ACTIVATED", TOTPSecret: []byte("sealed")}
	lvl2 := []store.Scope{{ID: "s", AuthenticationLevel: 2}}
	lvl3 := []store.Scope{{ID: "s", AuthenticationLevel: 3}}
	type m = authflow.Method
	totp2, email2, email3 := m{Name: "totp", Level: 2}, m{Name: "email", Level: 2}, m{Name: "email", Level: 3}
	for _, tc := range []struct {
		name   string
		pol    authflow.Policy
		person *store.Person
		scopes []store.Scope
		want   []authflow.Method // nil: refused for the level
	}{
		{"email code off: TOTP only", authflow.Policy{PasswordLevel: 1, TOTPLevel: 2}, both, lvl2, []m{totp2}},
		{"no TOTP secret: the emailed code", authflow.Policy{PasswordLevel: 1, TOTPLevel: 2, EmailLevel: 2}, mailOnly, lvl2, []m{email2}},
		{"no TOTP secret, email code off: refused", authflow.Policy{PasswordLevel: 1, TOTPLevel: 2}, mailOnly, lvl2, nil},
		{"no address: no emailed code", authflow.Policy{PasswordLevel: 1, EmailLevel: 2}, noAddress, lvl2, nil},
		{"strongest, tie: TOTP", authflow.Policy{PasswordLevel: 1, TOTPLevel: 2, EmailLevel: 2, Strategy: "STRONGEST_AVAILABLE"}, both, lvl2, []m{totp2}},
		{"no strategy is strongest", authflow.Policy{PasswordLevel: 1, TOTPLevel: 2, EmailLevel: 2}, both, lvl2, []m{totp2}},
		{"strongest: the email code reaches more", authflow.Policy{PasswordLevel: 1, TOTPLevel: 2, EmailLevel: 3}, both, lvl2, []m{email3}},
		{"user preference: both, strongest first", authflow.Policy{PasswordLevel: 1, TOTPLevel: 2, EmailLevel: 3, Strategy: "USER_PREFERENCE"}, both, lvl2, []m{email3, totp2}},
		{"user preference: only the methods that reach the level", authflow.Policy{PasswordLevel: 1, TOTPLevel: 2, EmailLevel: 3, Strategy: "USER_PREFERENCE"}, both, lvl3, []m{email3}},
		{"the email code below the level: refused", authflow.Policy{PasswordLevel: 1, EmailLevel: 2}, mailOnly, lvl3, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := authflow.Decide(tc.pol, authflow.Request{Scopes: []string{"s"}, Configured: tc.scopes, Person: tc.person, Auth: password,
				ConsentRequired: true, Consented: true})
			if tc.want == nil {
				if d.Step != authflow.Refuse || d.Reason != authflow.ReasonLevel {
					t.Fatalf("Decide = %v %q %v, want refused for the level", d.Step, d.Reason, d.Methods)
				}
				return
			}
			if d.Step != authflow.StepUp || !slices.Equal(d.Methods, tc.want) || d.Method != tc.want[0].Name {
				t.Fatalf("Decide = %v %q %v, want step-up %v", d.Step, d.Method, d.Methods, tc.want)
			}
			if lvl, ok := d.Offers(tc.want[0].Name); !ok || lvl != tc.want[0].Level {
				t.Errorf("Offers(%s) = %d %v", tc.want[0].Name, lvl, ok)
			}
			for _, other := range []string{"totp", "email"} {
				if _, ok := d.Offers(other); ok != slices.ContainsFunc(tc.want, func(x m) bool { return x.Name == other }) {
					t.Errorf("Offers(%s) = %v", other, ok)
				}
			}
		})
	}
	// A stepped-up session is not offered another step-up.
	d := authflow.Decide(authflow.Policy{PasswordLevel: 1, EmailLevel: 2}, authflow.Request{Scopes: []string{"s"}, Configured: lvl2,
		Person: mailOnly, Auth: &authflow.Authentication{Level: 2, AMR: []string{"DEFAULT", "OTP", "EMAIL"}}})
	if _, ok := d.Offers("email"); ok || d.Step != authflow.Issue {
		t.Fatalf("stepped-up session: %v %v", d.Step, d.Methods)
	}
}

// With activation on, a CREATED person is refused by every flow, the ones
// without pages too (the password grant, a refresh, in-app approval).
func TestActivationRequiredRefusesCreatedPersons(t *testing.T) {
	created := &store.Person{ID: "p", Status: "CREATED"}
	auth := &authflow.Authentication{Level: 1, AMR: []string{"DEFAULT"}, Time: time.Now()}
	for _, kind := range []authflow.Kind{authflow.Browser, authflow.InApp, authflow.Password, authflow.Refresh} {
		on := authflow.Decide(authflow.Policy{PasswordLevel: 1, ActivationRequired: true}, authflow.Request{Kind: kind, Person: created, Auth: auth})
		if on.Step != authflow.Refuse || on.Reason != authflow.ReasonInactive {
			t.Errorf("kind %d, activation on: %v %q, want refused as inactive", kind, on.Step, on.Reason)
		}
		off := authflow.Decide(authflow.Policy{PasswordLevel: 1}, authflow.Request{Kind: kind, Person: created, Auth: auth})
		if off.Step != authflow.Issue {
			t.Errorf("kind %d, activation off: %v, want issue", kind, off.Step)
		}
	}
	p := authflow.Policy{ActivationRequired: true}
	if !p.MaySignIn("ACTIVATED") || p.MaySignIn("CREATED") || p.MaySignIn("BLOCKED") || !(authflow.Policy{}).MaySignIn("CREATED") {
		t.Error("Policy.MaySignIn")
	}
}

// An approval carries what was decided, not what the caller would like.
func TestApprovalCarriesTheAuthentication(t *testing.T) {
	auth := &authflow.Authentication{Level: 2, AMR: []string{"DEFAULT", "OTP"}, Time: time.Now()}
	d := authflow.Decide(policy, authflow.Request{Scopes: []string{"a", "b"}, Person: &store.Person{ID: "p9", Status: "ACTIVATED"}, Auth: auth})
	a, ok := d.Approved()
	if !ok || a.Subject() != "p9" || a.Level() != 2 || len(a.AMR()) != 2 || !a.AuthTime().Equal(auth.Time) || len(a.Scopes()) != 2 {
		t.Fatalf("approval %+v", a)
	}
	if (authflow.Approval{}).Subject() != "" {
		t.Fatal("the zero approval names a subject")
	}
}
