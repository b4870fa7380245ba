package personimport

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/latchkey/latchkey/internal/store"
)

// fullProfile fills every member of the import Profile, in the order and
// spelling a read gives back (custom attributes by name, verified given).
func fullProfile() Profile {
	yes, no := true, false
	house := 12
	return Profile{
		ReferenceID: "6f1c1e4e-8a43-4c55-9e77-3c1e0a3b5d10",
		EmailAddresses: []Contact{{Value: "ada@example.org", Primary: true, Verified: &yes},
			{Value: "ada.work@example.com", Primary: false, Verified: &no}},
		Gender:      "F",
		Name:        &Name{FirstName: "Ada", LastName: "Lovelace", Initials: "A.", DisplayName: "Countess Lovelace"},
		DateOfBirth: "1915-12-10",
		PhoneNumbers: []Contact{{Value: "+44 20 7946 0000", Primary: true, Verified: &yes},
			{Value: "+44 20 7946 0001", Primary: false, Verified: &no}},
		Addresses: []Address{{HouseNumber: &house, HouseNumberAddition: "b", StreetName: "St James's Square", City: "London",
			PostalCode: "SW1Y 4JH", Region: "Westminster", CountryCode: "GB", CompanyName: "Analytical Engines Ltd",
			Attentation: "Mr Babbage", Primary: true}},
		CustomAttributes: []Attribute{{Name: "loyalty", Value: "gold"}, {Name: "member_since", Value: "1833"}},
		PreferredLocale:  "en_GB",
	}
}

func TestProfileRoundTrip(t *testing.T) {
	now := time.Now()
	for _, tc := range []struct {
		name string
		in   Profile
	}{
		{"every member", fullProfile()},
		{"the least: one primary address", Profile{ReferenceID: "6f1c1e4e-8a43-4c55-9e77-3c1e0a3b5d10",
			EmailAddresses: []Contact{{Value: "x@example.org", Primary: true, Verified: ptr(false)}},
			PhoneNumbers:   []Contact{}, Addresses: []Address{}, CustomAttributes: []Attribute{}}},
		{"a display name equal to first plus last name", func() Profile {
			p := fullProfile()
			p.Name.DisplayName = "Ada Lovelace"
			return p
		}()},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, perr := CheckProfile(&tc.in, now)
			if perr != nil {
				t.Fatal(perr)
			}
			got := ProfileOf(p)
			if d := cmp.Diff(tc.in, got); d != "" {
				t.Fatalf("read back differs (-imported +read):\n%s", d)
			}
			// Writing back what was read stores the same person.
			again, perr := CheckProfile(&got, now)
			if perr != nil {
				t.Fatal(perr)
			}
			if d := cmp.Diff(p, again); d != "" {
				t.Fatalf("a write of the read changes the person:\n%s", d)
			}
		})
	}
}

// TestProfileOfStoredElsewhere: persons made by sign-up, the config file or
// an older admin PATCH hold the login email apart from (or beside a stale
// copy in) the email addresses; the read always shows it, once, as the
// primary one.
func TestProfileOfStoredElsewhere(t *testing.T) {
	for _, tc := range []struct {
		name string
		p    store.Person
		want []Contact
	}{
		{"only the login email", store.Person{ID: "x", Email: "a@example.org"},
			[]Contact{{Value: "a@example.org", Primary: true, Verified: ptr(false)}}},
		{"login email kept verified", store.Person{ID: "x", Email: "a@example.org",
			Profile: store.PersonProfile{Emails: []store.ContactPoint{{Value: "A@example.org", Primary: true, Verified: true}}}},
			[]Contact{{Value: "A@example.org", Primary: true, Verified: ptr(true)}}},
		{"a stale primary after a change of the login email", store.Person{ID: "x", Email: "new@example.org",
			Profile: store.PersonProfile{Emails: []store.ContactPoint{{Value: "old@example.org", Primary: true, Verified: true}}}},
			[]Contact{{Value: "new@example.org", Primary: true, Verified: ptr(false)},
				{Value: "old@example.org", Primary: false, Verified: ptr(true)}}},
		{"the login email stored twice", store.Person{ID: "x", Email: "a@example.org",
			Profile: store.PersonProfile{Emails: []store.ContactPoint{{Value: "a@example.org", Primary: true},
				{Value: "A@EXAMPLE.ORG"}}}},
			[]Contact{{Value: "a@example.org", Primary: true, Verified: ptr(false)}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if d := cmp.Diff(tc.want, ProfileOf(tc.p).EmailAddresses); d != "" {
				t.Fatal(d)
			}
		})
	}
}

