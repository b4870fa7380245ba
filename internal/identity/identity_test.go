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

// holdings gives the person a grant with an access token and a login session.
func holdings(t *testing.T, st store.Store, personID string, now time.Time) {
	t.Helper()
	ctx := context.Background()
	g := store.Grant{ID: "g-" + personID, ClientID: "c1", Subject: personID, CreatedAt: now, ExpiresAt: now.Add(time.Hour)}
	if err := st.CreateGrant(ctx, g); err != nil {
		t.Fatal(err)
	}
	if err := st.CreateToken(ctx, store.Token{Hash: []byte("t-" + personID), Kind: store.KindAccess, GrantID: g.ID,
		ClientID: "c1", Subject: personID, IssuedAt: now, ExpiresAt: now.Add(time.Hour)}); err != nil {
		t.Fatal(err)
	}
	if err := st.CreateSession(ctx, store.Session{Hash: []byte("s-" + personID), PersonID: personID, AuthTime: now,
		ExpiresAt: now.Add(time.Hour)}); err != nil {
		t.Fatal(err)
	}
}

func tokenActive(t *testing.T, st store.Store, personID string, now time.Time) bool {
	t.Helper()
	tk, g, err := st.GetTokenGrant(context.Background(), []byte("t-"+personID))
	if err != nil {
		t.Fatal(err)
	}
	return tk.Active(g, now)
}

func personEvents(t *testing.T, st store.Store, typ string) []store.Event {
	t.Helper()
	evs, err := st.SearchEvents(context.Background(), store.EventFilter{Kind: store.EventPerson, Types: []string{typ}}, 0, 100)
	if err != nil {
		t.Fatal(err)
	}
	return evs
}

func TestSetStatusThatMayNotSignInRevokesEverything(t *testing.T) {
	for _, status := range []string{StatusBlocked, StatusInactive, StatusInvited} {
		t.Run(status, func(t *testing.T) {
			s, st, c := newService(t)
			ctx := context.Background()
			jane, err := st.GetPersonByEmail(ctx, "", "jane@example.com")
			if err != nil {
				t.Fatal(err)
			}
			holdings(t, st, jane.ID, c.t)
			holdings(t, st, "someone-else", c.t)
			got, err := s.SetStatus(ctx, jane.ID, status, "admin")
			if err != nil {
				t.Fatal(err)
			}
			if want := (store.PersonRevocation{Grants: 1, Tokens: 1, Sessions: 1}); got != want {
				t.Errorf("revoked %+v, want %+v", got, want)
			}
			if tokenActive(t, st, jane.ID, c.t) {
				t.Error("the person's token is still active")
			}
			if _, err := st.GetSession(ctx, []byte("s-"+jane.ID)); !errors.Is(err, store.ErrNotFound) {
				t.Errorf("the person's session: %v, want ErrNotFound", err)
			}
			if !tokenActive(t, st, "someone-else", c.t) {
				t.Error("another person's token was revoked")
			}
			if p, _ := st.GetPerson(ctx, jane.ID); p.Status != status {
				t.Errorf("status %s, want %s", p.Status, status)
			}
			evs := personEvents(t, st, "person.PersonUpdatedEvent")
			if len(evs) != 1 || evs[0].PersonID != jane.ID || evs[0].AgentUser != "admin" {
				t.Errorf("person events: %+v", evs)
			}
			if err := login(s, "10.0.0.1", "jane@example.com", "right-password"); !errors.Is(err, ErrBadCredentials) {
				t.Errorf("login after the status change: %v, want ErrBadCredentials", err)
			}
		})
	}
}

func TestUnblockRestoresSignInNotTokens(t *testing.T) {
	s, st, c := newService(t)
	ctx := context.Background()
	jane, _ := st.GetPersonByEmail(ctx, "", "jane@example.com")
	holdings(t, st, jane.ID, c.t)
	if _, err := s.SetStatus(ctx, jane.ID, StatusBlocked, "admin"); err != nil {
		t.Fatal(err)
	}
	got, err := s.SetStatus(ctx, jane.ID, StatusActivated, "admin")
	if err != nil || got != (store.PersonRevocation{}) {
		t.Fatalf("unblock: %+v, %v", got, err)
	}
	if tokenActive(t, st, jane.ID, c.t) {
		t.Error("unblocking brought a revoked token back")
	}
	if err := login(s, "10.0.0.1", "jane@example.com", "right-password"); err != nil {
		t.Errorf("login after unblock: %v", err)
	}
	// Setting the status a person has records no change.
	if _, err := s.SetStatus(ctx, jane.ID, StatusActivated, "admin"); err != nil {
		t.Fatal(err)
	}
	if evs := personEvents(t, st, "person.PersonUpdatedEvent"); len(evs) != 2 {
		t.Errorf("%d update events, want 2 (block, unblock)", len(evs))
	}
}

func TestSetStatusRefusesBadInput(t *testing.T) {
	s, st, _ := newService(t)
	ctx := context.Background()
	jane, _ := st.GetPersonByEmail(ctx, "", "jane@example.com")
	if _, err := s.SetStatus(ctx, jane.ID, "blocked", "admin"); !errors.Is(err, ErrUnknownStatus) {
		t.Errorf("lower-case status: %v, want ErrUnknownStatus", err)
	}
	if _, err := s.SetStatus(ctx, "no-such-person", StatusBlocked, "admin"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("unknown person: %v, want ErrNotFound", err)
	}
	if _, err := s.DeletePerson(ctx, "no-such-person", "admin"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("delete unknown person: %v, want ErrNotFound", err)
	}
}

func TestDeletePersonRevokesEverything(t *testing.T) {
	s, st, c := newService(t)
	ctx := context.Background()
	jane, _ := st.GetPersonByEmail(ctx, "", "jane@example.com")
	holdings(t, st, jane.ID, c.t)
	got, err := s.DeletePerson(ctx, jane.ID, "admin")
	if err != nil {
		t.Fatal(err)
	}
	if want := (store.PersonRevocation{Grants: 1, Tokens: 1, Sessions: 1}); got != want {
		t.Errorf("revoked %+v, want %+v", got, want)
	}
	if _, err := st.GetPerson(ctx, jane.ID); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("person after delete: %v", err)
	}
	if tokenActive(t, st, jane.ID, c.t) {
		t.Error("a deleted person's token is still active")
	}
	if evs := personEvents(t, st, "person.PersonDeletedEvent"); len(evs) != 1 || evs[0].Name != "Person Deleted" {
		t.Errorf("delete events: %+v", evs)
	}
}
