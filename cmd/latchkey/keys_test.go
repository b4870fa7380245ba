package main

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/go-jose/go-jose/v4"

	"github.com/latchkey/latchkey/internal/config"
	"github.com/latchkey/latchkey/internal/server/servertest"
	"github.com/latchkey/latchkey/internal/signing"
	"github.com/latchkey/latchkey/internal/store/postgres/pgtest"
)

// jwksKids fetches the JWKS a relying party sees.
func jwksKids(t *testing.T, base string) []string {
	t.Helper()
	resp, err := http.Get(base + signing.PathJWKS)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	var set jose.JSONWebKeySet
	if resp.StatusCode != 200 || json.Unmarshal(body, &set) != nil {
		t.Fatalf("GET %s: %d %s", signing.PathJWKS, resp.StatusCode, body)
	}
	var kids []string
	for _, k := range set.Keys {
		kids = append(kids, k.KeyID)
	}
	return kids
}

// keyLines are the rows of "keys list" (without the header).
func keyLines(out string) []string {
	lines := strings.Split(strings.TrimSpace(out), "\n")
	return lines[1:]
}

// On SQLite, list reads beside the running server; rotate refuses while
// the server holds the file (one line, exit 1) and works once it stopped;
// the restarted server publishes the new key.
func TestKeysOnSQLite(t *testing.T) {
	dir := t.TempDir()
	addr := freePort(t)
	cfgPath := filepath.Join(dir, "latchkey.yaml")
	os.WriteFile(cfgPath, []byte("listen: "+addr+"\ndatabase: sqlite:"+filepath.Join(dir, "db", "latchkey.db")+
		"\nsecret_key_file: "+filepath.Join(dir, "secret.key")+"\noidc:\n  signing_algorithm: ES256\n  key_publish_ahead: 1h\n"), 0o600)
	run := func(args ...string) (int, string, string) {
		t.Helper()
		cmd := exec.Command(build(t), append(args, "--config", cfgPath)...)
		cmd.Dir = dir
		var out, errb bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &errb
		err := cmd.Run()
		code := 0
		if ee, ok := err.(*exec.ExitError); ok {
			code = ee.ExitCode()
		} else if err != nil {
			t.Fatal(err)
		}
		return code, out.String(), errb.String()
	}

	serve := func() *exec.Cmd {
		cmd := command(t, nil, "serve", "--config", cfgPath)
		startServing(t, cmd, addr)
		return cmd
	}
	srv := serve()
	code, out, errs := run("keys", "list")
	if code != 0 {
		t.Fatalf("keys list beside the server: exit %d, %s", code, errs)
	}
	rows := keyLines(out)
	if len(rows) != 1 || !strings.Contains(rows[0], " ES256 ") || !strings.Contains(rows[0], " signing ") {
		t.Fatalf("keys list: %q, want one ES256 key, signing", out)
	}
	first := strings.Fields(rows[0])[0]
	if kids := jwksKids(t, "http://"+addr); len(kids) != 1 || kids[0] != first {
		t.Errorf("JWKS kids %v, want [%s]", kids, first)
	}

	code, out, errs = run("keys", "rotate")
	if code != 1 || !strings.Contains(errs, "stop latchkey serve first") || strings.Count(errs, "\n") != 1 || out != "" {
		t.Errorf("keys rotate beside the SQLite server: exit %d, stdout %q, stderr %q; want exit 1 and one line", code, out, errs)
	}

	stop(t, srv)
	code, out, errs = run("keys", "rotate")
	if code != 0 || !strings.Contains(out, "published now, signs from") {
		t.Fatalf("keys rotate with the server stopped: exit %d, stdout %q, stderr %q", code, out, errs)
	}
	_, out, _ = run("keys", "list")
	rows = keyLines(out)
	if len(rows) != 2 || !strings.Contains(rows[0], " signing ") || !strings.Contains(rows[1], " published ") {
		t.Fatalf("keys list after the rotation: %q, want the old key signing and the new one published", out)
	}
	second := strings.Fields(rows[1])[0]
	if strings.Contains(out, `"d"`) || strings.Contains(out, "PRIVATE") {
		t.Errorf("keys list shows key material: %s", out)
	}

	srv = serve()
	kids := jwksKids(t, "http://"+addr)
	if len(kids) != 2 || kids[0] != first || kids[1] != second {
		t.Errorf("JWKS after the restart: %v, want [%s %s] (the signing key first)", kids, first, second)
	}

	// The emergency rotation on SQLite: refused beside the server; with it
	// stopped, rotate --now, retire both older keys (the one that signed and
	// the one published to sign later), and the restarted server publishes
	// only the new key.
	if code, _, errs := run("keys", "retire", first); code != 1 || !strings.Contains(errs, "stop latchkey serve first") {
		t.Errorf("keys retire beside the SQLite server: exit %d, stderr %q", code, errs)
	}
	stop(t, srv)
	if code, _, errs := run("keys", "retire", first); code != 1 || !strings.Contains(errs, "rotate --now first") {
		t.Errorf("keys retire of the signing key: exit %d, stderr %q", code, errs)
	}
	code, out, errs = run("keys", "rotate", "--now")
	if code != 0 || !strings.Contains(out, "published and signing now") {
		t.Fatalf("keys rotate --now: exit %d, stdout %q, stderr %q", code, out, errs)
	}
	_, out, _ = run("keys", "list")
	rows = keyLines(out)
	if len(rows) != 3 || !strings.Contains(rows[2], " signing ") {
		t.Fatalf("keys list after rotate --now: %q, want the third key signing", out)
	}
	third := strings.Fields(rows[2])[0]
	for _, kid := range []string{first, second} {
		if code, out, errs := run("keys", "retire", kid); code != 0 || !strings.Contains(out, "retired signing key "+kid) {
			t.Errorf("keys retire %s: exit %d, stdout %q, stderr %q", kid, code, out, errs)
		}
	}
	serve()
	if kids := jwksKids(t, "http://"+addr); len(kids) != 1 || kids[0] != third {
		t.Errorf("JWKS after retiring the older keys: %v, want [%s]", kids, third)
	}

	for name, tc := range map[string]struct {
		args []string
		code int
		msg  string
	}{
		"no subcommand":      {[]string{"keys"}, 2, `want "keys list", "keys rotate" or "keys retire KID"`},
		"retire without KID": {[]string{"keys", "retire"}, 2, "want the KID"},
		"retire two KIDs":    {[]string{"keys", "retire", "a", "b"}, 2, "unexpected argument"},
		"unknown subcommand": {[]string{"keys", "delete"}, 2, "unknown subcommand"},
		"extra argument":     {[]string{"keys", "list", "now"}, 2, "unexpected argument"},
	} {
		code, _, errs := runCLI(tc.args...)
		if code != tc.code || !strings.Contains(errs, tc.msg) || strings.Count(errs, "\n") != 1 {
			t.Errorf("%s: exit %d, stderr %q", name, code, errs)
		}
	}
}

