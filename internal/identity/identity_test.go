package identity

import (
	"context"
	"errors"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/latchkey/latchkey/internal/config"
	"github.com/latchkey/latchkey/internal/events"
	"github.com/latchkey/latchkey/internal/store"
	"github.com/latchkey/latchkey/internal/store/sqlite"
)

type clock struct{ t time.Time }

func (c *clock) now() time.Time { return c.t }

func newService(t *testing.T) (*Service, store.Store, *clock) {
	t.Helper()
	st, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	// From now, at the start of a throttle window, so the test stays in one.
	c := &clock{t: time.Now().UTC().Truncate(ThrottleWindow).Add(time.Second)}
	rec := events.NewRecorder()
	rec.Now = c.now
	s, err := New(st, rec, c.now)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.SeedPersons(context.Background(), []config.Person{{Email: "Jane@Example.com", Password: "right-password", FirstName: "Jane"}}); err != nil {
		t.Fatal(err)
	}
	return s, st, c
}

func login(s *Service, ip, email, pw string) error {
	r := httptest.NewRequest("POST", "/login", nil)
	r.RemoteAddr = ip + ":4242"
	_, err := s.CheckPassword(context.Background(), r, email, pw)
	return err
}

func TestCheckPassword(t *testing.T) {
	s, _, _ := newService(t)
	if err := login(s, "10.0.0.1", "jane@example.com", "right-password"); err != nil {
		t.Errorf("right password, email in other case: %v", err)
	}
	for name, tc := range map[string][2]string{
		"wrong password":  {"jane@example.com", "wrong"},
		"unknown account": {"nobody@example.com", "right-password"},
		"empty password":  {"jane@example.com", ""},
	} {
		if err := login(s, "10.0.0.1", tc[0], tc[1]); !errors.Is(err, ErrBadCredentials) {
			t.Errorf("%s: %v, want ErrBadCredentials", name, err)
		}
	}
}

func TestFailedLoginsAreThrottledPerAccount(t *testing.T) {
	s, _, c := newService(t)
	for i := range MaxFailsPerAccount {
		// Each failure from another address: only the account counter trips.
		if err := login(s, "10.0.1."+string(rune('1'+i)), "jane@example.com", "wrong"); !errors.Is(err, ErrBadCredentials) {
			t.Fatalf("failure %d: %v", i+1, err)
		}
	}
	if err := login(s, "10.0.2.1", "jane@example.com", "right-password"); !errors.Is(err, ErrThrottled) {
		t.Errorf("after %d failures even the right password must wait: %v", MaxFailsPerAccount, err)
	}
	c.t = c.t.Add(ThrottleWindow)
	if err := login(s, "10.0.2.1", "jane@example.com", "right-password"); err != nil {
		t.Errorf("after the window: %v", err)
	}
}

func TestFailedLoginsAreThrottledPerAddress(t *testing.T) {
	s, _, _ := newService(t)
	for i := range MaxFailsPerIP {
		// A different account each time: only the address counter trips.
		email := strings.Repeat("x", i+1) + "@example.com"
		if err := login(s, "10.9.9.9", email, "guess"); !errors.Is(err, ErrBadCredentials) {
			t.Fatalf("failure %d: %v", i+1, err)
		}
	}
	if err := login(s, "10.9.9.9", "jane@example.com", "right-password"); !errors.Is(err, ErrThrottled) {
		t.Errorf("an address that failed %d times must wait: %v", MaxFailsPerIP, err)
	}
	if err := login(s, "10.9.9.10", "jane@example.com", "right-password"); err != nil {
		t.Errorf("another address is not throttled: %v", err)
	}
}

func TestBlockedPersonCannotLogIn(t *testing.T) {
	s, st, _ := newService(t)
	p, _ := st.GetPersonByEmail(context.Background(), "", "jane@example.com")
	if err := st.UpdatePerson(context.Background(), p.ID, func(p store.Person) (store.Person, error) { p.Status = StatusBlocked; return p, nil }); err != nil {
		t.Fatal(err)
	}
	if err := login(s, "10.0.0.1", "jane@example.com", "right-password"); !errors.Is(err, ErrBadCredentials) {
		t.Errorf("blocked person: %v", err)
	}
}

func TestOutdatedHashIsUpgradedAtLogin(t *testing.T) {
	s, st, _ := newService(t)
	p, _ := st.GetPersonByEmail(context.Background(), "", "jane@example.com")
	// A bcrypt hash stands for any outdated algorithm.
	old := bcryptOf(t, "right-password")
	if err := st.UpdatePerson(context.Background(), p.ID, func(p store.Person) (store.Person, error) { p.PasswordHash = old; return p, nil }); err != nil {
		t.Fatal(err)
	}
	if err := login(s, "10.0.0.1", "jane@example.com", "right-password"); err != nil {
		t.Fatal(err)
	}
	p, _ = st.GetPerson(context.Background(), p.ID)
	if !strings.HasPrefix(p.PasswordHash, "$argon2id$") {
		t.Errorf("hash after login = %.12s..., want argon2id", p.PasswordHash)
	}
	if err := login(s, "10.0.0.1", "jane@example.com", "right-password"); err != nil {
		t.Errorf("login with the upgraded hash: %v", err)
	}
}
