// Package outbound fetches URLs that registrants and API callers supply
// (a client's jwks_uri, a login method's discovery and token endpoints,
// an LDAP directory): the server-side request forgery guard of
// docs/SECURITY.md. A URL is fetched only over https; the address is
// checked when the connection is made, after DNS, so a name that resolves
// (or rebinds) to loopback, link-local, private or other internal
// addresses is refused; redirects are never followed; the answer has a
// size and a time bound; and every failure is the same error, so that the
// caller learns nothing about what answered (decision 0001).
//
// URLs the operator writes in the config file do not come through here:
// the operator may point latchkey anywhere. outbound.allow (Options.Allow)
// is the operator's exception list for API-supplied URLs, e.g. internal
// test servers.
package outbound

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strings"
	"syscall"
	"time"
)

// ErrUnreachable is the one error of every failed fetch: a refused
// scheme or address, a closed port, a timeout, a redirect, a status other
// than 2xx, an answer too large. Errors returned here satisfy
// errors.Is(err, ErrUnreachable) and print as it; Cause gives the operator
// the reason for the log.
var ErrUnreachable = errors.New("the URL could not be fetched")

// failure is a failed fetch: its text is ErrUnreachable's whatever the
// cause, and it does not unwrap to the cause, so that no %w chain can
// carry the target's answer to a caller.
type failure struct{ cause error }

func (f *failure) Error() string        { return ErrUnreachable.Error() }
func (f *failure) Is(target error) bool { return target == ErrUnreachable }

func fail(cause error) error {
	var f *failure
	if errors.As(cause, &f) {
		return f
	}
	return &failure{cause: cause}
}

// Cause is the reason of a failed fetch, for the operator's log only
// (never a response body); nil when err is not a fetch failure.
func Cause(err error) error {
	var f *failure
	if errors.As(err, &f) {
		return f.cause
	}
	return nil
}

// ErrRefusedURL is the answer of CheckURL: one text for every refused URL.
var ErrRefusedURL = errors.New("the URL must be https and must not name a loopback, link-local, private or other internal address")

// Defaults of Options.
const (
	DefaultTimeout  = 5 * time.Second
	DefaultMaxBytes = 1 << 20
)

// Options configure a Client.
type Options struct {
	// Allow is the operator's exception list (config outbound.allow):
	// host names (exact, case-insensitive) and IP addresses or CIDR
	// ranges. An allowed destination may be reached on any address and
	// over plain http.
	Allow []string
	// Timeout bounds one fetch, connecting included (default 5s).
	Timeout time.Duration
	// MaxBytes bounds an answer's body (default 1 MiB).
	MaxBytes int64
	// RootCAs, when set, replaces the system's roots (tests).
	RootCAs *x509.CertPool
	// Operator makes a client for URLs the operator wrote (the config
	// file): every host counts as allowed. Redirects, size and time stay
	// bounded.
	Operator bool
}

// Client fetches caller-supplied URLs. Its zero value is not usable: New.
type Client struct {
	hosts    map[string]bool
	nets     []netip.Prefix
	timeout  time.Duration
	maxBytes int64
	operator bool
	http     *http.Client
	resolver *net.Resolver // nil: the system's (tests set a fake DNS)
}

// ParseAllow checks an allow list (config validation): each entry a host
// name, an IP address or a CIDR range.
func ParseAllow(entries []string) (hosts map[string]bool, nets []netip.Prefix, err error) {
	hosts = map[string]bool{}
	for _, e := range entries {
		e = strings.TrimSpace(e)
		switch {
		case e == "":
			return nil, nil, errors.New("an empty entry")
		case strings.Contains(e, "/"):
			p, err := netip.ParsePrefix(e)
			if err != nil {
				return nil, nil, fmt.Errorf("%q is not a CIDR range", e)
			}
			nets = append(nets, p.Masked())
		default:
			if a, err := netip.ParseAddr(strings.Trim(e, "[]")); err == nil {
				nets = append(nets, netip.PrefixFrom(a.Unmap(), a.Unmap().BitLen()))
				continue
			}
			if strings.ContainsAny(e, ":/?#@ ") {
				return nil, nil, fmt.Errorf("%q is not a host name, an IP address or a CIDR range", e)
			}
			hosts[strings.ToLower(strings.TrimSuffix(e, "."))] = true
		}
	}
	return hosts, nets, nil
}

