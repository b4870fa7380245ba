package outbound

import (
	"context"
	"encoding/binary"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

func TestRefusedAddresses(t *testing.T) {
	for _, tc := range []struct {
		addr    string
		refused bool
	}{
		{"127.0.0.1", true},
		{"127.255.255.254", true},
		{"::1", true},
		{"169.254.169.254", true}, // cloud metadata
		{"169.254.0.1", true},
		{"fe80::1", true},
		{"10.0.0.1", true},
		{"172.16.0.1", true},
		{"172.31.255.255", true},
		{"192.168.1.1", true},
		{"fc00::1", true},
		{"fd12:3456::1", true},
		{"0.0.0.0", true},
		{"0.1.2.3", true},
		{"::", true},
		{"224.0.0.1", true},
		{"239.255.255.250", true},
		{"ff02::1", true},
		{"100.64.0.1", true}, // CGNAT
		{"100.127.255.255", true},
		{"255.255.255.255", true},
		{"::ffff:127.0.0.1", true}, // IPv4-mapped forms count as their IPv4 address
		{"::ffff:169.254.169.254", true},
		{"::ffff:10.0.0.1", true},
		{"64:ff9b::7f00:1", true},    // NAT64 of 127.0.0.1
		{"2002:7f00:1::", true},      // 6to4 of 127.0.0.1
		{"::127.0.0.1", true},        // IPv4-compatible
		{"64:ff9b::a9fe:a9fe", true}, // NAT64 of 169.254.169.254
		{"2002:a00:1::", true},       // 6to4 of 10.0.0.1
		{"64:ff9b::808:808", false},  // NAT64 of 8.8.8.8: DNS64 answers so for every IPv4 site
		{"2002:808:808::", false},    // 6to4 of 8.8.8.8
		{"8.8.8.8", false},
		{"100.128.0.1", false},
		{"172.32.0.1", false},
		{"2606:4700:4700::1111", false},
		{"::ffff:8.8.8.8", false},
	} {
		t.Run(tc.addr, func(t *testing.T) {
			if got := Refused(netip.MustParseAddr(tc.addr)); got != tc.refused {
				t.Errorf("Refused(%s) = %v, want %v", tc.addr, got, tc.refused)
			}
		})
	}
}

func TestCheckURL(t *testing.T) {
	c := MustNew(Options{Allow: []string{"ldap.internal", "10.1.0.0/16"}})
	for _, tc := range []struct {
		name, url string
		ok        bool
	}{
		{"https to a public name", "https://keys.example.com/jwks.json", true},
		{"https to a public address", "https://8.8.8.8/jwks", true},
		{"http refused", "http://keys.example.com/jwks.json", false},
		{"HTTP in capitals refused", "HTTP://keys.example.com/", false},
		{"other schemes refused", "ftp://keys.example.com/", false},
		{"file refused", "file:///etc/passwd", false},
		{"loopback literal", "https://127.0.0.1:8443/", false},
		{"loopback IPv6 literal", "https://[::1]/", false},
		{"IPv4-mapped loopback", "https://[::ffff:127.0.0.1]/", false},
		{"metadata service", "https://169.254.169.254/latest/meta-data/", false},
		{"private literal", "https://192.168.0.10/", false},
		{"unique local literal", "https://[fd00::1]/", false},
		{"unspecified", "https://0.0.0.0/", false},
		{"CGNAT", "https://100.64.1.1/", false},
		{"decimal loopback", "https://2130706433/", false},
		{"short loopback", "https://127.1/", false},
		{"hex loopback", "https://0x7f.0.0.1/", false},
		{"octal loopback", "https://0177.0.0.1/", false},
		{"localhost", "https://localhost/", false},
		{"loopback with a trailing dot", "https://127.0.0.1./", false},
		{"link-local with a zone", "https://[fe80::1%25eth0]/", false},
		{"IPv6 unspecified", "https://[::]/", false},
		{"a .localhost name", "https://api.localhost./", false},
		{"user info refused", "https://user:pw@keys.example.com/", false},
		{"no host", "https:///jwks", false},
		{"relative", "/jwks", false},
		{"allowed host over http", "http://ldap.internal:8080/", true},
		{"allowed host in capitals", "https://LDAP.internal/", true},
		{"allowed range over http", "http://10.1.2.3/", true},
		{"outside the allowed range", "https://10.2.0.1/", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := c.CheckURL(tc.url)
			if tc.ok && err != nil {
				t.Fatalf("CheckURL(%q) = %v, want nil", tc.url, err)
			}
			if !tc.ok && !errors.Is(err, ErrRefusedURL) {
				t.Fatalf("CheckURL(%q) = %v, want ErrRefusedURL", tc.url, err)
			}
		})
	}
}

