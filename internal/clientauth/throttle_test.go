package clientauth

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/latchkey/latchkey/internal/password"
	"github.com/latchkey/latchkey/internal/store"
	"github.com/latchkey/latchkey/internal/store/sqlite"
)

// countingThrottle is a real SQLite throttle that counts its calls.
type countingThrottle struct {
	store.Throttle
	calls atomic.Int64
}

func (c *countingThrottle) Take(ctx context.Context, key string, w time.Duration, limit int, now time.Time) (bool, time.Duration, error) {
	c.calls.Add(1)
	return c.Throttle.Take(ctx, key, w, limit, now)
}

func (c *countingThrottle) Release(ctx context.Context, key string) error {
	c.calls.Add(1)
	return c.Throttle.Release(ctx, key)
}

func newThrottle(t *testing.T) *countingThrottle {
	t.Helper()
	st, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return &countingThrottle{Throttle: st}
}

func from(r *http.Request, ip string) *http.Request {
	r.RemoteAddr = ip + ":4242"
	return r
}

func TestClientSecretThrottle(t *testing.T) {
	a, _, _ := setup(t)
	th := newThrottle(t)
	a.Throttle = th
	const right, wrong = "post-secret-post-secret", "guess"
	auth := func(ip, secret string) error {
		_, _, err := a.Authenticate(from(req(url.Values{"client_id": {"post"}, "client_secret": {secret}}, "", ""), ip), endpoint)
		return err
	}
	for range 10 {
		if err := auth("10.0.0.1", right); err != nil {
			t.Fatal(err)
		}
	}
	if n := th.calls.Load(); n != 0 {
		t.Errorf("correct secrets cost %d store calls, want 0: the hot path stays write-free", n)
	}
	// One address: refused past its limit, then even a correct secret
	// from it waits, without a store call or a hash.
	for i := range MaxClientFailsPerIP {
		if err := auth("10.0.0.2", wrong); err == nil || isThrottled(err) {
			t.Fatalf("failure %d: %v, want invalid_client", i+1, err)
		}
	}
	err := auth("10.0.0.2", wrong)
	if retry, ok := RetryAfter(err); !ok || retry != ClientThrottleWindow {
		t.Fatalf("past the address limit: %v (retry %v), want throttled for the window", err, retry)
	}
	if ce := err.(*Error); ce.Status() != http.StatusTooManyRequests {
		t.Errorf("status %d, want 429", ce.Status())
	}
	calls := th.calls.Load()
	if err := auth("10.0.0.2", right); !isThrottled(err) {
		t.Errorf("a refused address: %v, want throttled", err)
	}
	if th.calls.Load() != calls {
		t.Error("a remembered refusal still asked the store")
	}
	if err := auth("10.0.0.3", right); err != nil {
		t.Errorf("another address is not throttled: %v", err)
	}
	// Per client id: failures spread over addresses. The address's 50, and
	// the one it was refused at, are counted already.
	for i := range MaxClientFailsPerClient - MaxClientFailsPerIP - 1 {
		if err := auth(fmt.Sprintf("10.1.0.%d", i+1), wrong); isThrottled(err) {
			t.Fatalf("spread failure %d throttled early", i+1)
		}
	}
	if err := auth("10.2.0.1", wrong); !isThrottled(err) {
		t.Errorf("past the client's limit: %v, want throttled", err)
	}
	if err := auth("10.2.0.2", right); !isThrottled(err) {
		t.Errorf("a fresh address, while the client is refused: %v, want throttled", err)
	}
	if err := auth("10.0.0.1", right); err != nil {
		t.Errorf("the client's own address (it authenticated from there) is spared the per-client limit: %v", err)
	}
	// Unknown ids are counted per address only: random ids add no rows.
	_, _, _ = a.Authenticate(from(req(url.Values{"client_id": {"no-such"}, "client_secret": {wrong}}, "", ""), "10.3.0.1"), endpoint)
	if n, _, _ := th.Count(context.Background(), "client:id:no-such", ClientThrottleWindow, now); n != 0 {
		t.Errorf("an unknown client id got a counter (%d)", n)
	}
}

func isThrottled(err error) bool { _, ok := RetryAfter(err); return ok }

func TestBasicUsersThrottle(t *testing.T) {
	h, _ := password.Hash("change-me")
	b, err := NewBasicUsers(map[string]string{"admin": h})
	if err != nil {
		t.Fatal(err)
	}
	b.Throttle = newThrottle(t)
	b.Now = func() time.Time { return now }
	guard := func(ip, user, pass string) *httptest.ResponseRecorder {
		r := from(httptest.NewRequest("GET", "/api/events", nil), ip)
		r.SetBasicAuth(user, pass)
		w := httptest.NewRecorder()
		if _, _, err := b.Guard(w, r); err != nil {
			t.Fatal(err)
		}
		return w
	}
	// Concurrent guesses from one address: exactly the limit is checked.
	var wg sync.WaitGroup
	var mu sync.Mutex
	codes := map[int]int{}
	for range 2 * MaxBasicFailsPerIP {
		wg.Add(1)
		go func() {
			defer wg.Done()
			w := guard("10.0.0.1", "admin", "wrong")
			mu.Lock()
			codes[w.Code]++
			mu.Unlock()
		}()
	}
	wg.Wait()
	if codes[http.StatusUnauthorized] != MaxBasicFailsPerIP || codes[http.StatusTooManyRequests] != MaxBasicFailsPerIP {
		t.Errorf("%d concurrent guesses: %v, want %d checked (401), the rest 429", 2*MaxBasicFailsPerIP, codes, MaxBasicFailsPerIP)
	}
	w := guard("10.0.0.1", "admin", "change-me")
	if w.Code != http.StatusTooManyRequests || w.Header().Get("Retry-After") != fmt.Sprint(int(BasicThrottleWindow/time.Second)) {
		t.Errorf("right password from the refused address: %d, Retry-After %q", w.Code, w.Header().Get("Retry-After"))
	}
	// Unknown usernames share one counter: varying the name does not
	// escape it, and the real user is not counted with them.
	for i := range MaxBasicFailsPerUser {
		if w := guard(fmt.Sprintf("10.1.%d.%d", i/200, i%200+1), fmt.Sprintf("user%d", i), "x"); w.Code != http.StatusUnauthorized {
			t.Fatalf("unknown user %d: %d", i, w.Code)
		}
	}
	if w := guard("10.2.0.1", "someone-else", "x"); w.Code != http.StatusTooManyRequests {
		t.Errorf("past the unknown-user limit: %d, want 429", w.Code)
	}
	if w := guard("10.2.0.2", "admin", "change-me"); w.Code != http.StatusOK {
		t.Errorf("the real user from another address: %d, want 200", w.Code)
	}
}