// New is a Client with opts; an allow entry that is not a host, an
// address or a range is an error.
func New(opts Options) (*Client, error) {
	hosts, nets, err := ParseAllow(opts.Allow)
	if err != nil {
		return nil, fmt.Errorf("outbound.allow: %w", err)
	}
	c := &Client{hosts: hosts, nets: nets, timeout: opts.Timeout, maxBytes: opts.MaxBytes, operator: opts.Operator}
	if c.timeout <= 0 {
		c.timeout = DefaultTimeout
	}
	if c.maxBytes <= 0 {
		c.maxBytes = DefaultMaxBytes
	}
	t := &http.Transport{
		// No proxy from the environment: a proxy would make the
		// connection, and the address check below would see only the proxy.
		Proxy:                 nil,
		DialContext:           c.dialContext,
		TLSClientConfig:       &tls.Config{MinVersion: tls.VersionTLS12, RootCAs: opts.RootCAs},
		TLSHandshakeTimeout:   c.timeout,
		ResponseHeaderTimeout: c.timeout,
		MaxIdleConns:          16,
		IdleConnTimeout:       30 * time.Second,
		ForceAttemptHTTP2:     true,
	}
	c.http = &http.Client{
		Transport: &guardedTransport{c: c, base: t},
		Timeout:   c.timeout,
		// A redirect would re-aim the fetch past CheckURL; the 3xx is
		// answered as it is, and Do counts it a failure.
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
	return c, nil
}

// MustNew is New for fixed options (tests, defaults); it panics on a bad
// allow list.
func MustNew(opts Options) *Client {
	c, err := New(opts)
	if err != nil {
		panic(err)
	}
	return c
}

// hostAllowed reports whether host (a name or an IP literal) is on the
// operator's list.
func (c *Client) hostAllowed(host string) bool {
	if c.operator {
		return true
	}
	host = strings.ToLower(strings.TrimSuffix(strings.Trim(host, "[]"), "."))
	if c.hosts[host] {
		return true
	}
	if a, err := netip.ParseAddr(host); err == nil {
		return c.addrInAllow(a.Unmap())
	}
	return false
}

func (c *Client) addrInAllow(a netip.Addr) bool {
	for _, p := range c.nets {
		if p.Contains(a) {
			return true
		}
	}
	return false
}

// AddrAllowed reports whether a connection to a may be made: on the
// operator's list, or not a refused address (Refused).
func (c *Client) AddrAllowed(a netip.Addr) bool {
	a = a.Unmap()
	return c.operator || c.addrInAllow(a) || !Refused(a)
}

// CheckURL is the rule of a URL a caller registers (jwks_uri at dynamic
// registration and in the admin API): absolute https — or http to an
// allowed host — and not a literal refused address. A name is not
// resolved here (it may resolve elsewhere at fetch time): the fetch checks
// the address again. ErrRefusedURL, one text, for every refusal.
func (c *Client) CheckURL(raw string) error {
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" || u.Hostname() == "" || u.User != nil || u.Opaque != "" {
		return ErrRefusedURL
	}
	host := u.Hostname()
	allowed := c.hostAllowed(host)
	switch strings.ToLower(u.Scheme) {
	case "https":
	case "http":
		if !allowed {
			return ErrRefusedURL
		}
	default:
		return ErrRefusedURL
	}
	if allowed {
		return nil
	}
	if a, ok := literalAddr(host); ok && !c.AddrAllowed(a) {
		return ErrRefusedURL
	}
	if h := strings.ToLower(strings.TrimSuffix(host, ".")); h == "localhost" || strings.HasSuffix(h, ".localhost") {
		return ErrRefusedURL // RFC 6761 section 6.3: always loopback
	}
	return nil
}

