package bench

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"
)

// Load times each request of a step, as well as the step: a step of two
// requests gives two request times, which together fit in the step's.
func TestLoadTimesEachRequest(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Write([]byte(`{"ok":true}`))
	}))
	defer srv.Close()
	c := NewClient(1)
	step := func(ctx context.Context, c *http.Client) (int, error) {
		for range 2 {
			req, _ := http.NewRequestWithContext(ctx, "GET", srv.URL, nil)
			resp, err := c.Do(req)
			if err != nil {
				return 1, err
			}
			if err := expect(resp, 200); err != nil {
				return 1, err
			}
		}
		return 2, nil
	}
	reqs, errs, lat, reqLat, _ := Load(context.Background(), c, 1, 200*time.Millisecond, step)
	if errs != 0 || len(lat) == 0 {
		t.Fatalf("%d errors, %d steps", errs, len(lat))
	}
	if reqs != int64(2*len(lat)) || len(reqLat) != 2*len(lat) {
		t.Fatalf("%d steps, %d requests counted, %d timed; want two of each per step", len(lat), reqs, len(reqLat))
	}
	for i, d := range lat {
		if a, b := reqLat[2*i], reqLat[2*i+1]; a <= 0 || b <= 0 || a+b > d {
			t.Fatalf("step %d took %v, its requests %v and %v", i, d, a, b)
		}
	}
}

// A request made with a context of its own, outside Load's, is not timed.
func TestRequestsOutsideLoadAreNotTimed(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	defer srv.Close()
	c := NewClient(1)
	step := func(ctx context.Context, c *http.Client) (int, error) {
		req, _ := http.NewRequestWithContext(context.Background(), "GET", srv.URL, nil)
		resp, err := c.Do(req)
		if err != nil {
			return 1, err
		}
		return 1, expect(resp, 200)
	}
	_, errs, lat, reqLat, _ := Load(context.Background(), c, 2, 100*time.Millisecond, step)
	if errs != 0 || len(lat) == 0 || len(reqLat) != 0 {
		t.Fatalf("%d errors, %d steps, %d requests timed; want none timed", errs, len(lat), len(reqLat))
	}
}

// A request that gets no answer fails at the transport's timeout (the
// client has none of its own), and is timed as a request.
func TestTimedTransportBoundsARequest(t *testing.T) {
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}))
	defer srv.Close()
	defer close(release)
	c := &http.Client{Transport: timedTransport{base: http.DefaultTransport, timeout: 50 * time.Millisecond}}
	times := &requestTimes{}
	req, _ := http.NewRequestWithContext(context.WithValue(context.Background(), requestTimesKey{}, times), "GET", srv.URL, nil)
	resp, err := c.Do(req)
	if err == nil {
		resp.Body.Close()
		t.Fatal("a request without an answer succeeded")
	}
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("err = %v, want the deadline", err)
	}
	if len(times.d) != 1 {
		t.Errorf("%d request times, want 1", len(times.d))
	}
}
