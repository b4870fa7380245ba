package personimport

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"net/http/httptest"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/latchkey/latchkey/internal/events"
	"github.com/latchkey/latchkey/internal/httpx"
	"github.com/latchkey/latchkey/internal/seal"
	"github.com/latchkey/latchkey/internal/store"
	"github.com/latchkey/latchkey/internal/store/sqlite"
)

// failingStore fails the creation of one email with an unexpected error.
type failingStore struct {
	store.Store
	email string
}

func (f failingStore) Tx(ctx context.Context, fn func(store.Store) error) error {
	return f.Store.Tx(ctx, func(tx store.Store) error { return fn(failingStore{tx, f.email}) })
}

func (f failingStore) BulkTx(ctx context.Context, fn func(store.Store) error) error {
	return f.Store.BulkTx(ctx, func(tx store.Store) error { return fn(failingStore{tx, f.email}) })
}

func (f failingStore) Savepoint(ctx context.Context, fn func(store.Store) error) error {
	return f.Store.Savepoint(ctx, func(sp store.Store) error { return fn(failingStore{sp, f.email}) })
}

func (f failingStore) CreatePerson(ctx context.Context, p store.Person) error {
	if p.Email == f.email {
		return errors.New("disk on fire: /var/lib/latchkey")
	}
	return f.Store.CreatePerson(ctx, p)
}

func newService(t *testing.T, st store.Store, log *bytes.Buffer) *Service {
	t.Helper()
	sealer, err := seal.New(bytes.Repeat([]byte{1}, 32), "totp")
	if err != nil {
		t.Fatal(err)
	}
	return &Service{Store: st, Events: events.NewRecorder(), TOTP: sealer, PRF: "sha256",
		Log: slog.New(slog.NewTextHandler(log, nil)), Now: time.Now}
}

func openSQLite(t *testing.T) store.Store {
	t.Helper()
	st, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

func mk(ref, email string) Person {
	return Person{Status: "ACTIVATED", Profile: &Profile{ReferenceID: ref, EmailAddresses: []Contact{{Value: email, Primary: true}}}}
}

// Test8105: an unexpected failure names a reference that the log holds with
// the cause; the cause itself is not in the answer; the others go on.
func Test8105(t *testing.T) {
	var log bytes.Buffer
	base := openSQLite(t)
	s := newService(t, failingStore{base, "doomed@example.com"}, &log)
	res, err := s.Import(context.Background(), []Person{
		mk("11111111-1111-4111-8111-111111111111", "ok@example.com"),
		mk("22222222-2222-4222-8222-222222222222", "doomed@example.com"),
		mk("33333333-3333-4333-8333-333333333333", "ok2@example.com"),
	}, Options{Agent: "admin"})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.SuccessfulReferenceIDs) != 2 || len(res.Failures) != 1 || res.Failures[0].ErrorCode != CodeReferenced {
		t.Fatalf("%+v", res)
	}
	msg := res.Failures[0].ErrorMessage
	ref := regexp.MustCompile(`reference ([0-9a-f-]{36})`).FindStringSubmatch(msg)
	if ref == nil || !strings.Contains(msg, "22222222-2222-4222-8222-222222222222") {
		t.Fatalf("message %q names no reference or person", msg)
	}
	if strings.Contains(msg, "disk on fire") {
		t.Error("the cause leaked into the answer")
	}
	if !strings.Contains(log.String(), ref[1]) || !strings.Contains(log.String(), "disk on fire") {
		t.Errorf("the log does not hold the reference with the cause: %s", log.String())
	}
	if _, err := base.GetPerson(context.Background(), "22222222-2222-4222-8222-222222222222"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("the failed person exists: %v", err)
	}
	if n, _ := base.CountEvents(context.Background(), store.EventFilter{Kind: store.EventPerson}, 10); n != 2 {
		t.Errorf("%d events, want 2 (none for the failed person)", n)
	}
}