// literalAddr parses host as an IP address, also in the forms that
// inet_aton accepts and a resolver may hand back as such ("127.1",
// "2130706433", "0x7f.1"), so that a literal cannot slip past as a name.
func literalAddr(host string) (netip.Addr, bool) {
	host = strings.TrimSuffix(host, ".") // "127.0.0.1." is the same address
	if a, err := netip.ParseAddr(strings.Trim(host, "[]")); err == nil {
		return a, true
	}
	if ip := parseInetAton(host); ip.IsValid() {
		return ip, true
	}
	return netip.Addr{}, false
}

// parseInetAton reads the legacy IPv4 forms: one to four parts, each
// decimal, octal (leading 0) or hex (0x), the last filling the rest.
func parseInetAton(s string) netip.Addr {
	parts := strings.Split(s, ".")
	if len(parts) == 0 || len(parts) > 4 {
		return netip.Addr{}
	}
	vals := make([]uint64, len(parts))
	for i, p := range parts {
		if p == "" {
			return netip.Addr{}
		}
		base, digits := 10, p
		switch {
		case strings.HasPrefix(strings.ToLower(p), "0x"):
			base, digits = 16, p[2:]
		case len(p) > 1 && p[0] == '0':
			base, digits = 8, p[1:]
		}
		if digits == "" && base == 16 {
			return netip.Addr{}
		}
		var v uint64
		for _, ch := range strings.ToLower(digits) {
			d := strings.IndexRune("0123456789abcdef", ch)
			if d < 0 || d >= base {
				return netip.Addr{}
			}
			v = v*uint64(base) + uint64(d)
			if v > 0xffffffff {
				return netip.Addr{}
			}
		}
		vals[i] = v
	}
	var n uint64
	for i, v := range vals[:len(vals)-1] {
		if v > 0xff {
			return netip.Addr{}
		}
		n |= v << (24 - 8*i)
	}
	last := vals[len(vals)-1]
	if last >= 1<<(8*(5-len(vals))) {
		return netip.Addr{}
	}
	n |= last
	return netip.AddrFrom4([4]byte{byte(n >> 24), byte(n >> 16), byte(n >> 8), byte(n)})
}

// refusedRanges are the ranges not covered by netip's own predicates
// (Refused): shared, reserved, benchmarking and translation ranges.
var refusedRanges = []netip.Prefix{
	netip.MustParsePrefix("0.0.0.0/8"),       // "this network" (RFC 791); 0.0.0.0 reaches loopback on Linux
	netip.MustParsePrefix("100.64.0.0/10"),   // shared address space, CGNAT (RFC 6598)
	netip.MustParsePrefix("192.0.0.0/24"),    // IETF protocol assignments (RFC 6890)
	netip.MustParsePrefix("198.18.0.0/15"),   // benchmarking (RFC 2544)
	netip.MustParsePrefix("240.0.0.0/4"),     // reserved, and the broadcast address
	netip.MustParsePrefix("64:ff9b:1::/48"),  // local-use NAT64 (RFC 8215)
	netip.MustParsePrefix("fec0::/10"),       // site-local (deprecated, RFC 3879)
	netip.MustParsePrefix("::/96"),           // IPv4-compatible (deprecated, RFC 4291)
	netip.MustParsePrefix("100::/64"),        // discard-only (RFC 6666)
	netip.MustParsePrefix("2001:db8::/32"),   // documentation
	netip.MustParsePrefix("2001::/32"),       // Teredo: embeds an IPv4 address
	netip.MustParsePrefix("192.88.99.0/24"),  // 6to4 relay anycast
	netip.MustParsePrefix("198.51.100.0/24"), // documentation
}

var (
	nat64     = netip.MustParsePrefix("64:ff9b::/96")
	sixToFour = netip.MustParsePrefix("2002::/16")
)

