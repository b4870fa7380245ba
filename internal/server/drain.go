package server

import (
	"net/http"
	"sync/atomic"
)

// drain is the state of a graceful stop. Between StartDrain and the close
// of the listener the instance still serves every request, but readiness
// answers 503 (so the load balancer takes it out of rotation) and every
// response carries Connection: close (so the balancer holds no idle
// keep-alive connection to it that it could reuse just as the listener
// closes: that race was the bare EOF of a rolling restart).
type drain struct {
	draining atomic.Bool
	inFlight atomic.Int64
	finished atomic.Int64 // requests that ended after the drain began
}

func (d *drain) middleware(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		d.inFlight.Add(1)
		defer func() {
			d.inFlight.Add(-1)
			if d.draining.Load() {
				d.finished.Add(1)
			}
		}()
		if d.draining.Load() {
			w.Header().Set("Connection", "close")
		}
		next.ServeHTTP(w, r)
	})
}

// StartDrain begins a graceful stop: readiness answers 503 from now on and
// responses close their connections. The caller keeps serving for the
// drain delay, then shuts the HTTP server down.
func (s *Server) StartDrain() { s.drain.draining.Store(true) }

// DrainStats reports the requests that ended since StartDrain and those
// still in flight.
func (s *Server) DrainStats() (finished, inFlight int64) {
	return s.drain.finished.Load(), s.drain.inFlight.Load()
}
