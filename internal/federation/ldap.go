package federation

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"net/url"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/go-ldap/ldap/v3"

	"github.com/latchkey/latchkey/internal/events"
	"github.com/latchkey/latchkey/internal/identity"
	"github.com/latchkey/latchkey/internal/outbound"
	"github.com/latchkey/latchkey/internal/request"
)

// Refusals of an LDAP sign-in; the form says which (none tells whether
// the login name exists).
var (
	ErrLDAPCredentials = errors.New("federation: the login name or password is wrong")
	ErrLDAPUnavailable = errors.New("federation: no directory server answered")
	ErrLDAPAddress     = errors.New("federation: the client address is outside the method's ip_ranges")
)

// defaultMatchPattern finds the entry of a login name when the method
// sets no match_pattern.
const defaultMatchPattern = "(uid={0})"

// maxLoginName bounds the login name (and so the filter built from it).
const maxLoginName = 256

// SearchFilter builds the search filter of a login name from a
// match_pattern: each {0} or {username} becomes the name with every
// filter metacharacter escaped (RFC 4515 section 3), so a name cannot
// change the filter's structure.
func SearchFilter(pattern, login string) string {
	if pattern == "" {
		pattern = defaultMatchPattern
	}
	v := ldap.EscapeFilter(login)
	return strings.NewReplacer("{0}", v, "{username}", v).Replace(pattern)
}

// BindDN builds the DN of a login name from an authentication_dn_template:
// each {0} or {username} becomes the name with every DN metacharacter
// escaped (RFC 4514 section 2.4), so a name cannot add or change RDNs.
func BindDN(template, login string) string {
	v := ldap.EscapeDN(login)
	return strings.NewReplacer("{0}", v, "{username}", v).Replace(template)
}

// ServerURLs splits server_urls (one string in the spec) into the URLs to
// try in order: separated by spaces or commas.
func ServerURLs(s string) []string {
	return strings.FieldsFunc(s, func(r rune) bool { return r == ' ' || r == ',' || r == '\n' || r == '\t' })
}

// AddressAllowed applies ip_range_enabled and ip_ranges to a client
// address (addresses and CIDR ranges; validated when stored).
func AddressAllowed(m Method, addr string) bool {
	a := m.LDAPAttributes
	if a == nil || !on(a.IPRangeEnabled) {
		return true
	}
	ip, err := netip.ParseAddr(addr)
	if err != nil {
		return false
	}
	ip = ip.Unmap()
	for _, r := range a.IPRanges {
		if p, err := netip.ParsePrefix(r); err == nil && p.Contains(ip) {
			return true
		}
		if one, err := netip.ParseAddr(r); err == nil && one.Unmap() == ip {
			return true
		}
	}
	return false
}

// LDAPSignIn checks login and password against the directory of m and
// signs the entry's identity in (SignIn): the entry is found under
// base_suffix with match_pattern (bound as user_distinguished_name, or
// anonymously without one), or named by authentication_dn_template; the
// password is verified by binding as the entry; attributes_to_be_fetched
// (and the mapped attributes) fill the profile. The server_urls are tried
// in order until one answers. Attempts are throttled as password logins
// are (identity.GuardLogin).
func (s *Service) LDAPSignIn(ctx context.Context, f request.Facts, m Method, login, password, clientID string) (Outcome, error) {
	if m.Type != TypeLDAP {
		return Outcome{}, ErrUnknownMethod
	}
	if !AddressAllowed(m, f.Addr) {
		s.record(ctx, f, events.LDAPAddressNotAllowed, clientID, "")
		return Outcome{}, ErrLDAPAddress
	}
	login = strings.TrimSpace(login)
	var u Upstream
	err := s.Identity.GuardLogin(ctx, f, "ldap:"+m.IdPID()+":"+strings.ToLower(login), func() error {
		var err error
		u, err = s.ldapCheck(ctx, m, login, password)
		return err
	})
	var te *identity.ThrottledError
	switch {
	case errors.As(err, &te):
		s.record(ctx, f, events.LDAPLoginThrottled, clientID, "")
		return Outcome{}, err
	case errors.Is(err, identity.ErrBadCredentials):
		s.record(ctx, f, events.LDAPLoginFailed, clientID, "")
		return Outcome{}, ErrLDAPCredentials
	case errors.Is(err, ErrLDAPUnavailable):
		s.record(ctx, f, events.LDAPUnavailable, clientID, "")
		s.log().WarnContext(ctx, "LDAP login method unavailable", "method", m.ID, "err", err)
		return Outcome{}, ErrLDAPUnavailable
	case err != nil:
		return Outcome{}, err
	}
	out, err := s.SignIn(ctx, f, m, u)
	var refused *Error
	if errors.As(err, &refused) {
		r := *refused
		r.Event = events.LDAPAccountRefused
		s.record(ctx, f, r.Event, clientID, "")
		return Outcome{}, &r
	}
	if err != nil {
		return Outcome{}, err
	}
	s.record(ctx, f, events.LDAPLoginSucceeded, clientID, out.Person.ID)
	return out, nil
}

// unavailable wraps a failure of the directory (not of the person).
func unavailable(err error) error { return fmt.Errorf("%w: %w", ErrLDAPUnavailable, err) }

