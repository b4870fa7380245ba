package server

import (
	"context"
	"net/http"
	"time"

	"github.com/latchkey/latchkey/internal/httpx"
)

type health struct {
	Status string `json:"status"`
}

// alive answers as long as the process serves HTTP.
func (s *Server) alive(w http.ResponseWriter, r *http.Request) {
	httpx.NoStore(w)
	httpx.WriteJSON(w, http.StatusOK, health{Status: "ok"})
}

// ready answers 200 only when the store answers within two seconds, so a
// load balancer stops sending traffic to an instance that lost its database,
// and 503 from the moment a graceful stop began (StartDrain), so it stops
// sending traffic to an instance that is about to close its listener.
func (s *Server) ready(w http.ResponseWriter, r *http.Request) {
	httpx.NoStore(w)
	if s.drain.draining.Load() {
		httpx.WriteJSON(w, http.StatusServiceUnavailable, health{Status: "draining"})
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), 2*time.Second)
	defer cancel()
	if err := s.store.Ping(ctx); err != nil {
		s.log.WarnContext(ctx, "readiness: store unreachable", "err", err)
		httpx.WriteJSON(w, http.StatusServiceUnavailable, health{Status: "unavailable"})
		return
	}
	httpx.WriteJSON(w, http.StatusOK, health{Status: "ok"})
}
