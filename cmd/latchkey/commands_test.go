package main

import (
	"bytes"
	"os/exec"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// helpPaths are every command and subcommand of the table.
func helpPaths() [][]string {
	var out [][]string
	for _, c := range commandTable() {
		if c.verbs() == nil {
			out = append(out, []string{c.top()})
			continue
		}
		for _, v := range c.verbs() {
			out = append(out, []string{c.top(), v})
		}
	}
	return out
}

// --help, -h and help work on every command and subcommand: exit 0, the
// usage line on stdout, nothing on stderr; and the flags of the synopsis
// are listed, because they come from the command's own flag set.
func TestHelpOnEveryCommand(t *testing.T) {
	flagRE := regexp.MustCompile(`--[a-z-]+`)
	for _, path := range helpPaths() {
		for _, form := range [][]string{append(slices.Clone(path), "--help"), append(slices.Clone(path), "-h"),
			append([]string{"help"}, path...)} {
			code, out, errs := runCLI(form...)
			name := strings.Join(form, " ")
			if code != 0 || errs != "" || !strings.Contains(out, "latchkey "+path[0]) {
				t.Errorf("%s: exit %d, stderr %q, stdout %q", name, code, errs, out)
				continue
			}
			for _, c := range lookup(path) {
				for _, f := range flagRE.FindAllString(c.synopsis, -1) {
					if !strings.Contains(out, "\n  "+f) {
						t.Errorf("%s lists no flag %s:\n%s", name, f, out)
					}
				}
			}
		}
	}
	for _, group := range []string{"person", "client", "keys"} {
		for _, form := range [][]string{{group, "--help"}, {group, "-h"}, {group, "help"}, {"help", group}} {
			code, out, errs := runCLI(form...)
			if code != 0 || errs != "" {
				t.Errorf("%v: exit %d, stderr %q", form, code, errs)
			}
			for _, p := range helpPaths() {
				if p[0] == group && !strings.Contains(out, p[1]) {
					t.Errorf("%v does not name the subcommand %s:\n%s", form, p[1], out)
				}
			}
		}
	}
	for _, form := range [][]string{{"help"}, {"--help"}, {"-h"}} {
		if code, out, _ := runCLI(form...); code != 0 || !strings.Contains(out, "latchkey keys retire KID") {
			t.Errorf("%v: exit %d, %q", form, code, out)
		}
	}
	if code, _, errs := runCLI("help", "nosuch"); code != 2 || !strings.Contains(errs, `unknown command "nosuch"`) {
		t.Errorf("help nosuch: exit %d, %q", code, errs)
	}
	if code, _, errs := runCLI("keys", "nosuch"); code != 2 || !strings.Contains(errs, "unknown subcommand") {
		t.Errorf("keys nosuch: exit %d, %q", code, errs)
	}
}

// serve --help lists every LATCHKEY_* variable with its default.
func TestServeHelpListsVariables(t *testing.T) {
	code, out, _ := runCLI("serve", "--help")
	if code != 0 {
		t.Fatalf("exit %d", code)
	}
	for _, want := range []*regexp.Regexp{
		regexp.MustCompile(`LATCHKEY_OIDC_KEY_PUBLISH_AHEAD +24h\n`),
		regexp.MustCompile(`LATCHKEY_LISTEN +127\.0\.0\.1:8080\n`),
		regexp.MustCompile(`LATCHKEY_ISSUER +http://127\.0\.0\.1:8080\n`),
		regexp.MustCompile(`LATCHKEY_SMTP_PASSWORD +-\n`),
	} {
		if !want.MatchString(out) {
			t.Errorf("serve --help lacks %s:\n%s", want, out)
		}
	}
}

// Completion offers each command's own flags: bash, run on the script.
func TestCompletionOffersEachCommandsFlags(t *testing.T) {
	var script bytes.Buffer
	if err := completionCmd([]string{"bash"}, &script); err != nil {
		t.Fatal(err)
	}
	complete := func(words ...string) []string {
		t.Helper()
		prog := script.String() + "\nCOMP_WORDS=(" + strings.Join(words, " ") + ")\nCOMP_CWORD=" +
			strconv.Itoa(len(words)-1) + "\n_latchkey\nprintf '%s\\n' \"${COMPREPLY[@]}\"\n"
		out, err := exec.Command("bash", "-c", prog).CombinedOutput()
		if err != nil {
			t.Fatalf("bash: %v %s", err, out)
		}
		return strings.Fields(string(out))
	}
	for _, tc := range []struct {
		words      []string
		want, none []string
	}{
		{[]string{"latchkey", "keys", "rotate", "--"}, []string{"--now", "--config", "--help"}, []string{"--demo", "--email"}},
		{[]string{"latchkey", "keys", "list", "--"}, []string{"--config"}, []string{"--now"}},
		{[]string{"latchkey", "keys", "''"}, []string{"list", "rotate", "retire", "help"}, nil},
		{[]string{"latchkey", "serve", "--"}, []string{"--demo", "--config"}, []string{"--now", "--email"}},
		{[]string{"latchkey", "person", "show", "--"}, []string{"--email", "--partition"}, []string{"--demo"}},
		{[]string{"latchkey", "client", "create", "--"}, []string{"--redirect-uris", "--auth-method", "--file"}, []string{"--email"}},
		{[]string{"latchkey", "bench", "--"}, []string{"--connections", "--preload"}, []string{"--config"}},
		{[]string{"latchkey", "client", "create", "--auth-method", "''"}, []string{"private_key_jwt", "none"}, nil},
		{[]string{"latchkey", "''"}, []string{"serve", "keys", "completion", "help"}, []string{"bench-ceiling"}},
		{[]string{"latchkey", "help", "''"}, []string{"serve", "keys", "person"}, []string{"--config"}},
	} {
		got := complete(tc.words...)
		for _, w := range tc.want {
			if !slices.Contains(got, w) {
				t.Errorf("%v: completions %v lack %s", tc.words, got, w)
			}
		}
		for _, w := range tc.none {
			if slices.Contains(got, w) {
				t.Errorf("%v: completions %v offer %s, another command's flag", tc.words, got, w)
			}
		}
	}
}
