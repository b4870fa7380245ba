package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/latchkey/latchkey/internal/cimconfig"
	"github.com/latchkey/latchkey/internal/config"
	"github.com/latchkey/latchkey/internal/mail/smtpsink"
	"github.com/latchkey/latchkey/internal/server/servertest"
	"github.com/latchkey/latchkey/internal/store"
	"github.com/latchkey/latchkey/internal/store/postgres/pgtest"
	"github.com/latchkey/latchkey/internal/store/sqlite"
)

const (
	janeID = "0f8fad5b-d9cb-469f-a165-70867728950e"
	johnID = "7c9e6679-7425-40de-944b-e07fc1f90ae7"
)

// seedHoldings creates Jane and John, each with a grant, a token and a session.
func seedHoldings(t *testing.T, st store.Store) {
	t.Helper()
	ctx := context.Background()
	now := time.Now()
	for id, email := range map[string]string{janeID: "Jane@Example.com", johnID: "john@example.com"} {
		if err := st.CreatePerson(ctx, store.Person{ID: id, Email: email, Status: "ACTIVATED"}); err != nil {
			t.Fatal(err)
		}
		if err := st.CreateGrant(ctx, store.Grant{ID: "g-" + id, ClientID: "c1", Subject: id, CreatedAt: now,
			ExpiresAt: now.Add(time.Hour)}); err != nil {
			t.Fatal(err)
		}
		if err := st.CreateToken(ctx, store.Token{Hash: []byte("t-" + id), Kind: store.KindAccess, GrantID: "g-" + id,
			ClientID: "c1", Subject: id, IssuedAt: now, ExpiresAt: now.Add(time.Hour)}); err != nil {
			t.Fatal(err)
		}
		if err := st.CreateSession(ctx, store.Session{Hash: []byte("s-" + id), PersonID: id, AuthTime: now,
			ExpiresAt: now.Add(time.Hour)}); err != nil {
			t.Fatal(err)
		}
	}
}

func runCLI(args ...string) (code int, stdout, stderr string) {
	var out, errb bytes.Buffer
	code = run(context.Background(), args, &out, &errb)
	return code, out.String(), errb.String()
}

// TestPersonBlockUnblockDelete runs the commands against an embedded store
// that no server has open (the store is locked to the process that serves it).
func TestPersonBlockUnblockDelete(t *testing.T) {
	db := filepath.Join(t.TempDir(), "latchkey.db")
	open := func() store.Store {
		t.Helper()
		st, err := sqlite.Open(context.Background(), db)
		if err != nil {
			t.Fatal(err)
		}
		return st
	}
	st := open()
	seedHoldings(t, st)
	st.Close()
	t.Setenv("LATCHKEY_DATABASE", "sqlite:"+db)

	code, out, errs := runCLI("person", "block", "jane@example.com")
	if code != 0 || !strings.Contains(out, "blocked Jane@Example.com (id "+janeID+"): revoked 1 grant(s) and 1 token(s), ended 1 session(s)") {
		t.Fatalf("block: exit %d, stdout %q, stderr %q", code, out, errs)
	}
	st = open()
	ctx := context.Background()
	check := func(id string, wantActive bool) {
		t.Helper()
		tk, g, err := st.GetTokenGrant(ctx, []byte("t-"+id))
		if err != nil {
			t.Fatal(err)
		}
		if a := tk.Active(g, time.Now()); a != wantActive {
			t.Errorf("token of %s active = %v, want %v", id, a, wantActive)
		}
		_, err = st.GetSession(ctx, []byte("s-"+id))
		if hasSession := err == nil; hasSession != wantActive {
			t.Errorf("session of %s: %v", id, err)
		}
	}
	check(janeID, false)
	check(johnID, true)
	if p, _ := st.GetPerson(ctx, janeID); p.Status != "BLOCKED" {
		t.Errorf("status after block: %s", p.Status)
	}
	evs, err := st.SearchEvents(ctx, store.EventFilter{Kind: store.EventPerson, Types: []string{"person.PersonUpdatedEvent"}}, 0, 10)
	if err != nil || len(evs) != 1 || evs[0].PersonID != janeID || !strings.HasPrefix(evs[0].AgentUser, "cli") {
		t.Errorf("person events after block: %+v, %v", evs, err)
	}
	st.Close()

	// Flags may come after the argument or before it; an ID works as well as an email.
	if code, out, errs := runCLI("person", "unblock", janeID, "--partition", ""); code != 0 ||
		!strings.Contains(out, "unblocked Jane@Example.com") || !strings.Contains(out, "BLOCKED -> ACTIVATED") {
		t.Errorf("unblock: exit %d, stdout %q, stderr %q", code, out, errs)
	}
	if code, out, _ := runCLI("person", "unblock", "--partition", "", janeID); code != 0 || !strings.Contains(out, "is not blocked") {
		t.Errorf("unblock again: exit %d, stdout %q", code, out)
	}
	if code, out, errs := runCLI("person", "delete", "john@example.com"); code != 0 ||
		!strings.Contains(out, "deleted john@example.com (id "+johnID+"): revoked 1 grant(s) and 1 token(s), ended 1 session(s)") {
		t.Errorf("delete: exit %d, stdout %q, stderr %q", code, out, errs)
	}
	st = open()
	if _, err := st.GetPerson(ctx, johnID); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("person after delete: %v", err)
	}
	check(johnID, false)
	st.Close()

	for name, tc := range map[string]struct {
		args []string
		code int
		msg  string
	}{
		"unknown email":     {[]string{"person", "block", "nobody@example.com"}, 1, `no person with email "nobody@example.com"`},
		"unknown id":        {[]string{"person", "delete", johnID}, 1, "no person with id"},
		"other partition":   {[]string{"person", "block", "jane@example.com", "--partition", "t2"}, 1, "no person"},
		"no person named":   {[]string{"person", "block"}, 2, "want the person's EMAIL or ID"},
		"two persons named": {[]string{"person", "block", "jane@example.com", "john@example.com"}, 2, "unexpected argument"},
		"unknown flag":      {[]string{"person", "unblock", "--force", "jane@example.com"}, 2, "force"},
		"unknown command":   {[]string{"person", "frobnicate", "jane@example.com"}, 2, "unknown subcommand"},
	} {
		code, _, errs := runCLI(tc.args...)
		if code != tc.code || !strings.Contains(errs, tc.msg) || strings.Count(errs, "\n") != 1 {
			t.Errorf("%s: exit %d, stderr %q", name, code, errs)
		}
	}
}

