package main

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/latchkey/latchkey/internal/store/postgres"
	"github.com/latchkey/latchkey/internal/store/postgres/pgtest"
)

// mixedConfig is lbClients, an auditor that searches events and an API
// user that imports persons (no seeded person: each binary would write it
// again at start). It is read by both binaries, so it uses only keys the
// previous release knows.
const mixedConfig = lbClients + `  - client_id: auditor
    client_secret: "auditor-secret-auditor"
    grant_types: [client_credentials]
    scopes: [vendor_api_events]
api_users:
  - username: importer
    password: "importer-password"
`

// previousRelease builds the binary of the commit named in
// scripts/previous-release from the git history (git archive into a temp
// folder; -trimpath and CGO off, like make build, so the shared build cache
// serves every package that did not change). It skips when it cannot,
// except under CI=true, where it fails.
func previousRelease(t *testing.T) (bin, commit string) {
	t.Helper()
	cannot := t.Skipf
	if os.Getenv("CI") == "true" {
		cannot = t.Fatalf
	}
	top, err := exec.Command("git", "rev-parse", "--show-toplevel").Output()
	if err != nil {
		cannot("the previous release is built from git history, and this is not a git checkout: %v", err)
	}
	root := strings.TrimSpace(string(top))
	commit, err = readPreviousRelease(filepath.Join(root, "scripts", "previous-release"))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	src := filepath.Join(dir, "src")
	if err := os.Mkdir(src, 0o755); err != nil {
		t.Fatal(err)
	}
	archive := exec.Command("git", "-C", root, "archive", "--format=tar", commit)
	untar := exec.Command("tar", "-x", "-C", src)
	var archiveErr bytes.Buffer
	archive.Stderr = &archiveErr
	if untar.Stdin, err = archive.StdoutPipe(); err != nil {
		t.Fatal(err)
	}
	if err := untar.Start(); err != nil {
		t.Fatal(err)
	}
	if err := archive.Run(); err != nil {
		_ = untar.Wait()
		cannot("git archive %s (a shallow clone lacks it: git fetch --unshallow): %v %s", commit, err, archiveErr.String())
	}
	if err := untar.Wait(); err != nil {
		t.Fatalf("tar -x of the previous release: %v", err)
	}
	bin = filepath.Join(dir, "latchkey-previous")
	build := exec.Command("go", "build", "-trimpath", "-buildvcs=false",
		"-ldflags", "-X main.version=previous-release -X main.commit="+commit, "-o", bin, "./cmd/latchkey")
	build.Dir = src
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		cannot("go build of the previous release %s: %v\n%s", commit, err, out)
	}
	return bin, commit
}

// readPreviousRelease reads the commit hash in path: the first line that
// is neither empty nor a # comment.
func readPreviousRelease(path string) (string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return "", err
	}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		if len(line) != 40 || strings.Trim(line, "0123456789abcdef") != "" {
			return "", fmt.Errorf("%s: %q is not a full commit hash", path, line)
		}
		return line, nil
	}
	return "", fmt.Errorf("%s names no commit", path)
}