// Refused reports whether a is an address no caller-supplied URL may
// reach: loopback, link-local (169.254.169.254, the cloud metadata
// service, among them), private (RFC 1918, fc00::/7), unspecified,
// multicast, CGNAT, and the reserved and translation ranges above; an
// IPv4-mapped, NAT64 or 6to4 address counts as the IPv4 address it embeds.
func Refused(a netip.Addr) bool {
	if !a.IsValid() {
		return true
	}
	a = a.Unmap()
	// NAT64 (RFC 6052) and 6to4 (RFC 3056) addresses reach the IPv4
	// address they embed: judged by it. (Behind DNS64 every IPv4 site has
	// a NAT64 address, so the range itself cannot be refused.)
	if nat64.Contains(a) {
		b := a.As16()
		return Refused(netip.AddrFrom4([4]byte(b[12:16])))
	}
	if sixToFour.Contains(a) {
		b := a.As16()
		return Refused(netip.AddrFrom4([4]byte(b[2:6])))
	}
	if a.IsLoopback() || a.IsLinkLocalUnicast() || a.IsLinkLocalMulticast() || a.IsInterfaceLocalMulticast() ||
		a.IsMulticast() || a.IsPrivate() || a.IsUnspecified() {
		return true
	}
	for _, p := range refusedRanges {
		if p.Contains(a) {
			return true
		}
	}
	return false
}

// errRefusedAddr is the cause of a connection the guard refused.
var errRefusedAddr = errors.New("outbound: refused address")

// Dialer is a dialer for host (as the URL names it) whose connections are
// checked after DNS, at connect time: the LDAP client's dialer, and the
// HTTP transport's. An allowed host is dialled unchecked.
func (c *Client) Dialer(host string) *net.Dialer {
	d := &net.Dialer{Timeout: c.timeout, Resolver: c.resolver}
	if !c.hostAllowed(host) {
		d.Control = c.control
	}
	return d
}

// control runs for every address the dialer tries, after resolution: a
// name that rebinds to a refused address between a check and the
// connection still meets this check.
func (c *Client) control(network, address string, _ syscall.RawConn) error {
	ap, err := netip.ParseAddrPort(address)
	if err != nil {
		return errRefusedAddr
	}
	if !c.AddrAllowed(ap.Addr()) {
		return fmt.Errorf("%w %s", errRefusedAddr, ap.Addr())
	}
	return nil
}

func (c *Client) dialContext(ctx context.Context, network, addr string) (net.Conn, error) {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, err
	}
	return c.Dialer(host).DialContext(ctx, network, addr)
}

// guardedTransport applies CheckURL to every request (libraries such as
// go-oidc and x/oauth2 send through HTTPClient) and bounds every body.
type guardedTransport struct {
	c    *Client
	base http.RoundTripper
}

func (t *guardedTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if err := t.c.CheckURL(req.URL.String()); err != nil {
		if req.Body != nil {
			req.Body.Close()
		}
		return nil, fail(err)
	}
	resp, err := t.base.RoundTrip(req)
	if err != nil {
		return nil, fail(err)
	}
	resp.Body = &boundedBody{r: resp.Body, left: t.c.maxBytes}
	return resp, nil
}

// errTooLarge is the cause of an answer over MaxBytes.
var errTooLarge = errors.New("outbound: answer too large")

type boundedBody struct {
	r    io.ReadCloser
	left int64
}

func (b *boundedBody) Read(p []byte) (int, error) {
	if b.left <= 0 {
		// One byte more tells "exactly the bound" from "over it".
		var one [1]byte
		if n, _ := b.r.Read(one[:]); n > 0 {
			return 0, fail(errTooLarge)
		}
		return 0, io.EOF
	}
	if int64(len(p)) > b.left {
		p = p[:b.left]
	}
	n, err := b.r.Read(p)
	b.left -= int64(n)
	return n, err
}

func (b *boundedBody) Close() error { return b.r.Close() }

// HTTPClient is an *http.Client with the guard, for libraries that take
// one (go-oidc, x/oauth2): every request is checked (CheckURL, and the
// address at connect time), no redirect is followed, bodies are bounded,
// and the whole exchange is bounded in time. Errors it returns wrap a fetch
// failure whose text is ErrUnreachable's.
func (c *Client) HTTPClient() *http.Client { return c.http }

// Get fetches u with Accept accept and returns the body of a 200 answer.
// Every failure is ErrUnreachable (Cause has the reason).
func (c *Client) Get(ctx context.Context, u, accept string) ([]byte, error) {
	ctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, fail(err)
	}
	if accept != "" {
		req.Header.Set("Accept", accept)
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return nil, fail(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fail(fmt.Errorf("outbound: status %d", resp.StatusCode))
	}
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, fail(err)
	}
	return b, nil
}