func TestParseAllowRefusesGarbage(t *testing.T) {
	for _, e := range []string{"", "10.0.0.0/99", "http://host/", "host:80", "a b"} {
		if _, err := New(Options{Allow: []string{e}}); err == nil {
			t.Errorf("New(Allow %q) = nil error", e)
		}
	}
	if _, err := New(Options{Allow: []string{"internal.example", "192.0.2.7", "::1", "10.0.0.0/8"}}); err != nil {
		t.Fatal(err)
	}
}

// fakeDNS is a resolver whose every A query answers addr (AAAA: no
// answer), as a rebinding name would: the guard must refuse at connect time.
func fakeDNS(t *testing.T, addr netip.Addr) *net.Resolver {
	return &net.Resolver{PreferGo: true, Dial: func(ctx context.Context, network, _ string) (net.Conn, error) {
		client, server := net.Pipe()
		go func() {
			defer server.Close()
			for {
				var l [2]byte
				if _, err := io.ReadFull(server, l[:]); err != nil {
					return
				}
				q := make([]byte, binary.BigEndian.Uint16(l[:]))
				if _, err := io.ReadFull(server, q); err != nil {
					return
				}
				resp := dnsAnswer(q, addr)
				binary.BigEndian.PutUint16(l[:], uint16(len(resp)))
				if _, err := server.Write(append(l[:], resp...)); err != nil {
					return
				}
			}
		}()
		return client, nil
	}}
}

// dnsAnswer answers query q (one question) with addr for type A.
func dnsAnswer(q []byte, addr netip.Addr) []byte {
	end := 12
	for q[end] != 0 {
		end += int(q[end]) + 1
	}
	end++ // the root label
	qtype := binary.BigEndian.Uint16(q[end:])
	end += 4
	resp := append([]byte{}, q[:end]...)
	resp[2], resp[3] = 0x81, 0x80 // response, recursion desired and available
	resp[6], resp[7] = 0, 0
	resp[8], resp[9], resp[10], resp[11] = 0, 0, 0, 0
	if qtype == 1 {
		resp[7] = 1
		a := addr.As4()
		resp = append(resp, 0xc0, 0x0c, 0, 1, 0, 1, 0, 0, 0, 60, 0, 4)
		resp = append(resp, a[:]...)
	}
	return resp
}

// tlsServer is an https server on 127.0.0.1 and a client trusting it;
// its certificate names example.com, which fakeDNS resolves to 127.0.0.1.
func tlsServer(t *testing.T, h http.Handler, opts Options) (*httptest.Server, *Client) {
	t.Helper()
	srv := httptest.NewTLSServer(h)
	t.Cleanup(srv.Close)
	return srv, clientFor(t, srv, opts)
}

// clientFor is a client with opts that trusts srv's certificate and
// resolves every name to 127.0.0.1.
func clientFor(t *testing.T, srv *httptest.Server, opts Options) *Client {
	opts.RootCAs = srv.Client().Transport.(*http.Transport).TLSClientConfig.RootCAs
	c := MustNew(opts)
	c.resolver = fakeDNS(t, netip.MustParseAddr("127.0.0.1"))
	return c
}

