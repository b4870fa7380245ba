package httpx

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"log/slog"
	"net/http"
	"time"
)

type ctxKey int

const (
	requestIDKey ctxKey = iota
	debugAnswersKey
)

// RequestIDHeader is the response header that carries the request id.
const RequestIDHeader = "X-Request-Id"

// RequestID returns the id that WithRequestID gave the request, or "".
func RequestID(ctx context.Context) string {
	id, _ := ctx.Value(requestIDKey).(string)
	return id
}

// WithRequestID gives each request a random id, echoed in X-Request-Id and
// written with every log line of the request.
func WithRequestID(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var b [8]byte
		_, _ = rand.Read(b[:])
		id := hex.EncodeToString(b[:])
		w.Header().Set(RequestIDHeader, id)
		next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), requestIDKey, id)))
	})
}

// WithDebugAnswers makes the error answers of the requests carry the
// reason that the log has and a generic description hides (Error.Debug):
// for serve --demo and log.level debug, where the person asking "why was
// I refused?" is the operator. Off, the answers say only what is safe to
// tell any caller.
func WithDebugAnswers(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), debugAnswersKey, true)))
	})
}

// DebugAnswers reports whether WithDebugAnswers is on for the request.
func DebugAnswers(ctx context.Context) bool {
	on, _ := ctx.Value(debugAnswersKey).(bool)
	return on
}

// SecurityHeaders sets the headers every response carries. Pages that need a
// looser Content-Security-Policy set their own before writing.
func SecurityHeaders(hsts bool) func(http.Handler) http.Handler {
	set := securityHeaders
	if hsts {
		set = append(set[:len(set):len(set)], securityHeader{"Strict-Transport-Security", "max-age=31536000"})
	}
	// Each value is a slice of its own for the life of the server, full to
	// its capacity: Header.Set replaces it and Header.Add copies it, so no
	// response changes another's; what a Set would allocate per header and
	// request is saved.
	values := make([][]string, len(set))
	for i, h := range set {
		values[i] = []string{h.value}[:1:1]
	}
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			h := w.Header()
			for i, s := range set {
				h[s.name] = values[i]
			}
			next.ServeHTTP(w, r)
		})
	}
}

type securityHeader struct{ name, value string } // name in canonical form

var securityHeaders = []securityHeader{
	{"X-Content-Type-Options", "nosniff"},
	{"X-Frame-Options", "DENY"},
	{"Referrer-Policy", "no-referrer"},
	{"Content-Security-Policy", "default-src 'none'; frame-ancestors 'none'"},
	{"Cross-Origin-Opener-Policy", "same-origin"},
}

// StatusRecorder remembers the status and size a handler wrote.
type StatusRecorder struct {
	http.ResponseWriter
	Status int
	Bytes  int
}

func (s *StatusRecorder) WriteHeader(code int) {
	if s.Status == 0 {
		s.Status = code
	}
	s.ResponseWriter.WriteHeader(code)
}

func (s *StatusRecorder) Write(b []byte) (int, error) {
	if s.Status == 0 {
		s.Status = http.StatusOK
	}
	n, err := s.ResponseWriter.Write(b)
	s.Bytes += n
	return n, err
}

// Unwrap lets http.ResponseController reach the underlying writer.
func (s *StatusRecorder) Unwrap() http.ResponseWriter { return s.ResponseWriter }

// Observe calls done after each request with the matched route pattern, the
// status and the duration. It also logs the request: method, path (never the
// query, headers or body, which can hold secrets), status, size and time,
// and turns a panic into a logged 500.
func Observe(logger *slog.Logger, done func(r *http.Request, status int, d time.Duration)) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			start := time.Now()
			rec := &StatusRecorder{ResponseWriter: w}
			defer func() {
				if p := recover(); p != nil {
					if p == http.ErrAbortHandler {
						panic(p)
					}
					logger.ErrorContext(r.Context(), "panic", "request_id", RequestID(r.Context()), "route", r.Pattern, "panic", p)
					if rec.Status == 0 {
						w.Header().Set("Content-Type", "application/json;charset=UTF-8")
						rec.WriteHeader(http.StatusInternalServerError)
						_, _ = rec.Write([]byte(`{"error":"server_error"}`))
					}
				}
				if rec.Status == 0 {
					rec.Status = http.StatusOK
				}
				d := time.Since(start)
				if done != nil {
					done(r, rec.Status, d)
				}
				logger.LogAttrs(r.Context(), slog.LevelInfo, "request",
					slog.String("request_id", RequestID(r.Context())),
					slog.String("method", r.Method),
					slog.String("path", r.URL.Path),
					slog.String("route", r.Pattern),
					slog.Int("status", rec.Status),
					slog.Int("bytes", rec.Bytes),
					slog.Float64("duration_ms", float64(d.Microseconds())/1000), // milliseconds, as every duration latchkey logs
					slog.String("remote", r.RemoteAddr))
			}()
			next.ServeHTTP(rec, r)
		})
	}
}
