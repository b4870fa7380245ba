package storetest

import (
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/uuid"

	"github.com/latchkey/latchkey/internal/store"
)

func person(id, email string) store.Person {
	return store.Person{ID: id, Email: email, PasswordHash: "$argon2id$x", FirstName: "Jane", LastName: "Doe",
		Status: "ACTIVATED", Custom: map[string]string{"loyalty": "gold"}, CreatedAt: t0, UpdatedAt: t0,
		Profile: store.PersonProfile{Gender: "F", DateOfBirth: "1990-02-28", Initials: "J.", DisplayName: "Jane D.",
			Emails:          []store.ContactPoint{{Value: email, Primary: true, Verified: true}, {Value: "alt-" + email}},
			Phones:          []store.ContactPoint{{Value: "+31612345678", Primary: true}},
			Addresses:       []store.PostalAddress{{HouseNumber: 12, HouseNumberAddition: "b", StreetName: "Main St", City: "Utrecht", PostalCode: "3511 AA", CountryCode: "NL", Attention: "Jane", Primary: true}},
			PreferredLocale: "nl-NL"},
		TOTPSecret: []byte{1, 2, 3, 0, 255}}
}

func testPersons(t *testing.T, s store.Store) {
	want := person("p1", "Jane.Doe@Example.com")
	if err := s.CreatePerson(ctx(), want); err != nil {
		t.Fatal(err)
	}
	want.CreatedAt, want.UpdatedAt = t0.UTC(), t0.UTC()
	got, err := s.GetPerson(ctx(), "p1")
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("round trip (-want +got):\n%s", d)
	}
	byEmail, err := s.GetPersonByEmail(ctx(), "", "jane.doe@EXAMPLE.COM")
	if err != nil || byEmail.ID != "p1" {
		t.Errorf("GetPersonByEmail is case-insensitive: %+v, %v", byEmail, err)
	}
	if _, err := s.GetPersonByEmail(ctx(), "", "other@example.com"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("unknown email: %v, want ErrNotFound", err)
	}
	err = s.UpdatePerson(ctx(), "p1", func(p store.Person) (store.Person, error) {
		p.FirstName, p.PasswordHash, p.Custom = "Janet", "$argon2id$new", map[string]string{"tier": "2"}
		return p, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	got, _ = s.GetPerson(ctx(), "p1")
	if got.FirstName != "Janet" || got.PasswordHash != "$argon2id$new" || got.Custom["tier"] != "2" || !got.CreatedAt.Equal(t0) {
		t.Errorf("after update: %+v", got)
	}
	boom := errors.New("boom")
	if err := s.UpdatePerson(ctx(), "p1", func(p store.Person) (store.Person, error) { return p, boom }); !errors.Is(err, boom) {
		t.Errorf("fn error = %v, want it returned", err)
	}
	if err := s.UpdatePerson(ctx(), "nope", func(p store.Person) (store.Person, error) { return p, nil }); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("update unknown = %v, want ErrNotFound", err)
	}
}

func testPersonConflicts(t *testing.T, s store.Store) {
	if err := s.CreatePerson(ctx(), person("p1", "a@example.com")); err != nil {
		t.Fatal(err)
	}
	if err := s.CreatePerson(ctx(), person("p1", "b@example.com")); !errors.Is(err, store.ErrConflict) {
		t.Errorf("same id: %v, want ErrConflict", err)
	}
	if err := s.CreatePerson(ctx(), person("p2", "A@EXAMPLE.COM")); !errors.Is(err, store.ErrConflict) {
		t.Errorf("same email in other case: %v, want ErrConflict", err)
	}
	if err := s.CreatePerson(ctx(), person("p2", "b@example.com")); err != nil {
		t.Fatal(err)
	}
	// Partitions: the same email is another person in another partition,
	// and lookups see only their own partition.
	other := person("p3", "A@example.com")
	other.Partition = "tenant-2"
	if err := s.CreatePerson(ctx(), other); err != nil {
		t.Fatalf("same email in another partition: %v", err)
	}
	if got, err := s.GetPersonByEmail(ctx(), "tenant-2", "a@example.com"); err != nil || got.ID != "p3" || got.Partition != "tenant-2" {
		t.Errorf("lookup in tenant-2 = %+v, %v", got, err)
	}
	if got, err := s.GetPersonByEmail(ctx(), "", "a@example.com"); err != nil || got.ID != "p1" {
		t.Errorf("lookup in the default partition = %+v, %v", got, err)
	}
	if _, err := s.GetPersonByEmail(ctx(), "tenant-3", "a@example.com"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("lookup in an empty partition = %v, want ErrNotFound", err)
	}
	err := s.UpdatePerson(ctx(), "p2", func(p store.Person) (store.Person, error) { p.Email = "a@Example.com"; return p, nil })
	if !errors.Is(err, store.ErrConflict) {
		t.Errorf("update to a taken email: %v, want ErrConflict", err)
	}
}

