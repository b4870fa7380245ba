package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/pprof"
	"os"
	"os/signal"
	"runtime/debug"
	"syscall"
	"time"

	"github.com/latchkey/latchkey/internal/config"
	"github.com/latchkey/latchkey/internal/server"
	"github.com/latchkey/latchkey/internal/store"
	"github.com/latchkey/latchkey/internal/store/backend"
	"github.com/latchkey/latchkey/internal/token"
)

// shutdownGrace bounds how long in-flight requests may take to drain.
const shutdownGrace = 20 * time.Second

func serveCmd(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flags("serve")
	path := fs.String("config", "", "YAML config `file`")
	demo := fs.Bool("demo", false, "seed a demo confidential client, public client and person")
	if err := parse(fs, args); err != nil {
		return err
	}
	cfg, err := config.Load(*path, os.Environ())
	if err != nil {
		return err
	}
	setGCPercent()
	var banner *demoBanner
	if *demo {
		if banner, err = addDemo(cfg); err != nil {
			return err
		}
	}
	logger := newLogger(cfg.Log, stderr)
	slog.SetDefault(logger)

	key, err := token.LoadOrCreateKey(cfg.SecretKeyFile)
	if err != nil {
		return err
	}
	st, err := backend.Open(ctx, cfg.Database)
	if err != nil {
		return fmt.Errorf("database: %w", err)
	}
	defer st.Close()

	srv, err := server.New(ctx, cfg, st, logger, key, server.Options{Demo: *demo})
	if errors.Is(err, store.ErrServerKeyMismatch) {
		return errServerKeyMismatch(cfg.SecretKeyFile)
	}
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", cfg.Listen)
	if err != nil {
		return fmt.Errorf("listen %s: %w", cfg.Listen, errors.Unwrap(err))
	}
	hs := newHTTPServer(srv.Handler(), logger)
	sigCtx, stop := signal.NotifyContext(ctx, syscall.SIGTERM, syscall.SIGINT)
	defer stop()

	go srv.Maintain(sigCtx, time.Minute)
	go srv.SendMail(sigCtx)
	if cfg.DebugListen != "" {
		if err := serveDebug(sigCtx, cfg.DebugListen, logger); err != nil {
			return err
		}
	}

	served := make(chan error, 1)
	go func() { served <- hs.Serve(ln) }()
	logger.Info("latchkey listening", "version", versionString(), "addr", ln.Addr().String(),
		"issuer", cfg.Issuer, "store", st.Backend())
	if banner != nil {
		banner.print(stdout, cfg.Issuer)
	}

	select {
	case err := <-served:
		return fmt.Errorf("serve: %w", err)
	case <-sigCtx.Done():
	}
	logger.Info("shutting down: draining in-flight requests")
	shutCtx, cancel := context.WithTimeout(context.Background(), shutdownGrace)
	defer cancel()
	if err := hs.Shutdown(shutCtx); err != nil {
		return fmt.Errorf("shutdown: %w", err)
	}
	logger.Info("stopped")
	return nil
}

// errServerKeyMismatch is the one line an instance started with the wrong
// key prints: what is wrong and what to do, naming the file, never the key.
func errServerKeyMismatch(keyFile string) error {
	return fmt.Errorf("server key mismatch: the database was set up with a different server key than "+
		"secret_key_file %s holds; start it with the key file the database was set up with, which every instance "+
		"on this database must share (see \"Server key\" in docs/DESIGN.md)", keyFile)
}

// serveDebug serves net/http/pprof on its own listener, so the profiler is
// never reachable through the public address.
func serveDebug(ctx context.Context, addr string, logger *slog.Logger) error {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("debug_listen %s: %w", addr, errors.Unwrap(err))
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	hs := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go func() { <-ctx.Done(); hs.Close() }()
	go func() { _ = hs.Serve(ln) }()
	logger.Info("profiler listening", "addr", ln.Addr().String())
	return nil
}

func migrateCmd(ctx context.Context, args []string, stdout io.Writer) error {
	fs := flags("migrate")
	path := fs.String("config", "", "YAML config `file`")
	if err := parse(fs, args); err != nil {
		return err
	}
	cfg, err := config.Load(*path, os.Environ())
	if err != nil {
		return err
	}
	st, err := backend.Open(ctx, cfg.Database) // Open applies the migrations
	if err != nil {
		return fmt.Errorf("database: %w", err)
	}
	defer st.Close()
	fmt.Fprintf(stdout, "migrations applied (%s)\n", st.Backend())
	return nil
}

func newLogger(c config.Log, w io.Writer) *slog.Logger {
	var level slog.Level
	_ = level.UnmarshalText([]byte(c.Level)) // validated by config
	opts := &slog.HandlerOptions{Level: level}
	if c.Format == "json" {
		return slog.New(slog.NewJSONHandler(w, opts))
	}
	return slog.New(slog.NewTextHandler(w, opts))
}

// newHTTPServer holds latchkey's server settings (the bench ceiling uses them too).
func newHTTPServer(h http.Handler, logger *slog.Logger) *http.Server {
	return &http.Server{
		Handler:           h,
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       30 * time.Second,
		WriteTimeout:      60 * time.Second,
		IdleTimeout:       120 * time.Second,
		MaxHeaderBytes:    64 << 10,
		ErrorLog:          slog.NewLogLogger(logger.Handler(), slog.LevelWarn),
	}
}

// serveGCPercent is the server's GOGC unless the environment sets one. The
// live heap is small (tens of MiB: the token cache, pending events), and at
// the default of 100 the collector ran often enough to take 5 % of an
// introspection's CPU and add to its tail; 400 cut server CPU per
// introspection by 10-15 % on the development machine, for a heap that
// peaks at five times the live one instead of twice.
const serveGCPercent = 400

func setGCPercent() {
	if os.Getenv("GOGC") == "" {
		debug.SetGCPercent(serveGCPercent)
	}
}
