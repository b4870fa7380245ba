package admin_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/latchkey/latchkey/internal/identity"
	"github.com/latchkey/latchkey/internal/personimport"
	"github.com/latchkey/latchkey/internal/server/servertest"
)

// importedPerson fills every member of the import's Profile, written as a
// read gives it back: custom attributes by name, verified given.
func importedPerson() personimport.Person {
	yes, no := true, false
	house := 221
	return personimport.Person{
		Status: "ACTIVATED",
		Profile: &personimport.Profile{
			ReferenceID: "3d0c5f8e-62a1-4b7d-8e19-7a4c2b9d1f05",
			EmailAddresses: []personimport.Contact{{Value: "Grace.Hopper@example.org", Primary: true, Verified: &yes},
				{Value: "amazing.grace@example.com", Primary: false, Verified: &no}},
			Gender:      "F",
			Name:        &personimport.Name{FirstName: "Grace", LastName: "Hopper", Initials: "G.B.", DisplayName: "Amazing Grace"},
			DateOfBirth: "1906-12-09",
			PhoneNumbers: []personimport.Contact{{Value: "+1 212 555 0100", Primary: true, Verified: &yes},
				{Value: "+1 212 555 0199", Primary: false, Verified: &no}},
			Addresses: []personimport.Address{
				{HouseNumber: &house, HouseNumberAddition: "B", StreetName: "Baker Street", City: "New York", PostalCode: "10001",
					Region: "NY", CountryCode: "US", CompanyName: "Eckert-Mauchly", Attentation: "Dept. of Compilers", Primary: true},
				{StreetName: "Navy Yard", City: "Arlington", CountryCode: "US"}},
			CustomAttributes: []personimport.Attribute{{Name: "rank", Value: "rear admiral"}, {Name: "team", Value: "cobol"}},
			PreferredLocale:  "en_US",
		},
		Identities: personimport.Identities{{IdPID: identity.PasswordIdPID, ExternalPersonID: "legacy-1906"}},
	}
}

// personRead is the part of the admin read that mirrors the import.
type personRead struct {
	Status     string               `json:"status"`
	Email      string               `json:"email"`
	Profile    personimport.Profile `json:"profile"`
	Identities []struct {
		IdPID            string `json:"idp_id"`
		ExternalPersonID string `json:"external_person_id"`
	} `json:"identities"`
}

