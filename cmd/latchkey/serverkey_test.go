package main

import (
	"bytes"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/latchkey/latchkey/internal/store/postgres/pgtest"
)

// A second instance with another server key on the database of the first
// ends with one line on stderr naming the problem and a non-zero exit code,
// and the first goes on authenticating its clients. PostgreSQL: the two run
// side by side. SQLite (one process per file): the first stops, the second
// is refused on the same file, the first starts again.
func TestAnotherServerKeyFailsToStart(t *testing.T) {
	for _, backend := range []string{"sqlite", "postgres"} {
		t.Run(backend, func(t *testing.T) {
			dir := t.TempDir()
			cfgPath := filepath.Join(dir, "latchkey.yaml")
			if err := os.WriteFile(cfgPath, []byte(crashConfig), 0o600); err != nil {
				t.Fatal(err)
			}
			database := "sqlite:" + filepath.Join(dir, "data", "latchkey.db")
			if backend == "postgres" {
				database = pgtest.NewDatabase(t)
			}
			keyA, keyB := filepath.Join(dir, "a.key"), filepath.Join(dir, "b.key")
			env := func(addr, keyFile string) []string {
				return []string{"LATCHKEY_LISTEN=" + addr, "LATCHKEY_DATABASE=" + database,
					"LATCHKEY_SECRET_KEY_FILE=" + keyFile, "LATCHKEY_LOG_LEVEL=warn"}
			}
			addrA := freePort(t)
			startA := func() *exec.Cmd {
				cmd := command(t, env(addrA, keyA), "serve", "--config", cfgPath)
				startServing(t, cmd, addrA)
				return cmd
			}
			a := startA()
			tokenStatus(t, addrA, 200)
			if backend == "sqlite" {
				stop(t, a)
			}

			b := command(t, env(freePort(t), keyB), "serve", "--config", cfgPath)
			var stderr bytes.Buffer
			b.Stderr = &stderr
			var exit *exec.ExitError
			if err := runWithin(b, 60*time.Second); !errors.As(err, &exit) {
				t.Fatalf("the instance with another key: %v, want a non-zero exit; stderr: %s", err, stderr.String())
			}
			msg := strings.TrimSpace(stderr.String())
			if strings.Contains(msg, "\n") || !strings.HasPrefix(msg, "latchkey: server key mismatch: ") ||
				!strings.Contains(msg, keyB) {
				t.Errorf("stderr %q: want one line naming the mismatch and the key file", msg)
			}
			for _, f := range []string{keyA, keyB} {
				key, err := os.ReadFile(f)
				if err != nil {
					t.Fatal(err)
				}
				for _, enc := range []string{string(key), hex.EncodeToString(key), base64.StdEncoding.EncodeToString(key),
					base64.RawURLEncoding.EncodeToString(key)} {
					if strings.Contains(msg, enc) {
						t.Errorf("stderr shows a server key: %q", msg)
					}
				}
			}

			if backend == "sqlite" {
				a = startA()
			}
			tokenStatus(t, addrA, 200)
			stop(t, a)
		})
	}
}

func tokenStatus(t *testing.T, addr string, want int) {
	t.Helper()
	form := url.Values{"grant_type": {"client_credentials"}, "scope": {"read"},
		"client_id": {"m2m"}, "client_secret": {"m2m-secret-m2m-secret"}}
	resp, err := http.PostForm("http://"+addr+"/oauth/token", form)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != want {
		t.Errorf("client credentials at %s: %d, want %d", addr, resp.StatusCode, want)
	}
}