func port(t *testing.T, srv *httptest.Server) string {
	u, err := url.Parse(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	return u.Port()
}

func TestNameResolvingToLoopbackIsRefusedAtConnect(t *testing.T) {
	var hits atomic.Int32
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { hits.Add(1); io.WriteString(w, `{"keys":[]}`) })
	srv, c := tlsServer(t, h, Options{})
	u := "https://example.com:" + port(t, srv) + "/jwks"
	if err := c.CheckURL(u); err != nil {
		t.Fatalf("CheckURL(%q) = %v: the name passes the static check", u, err)
	}
	_, err := c.Get(context.Background(), u, "application/json")
	if !errors.Is(err, ErrUnreachable) {
		t.Fatalf("Get = %v, want ErrUnreachable", err)
	}
	if cause := Cause(err); cause == nil || !strings.Contains(cause.Error(), "refused address 127.0.0.1") {
		t.Fatalf("Cause = %v, want the refused address", cause)
	}
	if hits.Load() != 0 {
		t.Fatal("the server was reached")
	}

	// The same fetch with the range on the allow list reaches it: the
	// refusal above is the guard's, not a broken setup.
	allowed := clientFor(t, srv, Options{Allow: []string{"127.0.0.0/8"}})
	b, err := allowed.Get(context.Background(), u, "application/json")
	if err != nil || string(b) != `{"keys":[]}` {
		t.Fatalf("allowed Get = %q, %v", b, err)
	}
	if hits.Load() != 1 {
		t.Fatalf("hits = %d, want 1", hits.Load())
	}
}

func TestLiteralRefusedAddressIsNotDialled(t *testing.T) {
	var hits atomic.Int32
	srv, c := tlsServer(t, http.HandlerFunc(func(http.ResponseWriter, *http.Request) { hits.Add(1) }), Options{})
	for _, u := range []string{srv.URL, "https://[::ffff:127.0.0.1]:" + port(t, srv) + "/"} {
		if _, err := c.Get(context.Background(), u, ""); !errors.Is(err, ErrUnreachable) {
			t.Fatalf("Get(%s) = %v, want ErrUnreachable", u, err)
		}
	}
	if resp, err := c.HTTPClient().Get(srv.URL); err == nil {
		resp.Body.Close()
		t.Fatal("HTTPClient reached a loopback address")
	}
	if hits.Load() != 0 {
		t.Fatal("the server was reached")
	}
}

func TestRedirectIsNotFollowed(t *testing.T) {
	var followed atomic.Int32
	mux := http.NewServeMux()
	mux.HandleFunc("/jwks", func(w http.ResponseWriter, r *http.Request) { http.Redirect(w, r, "/target", http.StatusFound) })
	mux.HandleFunc("/target", func(w http.ResponseWriter, r *http.Request) { followed.Add(1); io.WriteString(w, "{}") })
	srv, c := tlsServer(t, mux, Options{Allow: []string{"127.0.0.1"}})
	_, err := c.Get(context.Background(), srv.URL+"/jwks", "")
	if !errors.Is(err, ErrUnreachable) {
		t.Fatalf("Get = %v, want ErrUnreachable", err)
	}
	resp, err := c.HTTPClient().Get(srv.URL + "/jwks")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusFound {
		t.Fatalf("HTTPClient status = %d, want the 302 itself", resp.StatusCode)
	}
	if followed.Load() != 0 {
		t.Fatal("the redirect was followed")
	}
}

func TestSizeBound(t *testing.T) {
	body := strings.Repeat("x", 100)
	mux := http.NewServeMux()
	mux.HandleFunc("/fits", func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, body) })
	mux.HandleFunc("/over", func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, body+"y") })
	srv, c := tlsServer(t, mux, Options{Allow: []string{"127.0.0.1"}, MaxBytes: 100})
	if b, err := c.Get(context.Background(), srv.URL+"/fits", ""); err != nil || string(b) != body {
		t.Fatalf("Get(fits) = %d bytes, %v", len(b), err)
	}
	if _, err := c.Get(context.Background(), srv.URL+"/over", ""); !errors.Is(err, ErrUnreachable) {
		t.Fatalf("Get(over) = %v, want ErrUnreachable", err)
	}
	resp, err := c.HTTPClient().Get(srv.URL + "/over")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if _, err := io.ReadAll(resp.Body); !errors.Is(err, ErrUnreachable) {
		t.Fatalf("HTTPClient body read = %v, want ErrUnreachable", err)
	}
}

func TestTimeBound(t *testing.T) {
	release := make(chan struct{})
	srv, c := tlsServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select { // answers only after the test: the client must give up first
		case <-release:
		case <-r.Context().Done():
		}
	}), Options{Allow: []string{"127.0.0.1"}, Timeout: 200 * time.Millisecond})
	defer close(release)
	if _, err := c.Get(context.Background(), srv.URL, ""); !errors.Is(err, ErrUnreachable) {
		t.Fatalf("Get = %v, want ErrUnreachable", err)
	}
}