func readPerson(t *testing.T, r result) personRead {
	t.Helper()
	if r.status != 200 {
		t.Fatalf("read: %d %s", r.status, r.body)
	}
	var p personRead
	if err := json.Unmarshal(r.body, &p); err != nil {
		t.Fatal(err)
	}
	return p
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestImportedProfileReadsBack: what the import API took, the admin API
// reads back equal (in the import's own shape), PATCH takes the read back
// as no change, and the import takes it back too.
func TestImportedProfileReadsBack(t *testing.T) {
	for _, backend := range servertest.Backends {
		t.Run(backend, func(t *testing.T) {
			s := servertest.Start(t, personsConfig(), servertest.Options{Backend: backend})
			in := importedPerson()
			if r := call(t, s, "POST", "/api/import/persons", mustJSON(t, map[string]any{"persons": []any{in}}), ops); r.status != 201 {
				t.Fatalf("import: %d %s", r.status, r.body)
			}
			path := "/api/v1/persons/" + in.Profile.ReferenceID
			read := call(t, s, "GET", path, "", ops)
			got := readPerson(t, read)
			if d := cmp.Diff(*in.Profile, got.Profile); d != "" {
				t.Errorf("the profile read back differs from the imported one (-imported +read):\n%s", d)
			}
			if got.Status != in.Status || got.Email != "Grace.Hopper@example.org" {
				t.Errorf("read: status %s, email %s", got.Status, got.Email)
			}
			if len(got.Identities) != 1 || got.Identities[0].IdPID != identity.PasswordIdPID ||
				got.Identities[0].ExternalPersonID != "legacy-1906" {
				t.Errorf("identities read back: %+v", got.Identities)
			}

			// PATCH with what was read: no change, no write, no event.
			ctx := context.Background()
			before, err := s.Store.GetPerson(ctx, in.Profile.ReferenceID)
			if err != nil {
				t.Fatal(err)
			}
			updates := strings.Count(strings.Join(eventTypes(t, s.Store, "person", "ops"), " "), "person.PersonUpdatedEvent")
			r := call(t, s, "PATCH", path, mustJSON(t, map[string]any{"status": got.Status, "profile": got.Profile}), ops)
			if r.status != 200 || string(r.body) != string(read.body) {
				t.Errorf("PATCH of the read value: %d\n%s\nwant the read unchanged\n%s", r.status, r.body, read.body)
			}
			after, err := s.Store.GetPerson(ctx, in.Profile.ReferenceID)
			if err != nil {
				t.Fatal(err)
			}
			if !after.UpdatedAt.Equal(before.UpdatedAt) {
				t.Errorf("PATCH of the read value wrote the person: updated_at %s -> %s", before.UpdatedAt, after.UpdatedAt)
			}
			if n := strings.Count(strings.Join(eventTypes(t, s.Store, "person", "ops"), " "), "person.PersonUpdatedEvent"); n != updates {
				t.Errorf("PATCH of the read value recorded %d update events", n-updates)
			}

			// The import takes the read back too, and it still reads the same.
			again := personimport.Person{Status: got.Status, Profile: &got.Profile}
			if r := call(t, s, "POST", "/api/import/persons", mustJSON(t, map[string]any{"persons": []any{again}}), ops); r.status != 201 {
				t.Fatalf("import of the read: %d %s", r.status, r.body)
			}
			if d := cmp.Diff(got.Profile, readPerson(t, call(t, s, "GET", path, "", ops)).Profile); d != "" {
				t.Errorf("after importing the read (-before +after):\n%s", d)
			}

			// A real change through profile: the secondary address becomes
			// the login email; a custom attribute goes.
			changed := got.Profile
			changed.EmailAddresses = []personimport.Contact{{Value: "amazing.grace@example.com", Primary: true},
				{Value: "Grace.Hopper@example.org", Primary: false}}
			changed.CustomAttributes = changed.CustomAttributes[:1]
			r = call(t, s, "PATCH", path, mustJSON(t, map[string]any{"profile": changed}), ops)
			now := readPerson(t, r)
			if now.Email != "amazing.grace@example.com" || len(now.Profile.CustomAttributes) != 1 ||
				now.Profile.EmailAddresses[0].Verified == nil || *now.Profile.EmailAddresses[0].Verified {
				t.Errorf("PATCH of a changed profile: %s", r.body)
			}
			if p, err := s.Store.GetPersonByEmail(ctx, "", "amazing.grace@example.com"); err != nil || p.ID != in.Profile.ReferenceID {
				t.Errorf("the new login email finds %q, %v", p.ID, err)
			}
		})
	}
}

// TestPatchProfileRefusals: a profile that breaks the import's rules is
// refused with the import's message, at the member, and changes nothing.
func TestPatchProfileRefusals(t *testing.T) {
	s := servertest.Start(t, personsConfig(), servertest.Options{})
	in := importedPerson()
	if r := call(t, s, "POST", "/api/import/persons", mustJSON(t, map[string]any{"persons": []any{in}}), ops); r.status != 201 {
		t.Fatalf("import: %d %s", r.status, r.body)
	}
	path := "/api/v1/persons/" + in.Profile.ReferenceID
	before := call(t, s, "GET", path, "", ops)
	profile := func(mod func(p *personimport.Profile)) string {
		p := readPerson(t, before).Profile
		mod(&p)
		return mustJSON(t, map[string]any{"profile": p})
	}
	for _, tc := range []struct {
		name, body string
		status     int
		field, msg string
	}{
		{"the same email address twice", profile(func(p *personimport.Profile) {
			p.EmailAddresses[1].Value = "grace.hopper@EXAMPLE.org"
		}), 400, "profile.email_addresses", `email address "grace.hopper@EXAMPLE.org" appears more than once`},
		{"the same phone number twice", profile(func(p *personimport.Profile) {
			p.PhoneNumbers[1].Value = p.PhoneNumbers[0].Value
		}), 400, "profile.phone_numbers", "appears more than once"},
		{"the same postal address twice", profile(func(p *personimport.Profile) {
			p.Addresses[1] = p.Addresses[0]
		}), 400, "profile.addresses", "the same postal address appears more than once"},
		{"no primary email address", profile(func(p *personimport.Profile) {
			p.EmailAddresses[0].Primary = false
		}), 400, "profile.email_addresses", "a primary email address is required"},
		{"a custom attribute twice", profile(func(p *personimport.Profile) {
			p.CustomAttributes[1].Name = p.CustomAttributes[0].Name
		}), 400, "profile.custom_attributes", "appears twice"},
		{"no reference_id", profile(func(p *personimport.Profile) { p.ReferenceID = "" }),
			400, "profile.reference_id", "profile.reference_id is required"},
		{"another person's reference_id", profile(func(p *personimport.Profile) {
			p.ReferenceID = "00000000-0000-4000-8000-000000000000"
		}), 400, "profile.reference_id", "is not the person's id"},
		{"profile and a member one by one", `{"profile":` + mustJSON(t, readPerson(t, before).Profile) + `,"first_name":"G"}`,
			400, "profile", "not both"},
		{"an unknown member of the profile", `{"profile":{"reference_id":"` + in.Profile.ReferenceID + `","nickname":"x"}}`,
			400, "", ""},
		{"a duplicate by the older members", `{"email_addresses":[{"value":"a@example.org","primary":true},{"value":"A@example.org"}]}`,
			400, "email_addresses", "appears more than once"},
		{"another person's login email", profile(func(p *personimport.Profile) {
			p.EmailAddresses[0].Value = "kept@example.org"
		}), 409, "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := call(t, s, "PATCH", path, tc.body, ops)
			if r.status != tc.status {
				t.Fatalf("%d %s, want %d", r.status, r.body, tc.status)
			}
			if tc.field != "" {
				details, _ := r.json["details"].([]any)
				desc, _ := r.json["error_description"].(string)
				if len(details) != 1 || details[0] != tc.field || !strings.Contains(desc, tc.msg) {
					t.Errorf("%s, want details [%s] and a description with %q", r.body, tc.field, tc.msg)
				}
			}
			if after := call(t, s, "GET", path, "", ops); string(after.body) != string(before.body) {
				t.Errorf("a refused PATCH changed the person:\n%s", after.body)
			}
		})
	}
}