// TestPreviousReleaseRunsBesideOnTheMigratedSchema is the rolling upgrade's
// middle (docs/DEPLOY.md, "Migrations and upgrades"): the new binary has
// migrated the database, and the previous release's binary serves beside
// it. The old one runs every flow against the migrated schema — client
// credentials, introspection, person import, the code flow with PKCE
// through the login form, refresh, revocation, the device flow — and each
// binary accepts what the other wrote: tokens, persons, codes, refresh
// tokens, sessions, device codes, revocations and events. Neither logs an
// error or answers a 5xx. The new migrations being only expansions is what
// makes this pass.
func TestPreviousReleaseRunsBesideOnTheMigratedSchema(t *testing.T) {
	oldBin, commit := previousRelease(t)
	if out, err := exec.Command(oldBin, "version").Output(); err != nil || !strings.Contains(string(out), commit) {
		t.Fatalf("the previous release's version: %q %v, want its commit %s", out, err, commit)
	}
	db := pgtest.NewDatabase(t)
	dir := t.TempDir()
	cfgPath := filepath.Join(dir, "latchkey.yaml")
	if err := os.WriteFile(cfgPath, []byte(mixedConfig), 0o600); err != nil {
		t.Fatal(err)
	}
	keyFile := filepath.Join(dir, "secret.key") // one key for both (docs/DEPLOY.md)
	key := make([]byte, 32)
	_, _ = rand.Read(key)
	if err := os.WriteFile(keyFile, key, 0o600); err != nil {
		t.Fatal(err)
	}
	// Both answer as the one public issuer a balancer would show.
	env := func(addr string) []string {
		return []string{"LATCHKEY_LISTEN=" + addr, "LATCHKEY_DATABASE=" + db, "LATCHKEY_ISSUER=http://login.test",
			"LATCHKEY_SECRET_KEY_FILE=" + keyFile, "LATCHKEY_LOG_LEVEL=info"}
	}

	// The new binary migrates the empty database; the old one then starts
	// and finds nothing to apply (its migrations are a prefix of the new).
	if out, err := command(t, env(freePort(t)), "migrate", "--config", cfgPath).CombinedOutput(); err != nil {
		t.Fatalf("migrate with the new binary: %v\n%s", err, out)
	}
	ms, err := postgres.Migrations()
	if err != nil {
		t.Fatal(err)
	}
	var want []int
	for _, m := range ms {
		want = append(want, m.Version)
	}
	if got := appliedMigrations(t, db); !slices.Equal(got, want) {
		t.Fatalf("after the new binary's migrate: %v, want %v", got, want)
	}
	oldAddr, newAddr := freePort(t), freePort(t)
	oldLog, newLog := &syncBuffer{}, &syncBuffer{}
	oldCmd := commandOf(t, oldBin, env(oldAddr), "serve", "--config", cfgPath)
	oldCmd.Stderr = oldLog
	startServing(t, oldCmd, oldAddr)
	newCmd := command(t, env(newAddr), "serve", "--config", cfgPath)
	newCmd.Stderr = newLog
	startServing(t, newCmd, newAddr)
	if got := appliedMigrations(t, db); !slices.Equal(got, want) {
		t.Errorf("after both started: %v, want %v (the old binary must not migrate)", got, want)
	}

	ctx := context.Background()
	oldURL, newURL := "http://"+oldAddr, "http://"+newAddr
	which := func(base string) string { // for messages
		if base == oldURL {
			return "old"
		}
		return "new"
	}
	active := func(base, tok string) bool {
		t.Helper()
		var ans tokenAnswer
		status, err := newLBClient(base).post(ctx, "/oauth/api/v2/token/introspect", m2mForm+"&token="+url.QueryEscape(tok), nil, &ans)
		if err != nil || status != 200 || ans.Active == nil {
			t.Fatalf("introspection at %s: %d %v", which(base), status, err)
		}
		return *ans.Active
	}
	// activeOnBoth fails unless tok is active at both instances.
	activeOnBoth := func(what, tok string) {
		t.Helper()
		for _, base := range []string{oldURL, newURL} {
			if !active(base, tok) {
				t.Errorf("%s: inactive at %s", what, which(base))
			}
		}
	}
	tokenAt := func(base, form string) tokenAnswer {
		t.Helper()
		var tok tokenAnswer
		status, err := newLBClient(base).post(ctx, "/oauth/token", form, nil, &tok)
		if err != nil || status != 200 || tok.AccessToken == "" {
			t.Fatalf("token at %s (%s): %d %v %s", which(base), form, status, err, tok.Error)
		}
		return tok
	}

	// Client credentials and introspection, both ways.
	ccOld := tokenAt(oldURL, "grant_type=client_credentials&scope=read&"+m2mForm).AccessToken
	ccNew := tokenAt(newURL, "grant_type=client_credentials&scope=read&"+m2mForm).AccessToken
	activeOnBoth("client credentials token of the old binary", ccOld)
	activeOnBoth("client credentials token of the new binary", ccNew)

	// Persons: each binary imports one (profile, phone, password hash and
	// linked identity); the new store code reads both whole, and each signs
	// in below at the binary that did not import it.
	importAt := func(base string, request int) string {
		t.Helper()
		req, err := http.NewRequest("POST", base+"/api/import/persons", bytes.NewReader(importBody(t, request, 1)))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Content-Type", "application/json")
		req.SetBasicAuth("importer", "importer-password")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var res struct {
			Successful []string `json:"successful_reference_ids"`
		}
		if err := json.NewDecoder(resp.Body).Decode(&res); err != nil || len(res.Successful) != 1 {
			t.Fatalf("import at %s: %d %v %v", which(base), resp.StatusCode, err, res.Successful)
		}
		return res.Successful[0]
	}
	personOld, personNew := importAt(oldURL, 1), importAt(newURL, 2)
	st, err := postgres.Open(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	for _, ref := range []string{personOld, personNew} {
		if ok, err := complete(ctx, st, ref); !ok || err != nil {
			t.Errorf("person %s read by the new code: exists %t, %v", ref, ok, err)
		}
	}

	// The code flow with PKCE through the login form: a browser signs in
	// at each binary as the person the other imported, and each one's
	// session gets codes from the other; each code is redeemed at the other
	// binary than the one that issued it.
	browserOld, browserNew := newLBClient(oldURL), newLBClient(newURL)
	for b, ref := range map[*lbClient]string{browserOld: personNew, browserNew: personOld} {
		if status := b.login(t, b.base, ref+"@example.com", "pw"); status != http.StatusSeeOther && status != http.StatusFound {
			t.Fatalf("login at %s as the person the other imported: status %d", which(b.base), status)
		}
	}
	codeFlow := func(b *lbClient, authorizeAt, redeemAt string) tokenAnswer {
		t.Helper()
		at := &lbClient{base: authorizeAt, hc: b.hc}
		verifier, challenge := pkce()
		loc, err := at.authorize(ctx, challenge)
		if err != nil {
			t.Fatal(err)
		}
		code := loc.Query().Get("code")
		if !strings.HasPrefix(loc.String(), lbRedirect) || code == "" {
			t.Fatalf("authorize at %s with a session made at %s sent the browser to %s, want the app with a code",
				which(authorizeAt), which(b.base), loc.Redacted())
		}
		form := url.Values{"grant_type": {"authorization_code"}, "code": {code}, "redirect_uri": {lbRedirect},
			"client_id": {"app"}, "code_verifier": {verifier}}
		tok := tokenAt(redeemAt, form.Encode())
		if tok.RefreshToken == "" {
			t.Fatalf("code exchange at %s: no refresh token", which(redeemAt))
		}
		return tok
	}
	grantOld := codeFlow(browserOld, oldURL, oldURL) // entirely the old binary's
	activeOnBoth("code flow token of the old binary", grantOld.AccessToken)
	grantNewSession := codeFlow(browserOld, newURL, oldURL) // old session at new, new's code at old
	activeOnBoth("code issued by the new binary on the old one's session, redeemed at the old", grantNewSession.AccessToken)
	grantOldSession := codeFlow(browserNew, oldURL, newURL) // new session at old, old's code at new
	activeOnBoth("code issued by the old binary on the new one's session, redeemed at the new", grantOldSession.AccessToken)

	// The device flow: asked at one, approved in the app at the other with
	// an app token the other issued, polled at the first.
	deviceFlow := func(askAt, approveAt, appToken string) string {
		t.Helper()
		tv := newLBClient(askAt)
		var da tokenAnswer
		if status, err := tv.post(ctx, "/oauth/device_authorization", "client_id=tv&scope=read", nil, &da); err != nil || status != 200 || da.DeviceCode == "" {
			t.Fatalf("device authorization at %s: %d %v", which(askAt), status, err)
		}
		status, err := newLBClient(approveAt).post(ctx, "/oauth/device_authorization/approve?user_code="+url.QueryEscape(da.UserCode),
			"", http.Header{"Authorization": {"Bearer " + appToken}}, nil)
		if err != nil || status != http.StatusNoContent {
			t.Fatalf("approval at %s of a device code made at %s: %d %v", which(approveAt), which(askAt), status, err)
		}
		return tokenAt(askAt, "grant_type="+url.QueryEscape("urn:ietf:params:oauth:grant-type:device_code")+
			"&client_id=tv&device_code="+url.QueryEscape(da.DeviceCode)).AccessToken
	}
	activeOnBoth("device flow asked at the old binary, approved at the new", deviceFlow(oldURL, newURL, grantOld.AccessToken))
	activeOnBoth("device flow asked at the new binary, approved at the old", deviceFlow(newURL, oldURL, grantOldSession.AccessToken))

	// Refresh (public client: rotated at every use) across the two.
	refresh := func(at, rt string) tokenAnswer {
		t.Helper()
		return tokenAt(at, "grant_type=refresh_token&client_id=app&refresh_token="+url.QueryEscape(rt))
	}
	r1 := refresh(newURL, grantOld.RefreshToken) // the old one's refresh token at the new
	r2 := refresh(oldURL, r1.RefreshToken)       // and the new one's at the old
	activeOnBoth("refreshed at the new binary", r1.AccessToken)
	activeOnBoth("refreshed at the old binary", r2.AccessToken)

	// Revocation, each of what the other issued: an access token, and a
	// refresh token (its whole grant goes, RFC 7009 section 2.1).
	revoke := func(at, form string) {
		t.Helper()
		if status, err := newLBClient(at).post(ctx, "/oauth/revoke", form, nil, nil); err != nil || status != 200 {
			t.Fatalf("revoke at %s: %d %v", which(at), status, err)
		}
	}
	revoke(oldURL, m2mForm+"&token="+url.QueryEscape(ccNew))
	revoke(newURL, m2mForm+"&token="+url.QueryEscape(ccOld))
	revoke(newURL, "client_id=app&token_type_hint=refresh_token&token="+url.QueryEscape(r2.RefreshToken))
	revoke(oldURL, "client_id=app&token_type_hint=refresh_token&token="+url.QueryEscape(grantOldSession.RefreshToken))
	for what, tok := range map[string]string{"client credentials token of the new binary revoked at the old": ccNew,
		"client credentials token of the old binary revoked at the new": ccOld,
		"token of a grant the new binary revoked":                       r2.AccessToken,
		"token of a grant the old binary revoked":                       grantOldSession.AccessToken} {
		for _, base := range []string{oldURL, newURL} {
			if active(base, tok) {
				t.Errorf("%s: still active at %s", what, which(base))
			}
		}
	}
	for _, at := range []string{oldURL, newURL} {
		var ans tokenAnswer
		status, err := newLBClient(at).post(ctx, "/oauth/token", "grant_type=refresh_token&client_id=app&refresh_token="+
			url.QueryEscape(r2.RefreshToken), nil, &ans)
		if err != nil || status != 400 || ans.Error != "invalid_grant" {
			t.Errorf("a revoked refresh token at %s: %d %v %s, want 400 invalid_grant", which(at), status, err, ans.Error)
		}
	}

	// The events each wrote: the same searches answer the same at both.
	for typ, n := range map[string]int{
		"TOKEN_REQUEST_ACCESS_TOKEN_CREATED":             5, // client credentials and code exchanges
		"TOKEN_REQUEST_ACCESS_TOKEN_REFRESHED":           2,
		"TOKEN_REQUEST_DEVICE_CODE_ACCESS_TOKEN_CREATED": 2,
		"TOKEN_REVOKE_ACCESS_TOKEN_SUCCESS":              2,
		"TOKEN_REVOKE_REFRESH_TOKEN_SUCCESS":             2,
	} {
		atOld, atNew := countEvents(t, oldURL, typ), countEvents(t, newURL, typ)
		if atOld != n || atNew != n {
			t.Errorf("%s events: %d found at the old binary, %d at the new, want %d", typ, atOld, atNew, n)
		}
	}

	stop(t, oldCmd)
	stop(t, newCmd)
	for bin, log := range map[string]string{"old": oldLog.String(), "new": newLog.String()} {
		for _, line := range strings.Split(log, "\n") {
			if strings.Contains(line, "level=ERROR") || strings.Contains(line, " status=5") {
				t.Errorf("the %s binary: %s", bin, line)
			}
		}
	}
}

// appliedMigrations lists the versions in schema_migrations.
func appliedMigrations(t *testing.T, dsn string) []int {
	t.Helper()
	conn, err := sql.Open("pgx", dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	rows, err := conn.QueryContext(context.Background(), `SELECT version FROM schema_migrations ORDER BY version`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out []int
	for rows.Next() {
		var v int
		if err := rows.Scan(&v); err != nil {
			t.Fatal(err)
		}
		out = append(out, v)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// countEvents counts the events of one type the events API of base finds.
func countEvents(t *testing.T, base, eventType string) int {
	t.Helper()
	req, err := http.NewRequest("GET", base+"/oauth/api/v1/events?"+url.Values{"event_type": {eventType}, "size": {"1000"}}.Encode(), nil)
	if err != nil {
		t.Fatal(err)
	}
	req.SetBasicAuth("auditor", "auditor-secret-auditor")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var page struct {
		ResultSet []json.RawMessage `json:"result_set"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&page); err != nil || resp.StatusCode != 200 {
		t.Fatalf("event search at %s: %d %v", base, resp.StatusCode, err)
	}
	return len(page.ResultSet)
}
