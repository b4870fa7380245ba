package main

import (
	"bufio"
	"bytes"
	"context"
	"database/sql"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime/debug"
	"strings"
	"testing"
	"time"
)

func TestServeDemoStartsAndStopsOnSIGTERM(t *testing.T) {
	addr := freePort(t)
	cmd := command(t, []string{"LATCHKEY_LISTEN=" + addr})
	cmd.Args = append(cmd.Args, "serve", "--demo")
	cmd.Stderr = &syncBuffer{} // for stop's failure message
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	banner := make(chan string, 1)
	go func() {
		var b strings.Builder
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			b.WriteString(sc.Text() + "\n")
		}
		banner <- b.String()
	}()
	waitReady(t, addr, cmd)
	stop(t, cmd)
	out := <-banner
	for _, want := range []string{"demo-app", "demo-spa", "jane@example.com", "curl -s -u demo-app:", "/oauth/authorize?"} {
		if !strings.Contains(out, want) {
			t.Errorf("the demo banner lacks %q:\n%s", want, out)
		}
	}
	if _, err := os.Stat(filepath.Join(cmd.Dir, "latchkey-data", "latchkey.db")); err != nil {
		t.Errorf("no embedded database in ./latchkey-data: %v", err)
	}
	fi, err := os.Stat(filepath.Join(cmd.Dir, "latchkey-data", "secret.key"))
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("secret key file: %v, mode %v; want 0600", err, fi.Mode().Perm())
	}
}

// TestServeUsesTemplatesDir: a page in templates_dir replaces the built-in
// one (serve parses the templates while the store opens).
func TestServeUsesTemplatesDir(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "home.html"),
		[]byte(`{{define "title"}}ours{{end}}{{define "content"}}<p id="ours">from templates_dir</p>{{end}}`), 0o600)
	addr := freePort(t)
	cmd := command(t, []string{"LATCHKEY_LISTEN=" + addr, "LATCHKEY_TEMPLATES_DIR=" + dir}, "serve")
	cmd.Stderr = &syncBuffer{}
	startServing(t, cmd, addr)
	res, err := http.Get("http://" + addr + "/")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if res.StatusCode != http.StatusOK || !strings.Contains(string(body), `<p id="ours">from templates_dir</p>`) {
		t.Errorf("GET /: %d %s", res.StatusCode, body)
	}
	stop(t, cmd)
}

func TestFailuresEndWithOneLine(t *testing.T) {
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close()
	dir := t.TempDir()
	badYAML := filepath.Join(dir, "bad.yaml")
	os.WriteFile(badYAML, []byte("listen: 127.0.0.1:0\nunknown_key: 1\n"), 0o600)
	badValue := filepath.Join(dir, "value.yaml")
	os.WriteFile(badValue, []byte("clients:\n  - client_id: x\n    token_endpoint_auth_method: magic\n"), 0o600)
	// Templates parse while the store opens: a broken one still fails the
	// start, with its own message.
	badPage, badMail := filepath.Join(dir, "page"), filepath.Join(dir, "mail")
	os.MkdirAll(badPage, 0o700)
	os.WriteFile(filepath.Join(badPage, "login.html"), []byte("{{ .Unclosed "), 0o600)
	os.MkdirAll(filepath.Join(badMail, "mail"), 0o700)
	os.WriteFile(filepath.Join(badMail, "mail", "welcome.txt"), []byte("{{ end }}"), 0o600)

	tests := []struct {
		name string
		env  []string
		args []string
		want string
	}{
		{"unknown config key", nil, []string{"serve", "--config", badYAML}, "unknown_key"},
		{"bad config value", nil, []string{"serve", "--config", badValue}, "token_endpoint_auth_method"},
		{"missing config file", nil, []string{"serve", "--config", filepath.Join(dir, "absent.yaml")}, "no such file"},
		{"port in use", []string{"LATCHKEY_LISTEN=" + busy.Addr().String()}, []string{"serve"}, "address already in use"},
		{"unreachable database", []string{"LATCHKEY_DATABASE=postgres://nobody:pw@127.0.0.1:1/x?sslmode=disable&connect_timeout=2"}, []string{"serve"}, "database"},
		{"unsupported database", []string{"LATCHKEY_DATABASE=mysql://x"}, []string{"migrate"}, "database"},
		{"broken page template", []string{"LATCHKEY_TEMPLATES_DIR=" + badPage}, []string{"serve"}, "login.html"},
		{"broken mail template", []string{"LATCHKEY_TEMPLATES_DIR=" + badMail}, []string{"serve"}, "welcome.txt"},
		{"unknown command", nil, []string{"frobnicate"}, "unknown command"},
		{"unknown flag", nil, []string{"serve", "--nope"}, "flag provided but not defined"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cmd := command(t, tt.env, tt.args...)
			var stderr bytes.Buffer
			cmd.Stderr = &stderr
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			done := make(chan error, 1)
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			go func() { done <- cmd.Wait() }()
			select {
			case err = <-done:
			case <-ctx.Done():
				cmd.Process.Kill()
				t.Fatal("still running after 60 s")
			}
			if err == nil {
				t.Fatal("exit code 0, want non-zero")
			}
			msg := stderr.String()
			lines := strings.Split(strings.TrimSpace(msg), "\n")
			if !strings.Contains(lines[0], tt.want) {
				t.Errorf("first stderr line %q lacks %q", lines[0], tt.want)
			}
			if !strings.HasPrefix(lines[0], "latchkey: ") {
				t.Errorf("stderr %q does not start with the program name", lines[0])
			}
			if strings.Contains(msg, "pw@") {
				t.Errorf("stderr shows the database password: %s", msg)
			}
		})
	}
}