// On PostgreSQL, rotate runs beside a running server, which publishes the
// new key at its next read of the keys. A key file other than the
// database's is refused before anything is written.
func TestKeysRotateBesideRunningPostgres(t *testing.T) {
	dsn := pgtest.NewDatabase(t)
	clock := servertest.NewClock()
	s := servertest.Start(t, &config.Config{}, servertest.Options{Backend: "postgres", PostgresURL: dsn, Clock: clock})
	dir := t.TempDir()
	keyFile := filepath.Join(dir, "secret.key")
	os.WriteFile(keyFile, servertest.Key, 0o600)
	otherKey := filepath.Join(dir, "other.key")
	os.WriteFile(otherKey, bytes.Repeat([]byte{7}, 32), 0o600)
	t.Setenv("LATCHKEY_DATABASE", dsn)

	t.Setenv("LATCHKEY_SECRET_KEY_FILE", otherKey)
	if code, out, errs := runCLI("keys", "rotate"); code != 1 || !strings.Contains(errs, "server key mismatch") || out != "" {
		t.Errorf("rotate with another key file: exit %d, stdout %q, stderr %q", code, out, errs)
	}
	t.Setenv("LATCHKEY_SECRET_KEY_FILE", filepath.Join(dir, "absent.key"))
	if code, _, errs := runCLI("keys", "rotate"); code != 1 || !strings.Contains(errs, "secret key file (set by LATCHKEY_SECRET_KEY_FILE)") {
		t.Errorf("rotate without a key file: exit %d, stderr %q", code, errs)
	}
	if _, err := os.Stat(filepath.Join(dir, "absent.key")); err == nil {
		t.Error("rotate created a server key file")
	}

	t.Setenv("LATCHKEY_SECRET_KEY_FILE", keyFile)
	before := jwksKids(t, s.URL)
	code, out, errs := runCLI("keys", "rotate")
	if code != 0 || !strings.Contains(out, "published now") {
		t.Fatalf("rotate beside the server: exit %d, stdout %q, stderr %q", code, out, errs)
	}
	code, out, errs = runCLI("keys", "list")
	rows := keyLines(out)
	if code != 0 || len(rows) != 2 || !strings.Contains(rows[1], " published ") {
		t.Fatalf("keys list: exit %d, %q, %q", code, out, errs)
	}
	clock.Advance(time.Minute) // past the server's cache of the keys
	after := jwksKids(t, s.URL)
	if len(before) != 1 || len(after) != 2 || after[0] != before[0] || after[1] != strings.Fields(rows[1])[0] {
		t.Errorf("JWKS before the rotation %v, after %v; want the running server to publish the new key second", before, after)
	}
}

