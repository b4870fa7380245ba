package main

import (
	"bufio"
	"context"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/coreos/go-oidc/v3/oidc"
	"golang.org/x/oauth2"

	"github.com/latchkey/latchkey/internal/login"
	"github.com/latchkey/latchkey/internal/server/servertest"
)

// TestDemoOpenIDConnectEndToEnd follows what serve --demo prints, as a
// newcomer would: discovery, the printed authorization URL through the
// hosted pages, the code exchanged by golang.org/x/oauth2, the ID token
// verified by coreos/go-oidc (nonce included), the demo clients in
// client list --demo, and the sign-out the demo page links to.
func TestDemoOpenIDConnectEndToEnd(t *testing.T) {
	addr := freePort(t)
	issuer := "http://" + addr
	cmd := command(t, []string{"LATCHKEY_LISTEN=" + addr}, "serve", "--demo")
	cmd.Stderr = &syncBuffer{}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	startServing(t, cmd, addr)
	banner := readBanner(t, stdout)

	for _, want := range []string{
		"authenticates with client_secret_basic", "authenticates with none",
		"post-logout redirect URI of both clients: " + issuer + "/demo/callback",
		"OpenID Connect discovery: " + issuer + "/.well-known/openid-configuration",
		"console and account page do not exist yet",
	} {
		if !strings.Contains(banner, want) {
			t.Errorf("the banner lacks %q:\n%s", want, banner)
		}
	}
	password := regexp.MustCompile(`person +jane@example\.com / (\S+)`).FindStringSubmatch(banner)
	authURL := regexp.MustCompile(`(?m)^  (http://\S+/oauth/authorize\?\S+)$`).FindStringSubmatch(banner)
	if password == nil || authURL == nil {
		t.Fatalf("no password or authorization URL in the banner:\n%s", banner)
	}
	u, err := url.Parse(authURL[1])
	if err != nil {
		t.Fatal(err)
	}
	nonce := u.Query().Get("nonce")
	if !strings.Contains(" "+u.Query().Get("scope")+" ", " openid ") || nonce == "" {
		t.Fatalf("the printed URL asks for no openid scope or has no nonce: %s", u)
	}

	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	provider, err := oidc.NewProvider(ctx, issuer)
	if err != nil {
		t.Fatalf("discovery: %v", err)
	}
	jar, _ := cookiejar.New(nil)
	b := &http.Client{Jar: jar, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	back := followDemo(t, b, issuer, authURL[1], "jane@example.com", password[1])
	if back.Path != "/demo/callback" || back.Query().Get("state") != "demo-state" || back.Query().Get("code") == "" {
		t.Fatalf("sent back to %s: want the demo callback with a code and the state", back)
	}
	page := getPage(t, b, back.String(), http.StatusOK)
	if !strings.Contains(page, "code_verifier="+login.DemoVerifier) || !strings.Contains(page, `id="end-session"`) {
		t.Errorf("the demo page shows no exchange or sign-out:\n%s", page)
	}

	rp := &oauth2.Config{ClientID: demoPublicID, RedirectURL: issuer + "/demo/callback", Endpoint: provider.Endpoint()}
	rp.Endpoint.AuthStyle = oauth2.AuthStyleInParams // a public client: client_id in the body, no secret
	tok, err := rp.Exchange(ctx, back.Query().Get("code"), oauth2.VerifierOption(login.DemoVerifier))
	if err != nil {
		t.Fatalf("exchange: %v", err)
	}
	raw, _ := tok.Extra("id_token").(string)
	idt, err := provider.Verifier(&oidc.Config{ClientID: demoPublicID}).Verify(ctx, raw)
	if err != nil {
		t.Fatalf("verify the ID token %q: %v", raw, err)
	}
	var claims struct {
		Email string `json:"email"`
	}
	if err := idt.Claims(&claims); err != nil {
		t.Fatal(err)
	}
	if idt.Nonce != nonce || claims.Email != "jane@example.com" {
		t.Errorf("ID token nonce %q email %q; want %q and the demo person", idt.Nonce, claims.Email, nonce)
	}
	if err := idt.VerifyAccessToken(tok.AccessToken); err != nil {
		t.Errorf("at_hash: %v", err)
	}

	// client list reads beside the running server; the demo clients live
	// in its process, and --demo lists them.
	t.Setenv("LATCHKEY_DATABASE", "sqlite:"+filepath.Join(cmd.Dir, "latchkey-data", "latchkey.db"))
	t.Setenv("LATCHKEY_LISTEN", addr)
	code, out, errs := runCLI("client", "list", "--demo")
	if code != 0 || !regexp.MustCompile(`(?m)^demo-app\s+config\s+client_secret_basic\s`).MatchString(out) ||
		!regexp.MustCompile(`(?m)^demo-spa\s+config\s+none\s`).MatchString(out) {
		t.Errorf("client list --demo: exit %d, stdout %q, stderr %q", code, out, errs)
	}
	code, out, _ = runCLI("client", "show", "demo-spa", "--demo")
	if code != 0 || !strings.Contains(out, `"post_logout_redirect_uris": [`) || !strings.Contains(out, issuer+"/demo/callback") {
		t.Errorf("client show demo-spa --demo: exit %d, stdout %q", code, out)
	}

	// Sign out: the confirmation names the client and lets the person
	// stay; confirming ends at the demo page's signed-out state.
	link := regexp.MustCompile(`id="end-session" href="([^"]+)"`).FindStringSubmatch(page)
	if link == nil {
		t.Fatal("no end-session link")
	}
	confirm := getPage(t, b, strings.ReplaceAll(link[1], "&amp;", "&"), http.StatusOK)
	if !strings.Contains(confirm, "Demo SPA (public, PKCE)") || !strings.Contains(confirm, `id="stay"`) {
		t.Errorf("the logout confirmation does not name the client or offer to stay:\n%s", confirm)
	}
	m := servertest.CSRFRE.FindStringSubmatch(confirm)
	if m == nil {
		t.Fatalf("no CSRF token:\n%s", confirm)
	}
	resp, err := b.PostForm(issuer+"/oauth/end_session", url.Values{"csrf_token": {m[1]}, "confirm": {"yes"},
		"client_id": {demoPublicID}, "post_logout_redirect_uri": {issuer + "/demo/callback"}})
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	loc, err := resp.Location()
	if err != nil || loc.Path != "/demo/callback" {
		t.Fatalf("end session: %d to %v (%v)", resp.StatusCode, loc, err)
	}
	if out := getPage(t, b, loc.String(), http.StatusOK); !strings.Contains(out, `data-status="signed-out"`) {
		t.Errorf("the post-logout page:\n%s", out)
	}
	stop(t, cmd)
}

// readBanner reads serve --demo's stdout up to the authorization URL,
// then drains the rest so the server never blocks writing.
func readBanner(t *testing.T, r io.Reader) string {
	t.Helper()
	var b strings.Builder
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		b.WriteString(sc.Text() + "\n")
		if strings.Contains(sc.Text(), "/oauth/authorize?") {
			go func() { _, _ = io.Copy(io.Discard, r) }()
			return b.String()
		}
	}
	t.Fatalf("the banner ended without an authorization URL:\n%s", b.String())
	return ""
}