// Every way a fetch can fail reads the same to the caller.
func TestOneErrorWhateverTheTargetAnswered(t *testing.T) {
	release := make(chan struct{})
	defer close(release)
	mux := http.NewServeMux()
	mux.HandleFunc("/status", func(w http.ResponseWriter, r *http.Request) { http.Error(w, "secret internal page", 500) })
	mux.HandleFunc("/large", func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, strings.Repeat("x", 200)) })
	mux.HandleFunc("/redirect", func(w http.ResponseWriter, r *http.Request) { http.Redirect(w, r, "/", http.StatusFound) })
	mux.HandleFunc("/slow", func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-r.Context().Done():
		}
	})
	srv, c := tlsServer(t, mux, Options{Allow: []string{"example.com"}, MaxBytes: 100, Timeout: 300 * time.Millisecond})
	open := "https://example.com:" + port(t, srv)
	closed := func() string { // a port nothing listens on
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		defer l.Close()
		return "https://example.com:" + strings.TrimPrefix(l.Addr().String(), "127.0.0.1:")
	}()
	guarded := clientFor(t, srv, Options{})
	var texts []string
	for _, tc := range []struct {
		c *Client
		u string
	}{
		{guarded, "https://127.0.0.1:" + port(t, srv) + "/status"}, // refused literal, open port
		{guarded, open + "/status"},                                // refused after DNS, open port
		{guarded, closed + "/"},                                    // refused after DNS, closed port
		{guarded, "http://example.com/"},                           // refused scheme
		{c, closed + "/"},                                          // closed port
		{c, open + "/status"},                                      // bad status
		{c, open + "/large"},                                       // too large
		{c, open + "/redirect"},                                    // redirect
		{c, open + "/slow"},                                        // timeout
	} {
		_, err := tc.c.Get(context.Background(), tc.u, "")
		if !errors.Is(err, ErrUnreachable) {
			t.Fatalf("Get(%s) = %v, want ErrUnreachable", tc.u, err)
		}
		texts = append(texts, err.Error())
	}
	for _, s := range texts {
		if s != ErrUnreachable.Error() {
			t.Errorf("error text %q, want %q", s, ErrUnreachable.Error())
		}
	}
}

// The operator's client (config file URLs) reaches any address, over
// http too; it still follows no redirect.
func TestOperatorClientIsNotGuarded(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/redirect" {
			http.Redirect(w, r, "/", http.StatusFound)
			return
		}
		io.WriteString(w, "ok")
	}))
	t.Cleanup(srv.Close)
	c := MustNew(Options{Operator: true})
	if err := c.CheckURL("http://localhost/"); err != nil {
		t.Fatalf("CheckURL(localhost) = %v", err)
	}
	if b, err := c.Get(context.Background(), srv.URL, ""); err != nil || string(b) != "ok" {
		t.Fatalf("Get = %q, %v", b, err)
	}
	if _, err := c.Get(context.Background(), srv.URL+"/redirect", ""); !errors.Is(err, ErrUnreachable) {
		t.Fatalf("Get(redirect) = %v, want ErrUnreachable", err)
	}
}

// FuzzCheckURL: a URL CheckURL accepts (without exceptions) is https and
// its host, when it reads as an address in any spelling, is not refused.
func FuzzCheckURL(f *testing.F) {
	for _, s := range []string{"https://keys.example.com/jwks", "https://127.0.0.1/", "https://[::ffff:127.0.0.1]/",
		"https://2130706433/", "https://0x7f.1/", "http://a/", "https://169.254.169.254./", "https://[fe80::1%25eth0]/"} {
		f.Add(s)
	}
	c := MustNew(Options{})
	f.Fuzz(func(t *testing.T, raw string) {
		if c.CheckURL(raw) != nil {
			return
		}
		u, err := url.Parse(raw)
		if err != nil || !strings.EqualFold(u.Scheme, "https") {
			t.Fatalf("accepted %q: not https", raw)
		}
		if a, ok := literalAddr(u.Hostname()); ok && Refused(a) {
			t.Fatalf("accepted %q: %s is refused", raw, a)
		}
	})
}
