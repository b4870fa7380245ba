package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// backupConfig adds a person to crashConfig: the backup must carry persons too.
const backupConfig = crashConfig + `persons:
  - email: jane@example.com
    password: "correct horse battery staple"
`

// `latchkey backup` beside a running SQLite server writes a snapshot that,
// restored in a new folder with the key file, starts with the same clients,
// persons, tokens and events — also the events still in the event log.
func TestBackupWhileServingRestoresClientsPersonsTokensEvents(t *testing.T) {
	dir := t.TempDir()
	cfgPath := filepath.Join(dir, "latchkey.yaml")
	if err := os.WriteFile(cfgPath, []byte(backupConfig), 0o600); err != nil {
		t.Fatal(err)
	}
	keyFile := filepath.Join(dir, "secret.key")
	env := func(addr, db string) []string {
		return []string{"LATCHKEY_LISTEN=" + addr, "LATCHKEY_DATABASE=sqlite:" + db,
			"LATCHKEY_SECRET_KEY_FILE=" + keyFile, "LATCHKEY_LOG_LEVEL=warn"}
	}
	db := filepath.Join(dir, "data", "latchkey.db")
	addr := freePort(t)
	srv := command(t, env(addr, db), "serve", "--config", cfgPath)
	startServing(t, srv, addr)

	const form = "grant_type=client_credentials&scope=read&client_id=m2m&client_secret=m2m-secret-m2m-secret"
	var tokens []string
	for i := range 20 {
		tok := postToken(t, "http://"+addr, form, fmt.Sprint("backup-ua-", i))
		tokens = append(tokens, tok)
		// An introspection's event goes to the event log, indexed behind.
		introspect(t, "http://"+addr, tok, fmt.Sprint("backup-ua-", i))
	}

	out := filepath.Join(t.TempDir(), "snapshot.db")
	var stdout, stderr bytes.Buffer
	bk := command(t, env(addr, db), "backup", "--config", cfgPath, out)
	bk.Stdout, bk.Stderr = &stdout, &stderr
	if err := bk.Run(); err != nil {
		t.Fatalf("backup while serving: %v\n%s", err, stderr.String())
	}
	if !strings.Contains(stdout.String(), "backup written") {
		t.Errorf("backup said %q", stdout.String())
	}
	tokenStatus(t, addr, 200) // the server kept serving
	stop(t, srv)

	// Restore into a new folder: the snapshot and its event log, and the key.
	restored := filepath.Join(t.TempDir(), "latchkey.db")
	for _, suffix := range []string{"", "-events"} {
		b, err := os.ReadFile(out + suffix)
		if err != nil {
			if suffix == "-events" && os.IsNotExist(err) {
				continue
			}
			t.Fatal(err)
		}
		if err := os.WriteFile(restored+suffix, b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	// The restored server runs with the same config file: its clients are a
	// read-only layer over the store (internal/client.Static), never written
	// to it, so they come from the file; tokens, persons' state and events
	// come from the backup.
	addr2 := freePort(t)
	again := command(t, env(addr2, restored), "serve", "--config", cfgPath)
	startServing(t, again, addr2)

	tokenStatus(t, addr2, 200)
	for i, tok := range tokens {
		if !introspect(t, "http://"+addr2, tok, "after-restore") {
			t.Errorf("token %d is not active after the restore", i)
		}
	}
	ps := command(t, env(addr2, restored), "person", "show", "--email", "jane@example.com")
	if b, err := ps.CombinedOutput(); err != nil || !strings.Contains(string(b), "jane@example.com") {
		t.Errorf("person after the restore: %v %s", err, b)
	}
	found := map[string]bool{}
	for _, typ := range []string{"TOKEN_REQUEST_ACCESS_TOKEN_CREATED", "TOKEN_INTROSPECTION_SUCCESS"} {
		req, _ := http.NewRequest("GET", "http://"+addr2+"/oauth/api/v1/events?"+url.Values{"event_type": {typ}, "size": {"1000"}}.Encode(), nil)
		req.SetBasicAuth("auditor", "auditor-secret-auditor")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		var page struct {
			ResultSet []struct {
				UserAgent string `json:"user_agent"`
			} `json:"result_set"`
		}
		err = json.NewDecoder(resp.Body).Decode(&page)
		resp.Body.Close()
		if err != nil || resp.StatusCode != 200 {
			t.Fatalf("events: %d %v", resp.StatusCode, err)
		}
		for _, r := range page.ResultSet {
			found[typ+"|"+r.UserAgent] = true
		}
	}
	for i := range 20 {
		for _, typ := range []string{"TOKEN_REQUEST_ACCESS_TOKEN_CREATED", "TOKEN_INTROSPECTION_SUCCESS"} {
			if !found[typ+"|"+fmt.Sprint("backup-ua-", i)] {
				t.Errorf("event %s of request %d is missing after the restore", typ, i)
			}
		}
	}
	stop(t, again)
}

func postToken(t *testing.T, base, form, ua string) string {
	t.Helper()
	req, _ := http.NewRequest("POST", base+"/oauth/token", strings.NewReader(form))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("User-Agent", ua)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var tok struct {
		AccessToken string `json:"access_token"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&tok); err != nil || tok.AccessToken == "" {
		t.Fatalf("token: %d %v", resp.StatusCode, err)
	}
	return tok.AccessToken
}

func introspect(t *testing.T, base, token, ua string) bool {
	t.Helper()
	form := "client_id=m2m&client_secret=m2m-secret-m2m-secret&token=" + url.QueryEscape(token)
	req, _ := http.NewRequest("POST", base+"/oauth/api/v2/token/introspect", strings.NewReader(form))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("User-Agent", ua)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var ans struct {
		Active bool `json:"active"`
	}
	_ = json.NewDecoder(resp.Body).Decode(&ans)
	return resp.StatusCode == 200 && ans.Active
}

// Each completion script is printed, and bash's parses.
func TestCompletionScripts(t *testing.T) {
	for _, shell := range []string{"bash", "zsh", "fish"} {
		var out bytes.Buffer
		if err := completionCmd([]string{shell}, &out); err != nil || !strings.Contains(out.String(), "latchkey") {
			t.Errorf("%s: %v %q", shell, err, out.String())
		}
		if shell == "bash" {
			cmd := exec.Command("bash", "-n")
			cmd.Stdin = &out
			if b, err := cmd.CombinedOutput(); err != nil {
				t.Errorf("bash -n: %v %s", err, b)
			}
		}
	}
	if err := completionCmd([]string{"tcsh"}, io.Discard); err == nil {
		t.Error("an unknown shell is accepted")
	}
}
