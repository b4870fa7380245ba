package config

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// testOnlyVariables are the LATCHKEY_* variables that only tests and tools
// read; latchkey itself never does.
var testOnlyVariables = []string{
	"LATCHKEY_TEST_POSTGRES",     // pgtest: the PostgreSQL server of the tests
	"LATCHKEY_TEST_NORACE",       // cmd/latchkey: build the test binary without -race
	"LATCHKEY_SQLITE_LOCK_CHILD", // sqlite: the child process of the lock test
	"LATCHKEY_EVENTS",            // events/scale: how many events
	"LATCHKEY_BACKENDS",          // events/scale: which backends
	"LATCHKEY_SCREENSHOTS",       // e2e: where screenshots go
	"LATCHKEY_DEX",               // e2e: the dex binary of the federation test
}

// Every LATCHKEY_* variable that the Go code names is a config variable or
// on testOnlyVariables: a variable read somewhere else would escape
// serve --help and the misspelling warning.
func TestEveryVariableInTheCodeIsKnown(t *testing.T) {
	known := map[string]bool{}
	for _, v := range Variables() {
		known[v.Name] = true
	}
	for _, v := range testOnlyVariables {
		if known[v] {
			t.Errorf("%s is a config variable and on testOnlyVariables", v)
		}
		known[v] = true
	}
	re := regexp.MustCompile(`"(LATCHKEY_[A-Z0-9_]*[A-Z0-9])[="]`)
	root := filepath.Join("..", "..")
	found := 0
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == ".git" || d.Name() == "node_modules") {
			return filepath.SkipDir
		}
		// This file names misspellings on purpose.
		if d.IsDir() || !strings.HasSuffix(path, ".go") || d.Name() == "env_test.go" && strings.Contains(path, "config") {
			return nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		for _, m := range re.FindAllStringSubmatch(string(b), -1) {
			found++
			if !known[m[1]] {
				t.Errorf("%s reads %s, which is neither a config variable nor on testOnlyVariables", path, m[1])
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if found < 20 {
		t.Errorf("found %d LATCHKEY_* names in the code: the walk missed the tree", found)
	}

	// The docs, scripts and build files name only variables that exist.
	anyName := regexp.MustCompile(`LATCHKEY_[A-Z0-9_]*[A-Z0-9]`)
	var files []string
	for _, pattern := range []string{"*.md", "docs/*.md", "docs/decisions/*.md", "Makefile", "Dockerfile", "scripts/*", ".ci/*", "packaging/*"} {
		m, err := filepath.Glob(filepath.Join(root, pattern))
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, m...)
	}
	for _, f := range files {
		if fi, err := os.Stat(f); err != nil || fi.IsDir() {
			continue
		}
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, name := range anyName.FindAllString(string(b), -1) {
			if !known[name] {
				t.Errorf("%s names %s, which latchkey does not read", f, name)
			}
		}
	}
	if len(files) < 10 {
		t.Errorf("found %d docs and scripts: the glob missed the tree", len(files))
	}
}

func TestVariablesListDefaults(t *testing.T) {
	byName := map[string]Variable{}
	for _, v := range Variables() {
		byName[v.Name] = v
	}
	for name, want := range map[string]Variable{
		"LATCHKEY_LISTEN":                 {Key: "listen", Default: DefaultListen},
		"LATCHKEY_ISSUER":                 {Key: "issuer", Default: "http://" + DefaultListen},
		"LATCHKEY_OIDC_KEY_PUBLISH_AHEAD": {Key: "oidc.key_publish_ahead", Default: "24h"},
		"LATCHKEY_SMTP_RETRY_AFTER":       {Key: "smtp.retry_after", Default: "30s"},
		"LATCHKEY_SHUTDOWN_DRAIN_DELAY":   {Key: "shutdown.drain_delay", Default: "7s"},
		"LATCHKEY_IMPORT_ENABLED":         {Key: "import.enabled", Default: "true"},
		"LATCHKEY_SMTP_PASSWORD":          {Key: "smtp.password", Default: ""},
	} {
		want.Name = name
		if got := byName[name]; got != want {
			t.Errorf("Variables()[%s] = %+v, want %+v", name, got, want)
		}
	}
	if _, ok := byName["LATCHKEY_CLIENTS"]; ok {
		t.Error("lists come only from the file, yet LATCHKEY_CLIENTS is listed")
	}
}

// A *bool key (import.enabled, features.*) is set by its variable too.
func TestEnvSetsPointerBools(t *testing.T) {
	c, err := Load("", []string{"LATCHKEY_IMPORT_ENABLED=false", "LATCHKEY_FEATURES_EVENTS_API_ENABLED=false"})
	if err != nil {
		t.Fatal(err)
	}
	if *c.Import.Enabled || c.Features.EventsAPIEnabled == nil || *c.Features.EventsAPIEnabled {
		t.Errorf("import.enabled %v, features.events_api_enabled %v; want both false", *c.Import.Enabled, c.Features.EventsAPIEnabled)
	}
}

func TestUnknownVariablesSuggestTheClosest(t *testing.T) {
	got := UnknownVariables([]string{"LATCHKEY_LISTN=x", "LATCHKEY_OIDC_KEY_PUBLISH_AHED=0s", "LATCHKEY_LISTEN=y",
		"LATCHKEY_WHOLLY_UNRELATED_THING=1", "LATCHKEY_TEST_POSTGRES=u", "PATH=/bin"}, testOnlyVariables...)
	want := []string{
		"LATCHKEY_LISTN is not a latchkey variable: it is ignored (did you mean LATCHKEY_LISTEN?)",
		"LATCHKEY_OIDC_KEY_PUBLISH_AHED is not a latchkey variable: it is ignored (did you mean LATCHKEY_OIDC_KEY_PUBLISH_AHEAD?)",
		"LATCHKEY_WHOLLY_UNRELATED_THING is not a latchkey variable: it is ignored",
	}
	if !slices.Equal(got, want) {
		t.Errorf("UnknownVariables:\n got %q\nwant %q", got, want)
	}
}

// An error about a value a variable set names the variable; an unknown key
// of the file names the closest known key of its block.
func TestErrorsNameTheirSource(t *testing.T) {
	_, err := Load("", []string{"LATCHKEY_OIDC_KEY_PUBLISH_AHEAD=30s"})
	if err == nil || !strings.Contains(err.Error(), "LATCHKEY_OIDC_KEY_PUBLISH_AHEAD") {
		t.Errorf("a bad value from a variable: %v, want the variable named", err)
	}
	_, err = Load(writeFile(t, "oidc:\n  key_publish_ahead: 30s\n"), nil)
	if err == nil || strings.Contains(err.Error(), "LATCHKEY_") {
		t.Errorf("a bad value from the file: %v, want no variable named", err)
	}
	for body, want := range map[string]string{
		"listn: 127.0.0.1:1\n":                 "unknown key listn (did you mean listen?)",
		"oidc:\n  key_publish_ahed: 1h\n":      "unknown key key_publish_ahed (did you mean key_publish_ahead?)",
		goodClient + "    redirect_uri: [x]\n": "unknown key redirect_uri (did you mean redirect_uris?)",
		"smtp:\n  zzzzzzzzzz: 1\n":             "unknown key zzzzzzzzzz",
	} {
		_, err := Load(writeFile(t, body), nil)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: %v, want %q", body, err, want)
		}
		if strings.HasSuffix(want, "zzzzzzzzzz") && strings.Contains(err.Error(), "did you mean") {
			t.Errorf("%q: %v suggests a key that is not close", body, err)
		}
	}
	c, err := Load("", []string{"LATCHKEY_DATABASE=sqlite:x.db"})
	if err != nil || c.Origin("database") != " (set by LATCHKEY_DATABASE)" || c.Origin("listen") != "" {
		t.Errorf("Origin: %q, %q, %v", c.Origin("database"), c.Origin("listen"), err)
	}
}

