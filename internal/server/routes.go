package server

import (
	"net/http"
)

// routes is the table of contents of latchkey's HTTP interface: every route
// is registered here and nowhere else.
func (s *Server) routes(mux *http.ServeMux) {
	// Operations (OPERATOR.md, "Well-known paths").
	mux.HandleFunc("GET /health/alive", s.alive)
	mux.HandleFunc("GET /health/ready", s.ready)
	mux.Handle("GET /metrics", s.metrics.handler())
}