func TestVersionAndMigrate(t *testing.T) {
	out, err := command(t, nil, "version").Output()
	if err != nil || !strings.HasPrefix(string(out), "latchkey ") || !strings.Contains(string(out), "\ncommit: ") ||
		!strings.Contains(string(out), "\nbuild date: ") {
		t.Errorf("version: %q, %v; want the version, commit and build date", out, err)
	}
	cmd := command(t, nil, "migrate")
	out, err = cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "migrations applied (sqlite)") {
		t.Errorf("migrate: %q, %v", out, err)
	}
	// A new store's migrations are not told one by one.
	if strings.Contains(string(out), "applying schema migration") {
		t.Errorf("migrate of a new store: %q", out)
	}
	again := func() string {
		t.Helper()
		c := exec.Command(cmd.Path, "migrate")
		c.Dir, c.Env = cmd.Dir, cmd.Env
		out, err := c.CombinedOutput()
		if err != nil {
			t.Fatalf("migrate again: %q, %v", out, err)
		}
		return string(out)
	}
	// Twice is fine, and applies nothing.
	if out := again(); strings.Contains(out, "applying") {
		t.Errorf("second migrate: %q", out)
	}
	// An upgrade says which migration runs before it runs (one may take
	// minutes on a large store), and how long it took.
	forget31 := func() {
		t.Helper()
		db, err := sql.Open("sqlite", "file:"+filepath.Join(cmd.Dir, "latchkey-data", "latchkey.db"))
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		if _, err := db.Exec(`DELETE FROM schema_migrations WHERE version = 31`); err != nil {
			t.Fatal(err)
		}
	}
	forget31()
	out = []byte(again())
	if !strings.Contains(string(out), "applying schema migration 0031_ascending_event_indexes\n") ||
		!regexp.MustCompile(`applied schema migration 0031_ascending_event_indexes in [0-9.]+[mµn]?s\n`).Match(out) ||
		strings.Count(string(out), "applying") != 1 {
		t.Errorf("migrate of a store without migration 31: %q", out)
	}
	// Another command that opens the store for writing applies the upgrade
	// too, and says so on stderr: its stdout stays its own.
	forget31()
	c := exec.Command(cmd.Path, "person", "block", "nobody@example.com")
	c.Dir, c.Env = cmd.Dir, cmd.Env
	var stdout, stderr bytes.Buffer
	c.Stdout, c.Stderr = &stdout, &stderr
	if err := c.Run(); err == nil || !strings.Contains(stderr.String(), `no person with email "nobody@example.com"`) {
		t.Fatalf("person block of nobody: %v, stderr %q", err, stderr.String())
	}
	if !strings.HasPrefix(stderr.String(), "applying schema migration 0031_ascending_event_indexes\napplied schema migration 0031_ascending_event_indexes in ") ||
		stdout.Len() != 0 {
		t.Errorf("person block on a store without migration 31: stdout %q, stderr %q", stdout.String(), stderr.String())
	}
	if out := again(); strings.Contains(out, "applying") {
		t.Errorf("migrate after person block: %q", out)
	}
}

