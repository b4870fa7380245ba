// Package bench is latchkey's load benchmark: closed-loop HTTP load over
// loopback against a latchkey server it starts itself (or an external one),
// scenario by scenario, each beside the same load against a bare net/http
// handler (the ceiling) so that results compare across machines as ratios.
package bench

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// Result is one scenario's figures.
type Result struct {
	Name       string
	Requests   int64
	Errors     int64
	Duration   time.Duration
	P50, P90   time.Duration
	P99, Max   time.Duration
	RequestP99 time.Duration // of each request, where a step sends several
	CPUPer1000 float64       // server CPU seconds per 1,000 requests (NaN when unknown)
	// DatabaseCPUPer1000: the CPU seconds of a PostgreSQL server on the
	// same machine per 1,000 requests (NaN when unknown, and for SQLite,
	// whose work is the server's).
	DatabaseCPUPer1000 float64
	CeilingRPS         float64       // the bare handler's requests/s under the same load
	CeilingP99         time.Duration // and its 99th percentile latency
	BodyBytes          int           // typical answer size (the ceiling answers as much)
	PeakRSS            int64         // the server's peak resident memory during the scenario, bytes (0 when unknown)
	Description        string
}

// RPS is requests per second.
func (r Result) RPS() float64 { return float64(r.Requests) / r.Duration.Seconds() }

// Ratio is the scenario's throughput as a share of the ceiling.
func (r Result) Ratio() float64 {
	if r.CeilingRPS == 0 {
		return 0
	}
	return r.RPS() / r.CeilingRPS
}

// Step is one iteration of a scenario; it returns an error when the answer
// was not the expected one. It may send several requests (it reports how many).
type Step func(ctx context.Context, c *http.Client) (requests int, err error)

// Load runs step from conns goroutines for d and measures each iteration
// (lat) and each request an iteration sent through a client of NewClient
// (reqLat: from the start of the request to the close of its answer's
// body; a step of one request has the same figure in both).
func Load(ctx context.Context, c *http.Client, conns int, d time.Duration, step Step) (requests, errs int64, lat, reqLat []time.Duration, elapsed time.Duration) {
	ctx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	var mu sync.Mutex
	var reqs, bad atomic.Int64
	var wg sync.WaitGroup
	start := time.Now()
	for range conns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			local := make([]time.Duration, 0, 4096)
			var localReq []time.Duration
			times := &requestTimes{}
			sctx := context.WithValue(ctx, requestTimesKey{}, times)
			for ctx.Err() == nil {
				t := time.Now()
				times.d = times.d[:0]
				n, err := step(sctx, c)
				if ctx.Err() != nil {
					break // cut off by the end of the run: neither counted nor an error
				}
				local = append(local, time.Since(t))
				localReq = append(localReq, times.d...)
				reqs.Add(int64(n))
				if err != nil {
					bad.Add(1)
				}
			}
			mu.Lock()
			lat = append(lat, local...)
			reqLat = append(reqLat, localReq...)
			mu.Unlock()
		}()
	}
	wg.Wait()
	return reqs.Load(), bad.Load(), lat, reqLat, time.Since(start)
}

// requestTimes collects, in the context of one step, how long each of its
// requests took (timedTransport).
type requestTimes struct{ d []time.Duration }

type requestTimesKey struct{}

// timedTransport times each request whose context carries requestTimes,
// until its answer's body is closed (or until it failed). It also bounds
// each request by timeout: with a Client.Timeout, net/http runs a timer
// goroutine for every request sent through a RoundTripper it does not know
// (this one), which cost the load a sixth of the ceiling's throughput.
type timedTransport struct {
	base    http.RoundTripper
	timeout time.Duration
}

func (t timedTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	times, _ := req.Context().Value(requestTimesKey{}).(*requestTimes)
	start := time.Now()
	ctx, cancel := context.WithTimeout(req.Context(), t.timeout)
	resp, err := t.base.RoundTrip(req.WithContext(ctx))
	if err != nil {
		cancel()
		if times != nil {
			times.d = append(times.d, time.Since(start))
		}
		return nil, err
	}
	resp.Body = &timedBody{ReadCloser: resp.Body, times: times, start: start, cancel: cancel}
	return resp, nil
}

type timedBody struct {
	io.ReadCloser
	times  *requestTimes // nil: not timed
	start  time.Time
	cancel context.CancelFunc
	closed bool
}

func (b *timedBody) Close() error {
	if !b.closed {
		b.closed = true
		if b.times != nil {
			b.times.d = append(b.times.d, time.Since(b.start))
		}
	}
	err := b.ReadCloser.Close()
	b.cancel()
	return err
}

// Percentiles returns p50, p90, p99 and max of lat.
func Percentiles(lat []time.Duration) (p50, p90, p99, mx time.Duration) {
	if len(lat) == 0 {
		return
	}
	slices.Sort(lat)
	at := func(q float64) time.Duration { return lat[min(len(lat)-1, int(q*float64(len(lat))))] }
	return at(.50), at(.90), at(.99), lat[len(lat)-1]
}

// NewClient is an HTTP client with enough idle connections for conns
// workers, so the load reuses connections like real clients do.
func NewClient(conns int) *http.Client {
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.MaxIdleConns, t.MaxIdleConnsPerHost, t.MaxConnsPerHost = conns*2, conns*2, 0
	return &http.Client{Transport: timedTransport{base: t, timeout: 30 * time.Second},
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
}

// drain reads and closes a body so the connection is reused.
func drain(resp *http.Response) ([]byte, error) {
	defer resp.Body.Close()
	return io.ReadAll(resp.Body)
}

// expect checks a status.
func expect(resp *http.Response, status int) error {
	b, err := drain(resp)
	if err != nil {
		return err
	}
	if resp.StatusCode != status {
		return fmt.Errorf("status %d, want %d: %.200s", resp.StatusCode, status, b)
	}
	return nil
}

// Ceiling is the bare handler: a JSON body of size bytes, the same server
// settings as latchkey's (timeouts, header limit).
func Ceiling(size int) http.Handler {
	body := make([]byte, size)
	for i := range body {
		body[i] = 'x'
	}
	if size >= 2 {
		body[0], body[size-1] = '"', '"'
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/json;charset=UTF-8")
		_, _ = w.Write(body)
	})
}