// followDemo follows authURL through the hosted login and consent pages
// (allowing) until the browser leaves them, and returns where it went.
func followDemo(t *testing.T, b *http.Client, issuer, authURL, email, password string) *url.URL {
	t.Helper()
	next := authURL
	for range 8 {
		resp, err := b.Get(next)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode == http.StatusFound || resp.StatusCode == http.StatusSeeOther {
			loc, err := resp.Location()
			if err != nil {
				t.Fatal(err)
			}
			if loc.Path != "/login" && loc.Path != "/consent" && loc.Path != "/oauth/authorize" {
				return loc
			}
			next = loc.String()
			continue
		}
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("GET %s: %d\n%s", next, resp.StatusCode, body)
		}
		m := servertest.CSRFRE.FindStringSubmatch(string(body))
		if m == nil {
			t.Fatalf("GET %s: no form\n%s", next, body)
		}
		cur, _ := url.Parse(next)
		form := url.Values{"csrf_token": {m[1]}, "request": {cur.Query().Get("request")}}
		if cur.Path == "/login" {
			form.Set("email", email)
			form.Set("password", password)
		} else {
			form.Set("decision", "allow")
		}
		resp, err = b.PostForm(issuer+cur.Path, form)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		loc, err := resp.Location()
		if err != nil {
			t.Fatalf("POST %s: %d, no redirect", cur.Path, resp.StatusCode)
		}
		if loc.Path != "/login" && loc.Path != "/consent" && loc.Path != "/oauth/authorize" {
			return loc
		}
		next = loc.String()
	}
	t.Fatal("too many steps")
	return nil
}

func getPage(t *testing.T, b *http.Client, u string, status int) string {
	t.Helper()
	resp, err := b.Get(u)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != status {
		t.Fatalf("GET %s: %d, want %d\n%s", u, resp.StatusCode, status, body)
	}
	return string(body)
}