// ldapCheck verifies the password and reads the entry. It answers
// identity.ErrBadCredentials for an unknown name, an ambiguous one, or a
// wrong password, and ErrLDAPUnavailable when no server answered.
func (s *Service) ldapCheck(ctx context.Context, m Method, login, password string) (Upstream, error) {
	a := m.LDAPAttributes
	// RFC 4513 5.1.2: a simple bind with a name and an empty password is
	// an unauthenticated bind, which many servers accept: never send one.
	// A name that is not UTF-8 has no DN or filter form (RFC 4514, 4515).
	if login == "" || password == "" || len(login) > maxLoginName || len(password) > 1024 || !utf8.ValidString(login) ||
		strings.ContainsRune(login, 0) {
		return Upstream{}, identity.ErrBadCredentials
	}
	conn, err := s.dialLDAP(ctx, ServerURLs(deref(a.ServerURLs)))
	if err != nil {
		return Upstream{}, err
	}
	defer conn.Close()
	attrs := s.ldapAttributes(m)
	var entry *ldap.Entry
	if tmpl := deref(a.AuthenticationDNTemplate); tmpl != "" {
		dn := BindDN(tmpl, login)
		if err := bind(conn, dn, password); err != nil {
			return Upstream{}, err
		}
		// The entry's own attributes, read as the entry.
		res, err := conn.Search(ldap.NewSearchRequest(dn, ldap.ScopeBaseObject, ldap.NeverDerefAliases, 1,
			s.ldapSeconds(), false, "(objectClass=*)", attrs, nil))
		if err != nil {
			return Upstream{}, unavailable(err)
		}
		if len(res.Entries) != 1 {
			return Upstream{}, identity.ErrBadCredentials
		}
		entry = res.Entries[0]
	} else {
		if dn := deref(a.UserDistinguishedName); dn != "" {
			pw, err := s.Config.BindPassword(m.LoginMethod)
			if err != nil {
				return Upstream{}, err
			}
			if pw == "" {
				return Upstream{}, unavailable(errors.New("user_distinguished_name is set without a password"))
			}
			if err := conn.Bind(dn, pw); err != nil {
				return Upstream{}, unavailable(fmt.Errorf("bind as user_distinguished_name: %w", err))
			}
		}
		// Two at most: an ambiguous name signs nobody in.
		res, err := conn.Search(ldap.NewSearchRequest(deref(a.BaseSuffix), ldap.ScopeWholeSubtree, ldap.NeverDerefAliases, 2,
			s.ldapSeconds(), false, SearchFilter(deref(a.MatchPattern), login), attrs, nil))
		if err != nil && !ldap.IsErrorWithCode(err, ldap.LDAPResultSizeLimitExceeded) {
			if ldap.IsErrorWithCode(err, ldap.LDAPResultNoSuchObject) {
				return Upstream{}, identity.ErrBadCredentials
			}
			return Upstream{}, unavailable(err)
		}
		if res == nil || len(res.Entries) != 1 {
			return Upstream{}, identity.ErrBadCredentials
		}
		entry = res.Entries[0]
		if err := bind(conn, entry.DN, password); err != nil {
			return Upstream{}, err
		}
	}
	u := Upstream{Subject: strings.ToLower(entry.DN), Attributes: map[string]any{},
		EmailVerified: on(m.AutoEmailVerification)}
	for _, at := range entry.Attributes {
		if len(at.Values) > 0 {
			u.Attributes[at.Name] = at.Values[0]
		}
	}
	return u, nil
}

// bind verifies a password: invalid credentials are the person's
// failure, anything else the directory's.
func bind(conn *ldap.Conn, dn, password string) error {
	err := conn.Bind(dn, password)
	switch {
	case err == nil:
		return nil
	case ldap.IsErrorWithCode(err, ldap.LDAPResultInvalidCredentials), ldap.IsErrorWithCode(err, ldap.LDAPResultInvalidDNSyntax),
		ldap.IsErrorWithCode(err, ldap.LDAPResultNoSuchObject), ldap.IsErrorWithCode(err, ldap.LDAPResultInappropriateAuthentication):
		return identity.ErrBadCredentials
	}
	return unavailable(err)
}

// ldapAttributes are the attributes read: attributes_to_be_fetched and
// those the mappings read.
func (s *Service) ldapAttributes(m Method) []string {
	out := slices.Clone(m.LDAPAttributes.AttributesToBeFetched)
	mp := mappingOf(m)
	for _, from := range mp.to {
		out = append(out, from)
	}
	for _, from := range mp.custom {
		out = append(out, from)
	}
	slices.Sort(out)
	return slices.Compact(out)
}

func (s *Service) ldapTimeout() time.Duration {
	if s.LDAPTimeout > 0 {
		return s.LDAPTimeout
	}
	return 10 * time.Second
}

func (s *Service) ldapSeconds() int { return int(s.ldapTimeout() / time.Second) }

// defaultOutbound guards LDAP connections of a Service without Outbound.
var defaultOutbound = outbound.MustNew(outbound.Options{})

// ldapDialer dials server u through the outbound guard: its address is
// checked at connect time, after DNS, as for any caller-supplied URL.
func (s *Service) ldapDialer(u string) *net.Dialer {
	ob := s.Outbound
	if ob == nil {
		ob = defaultOutbound
	}
	host := ""
	if pu, err := url.Parse(u); err == nil {
		host = pu.Hostname()
	}
	d := ob.Dialer(host)
	d.Timeout = s.ldapTimeout()
	return d
}

// dialLDAP connects to the first server of urls that answers.
func (s *Service) dialLDAP(ctx context.Context, urls []string) (*ldap.Conn, error) {
	if len(urls) == 0 {
		return nil, unavailable(errors.New("the login method has no server_urls"))
	}
	var errs []error
	for _, u := range urls {
		if ctx.Err() != nil {
			break
		}
		conn, err := ldap.DialURL(u, ldap.DialWithDialer(s.ldapDialer(u)),
			ldap.DialWithTLSConfig(&tls.Config{MinVersion: tls.VersionTLS12}))
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", u, err))
			continue
		}
		conn.SetTimeout(s.ldapTimeout())
		return conn, nil
	}
	return nil, unavailable(errors.Join(errs...))
}
