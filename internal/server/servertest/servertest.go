// Package servertest starts a whole latchkey server for tests, on a real
// store (SQLite in a temporary folder, or a throwaway PostgreSQL database).
package servertest

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"net"
	"net/http/httptest"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/latchkey/latchkey/internal/config"
	"github.com/latchkey/latchkey/internal/oauth"
	"github.com/latchkey/latchkey/internal/server"
	"github.com/latchkey/latchkey/internal/store"
	"github.com/latchkey/latchkey/internal/store/postgres"
	"github.com/latchkey/latchkey/internal/store/postgres/pgtest"
	"github.com/latchkey/latchkey/internal/store/sqlite"
)

// Key is the server key of test servers, so tests can compute token hashes.
var Key = bytes.Repeat([]byte{42}, 32)

// Backends are the store backends a test can run on.
var Backends = []string{"sqlite", "postgres"}

// Clock is a settable clock for tests.
type Clock struct {
	mu sync.Mutex
	t  time.Time
}

// NewClock starts at the wall clock's now: a test that pinned a date would
// break once the real date (which browsers and cookie jars use) passed it.
func NewClock() *Clock { return &Clock{t: time.Now()} }

// Now returns the clock's time.
func (c *Clock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }

// Advance moves the clock forward.
func (c *Clock) Advance(d time.Duration) { c.mu.Lock(); c.t = c.t.Add(d); c.mu.Unlock() }

// Server is a running test server.
type Server struct {
	*httptest.Server
	App   *server.Server // the latchkey server behind the HTTP test server
	Store store.Store
	Log   *bytes.Buffer // everything the server logged
	Clock *Clock
}

// Options configure Start.
type Options struct {
	Backend string // "sqlite" (default) or "postgres"
	Clock   *Clock // nil: wall clock
	// PostgresURL makes a "postgres" server use this database instead of a
	// new one, so several instances can share one store.
	PostgresURL string
	// SQLitePath makes a "sqlite" server use this file instead of a new one.
	SQLitePath string
	// Host names the server in its issuer instead of 127.0.0.1 (such as
	// "localhost"): browsers keep cookies per host, not per port, so two
	// servers a browser visits need two host names.
	Host string
	// WrapKeys wraps the keys the token endpoints sign with
	// (server.Options).
	WrapKeys func(oauth.Keys) oauth.Keys
}

// lockedBuffer lets the race detector see concurrent log writes as safe.
type lockedBuffer struct {
	mu  sync.Mutex
	buf *bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(p)
}

// Start runs a server for cfg until the test ends. The issuer is set to the
// test server's URL.
func Start(t testing.TB, cfg *config.Config, opts Options) *Server {
	t.Helper()
	ctx := context.Background()
	var st store.Store
	var err error
	switch opts.Backend {
	case "", "sqlite":
		path := opts.SQLitePath
		if path == "" {
			path = filepath.Join(t.TempDir(), "latchkey.db")
		}
		st, err = sqlite.Open(ctx, path)
	case "postgres":
		dsn := opts.PostgresURL
		if dsn == "" {
			dsn = pgtest.NewDatabase(t)
		}
		st, err = postgres.Open(ctx, dsn)
	default:
		t.Fatalf("unknown backend %q", opts.Backend)
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })

	ts := httptest.NewUnstartedServer(nil)
	cfg.Issuer = "http://" + ts.Listener.Addr().String()
	if opts.Host != "" {
		_, port, _ := net.SplitHostPort(ts.Listener.Addr().String())
		cfg.Issuer = "http://" + net.JoinHostPort(opts.Host, port)
	}
	cfg.Listen = ts.Listener.Addr().String()
	if err := cfg.Complete(); err != nil {
		t.Fatal(err)
	}
	buf := &bytes.Buffer{}
	logger := slog.New(slog.NewTextHandler(io.MultiWriter(&lockedBuffer{buf: buf}), &slog.HandlerOptions{Level: slog.LevelDebug}))
	var now func() time.Time
	if opts.Clock != nil {
		now = opts.Clock.Now
	}
	srv, err := server.New(ctx, cfg, st, logger, Key, server.Options{Now: now, WrapKeys: opts.WrapKeys})
	if err != nil {
		t.Fatal(err)
	}
	mailCtx, stopMail := context.WithCancel(context.Background())
	mailDone := make(chan struct{})
	go func() { srv.SendMail(mailCtx); close(mailDone) }()
	t.Cleanup(func() { stopMail(); <-mailDone })
	ts.Config.Handler = srv.Handler()
	ts.Start()
	t.Cleanup(ts.Close)
	return &Server{Server: ts, App: srv, Store: st, Log: buf, Clock: opts.Clock}
}
