package storetest

import (
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/uuid"

	"github.com/latchkey/latchkey/internal/store"
)

func person(id, email string) store.Person {
	return store.Person{ID: id, Email: email, PasswordHash: "$argon2id$x", FirstName: "Jane", LastName: "Doe",
		Status: "ACTIVATED", Custom: map[string]string{"loyalty": "gold"}, CreatedAt: t0, UpdatedAt: t0}
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
	byEmail, err := s.GetPersonByEmail(ctx(), "jane.doe@EXAMPLE.COM")
	if err != nil || byEmail.ID != "p1" {
		t.Errorf("GetPersonByEmail is case-insensitive: %+v, %v", byEmail, err)
	}
	if _, err := s.GetPersonByEmail(ctx(), "other@example.com"); !errors.Is(err, store.ErrNotFound) {
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
