package e2e

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/go-ldap/ldap/v3"
	"golang.org/x/oauth2"

	"github.com/latchkey/latchkey/internal/config"
	"github.com/latchkey/latchkey/internal/events"
	"github.com/latchkey/latchkey/internal/server/servertest"
	"github.com/latchkey/latchkey/internal/store"
)

const (
	ldapBase     = "dc=example,dc=com"
	ldapAdminDN  = "cn=admin,dc=example,dc=com"
	ldapAdminPwd = "slapd-admin-secret"
)

// slapdPath finds Debian's slapd: skipped without it, except under CI=true.
func slapdPath(t *testing.T) string {
	t.Helper()
	for _, p := range []string{"slapd", "/usr/sbin/slapd"} {
		if path, err := exec.LookPath(p); err == nil {
			return path
		}
	}
	if os.Getenv("CI") == "true" {
		t.Fatal("slapd is not installed and CI=true: run scripts/test-deps")
	}
	t.Skip("slapd is not installed: run scripts/test-deps")
	return ""
}

// startSlapd runs a private OpenLDAP server (its own config and database
// in a temporary folder, a free port) until the test ends, seeded with
// people, and returns its URL.
func startSlapd(t *testing.T) string {
	t.Helper()
	bin := slapdPath(t)
	dir := t.TempDir()
	if err := os.Mkdir(filepath.Join(dir, "db"), 0o700); err != nil {
		t.Fatal(err)
	}
	conf := fmt.Sprintf(`include /etc/ldap/schema/core.schema
include /etc/ldap/schema/cosine.schema
include /etc/ldap/schema/inetorgperson.schema
modulepath /usr/lib/ldap
moduleload back_mdb
pidfile %[1]s/slapd.pid
database mdb
maxsize 10485760
suffix "%[2]s"
rootdn "%[3]s"
rootpw %[4]s
directory %[1]s/db
access to attrs=userPassword by anonymous auth by self read by * none
access to * by users read by * none
`, dir, ldapBase, ldapAdminDN, ldapAdminPwd)
	if err := os.WriteFile(filepath.Join(dir, "slapd.conf"), []byte(conf), 0o600); err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	u := "ldap://" + addr
	// -d keeps slapd in the foreground (and its log on stderr).
	startLogged(t, dir, "slapd", bin, "-d", "0", "-f", filepath.Join(dir, "slapd.conf"), "-h", u+"/")
	var conn *ldap.Conn
	deadline := time.Now().Add(30 * time.Second)
	for {
		if conn, err = ldap.DialURL(u); err == nil {
			if err = conn.Bind(ldapAdminDN, ldapAdminPwd); err == nil {
				break
			}
			conn.Close()
		}
		if time.Now().After(deadline) {
			t.Fatalf("slapd at %s did not answer within 30 s: %v", u, err)
		}
		select {
		case <-time.After(100 * time.Millisecond):
		case <-t.Context().Done():
			t.Fatal("test ended")
		}
	}
	defer conn.Close()
	add := func(dn string, attrs map[string][]string) {
		t.Helper()
		r := ldap.NewAddRequest(dn, nil)
		for k, v := range attrs {
			r.Attribute(k, v)
		}
		if err := conn.Add(r); err != nil {
			t.Fatalf("seed %s: %v", dn, err)
		}
	}
	add(ldapBase, map[string][]string{"objectClass": {"top", "dcObject", "organization"}, "o": {"Example"}, "dc": {"example"}})
	add("ou=people,"+ldapBase, map[string][]string{"objectClass": {"organizationalUnit"}, "ou": {"people"}})
	for _, p := range []struct{ uid, given, sn, mail, dept string }{
		{"lena", "Lena", "Directory", "lena@example.com", "Research"},
		{"max", "Max", "Bindmann", "max@example.com", "Sales"},
	} {
		add("uid="+p.uid+",ou=people,"+ldapBase, map[string][]string{"objectClass": {"inetOrgPerson"}, "uid": {p.uid},
			"cn": {p.given + " " + p.sn}, "givenName": {p.given}, "sn": {p.sn}, "mail": {p.mail},
			"departmentNumber": {p.dept}, "userPassword": {p.uid + "-pass-123"}})
	}
	return u
}