// The emergency rotation beside a running PostgreSQL server: retiring the
// only signing key is refused with what to do instead; rotate --now makes
// a key that the server signs with at once; retire takes the old key out
// of the server's JWKS at its next read of the keys (within 30 s).
func TestKeysEmergencyRotationBesideRunningPostgres(t *testing.T) {
	dsn := pgtest.NewDatabase(t)
	clock := servertest.NewClock()
	s := servertest.Start(t, &config.Config{}, servertest.Options{Backend: "postgres", PostgresURL: dsn, Clock: clock})
	keyFile := filepath.Join(t.TempDir(), "secret.key")
	os.WriteFile(keyFile, servertest.Key, 0o600)
	t.Setenv("LATCHKEY_DATABASE", dsn)
	t.Setenv("LATCHKEY_SECRET_KEY_FILE", keyFile)

	before := jwksKids(t, s.URL)
	if len(before) != 1 {
		t.Fatalf("JWKS at start: %v, want one key", before)
	}
	old := before[0]
	code, out, errs := runCLI("keys", "retire", old)
	if code != 1 || !strings.Contains(errs, "keys rotate --now first") || out != "" || strings.Count(errs, "\n") != 1 {
		t.Errorf("retire the only signing key: exit %d, stdout %q, stderr %q; want exit 1 and one line naming rotate --now", code, out, errs)
	}
	if code, _, errs := runCLI("keys", "retire", "no-such-kid"); code != 1 || !strings.Contains(errs, "no key") {
		t.Errorf("retire an unknown kid: exit %d, stderr %q", code, errs)
	}

	code, out, errs = runCLI("keys", "rotate", "--now")
	if code != 0 || !strings.Contains(out, "published and signing now") {
		t.Fatalf("rotate --now: exit %d, stdout %q, stderr %q", code, out, errs)
	}
	_, out, _ = runCLI("keys", "list")
	rows := keyLines(out)
	if len(rows) != 2 || !strings.Contains(rows[1], " signing ") || !strings.Contains(rows[0], " retired ") {
		t.Fatalf("keys list after rotate --now: %q, want the new key signing and the old one retired", out)
	}
	fresh := strings.Fields(rows[1])[0]
	clock.Advance(time.Minute) // past the server's cache of the keys
	if kids := jwksKids(t, s.URL); len(kids) != 2 || kids[0] != fresh || kids[1] != old {
		t.Errorf("JWKS after rotate --now: %v, want [%s %s] (the new key signs, so it is first)", kids, fresh, old)
	}

	code, out, errs = runCLI("keys", "retire", old, "--config", "")
	if code != 0 || !strings.Contains(out, "retired signing key "+old) {
		t.Fatalf("retire the replaced key: exit %d, stdout %q, stderr %q", code, out, errs)
	}
	clock.Advance(time.Minute)
	if kids := jwksKids(t, s.URL); len(kids) != 1 || kids[0] != fresh {
		t.Errorf("JWKS after retire: %v, want only [%s]", kids, fresh)
	}
	if code, _, errs := runCLI("keys", "retire", fresh); code != 1 || !strings.Contains(errs, "rotate --now first") {
		t.Errorf("retire the new signing key: exit %d, stderr %q", code, errs)
	}
}
