package identity

import (
	"testing"

	"golang.org/x/crypto/bcrypt"
)

func bcryptOf(t *testing.T, pw string) string {
	t.Helper()
	b, err := bcrypt.GenerateFromPassword([]byte(pw), bcrypt.MinCost)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
