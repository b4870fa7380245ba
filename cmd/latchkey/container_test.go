package main

import (
	"net"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// Every documented docker or podman run line sets LATCHKEY_ISSUER (the
// image listens on 0.0.0.0, which no client can reach as an issuer), and
// .dockerignore keeps the server key, bin/ and .git out of the build context.
func TestContainerDocs(t *testing.T) {
	root := filepath.Join("..", "..")
	runLine := regexp.MustCompile(`(docker|podman) run [^\n]*`)
	found := 0
	for _, f := range []string{"Dockerfile", "README.md", "docs/DEPLOY.md"} {
		b, err := os.ReadFile(filepath.Join(root, f))
		if err != nil {
			t.Fatal(err)
		}
		text := strings.ReplaceAll(string(b), "\\\n", " ") // shell line continuations
		for _, line := range runLine.FindAllString(text, -1) {
			if strings.Contains(line, "serve --demo") {
				continue // the demo prints its own URLs on the loopback
			}
			found++
			if !strings.Contains(line, "LATCHKEY_ISSUER=") {
				t.Errorf("%s: %q does not set LATCHKEY_ISSUER", f, line)
			}
		}
	}
	if found < 3 {
		t.Errorf("found %d run lines in Dockerfile, README.md and docs/DEPLOY.md, want at least 3", found)
	}
	b, err := os.ReadFile(filepath.Join(root, ".dockerignore"))
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(string(b), "\n")
	for _, want := range []string{"latchkey-data/", "bin/", ".git"} {
		ok := false
		for _, l := range lines {
			ok = ok || strings.TrimSpace(l) == want
		}
		if !ok {
			t.Errorf(".dockerignore lacks %s", want)
		}
	}
}

// serve, started as the image starts it (listening on 0.0.0.0, no issuer)
// with a misspelt variable, warns of both at start and still serves.
func TestServeWarnsOfUnspecifiedIssuerAndMisspeltVariable(t *testing.T) {
	_, port, err := net.SplitHostPort(freePort(t))
	if err != nil {
		t.Fatal(err)
	}
	// Split, so that config's drift test, which reads the variable names
	// in the code, does not take the misspelling for a variable read.
	misspelt := "LATCHKEY_LOG_" + "LEVL"
	cmd := command(t, []string{"LATCHKEY_LISTEN=0.0.0.0:" + port, misspelt + "=debug"}, "serve")
	stderr := &syncBuffer{}
	cmd.Stderr = stderr
	startServing(t, cmd, "127.0.0.1:"+port)
	stop(t, cmd)
	log := stderr.String()
	for _, want := range []string{
		"issuer http://0.0.0.0:" + port + " names the unspecified address 0.0.0.0",
		"set LATCHKEY_ISSUER",
		"LATCHKEY_LOG_LEVL is not a latchkey variable: it is ignored (did you mean LATCHKEY_LOG_LEVEL?)",
	} {
		if !strings.Contains(log, want) {
			t.Errorf("serve's log lacks %q:\n%s", want, log)
		}
	}
}