// TestReadHoldsTheLoginEmail: a person the config file made (who holds the
// login email only as such) reads with it among the email addresses, as
// the primary one; the older flat read shows it too.
func TestReadHoldsTheLoginEmail(t *testing.T) {
	s := servertest.Start(t, personsConfig(), servertest.Options{})
	r := call(t, s, "GET", "/api/v1/persons/"+personID(t, s), "", ops)
	got := readPerson(t, r)
	no := false
	want := []personimport.Contact{{Value: personEmail, Primary: true, Verified: &no}}
	if d := cmp.Diff(want, got.Profile.EmailAddresses); d != "" {
		t.Errorf("profile.email_addresses (-want +got):\n%s", d)
	}
	flat, _ := r.json["email_addresses"].([]any)
	if len(flat) != 1 || flat[0].(map[string]any)["value"] != personEmail {
		t.Errorf("email_addresses: %v", r.json["email_addresses"])
	}
	if n := got.Profile.Name; n == nil || n.FirstName != "Zebulon" || n.DisplayName != "Zebulon Quaxworth" {
		t.Errorf("profile.name: %+v", n)
	}
}

// TestDerivedDisplayNameFollowsTheName: a person without a display name
// reads one derived from the name; a profile sent back with it unchanged
// and a new first name reads the new derived one, not the old one pinned.
func TestDerivedDisplayNameFollowsTheName(t *testing.T) {
	s := servertest.Start(t, personsConfig(), servertest.Options{})
	path := "/api/v1/persons/" + personID(t, s)
	pr := readPerson(t, call(t, s, "GET", path, "", ops)).Profile
	pr.Name.FirstName = "Zeb"
	got := readPerson(t, call(t, s, "PATCH", path, mustJSON(t, map[string]any{"profile": pr}), ops)).Profile
	if got.Name.DisplayName != "Zeb Quaxworth" {
		t.Errorf("display name after a new first name: %q, want Zeb Quaxworth", got.Name.DisplayName)
	}
	got = readPerson(t, call(t, s, "PATCH", path, `{"last_name":"Q."}`, ops)).Profile
	if got.Name.DisplayName != "Zeb Q." {
		t.Errorf("display name after a new last name: %q, want Zeb Q.", got.Name.DisplayName)
	}
	// A display name of its own stays.
	pr = got
	pr.Name.DisplayName = "The Bold"
	readPerson(t, call(t, s, "PATCH", path, mustJSON(t, map[string]any{"profile": pr}), ops))
	if got = readPerson(t, call(t, s, "PATCH", path, `{"first_name":"Zebulon"}`, ops)).Profile; got.Name.DisplayName != "The Bold" {
		t.Errorf("display name of its own after a new first name: %q", got.Name.DisplayName)
	}
}

