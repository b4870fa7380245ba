package identity

import (
	"bytes"
	"context"
	"crypto/pbkdf2"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/latchkey/latchkey/internal/config"
	"github.com/latchkey/latchkey/internal/events"
	"github.com/latchkey/latchkey/internal/httpx"
	"github.com/latchkey/latchkey/internal/password"
	"github.com/latchkey/latchkey/internal/request"
	"github.com/latchkey/latchkey/internal/store"
	"github.com/latchkey/latchkey/internal/store/sqlite"
	"github.com/latchkey/latchkey/internal/token"
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

func loginRequest(ip string) *http.Request {
	r := httptest.NewRequest("POST", "/login", nil)
	r.RemoteAddr = ip + ":4242"
	return r
}

func login(s *Service, ip, email, pw string) error {
	_, err := s.CheckPassword(context.Background(), request.Of(loginRequest(ip)), email, pw)
	return err
}

// withDevice is the facts the login page passes: the request's, with its
// known-device cookie.
func withDevice(r *http.Request) request.Facts {
	f := request.Of(r)
	if c, err := r.Cookie(DeviceCookie); err == nil {
		f.DeviceCookie = c.Value
	}
	return f
}

func retryAfter(err error) string {
	var te *ThrottledError
	if !errors.As(err, &te) {
		return ""
	}
	return httpx.RetryAfter(te.RetryAfter) // as the login page answers it
}

func testHasher(t *testing.T) *token.Hasher {
	t.Helper()
	h, err := token.NewHasher(bytes.Repeat([]byte{7}, 32))
	if err != nil {
		t.Fatal(err)
	}
	return h
}

func deviceCookieFor(t *testing.T, s *Service, email string) *http.Cookie {
	t.Helper()
	w := httptest.NewRecorder()
	s.RememberDevice(w, email, true)
	return w.Result().Cookies()[0]
}

// pbkdf2Of is the PHC string of an imported PBKDF2-SHA256 hash.
func pbkdf2Of(pw string) string {
	salt := []byte("0123456789abcdef")
	key, _ := pbkdf2.Key(sha256.New, pw, salt, 10_000, 32)
	b := base64.RawStdEncoding
	return fmt.Sprintf("$pbkdf2-sha256$i=10000$%s$%s", b.EncodeToString(salt), b.EncodeToString(key))
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

func TestFailedLoginsAreThrottledPerAccountAndAddress(t *testing.T) {
	s, _, c := newService(t)
	for i := range MaxFailsPerAccountAddress {
		if err := login(s, "10.0.1.1", "jane@example.com", "wrong"); !errors.Is(err, ErrBadCredentials) {
			t.Fatalf("failure %d: %v", i+1, err)
		}
	}
	err := login(s, "10.0.1.1", "jane@example.com", "right-password")
	if !errors.Is(err, ErrThrottled) {
		t.Fatalf("after %d failures from one address even the right password waits there: %v", MaxFailsPerAccountAddress, err)
	}
	if got := retryAfter(err); got != strconv.Itoa(int(ThrottleWindow/time.Second)) {
		t.Errorf("Retry-After = %q, want the whole window (%v): no time has passed", got, ThrottleWindow)
	}
	if err := login(s, "10.0.1.2", "jane@example.com", "right-password"); err != nil {
		t.Errorf("the same account from another address is not locked out: %v", err)
	}
	if err := login(s, "10.0.1.1", "nobody@example.com", "x"); !errors.Is(err, ErrBadCredentials) {
		t.Errorf("another account from the address is not locked out: %v", err)
	}
	c.t = c.t.Add(ThrottleWindow)
	if err := login(s, "10.0.1.1", "jane@example.com", "right-password"); err != nil {
		t.Errorf("after the window: %v", err)
	}
}

func TestIPv6AddressesAreCountedPer64(t *testing.T) {
	s, _, _ := newService(t)
	for i := range MaxFailsPerAccountAddress {
		// A fresh address of the same /64 each time.
		if err := login(s, fmt.Sprintf("[2001:db8:1:2::%x]", i+1), "jane@example.com", "wrong"); !errors.Is(err, ErrBadCredentials) {
			t.Fatalf("failure %d: %v", i+1, err)
		}
	}
	if err := login(s, "[2001:db8:1:2:ffff::1]", "jane@example.com", "right-password"); !errors.Is(err, ErrThrottled) {
		t.Errorf("another address of the same /64: %v, want throttled", err)
	}
	if err := login(s, "[2001:db8:1:3::1]", "jane@example.com", "right-password"); err != nil {
		t.Errorf("another /64: %v", err)
	}
}

func TestAccountBackOffSparesKnownDevices(t *testing.T) {
	s, _, c := newService(t)
	s.Devices = testHasher(t)
	// The owner signed in on this browser before.
	w := httptest.NewRecorder()
	s.RememberDevice(w, "Jane@Example.com", true)
	cookie := w.Result().Cookies()[0]
	// An attacker fails from many addresses: each pair stays under its
	// limit, the account's back-off trips.
	for i := range MaxFailsPerAccount {
		if err := login(s, fmt.Sprintf("198.51.100.%d", i+1), "jane@example.com", "guess"); !errors.Is(err, ErrBadCredentials) {
			t.Fatalf("failure %d: %v", i+1, err)
		}
	}
	if err := login(s, "203.0.113.1", "jane@example.com", "right-password"); !errors.Is(err, ErrThrottled) {
		t.Errorf("an unknown device must wait out the per-account back-off: %v", err)
	}
	r := loginRequest("203.0.113.2")
	r.AddCookie(cookie)
	if _, err := s.CheckPassword(context.Background(), withDevice(r), "jane@example.com", "right-password"); err != nil {
		t.Errorf("the owner's known device is not locked out by the attacker's failures: %v", err)
	}
	// A cookie of another account, or a forged one, is no known device.
	for name, ck := range map[string]*http.Cookie{
		"other account": deviceCookieFor(t, s, "someone@example.com"),
		"forged mac":    {Name: DeviceCookie, Value: cookie.Value[:len(cookie.Value)-2] + "AA"},
	} {
		r := loginRequest("203.0.113.3")
		r.AddCookie(ck)
		if _, err := s.CheckPassword(context.Background(), withDevice(r), "jane@example.com", "right-password"); !errors.Is(err, ErrThrottled) {
			t.Errorf("%s: %v, want throttled", name, err)
		}
	}
	// A stolen cookie buys no more guesses than an address has.
	for i := range MaxFailsPerDevice {
		r := loginRequest(fmt.Sprintf("192.0.2.%d", i+1))
		r.AddCookie(cookie)
		if _, err := s.CheckPassword(context.Background(), withDevice(r), "jane@example.com", "guess"); !errors.Is(err, ErrBadCredentials) {
			t.Fatalf("device failure %d: %v", i+1, err)
		}
	}
	r = loginRequest("192.0.2.200")
	r.AddCookie(cookie)
	if _, err := s.CheckPassword(context.Background(), withDevice(r), "jane@example.com", "right-password"); !errors.Is(err, ErrThrottled) {
		t.Errorf("after %d failures on the device: %v, want throttled", MaxFailsPerDevice, err)
	}
	c.t = c.t.Add(AccountThrottleWindow)
	if err := login(s, "203.0.113.1", "jane@example.com", "right-password"); err != nil {
		t.Errorf("after the back-off window: %v", err)
	}
}

// countingVerify counts verifications, and among them those of an argon2id
// hash at today's parameters (the work every attempt must cost).
type countingVerify struct {
	mu           sync.Mutex
	calls, argon int
}

func (cv *countingVerify) install(s *Service) {
	s.Verify = func(phc, pw string) (bool, error) {
		cv.mu.Lock()
		cv.calls++
		if !password.NeedsRehash(phc) {
			cv.argon++
		}
		cv.mu.Unlock()
		return password.Verify(phc, pw)
	}
}

func (cv *countingVerify) take() (calls, argon int) {
	cv.mu.Lock()
	defer cv.mu.Unlock()
	calls, argon, cv.calls, cv.argon = cv.calls, cv.argon, 0, 0
	return calls, argon
}

func TestConcurrentFailuresStayWithinTheLimit(t *testing.T) {
	s, _, _ := newService(t)
	var cv countingVerify
	cv.install(s)
	attempt := func(n int, ip func(i int) string) (bad, throttled int) {
		var wg sync.WaitGroup
		var mu sync.Mutex
		for i := range n {
			wg.Add(1)
			go func() {
				defer wg.Done()
				err := login(s, ip(i), "jane@example.com", "wrong")
				mu.Lock()
				defer mu.Unlock()
				switch {
				case errors.Is(err, ErrThrottled):
					throttled++
				case errors.Is(err, ErrBadCredentials):
					bad++
				default:
					t.Errorf("attempt %d: %v", i, err)
				}
			}()
		}
		wg.Wait()
		return bad, throttled
	}
	bad, thr := attempt(20, func(int) string { return "10.0.7.1" })
	if calls, _ := cv.take(); calls != MaxFailsPerAccountAddress || bad != MaxFailsPerAccountAddress || thr != 20-MaxFailsPerAccountAddress {
		t.Errorf("20 concurrent failures from one address: %d checked, %d wrong, %d throttled; want exactly %d checked",
			calls, bad, thr, MaxFailsPerAccountAddress)
	}
	// From many addresses the per-account back-off holds, also concurrently
	// (the 5 above count towards it).
	bad, _ = attempt(40, func(i int) string { return fmt.Sprintf("10.0.8.%d", i+1) })
	if calls, _ := cv.take(); calls != MaxFailsPerAccount-MaxFailsPerAccountAddress || bad != calls {
		t.Errorf("40 concurrent failures from 40 addresses: %d checked, want %d", calls, MaxFailsPerAccount-MaxFailsPerAccountAddress)
	}
}

func TestEveryAttemptCostsTheSameWork(t *testing.T) {
	s, st, _ := newService(t)
	var cv countingVerify
	cv.install(s)
	ctx := context.Background()
	for email, hash := range map[string]string{
		"pbkdf2@example.com": pbkdf2Of("right-password"),
		"bcrypt@example.com": bcryptOf(t, "right-password"),
	} {
		if err := st.CreatePerson(ctx, store.Person{ID: email, Email: email, PasswordHash: hash, Status: StatusActivated,
			CreatedAt: time.Now().UTC(), UpdatedAt: time.Now().UTC()}); err != nil {
			t.Fatal(err)
		}
	}
	for i, email := range []string{"jane@example.com", "nobody@example.com", "pbkdf2@example.com", "bcrypt@example.com"} {
		ip := fmt.Sprintf("10.0.9.%d", i+1)
		if err := login(s, ip, email, "wrong"); !errors.Is(err, ErrBadCredentials) {
			t.Fatalf("%s: %v", email, err)
		}
		if _, argon := cv.take(); argon != 1 {
			t.Errorf("%s: a wrong password cost %d argon2id verifications, want exactly 1 like every account", email, argon)
		}
	}
	// Throttled answers: no lookup, no hash, the same answer for an
	// account that exists and one that does not.
	answers := map[string]string{}
	for _, email := range []string{"jane@example.com", "nobody@example.com", "pbkdf2@example.com"} {
		for range MaxFailsPerAccountAddress {
			_ = login(s, "10.0.10.1", email, "wrong")
		}
		cv.take()
		err := login(s, "10.0.10.1", email, "wrong")
		var he *ThrottledError
		if !errors.Is(err, ErrThrottled) || !errors.As(err, &he) {
			t.Fatalf("%s: %v, want throttled", email, err)
		}
		if calls, _ := cv.take(); calls != 0 {
			t.Errorf("%s: a throttled attempt verified %d hashes, want 0", email, calls)
		}
		answers[email] = fmt.Sprint(*he)
	}
	if answers["jane@example.com"] != answers["nobody@example.com"] || answers["jane@example.com"] != answers["pbkdf2@example.com"] {
		t.Errorf("throttled answers differ by account: %v", answers)
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

// A start whose configured person is as the last start left it hashes
// nothing and writes nothing; a changed file, or a password the person
// changed since, is seeded again (the file wins, as at every start before).
func TestSeedPersonsSkipsWhatIsAsConfigured(t *testing.T) {
	s, st, _ := newService(t)
	keys, err := token.NewHasher(bytes.Repeat([]byte{7}, token.KeySize))
	if err != nil {
		t.Fatal(err)
	}
	s.Keys = keys
	ctx := context.Background()
	jane := config.Person{Email: "Jane@Example.com", Password: "right-password", FirstName: "Jane"}
	seed := func(p config.Person) store.Person {
		t.Helper()
		if err := s.SeedPersons(ctx, []config.Person{p}); err != nil {
			t.Fatal(err)
		}
		got, err := st.GetPersonByEmail(ctx, "", p.Email)
		if err != nil {
			t.Fatal(err)
		}
		return got
	}
	first := seed(jane) // records the fingerprint (newService seeded without keys)
	if again := seed(jane); again.PasswordHash != first.PasswordHash || !again.UpdatedAt.Equal(first.UpdatedAt) {
		t.Errorf("an unchanged seed hashed or wrote again: %q → %q", first.PasswordHash, again.PasswordHash)
	}
	changed := jane
	changed.Password = "another-password"
	got := seed(changed)
	if ok, _ := password.Verify(got.PasswordHash, "another-password"); !ok {
		t.Error("a changed password in the file was not seeded")
	}
	if err := st.UpdatePerson(ctx, got.ID, func(p store.Person) (store.Person, error) {
		p.PasswordHash, err = password.Hash("chosen-by-jane")
		return p, err
	}); err != nil {
		t.Fatal(err)
	}
	if got := seed(changed); !mustVerify(t, got.PasswordHash, "another-password") {
		t.Error("a password the person changed outlived a start: the file's must win")
	}
	renamed := changed
	renamed.LastName = "Doe"
	if got := seed(renamed); got.LastName != "Doe" {
		t.Errorf("a changed name was not seeded: %+v", got)
	}
	if err := st.SetSeedFingerprint(ctx, got.ID, []byte("forged")); err != nil {
		t.Fatal(err)
	}
	stored, _ := st.GetPersonByEmail(ctx, "", renamed.Email)
	if got := seed(renamed); got.PasswordHash == stored.PasswordHash || !mustVerify(t, got.PasswordHash, "another-password") {
		t.Error("after a wrong fingerprint the person was not seeded again")
	}
}

func mustVerify(t *testing.T, phc, pw string) bool {
	t.Helper()
	ok, err := password.Verify(phc, pw)
	if err != nil {
		t.Fatal(err)
	}
	return ok
}
