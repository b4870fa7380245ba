package identity

import (
	"strings"
	"testing"
	"time"
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