// A transaction that cannot commit imports none of its batch, and says so.
func TestFailedBatch(t *testing.T) {
	var log bytes.Buffer
	base := openSQLite(t)
	s := newService(t, base, &log)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	res, err := s.Import(ctx, []Person{mk("11111111-1111-4111-8111-111111111111", "a@example.com")}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.SuccessfulReferenceIDs) != 0 || len(res.Failures) != 1 || res.Failures[0].ErrorCode != CodeReferenced {
		t.Errorf("%+v", res)
	}
	if _, err := base.GetPerson(context.Background(), "11111111-1111-4111-8111-111111111111"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("person of the failed batch exists: %v", err)
	}
}

func FuzzParseFlowContext(f *testing.F) {
	for _, s := range []string{"a=1;b=2", "a=1;", " a = 1 ", "=", ";;", "a=b=c", "k" + strings.Repeat("=v", 40)} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, h string) {
		m, err := ParseFlowContext(h)
		if err != nil {
			return
		}
		if len(m) > maxFlowParams {
			t.Fatalf("%d parameters", len(m))
		}
		for k, v := range m {
			if !flowKeyRE.MatchString(k) || len(v) > 256 || !printableASCII(v) || strings.Contains(v, ";") {
				t.Fatalf("accepted %q=%q", k, v)
			}
		}
	})
}

func FuzzDecode(f *testing.F) {
	for _, s := range []string{`{"persons":[]}`, `{"persons":[{"status":"X","profile":{"reference_id":"x"}}]}`,
		`{"persons":[{"identities":[{"idp_id":"a","external_person_id":"b"}]}]}`, `{"persons":[{"identities":{"idp_id":1}}]}`,
		`{"persons":[1]}`, `{"x":1}`, `[`, ``} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, body string) {
		r := httptest.NewRequest("POST", Path, strings.NewReader(body))
		ps, err := decode(httptest.NewRecorder(), r, 5)
		if err == nil && len(ps) > 5 {
			t.Fatalf("%d persons past the maximum", len(ps))
		}
		for _, p := range ps {
			// Whatever decodes, validation must not panic.
			_, _ = validate(p, "sha256", map[string]string{}, time.Now())
		}
		// Every refusal is one the handler answers as 400 or 413.
		var tooMany errTooMany
		var he *httpx.Error
		if err != nil && !errors.As(err, &tooMany) && (!errors.As(err, &he) || (he.Status != 400 && he.Status != 413)) {
			t.Fatalf("decode error the handler would answer 500: %v", err)
		}
	})
}

// An import of a person whose address is written in fullwidth or other
// compatibility characters fails for that person (invalid email, with the
// reason), as primary and as another address; the others go on.
func TestImportRefusesLookAlikeAddresses(t *testing.T) {
	var log bytes.Buffer
	st := openSQLite(t)
	s := newService(t, st, &log)
	second := mk("33333333-3333-4333-8333-333333333333", "other@example.com")
	second.Profile.EmailAddresses = append(second.Profile.EmailAddresses, Contact{Value: "\uff4fther@example.com"})
	res, err := s.Import(context.Background(), []Person{
		mk("11111111-1111-4111-8111-111111111111", "case@example.com"),
		mk("22222222-2222-4222-8222-222222222222", "\uff43ase@example.com"),
		second,
	}, Options{Agent: "admin"})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.SuccessfulReferenceIDs) != 1 || len(res.Failures) != 2 {
		t.Fatalf("%+v", res)
	}
	for _, f := range res.Failures {
		if f.ErrorCode != CodeInvalidEmail || !strings.Contains(f.ErrorMessage, "compatibility characters") {
			t.Errorf("failure %+v, want invalid email with the reason", f)
		}
	}
	if ps, _ := st.FindPersons(context.Background(), "\uff43ase@example.com"); len(ps) != 0 {
		t.Errorf("a look-alike person was made: %+v", ps)
	}
}
