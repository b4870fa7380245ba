package federation

import (
	"context"
	"errors"
	"net"
	"strings"
	"sync/atomic"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/go-ldap/ldap/v3"

	"github.com/latchkey/latchkey/internal/cimconfig"
	"github.com/latchkey/latchkey/internal/outbound"
)

// A login name can only ever be a value: it cannot close the filter, add
// a clause or a wildcard, nor add or change an RDN of a bind DN.
var injectionCases = []struct {
	name, login, filter, dn string
}{
	{"plain name", "jane", "(uid=jane)", "uid=jane,ou=people,dc=example,dc=com"},
	{"wildcard", "*", `(uid=\2a)`, `uid=*,ou=people,dc=example,dc=com`},
	{"closing the filter", "jane)(uid=*", `(uid=jane\29\28uid=\2a)`, `uid=jane)(uid=*,ou=people,dc=example,dc=com`},
	{"or clause", "*)(|(objectClass=*", `(uid=\2a\29\28|\28objectClass=\2a)`, `uid=*)(|(objectClass=*,ou=people,dc=example,dc=com`},
	{"backslash", `a\b`, `(uid=a\5cb)`, `uid=a\\b,ou=people,dc=example,dc=com`},
	{"NUL", "a\x00b", `(uid=a\00b)`, `uid=a\00b,ou=people,dc=example,dc=com`},
	{"an extra RDN", "jane,ou=admins", `(uid=jane,ou=admins)`, `uid=jane\,ou=admins,ou=people,dc=example,dc=com`},
	{"a multi-valued RDN", "jane+cn=root", `(uid=jane+cn=root)`, `uid=jane\+cn=root,ou=people,dc=example,dc=com`},
	{"leading space and hash", " #x", `(uid= #x)`, `uid=\ #x,ou=people,dc=example,dc=com`},
	{"quotes and angle brackets", `"<a>";`, `(uid="<a>";)`, `uid=\"\<a\>\"\;,ou=people,dc=example,dc=com`},
}

func TestLoginNamesCannotInject(t *testing.T) {
	for _, tc := range injectionCases {
		t.Run(tc.name, func(t *testing.T) {
			if got := SearchFilter("(uid={0})", tc.login); got != tc.filter {
				t.Errorf("filter %q, want %q", got, tc.filter)
			}
			if got := BindDN("uid={0},ou=people,dc=example,dc=com", tc.login); got != tc.dn {
				t.Errorf("DN %q, want %q", got, tc.dn)
			}
		})
	}
	if got := SearchFilter("", "jane"); got != "(uid=jane)" {
		t.Errorf("default match pattern: %q", got)
	}
	if got := SearchFilter("(&(objectClass=inetOrgPerson)(|(uid={username})(mail={0})))", "a*"); got != `(&(objectClass=inetOrgPerson)(|(uid=a\2a)(mail=a\2a)))` {
		t.Errorf("both placeholders: %q", got)
	}
}

// FuzzLoginName: whatever the name, the filter parses to the pattern's one
// equality clause holding exactly the name, and the DN parses to the
// template's RDNs with the name as the first RDN's only value.
func FuzzLoginName(f *testing.F) {
	for _, tc := range injectionCases {
		f.Add(tc.login)
	}
	f.Fuzz(func(t *testing.T, login string) {
		filter := SearchFilter("(uid={0})", login)
		p, err := ldap.CompileFilter(filter)
		if err != nil {
			t.Fatalf("filter %q of %q does not compile: %v", filter, login, err)
		}
		if p.Tag != ldap.FilterEqualityMatch || len(p.Children) != 2 {
			t.Fatalf("filter %q of %q is not one equality clause", filter, login)
		}
		if got := p.Children[1].Data.String(); got != login {
			t.Fatalf("filter %q matches %q, want %q", filter, got, login)
		}
		if login == "" || !utf8.ValidString(login) {
			return // refused before any DN is built (ldapCheck)
		}
		dn, err := ldap.ParseDN(BindDN("uid={0},ou=people,dc=example,dc=com", login))
		if err != nil {
			t.Fatalf("DN of %q does not parse: %v", login, err)
		}
		if len(dn.RDNs) != 4 || len(dn.RDNs[0].Attributes) != 1 || dn.RDNs[0].Attributes[0].Type != "uid" ||
			dn.RDNs[0].Attributes[0].Value != login || strings.Join(rdnTypes(dn), ",") != "uid,ou,dc,dc" {
			t.Fatalf("DN of %q is %v", login, dn)
		}
	})
}

func rdnTypes(dn *ldap.DN) []string {
	var out []string
	for _, r := range dn.RDNs {
		out = append(out, r.Attributes[0].Type)
	}
	return out
}

func TestAddressAllowed(t *testing.T) {
	yes, no := true, false
	m := func(enabled *bool, ranges ...string) Method {
		return Method{LoginMethod: cimconfig.LoginMethod{LDAPAttributes: &cimconfig.LDAPAttributes{IPRangeEnabled: enabled, IPRanges: ranges}}}
	}
	for _, tc := range []struct {
		name string
		m    Method
		addr string
		want bool
	}{
		{"ranges off: anyone", m(&no, "10.0.0.0/8"), "192.0.2.1", true},
		{"ranges unset: anyone", m(nil), "192.0.2.1", true},
		{"inside a CIDR range", m(&yes, "10.0.0.0/8"), "10.1.2.3", true},
		{"outside every range", m(&yes, "10.0.0.0/8", "192.0.2.7"), "192.0.2.8", false},
		{"a single address", m(&yes, "192.0.2.7"), "192.0.2.7", true},
		{"IPv4 mapped in IPv6", m(&yes, "10.0.0.0/8"), "::ffff:10.0.0.1", true},
		{"IPv6 range", m(&yes, "2001:db8::/32"), "2001:db8::1", true},
		{"no address", m(&yes, "0.0.0.0/0"), "", false},
	} {
		if got := AddressAllowed(tc.m, tc.addr); got != tc.want {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
}

func TestServerURLs(t *testing.T) {
	got := ServerURLs(" ldap://a:389, ldaps://b:636\nldap://c ")
	if strings.Join(got, "|") != "ldap://a:389|ldaps://b:636|ldap://c" {
		t.Errorf("%q", got)
	}
}

// An LDAP server_urls entry is dialled through the outbound guard: a
// directory on loopback is never connected to unless outbound.allow
// names it.
func TestLDAPDialIsGuarded(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	var accepted atomic.Int32
	first := make(chan struct{}, 1)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			accepted.Add(1)
			select {
			case first <- struct{}{}:
			default:
			}
			c.Close()
		}
	}()
	u := "ldap://" + l.Addr().String()
	guarded := &Service{LDAPTimeout: 2 * time.Second}
	if _, err := guarded.dialLDAP(context.Background(), []string{u}); !errors.Is(err, ErrLDAPUnavailable) {
		t.Fatalf("dial a loopback directory: %v, want ErrLDAPUnavailable", err)
	}
	allowed := &Service{LDAPTimeout: 2 * time.Second, Outbound: outbound.MustNew(outbound.Options{Allow: []string{"127.0.0.1"}})}
	conn, err := allowed.dialLDAP(context.Background(), []string{u})
	if err != nil {
		t.Fatalf("dial an allowed directory: %v", err)
	}
	conn.Close()
	<-first // the allowed dial's connection was accepted
	l.Close()
	<-done
	if n := accepted.Load(); n != 1 {
		t.Fatalf("%d connections accepted, want 1 (the allowed dial's only)", n)
	}
}
