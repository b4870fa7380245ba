package authflow_test

import (
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