func testCreatePersonRace(t *testing.T, s store.Store) {
	wins := race(t, 10, func() error {
		return s.CreatePerson(ctx(), person(uuid.NewString(), "race@example.com"))
	}, store.ErrConflict)
	if wins != 1 {
		t.Errorf("%d of 10 concurrent creates of one email succeeded, want 1", wins)
	}
}

func testIdentities(t *testing.T, s store.Store) {
	for _, id := range []string{"p1", "p2"} {
		if err := s.CreatePerson(ctx(), person(id, id+"@example.com")); err != nil {
			t.Fatal(err)
		}
	}
	link := store.ExternalIdentity{IdPID: "idp-1", ExternalID: "ext-1", PersonID: "p1", CreatedAt: t0}
	if err := s.LinkIdentity(ctx(), link); err != nil {
		t.Fatal(err)
	}
	if err := s.LinkIdentity(ctx(), link); err != nil {
		t.Errorf("the same link again = %v, want nil", err)
	}
	taken := link
	taken.PersonID = "p2"
	if err := s.LinkIdentity(ctx(), taken); !errors.Is(err, store.ErrConflict) {
		t.Errorf("link to another person = %v, want ErrConflict", err)
	}
	elsewhere := taken
	elsewhere.Partition = "tenant-2"
	if err := s.LinkIdentity(ctx(), elsewhere); err != nil {
		t.Errorf("the same external id in another partition = %v", err)
	}
	got, err := s.ListIdentities(ctx(), "p1")
	if err != nil {
		t.Fatal(err)
	}
	want := []store.ExternalIdentity{{IdPID: "idp-1", ExternalID: "ext-1", PersonID: "p1", CreatedAt: t0.UTC()}}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("ListIdentities (-want +got):\n%s", d)
	}
	if got, _ := s.ListIdentities(ctx(), "nobody"); len(got) != 0 {
		t.Errorf("identities of an unknown person: %v", got)
	}

	// The address's proof ends the links made while it was unproven, and
	// only those, and only the person's.
	for _, e := range []store.ExternalIdentity{
		{IdPID: "idp-2", ExternalID: "squat", PersonID: "p1", Unproven: true, CreatedAt: t0.Add(time.Second)},
		{IdPID: "idp-2", ExternalID: "other", PersonID: "p2", Unproven: true, CreatedAt: t0},
	} {
		if err := s.LinkIdentity(ctx(), e); err != nil {
			t.Fatal(err)
		}
	}
	if got, err := s.FindIdentity(ctx(), "", "idp-2", "squat"); err != nil || !got.Unproven {
		t.Errorf("the unproven link reads back %+v, %v", got, err)
	}
	if n, err := s.EndUnprovenIdentities(ctx(), "p1"); err != nil || n != 1 {
		t.Errorf("EndUnprovenIdentities = %d, %v; want 1", n, err)
	}
	if got, _ := s.ListIdentities(ctx(), "p1"); !cmp.Equal(want, got) {
		t.Errorf("after EndUnprovenIdentities p1 has %+v, want the proven link alone", got)
	}
	if _, err := s.FindIdentity(ctx(), "", "idp-2", "other"); err != nil {
		t.Errorf("another person's unproven link: %v, want it kept", err)
	}
	if n, err := s.EndUnprovenIdentities(ctx(), "p1"); err != nil || n != 0 {
		t.Errorf("EndUnprovenIdentities again = %d, %v; want 0", n, err)
	}
}

func testLinkIdentityRace(t *testing.T, s store.Store) {
	var ids []string
	for i := range 10 {
		id := uuid.NewString()
		ids = append(ids, id)
		if err := s.CreatePerson(ctx(), person(id, fmt.Sprintf("p%d@example.com", i))); err != nil {
			t.Fatal(err)
		}
	}
	var next atomic.Int32
	wins := race(t, 10, func() error {
		id := ids[next.Add(1)-1]
		return s.LinkIdentity(ctx(), store.ExternalIdentity{IdPID: "idp", ExternalID: "same", PersonID: id})
	}, store.ErrConflict)
	if wins != 1 {
		t.Errorf("%d of 10 persons linked one external identity, want 1", wins)
	}
}