func ldapMethod(id, name, servers, extra string) string {
	return fmt.Sprintf(`{"id":%q,"name":%q,"type":"LDAP","enabled":true,"authentication_level":1,"auto_activation_enabled":true,
		"ladp_attributes":{"server_urls":%q,"base_suffix":"ou=people,%s","match_pattern":"(&(objectClass=inetOrgPerson)(uid={0}))",
		"attributes_to_be_fetched":["mail","givenName","sn","departmentNumber"]%s}}`, id, name, servers, ldapBase, extra)
}

// ldapLogin fills the LDAP form and submits it.
func ldapLogin(t *testing.T, ctx context.Context, username, password string) string {
	t.Helper()
	start := time.Now()
	defer func() { t.Logf("LDAP form %s: %v", username, time.Since(start)) }()
	do(t, ctx, "fill the LDAP form",
		chromedp.WaitVisible(chromedp.ID("username")),
		chromedp.Clear(chromedp.ID("username")),
		typeInto(chromedp.ID("username"), username),
		typeInto(chromedp.ID("password"), password),
	)
	resp := click(t, ctx, "submit")
	return fmt.Sprintf("%d", resp.Status)
}

func TestLDAPLoginMethodInBrowser(t *testing.T) {
	slapdPath(t)
	for _, backend := range servertest.Backends {
		t.Run(backend, func(t *testing.T) {
			ldapURL := startSlapd(t)
			ctx := newBrowser(t)
			app := newClientApp(t)
			cfg := testConfig(app.callbackURL())
			cfg.APIUsers = []config.APIUser{{Username: fedAdmin, Password: fedAdminPass}}
			s := servertest.Start(t, cfg, servertest.Options{Backend: backend})
			e := &fedEnv{env: &env{backend: backend, s: s, app: app, ctx: ctx}}
			dead := strings.Replace(deadURL(t), "http://", "ldap://", 1)
			// The first server is down: the second is tried.
			configure(t, s, `{"login_methods":{"login_methods":[`+
				ldapMethod("dir", "Directory", dead+" "+ldapURL,
					`,"user_distinguished_name":"`+ldapAdminDN+`","password":"`+ldapAdminPwd+`"`)+`,`+
				ldapMethod("dirdn", "Directory by DN", ldapURL, `,"authentication_dn_template":"uid={0},ou=people,`+ldapBase+`"`)+`]}}`)

			// The login page offers it; idp= goes straight to its form.
			e.authorize(t, "ldap-0")
			if label := run(t, ctx, "read the method button", chromedp.Text(chromedp.ID("idp-dir"))); label != "Continue with Directory" {
				t.Errorf("button %q", label)
			}
			cfgW, verifier := e.authorize(t, "ldap-1", oauth2.SetAuthURLParam("idp", "dir"))
			expectStyled(t, ctx)
			e.screenshot(t, "login-ldap.png")
			// Its way back shows every method, though idp named this one.
			expectPage(t, click(t, ctx, "back"), s.URL, "/login", 200)
			if label := run(t, ctx, "read the method button", chromedp.Text(chromedp.ID("idp-dir"))); label != "Continue with Directory" {
				t.Errorf("back on the login page: button %q", label)
			}
			click(t, ctx, "idp-dir")
			if st := ldapLogin(t, ctx, "lena", "not-the-password"); st != "401" {
				t.Errorf("wrong password: status %s, want 401", st)
			}
			msg := run(t, ctx, "read #error", chromedp.Text(chromedp.ID("error")))
			if msg != "The user name or password is wrong." {
				t.Errorf("#error %q", msg)
			}
			// A filter wildcard matches nobody: the name is escaped.
			if st := ldapLogin(t, ctx, "*", "lena-pass-123"); st != "401" {
				t.Errorf("wildcard login name: status %s, want 401", st)
			}
			if st := ldapLogin(t, ctx, "lena", "lena-pass-123"); st != "200" {
				t.Fatalf("right password: status %s, want the consent page", st)
			}
			idt := e.finish(t, cfgW, verifier, "ldap-1")
			lena := personByEmail(t, s.Store, "lena@example.com")
			if idt.Subject != lena.ID || lena.FirstName != "Lena" || lena.LastName != "Directory" || lena.Custom != nil {
				t.Errorf("person from the directory: %+v (sub %s)", lena, idt.Subject)
			}
			if got := amrOf(t, idt); strings.Join(got, " ") != "pwd acr=1" {
				t.Errorf("amr and acr %v, want pwd and 1", got)
			}
			// The unmapped attribute fetched is kept on the identity, not the person.
			if link, err := s.Store.FindIdentity(context.Background(), "", "dir", "uid=lena,ou=people,"+ldapBase); err != nil ||
				link.Attributes["departmentNumber"] != "Research" {
				t.Errorf("lena's identity: %+v, %v; want departmentNumber kept on it", link, err)
			}
			for _, typ := range []string{events.LDAPLoginSucceeded, events.LDAPLoginFailed} {
				if !hasEvent(t, s.Store, store.EventOAuth, typ, "") {
					t.Errorf("no %s event", typ)
				}
			}
			navigate(t, ctx, s.URL+"/logout")

			// authentication_dn_template: a direct bind, no search account.
			cfgW, verifier = e.authorize(t, "ldap-2", oauth2.SetAuthURLParam("idp", "dirdn"))
			if st := ldapLogin(t, ctx, "max,ou=admins", "max-pass-123"); st != "401" {
				t.Errorf("a name with an RDN in it: status %s, want 401", st)
			}
			if st := ldapLogin(t, ctx, "max", "max-pass-123"); st != "200" {
				t.Fatalf("bind by DN template: status %s", st)
			}
			if idt := e.finish(t, cfgW, verifier, "ldap-2"); idt.Subject != personByEmail(t, s.Store, "max@example.com").ID {
				t.Error("the DN template signed in someone else")
			}
			navigate(t, ctx, s.URL+"/logout")

			// Throttled as a password login: 5 failures of one name at one
			// address (lena's success above forgave her earlier failure).
			e.authorize(t, "ldap-3", oauth2.SetAuthURLParam("idp", "dir"))
			for i := range 5 {
				if st := ldapLogin(t, ctx, "lena", fmt.Sprintf("wrong-%d", i)); st != "401" {
					t.Fatalf("failure %d: status %s", i, st)
				}
			}
			if st := ldapLogin(t, ctx, "lena", "lena-pass-123"); st != "429" {
				t.Errorf("after 5 failures: status %s, want 429", st)
			}
			if !hasEvent(t, s.Store, store.EventOAuth, events.LDAPLoginThrottled, "") {
				t.Error("no IDP_LDAP_LOGIN_THROTTLED event")
			}

			// LDAP down, and an address outside ip_ranges.
			configure(t, s, `{"login_methods":{"login_methods":[`+ldapMethod("down", "Down", dead, "")+`,`+
				ldapMethod("office", "Office", ldapURL, `,"ip_range_enabled":true,"ip_ranges":["10.0.0.0/8"]`)+`]}}`)
			e.authorize(t, "ldap-4", oauth2.SetAuthURLParam("idp", "down"))
			if st := ldapLogin(t, ctx, "max", "max-pass-123"); st != fmt.Sprint(http.StatusServiceUnavailable) {
				t.Errorf("LDAP down: status %s, want 503", st)
			}
			if msg := run(t, ctx, "read #error", chromedp.Text(chromedp.ID("error"))); !strings.Contains(msg, "cannot be reached") {
				t.Errorf("LDAP down: #error %q", msg)
			}
			e.authorize(t, "ldap-5", oauth2.SetAuthURLParam("idp", "office"))
			if st := ldapLogin(t, ctx, "max", "max-pass-123"); st != "403" {
				t.Errorf("outside ip_ranges: status %s, want 403", st)
			}
			app.none(t)
		})
	}
}
