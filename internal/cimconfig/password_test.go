package cimconfig_test

import (
	"context"
	"crypto/sha1"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/latchkey/latchkey/internal/cimconfig"
	"github.com/latchkey/latchkey/internal/config"
	"github.com/latchkey/latchkey/internal/pwpolicy"
	"github.com/latchkey/latchkey/internal/server"
	"github.com/latchkey/latchkey/internal/server/servertest"
	"github.com/latchkey/latchkey/internal/store/postgres"
	"github.com/latchkey/latchkey/internal/store/postgres/pgtest"
)

// rangeServer speaks the k-anonymity range protocol for a list of breached
// passwords, and records the prefixes it was asked for.
func rangeServer(t *testing.T, breached ...string) (*httptest.Server, func() []string) {
	var mu sync.Mutex
	var asked []string
	byPrefix := map[string][]string{}
	for _, pw := range breached {
		sum := sha1.Sum([]byte(pw))
		h := strings.ToUpper(hex.EncodeToString(sum[:]))
		byPrefix[h[:5]] = append(byPrefix[h[:5]], h[5:]+":42")
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		prefix := strings.TrimPrefix(r.URL.Path, "/range/")
		mu.Lock()
		asked = append(asked, prefix)
		mu.Unlock()
		lines := append([]string{"0000000000000000000000000000000000A:0"}, byPrefix[prefix]...) // padding line
		fmt.Fprint(w, strings.Join(lines, "\r\n"))
	}))
	t.Cleanup(srv.Close)
	return srv, func() []string { mu.Lock(); defer mu.Unlock(); return append([]string(nil), asked...) }
}

const strictPolicy = `{"min_length":12,"max_length":64,"lower_case_char_required":true,"upper_case_char_required":true,"special_char_required":true,"breached_password_blocked":true}`

func TestPasswordPolicy(t *testing.T) {
	rs, asked := rangeServer(t, "Tr0ub4dor&3-again")
	forEachBackend(t, nil, func(t *testing.T, s *servertest.Server) {
		svc := &cimconfig.Service{Store: s.Store, Now: time.Now, Breached: &pwpolicy.RangeChecker{Endpoint: rs.URL + "/range"}}
		ctx := context.Background()
		if err := svc.CheckPassword(ctx, "x"); err != nil {
			t.Errorf("without a policy every password is accepted: %v", err)
		}
		if a := admin(t, s, "POST", "/api/v2/config/password-policy", strictPolicy); a.status != 204 {
			t.Fatalf("set policy: %d %s", a.status, a.body)
		}
		svc.Forget()
		for _, c := range []struct {
			pw    string
			rules []string
		}{
			{"short", []string{pwpolicy.RuleMinLength, pwpolicy.RuleUpperCase, pwpolicy.RuleSpecialChar}},
			{"ALLUPPERCASE-123", []string{pwpolicy.RuleLowerCase}},
			{strings.Repeat("aA-", 30), []string{pwpolicy.RuleMaxLength}},
			{"Tr0ub4dor&3-again", []string{pwpolicy.RuleBreached}},
			{"Correct-Horse-Battery-9", nil},
		} {
			err := svc.CheckPassword(ctx, c.pw)
			var pe *cimconfig.PolicyError
			var got []string
			if errors.As(err, &pe) {
				for _, v := range pe.Violations {
					got = append(got, v.Rule)
					if v.Message == "" {
						t.Errorf("%q: rule %s without a message", c.pw, v.Rule)
					}
				}
			} else if err != nil {
				t.Fatalf("%q: %v", c.pw, err)
			}
			if strings.Join(got, ",") != strings.Join(c.rules, ",") {
				t.Errorf("%q breaks %v, want %v", c.pw, got, c.rules)
			}
		}
		for _, p := range asked() {
			if len(p) != 5 || strings.ToUpper(p) != p {
				t.Errorf("the breach service was asked %q: only 5 upper-case hex characters may leave", p)
			}
		}

		// The service down: fail open accepts, fail closed refuses with an error that is not a rule.
		down := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(503) }))
		defer down.Close()
		open := &cimconfig.Service{Store: s.Store, Now: time.Now, Breached: &pwpolicy.RangeChecker{Endpoint: down.URL}}
		if err := open.CheckPassword(ctx, "Correct-Horse-Battery-9"); err != nil {
			t.Errorf("fail open: %v", err)
		}
		closed := &cimconfig.Service{Store: s.Store, Now: time.Now, Breached: &pwpolicy.RangeChecker{Endpoint: down.URL, FailClosed: true}}
		if err := closed.CheckPassword(ctx, "Correct-Horse-Battery-9"); err == nil || cimconfig.IsPolicyError(err) {
			t.Errorf("fail closed: %v, want an unavailability error", err)
		}
	})
}

// TestSeededPersonsFollowThePolicy: a configured person whose password
// breaks the stored policy stops the start with a clear message.
func TestSeededPersonsFollowThePolicy(t *testing.T) {
	rs, _ := rangeServer(t, "Tr0ub4dor&3-again")
	dsn := pgtest.NewDatabase(t)
	s := servertest.Start(t, configAPI(nil), servertest.Options{Backend: "postgres", PostgresURL: dsn})
	admin(t, s, "POST", "/api/v2/config/password-policy", strictPolicy)

	for _, c := range []struct{ pw, want string }{
		{"short", "at least 12"},
		{"Tr0ub4dor&3-again", "breached"},
	} {
		st, err := postgres.Open(context.Background(), dsn)
		if err != nil {
			t.Fatal(err)
		}
		cfg := configAPI(func(cfg *config.Config) {
			cfg.Persons = []config.Person{{Email: "p@example.com", Password: c.pw}}
			cfg.BreachedPasswords.Endpoint = rs.URL + "/range"
		})
		cfg.Issuer = "http://127.0.0.1:1"
		if err := cfg.Complete(); err != nil {
			t.Fatal(err)
		}
		_, err = server.New(context.Background(), cfg, st, slog.New(slog.NewTextHandler(io.Discard, nil)), servertest.Key, server.Options{})
		st.Close()
		if err == nil || !strings.Contains(err.Error(), "p@example.com") || !strings.Contains(err.Error(), c.want) {
			t.Errorf("start with person password %q: %v, want an error naming the person and %q", c.pw, err, c.want)
		}
	}
}