// TestPersonBlockBesideRunningServers: on PostgreSQL the command runs
// beside the serving instances, which answer the person's token inactive
// as soon as it has returned.
func TestPersonBlockBesideRunningServers(t *testing.T) {
	dsn := pgtest.NewDatabase(t)
	cfg := &config.Config{
		Clients: []config.Client{{ClientID: "legacy", ClientSecret: "legacy-secret-legacy-secret",
			GrantTypes: []string{"password", "client_credentials"}, Scopes: []string{"read"}}},
		Persons: []config.Person{{Email: "jane@example.com", Password: "correct horse battery staple"}},
	}
	s := servertest.Start(t, cfg, servertest.Options{Backend: "postgres", PostgresURL: dsn})
	postForm := func(form url.Values) map[string]any {
		t.Helper()
		return postJSON(t, s, "/oauth/token", form)
	}
	tok := postForm(url.Values{"grant_type": {"password"}, "username": {"jane@example.com"},
		"password": {"correct horse battery staple"}, "scope": {"read"}})
	access, _ := tok["access_token"].(string)
	if access == "" {
		t.Fatalf("password grant: %v", tok)
	}
	introspect := func() bool {
		t.Helper()
		return postJSON(t, s, "/oauth/api/v2/token/introspect", url.Values{"token": {access}})["active"] == true
	}
	if !introspect() {
		t.Fatal("the token is not active before the block")
	}
	t.Setenv("LATCHKEY_DATABASE", dsn)
	if code, out, errs := runCLI("person", "block", "jane@example.com"); code != 0 || !strings.Contains(out, "revoked 1 grant(s)") {
		t.Fatalf("block: exit %d, stdout %q, stderr %q", code, out, errs)
	}
	if introspect() {
		t.Error("the serving instance answers the blocked person's token as active")
	}
}

// postJSON posts form as the legacy client and decodes the JSON answer.
func postJSON(t *testing.T, s *servertest.Server, path string, form url.Values) map[string]any {
	t.Helper()
	req, _ := http.NewRequest("POST", s.URL+path, strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.SetBasicAuth("legacy", "legacy-secret-legacy-secret")
	resp, err := s.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var v map[string]any
	if err := json.NewDecoder(resp.Body).Decode(&v); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return v
}

// TestPersonDeleteMailsAccountRemoved: with account_removed on, the command
// enqueues the mail in the deleting transaction, and the running server
// sends it to the address the person had. Without the server key (which
// seals mails) the command refuses and deletes nothing.
func TestPersonDeleteMailsAccountRemoved(t *testing.T) {
	dsn := pgtest.NewDatabase(t)
	sink := smtpsink.Start(t)
	cfg := &config.Config{
		Persons: []config.Person{{Email: "jane@example.com", Password: "correct horse battery staple"}},
		SMTP:    sink.SMTP(),
	}
	s := servertest.Start(t, cfg, servertest.Options{Backend: "postgres", PostgresURL: dsn})
	on := true
	if err := s.App.Journeys().Config.Update(context.Background(), []string{cimconfig.UnitEmailNotifications}, func(snap *cimconfig.Snapshot) error {
		snap.EmailNotifications = &cimconfig.EmailNotificationConfiguration{AccountRemoved: &on}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	t.Setenv("LATCHKEY_DATABASE", dsn)
	keyFile := filepath.Join(t.TempDir(), "secret.key")
	t.Setenv("LATCHKEY_SECRET_KEY_FILE", keyFile)
	if code, _, errs := runCLI("person", "delete", "jane@example.com"); code != 1 || !strings.Contains(errs, "account_removed") {
		t.Fatalf("delete without the key file: exit %d, stderr %q", code, errs)
	}
	if _, err := s.Store.GetPersonByEmail(context.Background(), "", "jane@example.com"); err != nil {
		t.Fatalf("the refused delete deleted: %v", err)
	}
	if err := os.WriteFile(keyFile, servertest.Key, 0o600); err != nil {
		t.Fatal(err)
	}
	if code, out, errs := runCLI("person", "delete", "jane@example.com"); code != 0 || !strings.Contains(out, "deleted jane@example.com") {
		t.Fatalf("delete: exit %d, stdout %q, stderr %q", code, out, errs)
	}
	m := sink.WaitFor(1, 20*time.Second, func(m smtpsink.Mail) bool { return m.To == "jane@example.com" })
	if got := m[0].Header.Get("Subject"); got != "Your account was removed" {
		t.Errorf("mail %q, want the account_removed notification", got)
	}
}