// Values stamped with -ldflags win over the build info.
func TestVersionPrintsStampedCommitAndDate(t *testing.T) {
	defer func(v, c, d string) { version, commit, buildDate = v, c, d }(version, commit, buildDate)
	version, commit, buildDate = "v1.2.3", "0123456789abcdef", "2001-02-03T04:05:06Z"
	var b bytes.Buffer
	printVersion(&b)
	for _, want := range []string{"latchkey v1.2.3\n", "commit: 0123456789abcdef\n", "build date: 2001-02-03T04:05:06Z\n", "go: go"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("version output %q lacks %q", b.String(), want)
		}
	}
}

// A config error names the file, the line and the key.
func TestConfigErrorNamesLineAndKey(t *testing.T) {
	path := filepath.Join(t.TempDir(), "config.yaml")
	if err := os.WriteFile(path, []byte("listen: 127.0.0.1:0\nfoo: 1\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	var stderr bytes.Buffer
	if code := run(context.Background(), []string{"serve", "--config", path}, io.Discard, &stderr); code == 0 {
		t.Fatal("serve with an unknown key exited 0")
	}
	if want := "latchkey: config " + path + " line 2: unknown key foo\n"; stderr.String() != want {
		t.Errorf("stderr %q, want %q", stderr.String(), want)
	}
}

// A plain go build or go install stamps no -X values: the version falls
// back to what Go embeds (vcs.revision, vcs.time, vcs.modified, or the
// module version of go install module@version); with nothing, it says why.
func TestVersionFallsBackToBuildInfo(t *testing.T) {
	defer func(v, c, d string) { version, commit, buildDate = v, c, d }(version, commit, buildDate)
	version, commit, buildDate = "", "", ""
	stamped := &debug.BuildInfo{GoVersion: "go1.99", Main: debug.Module{Version: "(devel)"}, Settings: []debug.BuildSetting{
		{Key: "vcs", Value: "git"}, {Key: "vcs.revision", Value: "0123456789abcdef0123456789abcdef01234567"},
		{Key: "vcs.time", Value: "2001-02-03T04:05:06Z"}, {Key: "vcs.modified", Value: "true"}}}
	for name, tc := range map[string]struct {
		bi                      *debug.BuildInfo
		ok                      bool
		version, rev, date, goV string
	}{
		"go build in a git checkout": {stamped, true, "devel-0123456789ab-dirty",
			"0123456789abcdef0123456789abcdef01234567-dirty", "2001-02-03T04:05:06Z", "go1.99"},
		"go install module@version": {&debug.BuildInfo{GoVersion: "go1.99", Main: debug.Module{Version: "v1.4.0"}}, true,
			"v1.4.0", unknownBuild, "unknown", "go1.99"},
		"no VCS stamp": {&debug.BuildInfo{GoVersion: "go1.99", Main: debug.Module{Version: "(devel)"}}, true,
			"devel", unknownBuild, "unknown", "go1.99"},
		"no build info": {nil, false, "devel", unknownBuild, "unknown", "unknown"},
	} {
		rev, date, goV := buildInfoFrom(tc.bi, tc.ok)
		if v := versionFrom(tc.bi, tc.ok); v != tc.version || rev != tc.rev || date != tc.date || goV != tc.goV {
			t.Errorf("%s: version %q, commit %q, date %q, go %q; want %q, %q, %q, %q", name, v, rev, date, goV,
				tc.version, tc.rev, tc.date, tc.goV)
		}
	}
	// -X values win over the stamp.
	commit, buildDate = "feedface", "2020-01-01T00:00:00Z"
	if rev, date, _ := buildInfoFrom(stamped, true); rev != "feedface" || date != "2020-01-01T00:00:00Z" {
		t.Errorf("with -X: commit %q, date %q", rev, date)
	}
}