// serve warns of an issuer no client can reach, saying what to set, and
// of a misspelt variable.
func TestStartWarnings(t *testing.T) {
	for _, tc := range []struct {
		env  []string
		want string
	}{
		{[]string{"LATCHKEY_LISTEN=0.0.0.0:8080"}, "set LATCHKEY_ISSUER"},
		{[]string{"LATCHKEY_LISTEN=[::]:8080"}, "unspecified address ::"},
		{[]string{"LATCHKEY_ISSUER=http://0.0.0.0:9000", "LATCHKEY_LISTEN=0.0.0.0:9000"}, "http://localhost:9000"},
		{[]string{"LATCHKEY_ISSUR=http://x"}, "did you mean LATCHKEY_ISSUER?"},
	} {
		c, err := Load("", tc.env)
		if err != nil {
			t.Fatal(err)
		}
		if got := strings.Join(c.StartWarnings(tc.env), "\n"); !strings.Contains(got, tc.want) {
			t.Errorf("%v: warnings %q, want %q", tc.env, got, tc.want)
		}
	}
	env := []string{"LATCHKEY_LISTEN=0.0.0.0:8080", "LATCHKEY_ISSUER=https://id.example.com"}
	c, err := Load("", env)
	if err != nil {
		t.Fatal(err)
	}
	if w := c.StartWarnings(env); len(w) != 0 {
		t.Errorf("listen 0.0.0.0 with a reachable issuer: warnings %q, want none", w)
	}
}