// TestProfileReadShape: the read's JSON has the import's member names, with
// custom attributes as [{name, value}] and lists never null.
func TestProfileReadShape(t *testing.T) {
	b, err := json.Marshal(ProfileOf(store.Person{ID: "x", Email: "a@example.org", Custom: map[string]string{"b": "2", "a": "1"}}))
	if err != nil {
		t.Fatal(err)
	}
	want := `{"reference_id":"x","email_addresses":[{"value":"a@example.org","primary":true,"verified":false}],` +
		`"phone_numbers":[],"addresses":[],"custom_attributes":[{"name":"a","value":"1"},{"name":"b","value":"2"}]}`
	if string(b) != want {
		t.Fatalf("got  %s\nwant %s", b, want)
	}
}

func TestCheckProfileRefusals(t *testing.T) {
	for _, tc := range []struct {
		name      string
		mod       func(*Profile)
		code      int
		field, in string
	}{
		{"the same email address twice", func(p *Profile) {
			p.EmailAddresses = append(p.EmailAddresses, Contact{Value: "ada@example.org"})
		}, CodeInvalidEmail, "profile.email_addresses", "appears more than once"},
		{"the same email address twice, in other case", func(p *Profile) {
			p.EmailAddresses[1].Value = "ADA@example.org"
		}, CodeInvalidEmail, "profile.email_addresses", "appears more than once"},
		{"the same phone number twice", func(p *Profile) {
			p.PhoneNumbers[1].Value = p.PhoneNumbers[0].Value
		}, CodeUnknown, "profile.phone_numbers", "appears more than once"},
		{"the same postal address twice", func(p *Profile) {
			p.Addresses = append(p.Addresses, p.Addresses[0])
		}, CodeUnknown, "profile.addresses", "more than once"},
		{"no primary email address", func(p *Profile) { p.EmailAddresses[0].Primary = false },
			CodeNoPrimaryEmail, "profile.email_addresses", "primary email address is required"},
		{"two primary email addresses", func(p *Profile) { p.EmailAddresses[1].Primary = true },
			CodeNoPrimaryEmail, "profile.email_addresses", "exactly one"},
		{"the same custom attribute twice", func(p *Profile) {
			p.CustomAttributes = append(p.CustomAttributes, Attribute{Name: "loyalty", Value: "silver"})
		}, CodeUnknown, "profile.custom_attributes", "appears twice"},
		{"a name too long", func(p *Profile) { p.Name.Initials = strings.Repeat("x", maxText+1) },
			CodeUnknown, "profile.name.initials", "longer than"},
		{"no reference id", func(p *Profile) { p.ReferenceID = "" }, CodePersonIDRequired, "profile.reference_id", "required"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := fullProfile()
			tc.mod(&p)
			_, perr := CheckProfile(&p, time.Now())
			if perr == nil {
				t.Fatal("accepted")
			}
			if perr.Code != tc.code || perr.Field != tc.field || !strings.Contains(perr.Msg, tc.in) {
				t.Fatalf("got %d %s %q; want %d %s ...%q...", perr.Code, perr.Field, perr.Msg, tc.code, tc.field, tc.in)
			}
		})
	}
}

// FuzzProfileRoundTrip: whatever profile the import accepts, its read
// (ProfileOf) is accepted again and stores the same person, and reading
// that gives the same read.
func FuzzProfileRoundTrip(f *testing.F) {
	full, _ := json.Marshal(fullProfile())
	f.Add(full)
	f.Add([]byte(`{"reference_id":"6f1c1e4e-8a43-4c55-9e77-3c1e0a3b5d10","email_addresses":[{"value":"a@b.example","primary":true}]}`))
	f.Add([]byte(`{"reference_id":"6f1c1e4e-8a43-4c55-9e77-3c1e0a3b5d10","email_addresses":[{"value":"a@b.example","primary":true}],` +
		`"name":{"first_name":"A","last_name":"B","display_name":"A B"},"addresses":[{"house_number":0,"country_code":"nl"}]}`))
	now := time.Now()
	f.Fuzz(func(t *testing.T, b []byte) {
		var in Profile
		if json.Unmarshal(b, &in) != nil {
			return
		}
		p, perr := CheckProfile(&in, now)
		if perr != nil {
			return
		}
		read := ProfileOf(p)
		again, perr := CheckProfile(&read, now)
		if perr != nil {
			t.Fatalf("the read of an accepted profile is refused: %v\n%+v", perr, read)
		}
		if d := cmp.Diff(p, again); d != "" {
			t.Fatalf("writing back the read changes the person:\n%s", d)
		}
		if d := cmp.Diff(read, ProfileOf(again)); d != "" {
			t.Fatalf("the read changes:\n%s", d)
		}
	})
}
