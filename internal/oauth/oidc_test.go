package oauth

import (
	"net/url"
	"slices"
	"testing"
	"time"

	"github.com/latchkey/latchkey/internal/authflow"
	"github.com/latchkey/latchkey/internal/store"
)

func TestParseOIDCParameters(t *testing.T) {
	for _, tc := range []struct {
		query  string
		prompt []string
		maxAge int64 // -1: none
		bad    bool
	}{
		{"", nil, -1, false},
		{"prompt=login&max_age=0", []string{"login"}, 0, false},
		{"prompt=consent+login+consent", []string{"consent", "login"}, -1, false},
		{"prompt=select_account", []string{"select_account"}, -1, false},
		{"prompt=none", []string{"none"}, -1, false},
		{"max_age=99999999999", nil, maxMaxAge, false},
		{"prompt=none+login", nil, -1, true},
		{"prompt=none+none+consent", nil, -1, true},
		{"prompt=sideways", nil, -1, true},
		{"prompt=LOGIN", nil, -1, true},
		{"max_age=-5", nil, -1, true},
		{"max_age=1e3", nil, -1, true},
		{"max_age=", nil, -1, true},
		{"max_age=99999999999999999999999", nil, -1, true},
	} {
		q, err := url.ParseQuery(tc.query)
		if err != nil {
			t.Fatal(err)
		}
		var ar AuthorizeRequest
		desc := ar.parseOIDC(q)
		if (desc != "") != tc.bad {
			t.Errorf("%q: description %q, want bad=%v", tc.query, desc, tc.bad)
			continue
		}
		if tc.bad {
			continue
		}
		got := int64(-1)
		if ar.MaxAge != nil {
			got = *ar.MaxAge
		}
		if !slices.Equal(ar.Prompt, tc.prompt) || got != tc.maxAge {
			t.Errorf("%q: prompt %v max_age %d, want %v %d", tc.query, ar.Prompt, got, tc.prompt, tc.maxAge)
		}
	}
}

