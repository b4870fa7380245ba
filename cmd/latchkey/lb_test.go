package main

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/latchkey/latchkey/internal/server/servertest"
	"github.com/latchkey/latchkey/internal/store/postgres/pgtest"
)

// lbClients has one client per kind of load: a machine client (client
// credentials, and it introspects everyone's tokens), an app that signs a
// person in with the code flow (and refreshes, which the mixed-versions
// test does across binaries) and may approve the TV's device flows, and a
// TV (device flow). It ends in the clients list, so a config may add more.
const lbClients = `
clients:
  - client_id: m2m
    client_secret: "m2m-secret-m2m-secret"
    token_endpoint_auth_method: client_secret_post
    grant_types: [client_credentials]
    scopes: [read]
    introspect_any_token: true
  - client_id: app
    token_endpoint_auth_method: none
    redirect_uris: [https://app.example/cb]
    grant_types: [authorization_code, refresh_token]
    scopes: [read, "access:device-authorization:approve"]
    consent_required: false
    device_approval_clients: [tv]
  - client_id: tv
    token_endpoint_auth_method: none
    grant_types: ["urn:ietf:params:oauth:grant-type:device_code"]
    scopes: [read]
    consent_required: false
`

// lbConfig is lbClients behind a trusted proxy, with a seeded person.
const lbConfig = `
trusted_proxies: [127.0.0.1]` + lbClients + `persons:
  - email: jane@example.com
    password: "correct horse battery staple"
`

const (
	lbPerson   = "jane@example.com"
	lbPassword = "correct horse battery staple"
	lbRedirect = "https://app.example/cb"
	m2mForm    = "client_id=m2m&client_secret=m2m-secret-m2m-secret"
	// The balancer checks readiness every 200 ms and takes a server out
	// after 2 failed checks; the drain delay outlasts that (400 ms).
	lbCheckInterval = "200ms"
	lbDrainDelay    = "1500ms"
)

// haproxyPath finds Debian's haproxy (scripts/test-deps installs it). It
// skips the test without it, except under CI=true, where it fails.
func haproxyPath(t *testing.T) string {
	t.Helper()
	for _, p := range []string{"haproxy", "/usr/sbin/haproxy"} {
		if path, err := exec.LookPath(p); err == nil {
			return path
		}
	}
	if os.Getenv("CI") == "true" {
		t.Fatal("haproxy is not installed and CI=true (scripts/test-deps installs it)")
	}
	t.Skip("haproxy is not installed (scripts/test-deps installs it)")
	return ""
}

// instance is one latchkey process behind the balancer.
type instance struct {
	name, addr string
	env        []string
	cfgPath    string
	cmd        *exec.Cmd
	log        *syncBuffer
	logs       []string // the logs of earlier runs of this instance
}

func (in *instance) start(t *testing.T) {
	t.Helper()
	if in.log != nil {
		in.logs = append(in.logs, in.log.String())
	}
	in.log = &syncBuffer{}
	in.cmd = command(t, in.env, "serve", "--config", in.cfgPath)
	in.cmd.Stderr = in.log
	startServing(t, in.cmd, in.addr)
}

// balancer is haproxy in front of the instances.
type balancer struct {
	url string
	cmd *exec.Cmd
}

