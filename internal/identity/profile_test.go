package identity

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/latchkey/latchkey/internal/config"
)

func TestProfileRules(t *testing.T) {
	now := time.Now()
	for _, tc := range []struct {
		name string
		ok   bool
		got  bool
	}{
		{"a plain address is an email", true, ValidEmail("jane@example.com")},
		{"an empty email is refused", false, ValidEmail("")},
		{"a display name is refused", false, ValidEmail("Jane <jane@example.com>")},
		{"an undotted domain is refused", false, ValidEmail("jane@localhost")},
		{"a domain ending in a dot is refused", false, ValidEmail("jane@example.com.")},
		{"an email over 254 bytes is refused", false, ValidEmail(strings.Repeat("a", 243) + "@example.com")},
		{"an address outside ASCII in NFKC is an email", true, ValidEmail("zoë@exämple.com")},
		{"fullwidth letters are refused (NFKC: case@)", false, ValidEmail("\uff43ase@example.com")},
		{"a fullwidth @ is refused", false, ValidEmail("case\uff20example.com")},
		{"a ligature is refused (NFKC: fi)", false, ValidEmail("\ufb01nance@example.com")},
		{"the Kelvin sign is refused (NFKC: K)", false, ValidEmail("\u212aelvin@example.com")},
		{"a decomposed accent is refused (NFKC composes it)", false, ValidEmail("zoe\u0308@example.com")},
		{"a fullwidth domain is refused", false, ValidEmail("case@\uff45xample.com")},
		{"no gender is a gender", true, ValidGender("")},
		{"U is a gender", true, ValidGender("U")},
		{"a lower-case gender is refused", false, ValidGender("m")},
		{"no date of birth is a date of birth", true, ValidDateOfBirth("", now)},
		{"today is a date of birth", true, ValidDateOfBirth(now.UTC().Format(time.DateOnly), now)},
		{"1850-01-01 is a date of birth", true, ValidDateOfBirth("1850-01-01", now)},
		{"a date before 1850 is refused", false, ValidDateOfBirth("1849-12-31", now)},
		{"tomorrow is refused", false, ValidDateOfBirth(now.AddDate(0, 0, 2).Format(time.DateOnly), now)},
		{"another layout is refused", false, ValidDateOfBirth("01/02/1990", now)},
	} {
		if tc.got != tc.ok {
			t.Errorf("%s: got %v", tc.name, tc.got)
		}
	}
}

// Seed persons of the config file follow the rule of every path that sets
// an email: a look-alike address stops the start with a clear error, and
// makes no person.
func TestSeedPersonsRefuseLookAlikeAddresses(t *testing.T) {
	s, st, _ := newService(t)
	err := s.SeedPersons(context.Background(), []config.Person{{Email: "\uff4aane@example.com", Password: "right-password"}})
	if err == nil || !strings.Contains(err.Error(), "compatibility characters") {
		t.Fatalf("seeding a fullwidth address: %v", err)
	}
	if ps, _ := st.FindPersons(context.Background(), "\uff4aane@example.com"); len(ps) != 0 {
		t.Errorf("a person was made: %+v", ps)
	}
}