func TestAuthNotBefore(t *testing.T) {
	at := time.Now().Truncate(time.Second)
	hour := int64(3600)
	for _, tc := range []struct {
		name string
		ar   AuthorizeRequest
		want time.Time
	}{
		{"nothing asked", AuthorizeRequest{RequestedAt: at.Unix()}, time.Time{}},
		{"prompt=login: from the request", AuthorizeRequest{RequestedAt: at.Unix(), Prompt: []string{PromptLogin}}, at},
		{"select_account is login", AuthorizeRequest{RequestedAt: at.Unix(), Prompt: []string{PromptSelectAccount}}, at},
		{"max_age counts back from the request", AuthorizeRequest{RequestedAt: at.Unix(), MaxAge: &hour}, at.Add(-time.Hour)},
		{"hint of another person", AuthorizeRequest{RequestedAt: at.Unix(), HintSubject: "someone-else"}, at},
		{"hint of this person", AuthorizeRequest{RequestedAt: at.Unix(), HintSubject: "p1"}, time.Time{}},
		{"a device verification has no request time", AuthorizeRequest{Prompt: []string{PromptLogin}}, time.Time{}},
	} {
		if got := tc.ar.authNotBefore("p1"); !got.Equal(tc.want) {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
}

func TestPromptNoneErrors(t *testing.T) {
	ar := &AuthorizeRequest{RedirectURI: "https://app.example/cb", State: "s"}
	for _, tc := range []struct {
		d    authflow.Decision
		want string
	}{
		{authflow.Decision{}, ErrLoginRequired}, // no session
		{authflow.Decision{Step: authflow.Login}, ErrLoginRequired},
		{authflow.Decision{Step: authflow.Consent}, ErrConsentRequired},
		{authflow.Decision{Step: authflow.StepUp}, ErrInteractionRequired},
		{authflow.Decision{Step: authflow.Refuse, Reason: authflow.ReasonLevel}, ErrInteractionRequired},
		{authflow.Decision{Step: authflow.Refuse, Reason: authflow.ReasonInactive}, ErrLoginRequired},
	} {
		if e := promptNoneError(ar, tc.d); e.Code != tc.want || !e.Redirect || e.State != "s" {
			t.Errorf("%v: %+v, want %s", tc.d.Step, e, tc.want)
		}
	}
}

func TestAMR(t *testing.T) {
	for _, tc := range []struct{ in, want []string }{
		{nil, nil},
		{[]string{"DEFAULT"}, []string{"pwd"}},
		{[]string{"DEFAULT", "OTP"}, []string{"pwd", "otp", "mfa"}},
		{[]string{"DEFAULT", "OTP", "EMAIL"}, []string{"pwd", "otp", "mfa"}}, // the mailed code's step-up
		{[]string{"SOMETHING_NEW"}, nil},
		{[]string{"FEDERATED"}, []string{"fed"}},
		{[]string{"FEDERATED", "OTP"}, []string{"fed", "otp", "mfa"}},
		{[]string{"LDAP"}, []string{"pwd"}},
	} {
		if got := AMR(tc.in); !slices.Equal(got, tc.want) {
			t.Errorf("AMR(%v) = %v, want %v", tc.in, got, tc.want)
		}
	}
}

func TestStandardClaims(t *testing.T) {
	p := store.Person{ID: "p1", Email: "Jane@Example.com", FirstName: "Jane", LastName: "Doe", UpdatedAt: time.Unix(1700000000, 0),
		Profile: store.PersonProfile{Gender: "FEMALE", DateOfBirth: "1990-02-03", PreferredLocale: "nl_NL",
			Emails: []store.ContactPoint{{Value: "jane@example.com", Verified: true}},
			Phones: []store.ContactPoint{{Value: "+31 6 1"}, {Value: "+31 6 2", Primary: true, Verified: true}},
			Addresses: []store.PostalAddress{{StreetName: "Dorpsstraat", HouseNumber: 12, HouseNumberAddition: "a",
				City: "Utrecht", PostalCode: "3511 AA", CountryCode: "NL"}}}}
	if got := standardClaims(p, []string{"openid"}); len(got) != 0 {
		t.Errorf("openid alone releases %v", got)
	}
	got := standardClaims(p, []string{"openid", "profile", "email", "phone", "address"})
	want := map[string]any{"name": "Jane Doe", "given_name": "Jane", "family_name": "Doe", "gender": "female",
		"birthdate": "1990-02-03", "locale": "nl-NL", "updated_at": int64(1700000000), "email": "Jane@Example.com",
		"email_verified": true, "phone_number": "+31 6 2", "phone_number_verified": true}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s = %#v, want %#v", k, got[k], v)
		}
	}
	addr, _ := got["address"].(map[string]string)
	if addr["street_address"] != "Dorpsstraat 12a" || addr["locality"] != "Utrecht" || addr["country"] != "NL" {
		t.Errorf("address %v", got["address"])
	}
}

func TestPickLanguage(t *testing.T) {
	for in, want := range map[string]string{"": "", "fr-FR nl-NL en": "nl", "EN-gb": "en", "de": "", "nl": "nl"} {
		if got := PickLanguage(in, []string{"en", "nl"}); got != want {
			t.Errorf("PickLanguage(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestOIDCScopesNeedAPersonGrant(t *testing.T) {
	web := store.Client{Scopes: []string{"read"}, GrantTypes: []string{"authorization_code"}}
	machine := store.Client{Scopes: []string{"read"}, GrantTypes: []string{"client_credentials"}}
	if _, desc := AllowedScopes(web, []string{"openid", "profile", "read"}); desc != "" {
		t.Errorf("web client: %s", desc)
	}
	if _, desc := AllowedScopes(machine, []string{"openid"}); desc == "" {
		t.Error("a client credentials client may ask for openid")
	}
	if _, desc := AllowedScopes(web, []string{"write"}); desc == "" {
		t.Error("an unlisted scope is allowed")
	}
}