// TestPatchEmailReplacesTheLoginAddress: the older email member makes the
// new address the primary one in place of the old; a secondary entry of
// the same address is taken up with its verification.
func TestPatchEmailReplacesTheLoginAddress(t *testing.T) {
	s := servertest.Start(t, personsConfig(), servertest.Options{})
	in := importedPerson()
	if r := call(t, s, "POST", "/api/import/persons", mustJSON(t, map[string]any{"persons": []any{in}}), ops); r.status != 201 {
		t.Fatalf("import: %d %s", r.status, r.body)
	}
	path := "/api/v1/persons/" + in.Profile.ReferenceID
	yes, no := true, false
	for _, tc := range []struct {
		email string
		want  []personimport.Contact
	}{
		{"grace@example.net", []personimport.Contact{{Value: "grace@example.net", Primary: true, Verified: &no},
			{Value: "amazing.grace@example.com", Verified: &no}}},
		{"Amazing.Grace@example.com", []personimport.Contact{{Value: "Amazing.Grace@example.com", Primary: true, Verified: &no}}},
	} {
		got := readPerson(t, call(t, s, "PATCH", path, mustJSON(t, map[string]string{"email": tc.email}), ops))
		if d := cmp.Diff(tc.want, got.Profile.EmailAddresses); d != "" || got.Email != tc.email {
			t.Errorf("email %s: login %s, addresses (-want +got):\n%s", tc.email, got.Email, d)
		}
	}
	// Verified travels with the address that becomes the login one.
	pr := readPerson(t, call(t, s, "GET", path, "", ops)).Profile
	pr.EmailAddresses = append(pr.EmailAddresses, personimport.Contact{Value: "proven@example.org", Verified: &yes})
	readPerson(t, call(t, s, "PATCH", path, mustJSON(t, map[string]any{"profile": pr}), ops))
	got := readPerson(t, call(t, s, "PATCH", path, `{"email":"proven@example.org"}`, ops))
	if e := got.Profile.EmailAddresses[0]; e.Value != "proven@example.org" || !e.Primary || !*e.Verified || len(got.Profile.EmailAddresses) != 1 {
		t.Errorf("after email of a proven secondary address: %+v", got.Profile.EmailAddresses)
	}
}
