package webhook

import (
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// Concurrent calls share connections: a call opens one only when every
// connection it keeps is busy.
func TestCallsShareConnections(t *testing.T) {
	var opened atomic.Int32
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, `{"removeScopes":[]}`)
	}))
	srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			opened.Add(1)
		}
	}
	srv.Start()
	t.Cleanup(srv.Close)
	h := &Hook{Name: "access_token", URL: srv.URL, Secret: "s", Timeout: time.Minute, Client: NewClient()}
	const callers, calls = 32, 20
	var wg sync.WaitGroup
	for range callers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range calls {
				var out AccessTokenResponse
				if err := h.Call(context.Background(), AccessTokenRequest{}, &out); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	// At most one busy connection per caller, and every other one kept
	// idle: opened beyond that means calls closed connections.
	if n := opened.Load(); n > callers+idleConns {
		t.Errorf("%d calls opened %d connections, want at most %d", callers*calls, n, callers+idleConns)
	}
}

func TestCallAnswers(t *testing.T) {
	for name, tc := range map[string]struct {
		status int
		body   string
		err    string
		tier   any
	}{
		"claims":       {200, `{"additionalClaims":{"tier":"gold"}}`, "", "gold"},
		"empty answer": {200, "  ", "", nil},
		"not JSON":     {200, "<html>", "not the expected JSON", nil},
		"too large":    {200, `{"additionalClaims":{"x":"` + strings.Repeat("a", maxResponse) + `"}}`, "larger than", nil},
		"error status": {502, "upstream down", "status 502", nil},
		"no content":   {204, "", "", nil},
	} {
		t.Run(name, func(t *testing.T) {
			var sig string
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				sig = r.Header.Get(SignatureHeader)
				w.WriteHeader(tc.status)
				io.WriteString(w, tc.body)
			}))
			t.Cleanup(srv.Close)
			at := time.Now()
			h := &Hook{Name: "access_token", URL: srv.URL, Secret: "s", Timeout: time.Minute, Client: NewClient(),
				Now: func() time.Time { return at }}
			var out AccessTokenResponse
			err := h.Call(context.Background(), AccessTokenRequest{Scopes: []string{"read"}}, &out)
			if tc.err == "" && err != nil || tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)) {
				t.Fatalf("err %v, want %q", err, tc.err)
			}
			if out.AdditionalClaims["tier"] != tc.tier {
				t.Errorf("claims %v", out.AdditionalClaims)
			}
			want := Sign("s", at, []byte(`{"user":null,"client":{"id":""},"scopes":["read"],"userClaims":null,"contextCustomParams":null}`))
			if sig != want {
				t.Errorf("signature %q, want %q", sig, want)
			}
		})
	}
}