func startBalancer(t *testing.T, addr string, instances []*instance) *balancer {
	t.Helper()
	bin := haproxyPath(t)
	var servers strings.Builder
	for _, in := range instances {
		fmt.Fprintf(&servers, "  server %s %s check\n", in.name, in.addr)
	}
	// retry-on conn-failure resends only requests that never reached an
	// instance (a refused connect after a SIGKILL); a request an instance
	// received and lost is the instance's failure, and counted as one.
	cfg := fmt.Sprintf(`global
  maxconn 2000
defaults
  mode http
  timeout connect 2s
  timeout client 30s
  timeout server 30s
  retries 3
  retry-on conn-failure
  option redispatch
frontend fe
  bind %s
  option forwardfor
  default_backend be
backend be
  balance roundrobin
  option httpchk GET /health/ready
  http-check expect status 200
  http-response set-header X-Served-By %%s
  default-server inter %s fall 2 rise 2
%s`, addr, lbCheckInterval, servers.String())
	path := filepath.Join(t.TempDir(), "haproxy.cfg")
	if err := os.WriteFile(path, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(bin, "-c", "-f", path).CombinedOutput(); err != nil {
		t.Fatalf("haproxy -c: %v\n%s", err, out)
	}
	cmd := exec.Command(bin, "-db", "-f", path)
	var stderr syncBuffer
	cmd.Stdout, cmd.Stderr = &stderr, &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	b := &balancer{url: "http://" + addr, cmd: cmd}
	for _, in := range instances {
		b.waitServing(t, in.name)
	}
	return b
}

// waitServing polls until the balancer sends requests to the named server.
func (b *balancer) waitServing(t *testing.T, name string) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) {
		if resp, err := http.Get(b.url + "/health/alive"); err == nil {
			resp.Body.Close()
			if resp.Header.Get("X-Served-By") == name {
				return
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("the balancer did not send requests to %s within 60 s", name)
}

// tally counts the answers of the load by kind.
type tally struct {
	ok, failed atomic.Int64
	mu         sync.Mutex
	failures   []string
	tokens     []string // every token answered with 200
}

func (tl *tally) fail(format string, args ...any) {
	tl.failed.Add(1)
	tl.mu.Lock()
	defer tl.mu.Unlock()
	if len(tl.failures) < 20 {
		tl.failures = append(tl.failures, fmt.Sprintf(format, args...))
	}
}

func (tl *tally) token(tok string) {
	tl.ok.Add(1)
	tl.mu.Lock()
	tl.tokens = append(tl.tokens, tok)
	tl.mu.Unlock()
}

func (tl *tally) snapshot() (ok, failed int64) { return tl.ok.Load(), tl.failed.Load() }

// lbClient is one simulated client through the balancer.
type lbClient struct {
	base string
	hc   *http.Client
}

func newLBClient(base string) *lbClient {
	jar, _ := cookiejar.New(nil)
	return &lbClient{base: base, hc: &http.Client{Jar: jar, Timeout: 30 * time.Second,
		Transport:     &http.Transport{MaxIdleConnsPerHost: 4},
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}}
}

// post sends a form and decodes a JSON answer into out (when not nil).
func (c *lbClient) post(ctx context.Context, path, form string, header http.Header, out any) (int, error) {
	req, err := http.NewRequestWithContext(ctx, "POST", c.base+path, strings.NewReader(form))
	if err != nil {
		return 0, err
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	for k, v := range header {
		req.Header[k] = v
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return resp.StatusCode, err
	}
	if out != nil && len(b) > 0 {
		if err := json.Unmarshal(b, out); err != nil {
			return resp.StatusCode, fmt.Errorf("status %d, body %q: %w", resp.StatusCode, b, err)
		}
	}
	return resp.StatusCode, nil
}

type tokenAnswer struct {
	AccessToken  string `json:"access_token"`
	RefreshToken string `json:"refresh_token"`
	Error        string `json:"error"`
	DeviceCode   string `json:"device_code"`
	UserCode     string `json:"user_code"`
	Active       *bool  `json:"active"`
}

func pkce() (verifier, challenge string) {
	verifier = base64.RawURLEncoding.EncodeToString([]byte(fmt.Sprintf("verifier-%d-%d-padding-padding", time.Now().UnixNano(), os.Getpid())))
	sum := sha256.Sum256([]byte(verifier))
	return verifier, base64.RawURLEncoding.EncodeToString(sum[:])
}

// authorize asks for a code; with a session the answer is the redirect
// back to the app. It returns the redirect (the app's or the login page's).
func (c *lbClient) authorize(ctx context.Context, challenge string) (*url.URL, error) {
	q := url.Values{"client_id": {"app"}, "response_type": {"code"}, "redirect_uri": {lbRedirect}, "state": {"st"},
		"scope": {"read access:device-authorization:approve"}, "code_challenge": {challenge}, "code_challenge_method": {"S256"}}
	req, err := http.NewRequestWithContext(ctx, "GET", c.base+"/oauth/authorize?"+q.Encode(), nil)
	if err != nil {
		return nil, err
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		return nil, err
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusFound && resp.StatusCode != http.StatusSeeOther {
		return nil, fmt.Errorf("authorize: status %d", resp.StatusCode)
	}
	return resp.Location()
}

// codeFlow runs one authorization code flow on the browser session and
// returns the access token.
func (c *lbClient) codeFlow(ctx context.Context) (string, error) {
	verifier, challenge := pkce()
	loc, err := c.authorize(ctx, challenge)
	if err != nil {
		return "", err
	}
	code := loc.Query().Get("code")
	if !strings.HasPrefix(loc.String(), lbRedirect) || code == "" {
		return "", fmt.Errorf("authorize sent the browser to %s, want the app with a code (session lost?)", loc.Redacted())
	}
	form := url.Values{"grant_type": {"authorization_code"}, "code": {code}, "redirect_uri": {lbRedirect},
		"client_id": {"app"}, "code_verifier": {verifier}}
	var tok tokenAnswer
	status, err := c.post(ctx, "/oauth/token", form.Encode(), nil, &tok)
	if err != nil || status != 200 || tok.AccessToken == "" {
		return "", fmt.Errorf("code exchange: %d %v %s", status, err, tok.Error)
	}
	return tok.AccessToken, nil
}

// login signs the browser in as email on the hosted login page of base (one
// instance's own address or the balancer's), and returns the status of the
// login POST.
func (c *lbClient) login(t *testing.T, base, email, password string) int {
	t.Helper()
	_, challenge := pkce()
	loc, err := c.authorize(context.Background(), challenge)
	if err != nil {
		t.Fatal(err)
	}
	if loc.Path != "/login" {
		t.Fatalf("authorize without a session went to %s, want the login page", loc.Redacted())
	}
	page := servertest.Get(t, c.hc, base+loc.RequestURI())
	m := servertest.CSRFRE.FindStringSubmatch(page)
	if m == nil {
		t.Fatal("no CSRF token on the login page")
	}
	resp, err := c.hc.PostForm(base+"/login", url.Values{"csrf_token": {m[1]}, "request": {loc.Query().Get("request")},
		"email": {email}, "password": {password}})
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

// load drives mixed traffic through the balancer until ctx ends: client
// credentials, introspection of answered tokens, the code flow on a browser
// session, and device polling. Every answer is checked; a transport error,
// a 5xx or a wrong answer is a failure.
type load struct {
	base                       string
	cc, introspect, code, poll tally
	wg                         sync.WaitGroup
}

func (l *load) all() (ok, failed int64) {
	for _, tl := range []*tally{&l.cc, &l.introspect, &l.code, &l.poll} {
		o, f := tl.snapshot()
		ok, failed = ok+o, failed+f
	}
	return ok, failed
}

func (l *load) failures() []string {
	var out []string
	for name, tl := range map[string]*tally{"client credentials": &l.cc, "introspection": &l.introspect, "code flow": &l.code, "device polling": &l.poll} {
		tl.mu.Lock()
		for _, f := range tl.failures {
			out = append(out, name+": "+f)
		}
		tl.failures = nil
		tl.mu.Unlock()
	}
	return out
}

func (l *load) start(ctx context.Context, browser *lbClient) {
	for w := range 2 {
		l.wg.Add(1)
		go func() { // client credentials
			defer l.wg.Done()
			c := newLBClient(l.base)
			for ctx.Err() == nil {
				var tok tokenAnswer
				status, err := c.post(ctx, "/oauth/token", "grant_type=client_credentials&scope=read&"+m2mForm, nil, &tok)
				switch {
				case ctx.Err() != nil:
				case err != nil || status != 200 || tok.AccessToken == "":
					l.cc.fail("worker %d: %d %v %s", w, status, err, tok.Error)
				default:
					l.cc.token(tok.AccessToken)
				}
			}
		}()
	}
	for w := range 2 {
		l.wg.Add(1)
		go func() { // introspection of tokens answered earlier
			defer l.wg.Done()
			c := newLBClient(l.base)
			for i := 0; ctx.Err() == nil; i++ {
				l.cc.mu.Lock()
				n := len(l.cc.tokens)
				var tok string
				if n > 0 {
					tok = l.cc.tokens[(n-1)-(i%n)]
				}
				l.cc.mu.Unlock()
				if tok == "" {
					time.Sleep(5 * time.Millisecond) // no token answered yet
					continue
				}
				var ans tokenAnswer
				status, err := c.post(ctx, "/oauth/api/v2/token/introspect", m2mForm+"&token="+url.QueryEscape(tok), nil, &ans)
				switch {
				case ctx.Err() != nil:
				case err != nil || status != 200 || ans.Active == nil || !*ans.Active:
					l.introspect.fail("worker %d: %d %v active=%v", w, status, err, ans.Active)
				default:
					l.introspect.ok.Add(1)
				}
			}
		}()
	}
	l.wg.Add(1)
	go func() { // code flow on the browser session
		defer l.wg.Done()
		for ctx.Err() == nil {
			tok, err := browser.codeFlow(ctx)
			switch {
			case ctx.Err() != nil:
			case err != nil:
				l.code.fail("%v", err)
			default:
				l.code.token(tok)
			}
		}
	}()
	l.wg.Add(1)
	go func() { // a TV polling its device code (faster than the interval: slow_down is a valid answer)
		defer l.wg.Done()
		c := newLBClient(l.base)
		var deviceCode string
		for i := 0; ctx.Err() == nil; i++ {
			if i%10 == 0 {
				var da tokenAnswer
				status, err := c.post(ctx, "/oauth/device_authorization", "client_id=tv&scope=read", nil, &da)
				switch {
				case ctx.Err() != nil:
				case err != nil || status != 200 || da.DeviceCode == "":
					l.poll.fail("device authorization: %d %v", status, err)
				default:
					l.poll.ok.Add(1)
					deviceCode = da.DeviceCode
				}
				continue
			}
			if deviceCode == "" {
				continue
			}
			var ans tokenAnswer
			status, err := c.post(ctx, "/oauth/token", "grant_type="+url.QueryEscape("urn:ietf:params:oauth:grant-type:device_code")+
				"&client_id=tv&device_code="+url.QueryEscape(deviceCode), nil, &ans)
			switch {
			case ctx.Err() != nil:
			case err != nil || status != 400 || (ans.Error != "authorization_pending" && ans.Error != "slow_down"):
				l.poll.fail("poll: %d %v %s", status, err, ans.Error)
			default:
				l.poll.ok.Add(1)
			}
		}
	}()
}

// TestBehindHAProxy runs two PostgreSQL-backed instances of the real binary
// behind haproxy under mixed load. A SIGKILL of one loses at most the
// requests it had in flight, and everything the other needs carries over
// (tokens, the browser session, a device code, a throttle); a rolling
// restart, each instance drained in turn, fails no request at all.
func TestBehindHAProxy(t *testing.T) {
	haproxyPath(t)
	db := pgtest.NewDatabase(t)
	dir := t.TempDir()
	cfgPath := filepath.Join(dir, "latchkey.yaml")
	if err := os.WriteFile(cfgPath, []byte(lbConfig), 0o600); err != nil {
		t.Fatal(err)
	}
	lbAddr := freePort(t)
	var instances []*instance
	for _, name := range []string{"a", "b"} {
		addr := freePort(t)
		instances = append(instances, &instance{name: name, addr: addr, cfgPath: cfgPath, env: []string{
			"LATCHKEY_LISTEN=" + addr, "LATCHKEY_DATABASE=" + db, "LATCHKEY_ISSUER=http://" + lbAddr,
			"LATCHKEY_SECRET_KEY_FILE=" + filepath.Join(dir, "secret.key"), "LATCHKEY_LOG_LEVEL=info",
			"LATCHKEY_SHUTDOWN_DRAIN_DELAY=" + lbDrainDelay}})
	}
	a, b := instances[0], instances[1]
	a.start(t) // first alone: it creates the shared key file and applies the migrations
	b.start(t)
	lb := startBalancer(t, lbAddr, instances) // the issuer is the balancer's address

	// State made on instance a itself, to be used on b once a is gone: a
	// browser session, a pending device code, and failed logins that
	// throttle their account from this address.
	browser := newLBClient(lb.url)
	onA := &lbClient{base: "http://" + a.addr, hc: browser.hc}
	if status := onA.login(t, onA.base, lbPerson, lbPassword); status != http.StatusSeeOther && status != http.StatusFound {
		t.Fatalf("login on a: status %d", status)
	}
	var device tokenAnswer
	if status, err := onA.post(context.Background(), "/oauth/device_authorization", "client_id=tv&scope=read", nil, &device); err != nil || status != 200 {
		t.Fatalf("device authorization on a: %d %v", status, err)
	}
	intruder := &lbClient{base: onA.base, hc: newLBClient(onA.base).hc}
	for i := range 5 { // login:pair is 5 per 15 min (docs/THROTTLES.md)
		if status := intruder.login(t, onA.base, lbPerson, "wrong password"); status != http.StatusOK && status != http.StatusUnauthorized {
			t.Fatalf("wrong password %d on a: status %d", i+1, status)
		}
	}

	// Two instances under load.
	l := &load{base: lb.url}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	l.start(ctx, browser)
	t0 := time.Now()
	waitFor(t, "answers through the balancer", func() bool { ok, _ := l.all(); return ok >= 300 })
	time.Sleep(2 * time.Second) // a measured stretch of load on two instances
	ok2, failed2 := l.all()
	twoRate := float64(ok2) / time.Since(t0).Seconds()
	if failed2 > 0 {
		t.Errorf("%d requests failed with both instances up: %v", failed2, l.failures())
	}

	// SIGKILL a mid-load. The requests a held, and those haproxy sent on
	// its dead keep-alive connections before its checks noticed, fail;
	// once the survivor carries the load, nothing does.
	okKill, failedKill := l.all()
	tKill := time.Now()
	if err := a.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = a.cmd.Wait()
	waitFor(t, "answers on the survivor", func() bool { ok, _ := l.all(); return ok >= okKill+300 })
	_, failedSettled := l.all()
	killFailures := failedSettled - failedKill
	killFailureList := l.failures()
	time.Sleep(time.Second) // a measured stretch of load on one instance
	ok1, failed1 := l.all()
	oneRate := float64(ok1-okKill) / time.Since(tKill).Seconds()
	if n := failed1 - failedSettled; n > 0 {
		t.Errorf("%d requests failed on the survivor after it took over: %v", n, l.failures())
	}

	// What a made carries over to b.
	if _, err := browser.codeFlow(context.Background()); err != nil {
		t.Errorf("the browser session made on a, used on b: %v", err)
	}
	appToken, err := browser.codeFlow(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	status, err := browser.post(context.Background(), "/oauth/device_authorization/approve?user_code="+url.QueryEscape(device.UserCode),
		"", http.Header{"Authorization": {"Bearer " + appToken}}, nil)
	if err != nil || status != http.StatusNoContent {
		t.Errorf("approving on b the device code made on a: %d %v", status, err)
	}
	var devTok tokenAnswer
	if status, err := browser.post(context.Background(), "/oauth/token", "grant_type="+url.QueryEscape("urn:ietf:params:oauth:grant-type:device_code")+
		"&client_id=tv&device_code="+url.QueryEscape(device.DeviceCode), nil, &devTok); err != nil || status != 200 || devTok.AccessToken == "" {
		t.Errorf("device code made on a, polled on b after approval: %d %v %s", status, err, devTok.Error)
	}
	intruder.base = lb.url
	if status := intruder.login(t, lb.url, lbPerson, "wrong password"); status != http.StatusTooManyRequests {
		t.Errorf("the 6th failed login, on b after 5 on a: status %d, want 429 (throttle counters are shared)", status)
	}

	// Rolling restart under load: each instance in turn (a comes back
	// first), drained by SIGTERM, restarted, and back in rotation. Not one
	// request may fail.
	_, failedBefore := l.all()
	a.start(t)
	lb.waitServing(t, "a")
	for _, in := range []*instance{b, a} {
		if err := in.cmd.Process.Signal(syscall.SIGTERM); err != nil {
			t.Fatal(err)
		}
		if err := in.cmd.Wait(); err != nil {
			t.Fatalf("%s after SIGTERM: %v\n%s", in.name, err, in.log.String())
		}
		in.start(t)
		lb.waitServing(t, in.name)
	}
	okEnd, failedEnd := l.all()
	cancel()
	l.wg.Wait()
	if n := failedEnd - failedBefore; n > 0 {
		t.Errorf("%d requests failed during the rolling restart: %v", n, l.failures())
	}

	// Every token answered with 200 is active on the instances that are left.
	var tokens []string
	for _, tl := range []*tally{&l.cc, &l.code} {
		tokens = append(tokens, tl.tokens...)
	}
	tokens = append(tokens, devTok.AccessToken)
	inactive := introspectAll(t, lb.url, tokens)
	if inactive > 0 {
		t.Errorf("%d of %d tokens answered with 200 are not active after the kill and the restarts", inactive, len(tokens))
	}

	// The logs say what happened: migrations at start, drained requests at stop.
	for _, in := range instances {
		logs := strings.Join(append(in.logs, in.log.String()), "")
		if !strings.Contains(logs, "msg=\"schema migrations\"") || !strings.Contains(logs, "known=") {
			t.Errorf("%s logged no migration line at start:\n%s", in.name, logs)
		}
	}
	stopLog := b.logs[len(b.logs)-1]
	if !strings.Contains(stopLog, "msg=stopped drained_requests=") {
		t.Errorf("b's SIGTERM run logged no drained requests:\n%s", stopLog)
	}
	// haproxy's checks alone reach b during its drain delay: it kept serving.
	if m := regexp.MustCompile(`served_while_draining=(\d+)`).FindStringSubmatch(stopLog); m == nil || m[1] == "0" {
		t.Errorf("b served nothing between SIGTERM and the close of its listener:\n%s", stopLog)
	}
	t.Logf("through haproxy: %.0f answers/s with two instances, %.0f with one; SIGKILL: %d failed (%v); "+
		"rolling restart: %d failed of %d; %d tokens checked", twoRate, oneRate, killFailures, killFailureList,
		failedEnd-failedBefore, okEnd-ok1, len(tokens))
}

// introspectAll introspects tokens with a few connections and returns how
// many were not active.
func introspectAll(t *testing.T, base string, tokens []string) int {
	t.Helper()
	var inactive atomic.Int64
	var wg sync.WaitGroup
	next := atomic.Int64{}
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c := newLBClient(base)
			for {
				i := int(next.Add(1)) - 1
				if i >= len(tokens) {
					return
				}
				var ans tokenAnswer
				status, err := c.post(context.Background(), "/oauth/api/v2/token/introspect", m2mForm+"&token="+url.QueryEscape(tokens[i]), nil, &ans)
				if err != nil || status != 200 || ans.Active == nil || !*ans.Active {
					inactive.Add(1)
				}
			}
		}()
	}
	wg.Wait()
	return int(inactive.Load())
}

// waitFor polls cond every 10 ms for up to 60 s.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("no %s within 60 s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
