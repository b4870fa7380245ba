// Package clientaddr answers one question for every package: which address
// is the client of this request? Behind a load balancer the socket peer is
// the balancer, so the address comes from X-Forwarded-For, believed only
// when the peer is a configured trusted proxy. The server resolves it once
// per request (Middleware); events and throttles read it with Of and Key.
package clientaddr

import (
	"context"
	"net"
	"net/http"
	"net/netip"
	"strings"
)

// Resolver knows the trusted proxies.
type Resolver struct {
	proxies []netip.Prefix
}

// New returns a Resolver trusting the given addresses and CIDR ranges
// (validated by config; entries that do not parse are skipped).
func New(trusted []string) *Resolver {
	r := &Resolver{}
	for _, p := range trusted {
		p = strings.TrimSpace(p)
		if pr, err := netip.ParsePrefix(p); err == nil {
			r.proxies = append(r.proxies, pr.Masked())
		} else if a, err := netip.ParseAddr(p); err == nil {
			a = a.Unmap()
			r.proxies = append(r.proxies, netip.PrefixFrom(a, a.BitLen()))
		}
	}
	return r
}

// Valid reports whether s is an address or a CIDR range (for config checks).
func Valid(s string) bool {
	if _, err := netip.ParsePrefix(s); err == nil {
		return true
	}
	_, err := netip.ParseAddr(s)
	return err == nil
}

func (res *Resolver) trusted(a netip.Addr) bool {
	for _, p := range res.proxies {
		if p.Contains(a) {
			return true
		}
	}
	return false
}

// Resolve is the client address of r: the socket peer; when the peer is a
// trusted proxy, the right-most X-Forwarded-For address that is not itself
// a trusted proxy (addresses further left were written by the client and
// prove nothing).
func (res *Resolver) Resolve(r *http.Request) string {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		host = r.RemoteAddr
	}
	peer, err := netip.ParseAddr(host)
	if err != nil {
		return host
	}
	peer = peer.Unmap().WithZone("")
	if res == nil || len(res.proxies) == 0 || !res.trusted(peer) {
		return peer.String()
	}
	hops := strings.Split(strings.Join(r.Header.Values("X-Forwarded-For"), ","), ",")
	for i := len(hops) - 1; i >= 0; i-- {
		hop, err := netip.ParseAddr(strings.TrimSpace(hops[i]))
		if err != nil {
			break
		}
		hop = hop.Unmap().WithZone("")
		if !res.trusted(hop) {
			return hop.String()
		}
	}
	return peer.String()
}

type ctxKey struct{}

// Middleware resolves the client address of every request once and keeps
// it in the request's context for Of and Key.
func (res *Resolver) Middleware(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), ctxKey{}, res.Resolve(r))))
	})
}

// Of is the client address of r as Middleware resolved it; without the
// middleware (tests), the socket peer: X-Forwarded-For is never believed
// unless a Resolver was configured.
func Of(r *http.Request) string {
	if a, ok := r.Context().Value(ctxKey{}).(string); ok {
		return a
	}
	return (*Resolver)(nil).Resolve(r)
}

// Key is the client address of r as a throttling key: an IPv4 address as
// it is, an IPv6 address as its /64, because one subscriber usually holds a
// whole /64 and could otherwise step through 2^64 fresh addresses.
func Key(r *http.Request) string { return KeyOf(Of(r)) }

// KeyOf is Key for an address already resolved.
func KeyOf(addr string) string {
	a, err := netip.ParseAddr(addr)
	if err != nil || a.Is4() {
		return addr
	}
	p, _ := a.Prefix(64)
	return p.String()
}
