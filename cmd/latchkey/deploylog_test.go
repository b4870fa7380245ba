package main

import (
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// TestDeployLogLines keeps docs/DEPLOY.md's example log lines true: each
// line of the checked block, and each inline `msg=...` span, has a line of
// the same message with the same keys in the same order in what a real
// start, a refused token request, a refused authorization request and a
// stop log. Values are illustrative (ids, times, counts) and not compared.
func TestDeployLogLines(t *testing.T) {
	doc, err := os.ReadFile("../../docs/DEPLOY.md")
	if err != nil {
		t.Fatal(err)
	}
	examples := deployExamples(t, string(doc))

	dir := t.TempDir()
	cfg := filepath.Join(dir, "latchkey.yaml")
	if err := os.WriteFile(cfg, []byte(`clients:
  - client_id: web-app
    client_secret: "a-long-random-secret-0123456789"
    grant_types: [client_credentials]
    scopes: [read]
`), 0o600); err != nil {
		t.Fatal(err)
	}
	addr := freePort(t)
	cmd := command(t, []string{"LATCHKEY_LISTEN=" + addr}, "serve", "--config", cfg)
	logged := &syncBuffer{}
	cmd.Stderr = logged
	startServing(t, cmd, addr)
	resp, err := http.PostForm("http://web-app:wrong@"+addr+"/oauth/token", url.Values{"grant_type": {"client_credentials"}})
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp, err = http.Get("http://" + addr + "/oauth/authorize?client_id=nobody"); err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	stop(t, cmd)

	var got []logLine
	for _, l := range strings.Split(logged.String(), "\n") {
		if l != "" {
			got = append(got, parseLogLine(t, l))
		}
	}
	for _, ex := range examples {
		want := parseLogLine(t, ex)
		found := false
		for _, g := range got {
			if g.msg == want.msg && slices.Equal(g.keys, want.keys) {
				found = true
				break
			}
		}
		if !found {
			t.Errorf("docs/DEPLOY.md shows a log line latchkey does not write (message %q, keys %v):\n  %s\nlogged:\n%s",
				want.msg, want.keys, ex, logged.String())
		}
	}
}

// deployExamples are the lines of the fenced block after the comment that
// names this test, and the inline spans that start with msg=.
func deployExamples(t *testing.T, doc string) []string {
	t.Helper()
	var out []string
	_, rest, ok := strings.Cut(doc, "<!-- TestDeployLogLines")
	if !ok {
		t.Fatal("docs/DEPLOY.md has no block checked by TestDeployLogLines")
	}
	_, rest, _ = strings.Cut(rest, "```\n")
	block, _, ok := strings.Cut(rest, "```")
	if !ok {
		t.Fatal("the checked block of docs/DEPLOY.md does not end")
	}
	out = append(out, strings.Split(strings.TrimSpace(block), "\n")...)
	for _, m := range regexp.MustCompile("`(msg=[^`]+)`").FindAllStringSubmatch(doc, -1) {
		out = append(out, m[1])
	}
	if len(out) < 5 {
		t.Fatalf("only %d example lines in docs/DEPLOY.md", len(out))
	}
	return out
}

type logLine struct {
	msg  string
	keys []string // in order, without time, level and msg
}

// parseLogLine reads a line of slog's text format: key=value pairs, a
// value quoted (strconv.Quote) when it has spaces or quotes.
func parseLogLine(t *testing.T, s string) logLine {
	t.Helper()
	var l logLine
	for s = strings.TrimSpace(s); s != ""; s = strings.TrimLeft(s, " ") {
		key, rest, ok := strings.Cut(s, "=")
		if !ok || strings.Contains(key, " ") {
			t.Fatalf("not a key=value pair at %q", s)
		}
		var value string
		if strings.HasPrefix(rest, `"`) {
			q, err := strconv.QuotedPrefix(rest)
			if err != nil {
				t.Fatalf("bad quoted value at %q: %v", rest, err)
			}
			value, _ = strconv.Unquote(q)
			rest = rest[len(q):]
		} else {
			value, rest, _ = strings.Cut(rest, " ")
		}
		s = rest
		switch key {
		case "time", "level":
		case "msg":
			l.msg = value
		default:
			l.keys = append(l.keys, key)
		}
	}
	return l
}
