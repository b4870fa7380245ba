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
	"strings"
	"syscall"
	"time"

	"github.com/latchkey/latchkey/internal/config"
	"github.com/latchkey/latchkey/internal/gcpace"
	"github.com/latchkey/latchkey/internal/server"
	"github.com/latchkey/latchkey/internal/store"
	"github.com/latchkey/latchkey/internal/store/backend"
	"github.com/latchkey/latchkey/internal/store/sqlite"
	"github.com/latchkey/latchkey/internal/store/sqlstore"
	"github.com/latchkey/latchkey/internal/token"
)

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
	paceMemory()
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
	trace := &sqlstore.MigrationTrace{
		Start: func(m string) { logger.Info("applying schema migration", "migration", m) },
		Done: func(m string, took time.Duration) {
			logger.Info("applied schema migration", "migration", m, "took", took.Round(time.Millisecond).String())
		},
	}
	// The templates parse on the other core while the store opens (on
	// PostgreSQL that is mostly waiting for the connection's backend).
	type parsed struct {
		t   *server.Templates
		err error
	}
	templates := make(chan parsed, 1)
	go func() {
		t, err := server.LoadTemplates(cfg.TemplatesDir)
		templates <- parsed{t, err}
	}()
	st, err := backend.Open(sqlstore.WithMigrationTrace(ctx, trace), cfg.Database)
	if err != nil {
		return fmt.Errorf("database%s: %w", cfg.Origin("database"), err)
	}
	defer st.Close()
	tpl := <-templates
	if tpl.err != nil {
		return tpl.err
	}

	srv, err := server.New(ctx, cfg, st, logger, key, server.Options{Demo: *demo, Templates: tpl.t})
	if errors.Is(err, store.ErrServerKeyMismatch) {
		return errServerKeyMismatch(cfg.SecretKeyFile)
	}
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", cfg.Listen)
	if err != nil {
		return fmt.Errorf("listen %s%s: %w", cfg.Listen, cfg.Origin("listen"), errors.Unwrap(err))
	}
	hs := newHTTPServer(srv.Handler(), logger)
	// A buffer of two: the second signal cuts the drain delay short.
	signals := make(chan os.Signal, 2)
	signal.Notify(signals, syscall.SIGTERM, syscall.SIGINT)
	defer signal.Stop(signals)
	runCtx, stopRun := context.WithCancel(ctx)
	defer stopRun()

	go srv.Maintain(runCtx, time.Minute)
	go srv.MaintainKeys(runCtx, time.Minute)
	go srv.SendMail(runCtx)
	if cfg.DebugListen != "" {
		if err := serveDebug(runCtx, cfg.DebugListen, logger); err != nil {
			return err
		}
	}

	var admin *http.Server
	if cfg.AdminListen != "" {
		aln, err := net.Listen("tcp", cfg.AdminListen)
		if err != nil {
			return fmt.Errorf("admin_listen %s: %w", cfg.AdminListen, errors.Unwrap(err))
		}
		admin = newHTTPServer(srv.AdminHandler(), logger)
		go func() { _ = admin.Serve(aln) }()
		defer admin.Close()
		logger.Info("admin listening", "addr", aln.Addr().String(), "apis", strings.Join(cfg.AdminAPIs, ","))
	}

	// Logged once the ports are ours: a failed start stays one line on stderr.
	logMigrations(logger, st)
	served := make(chan error, 1)
	go func() { served <- hs.Serve(ln) }()
	logger.Info("latchkey listening", "version", versionString(), "addr", ln.Addr().String(),
		"issuer", cfg.Issuer, "store", st.Backend())
	for _, w := range cfg.StartWarnings(os.Environ()) {
		logger.Warn(w)
	}
	if banner != nil {
		banner.print(stdout, cfg.Issuer)
	}

	select {
	case err := <-served:
		return fmt.Errorf("serve: %w", err)
	case <-ctx.Done():
	case sig := <-signals:
		logger.Info("stop requested", "signal", sig.String())
	}
	return drainAndStop(hs, srv, cfg.Shutdown, signals, logger)
}

// drainAndStop is the graceful stop (docs/DEPLOY.md): readiness answers 503
// and responses close their connections for the drain delay while the
// instance keeps serving, so the load balancer stops sending it requests;
// then the listener closes and in-flight requests finish.
func drainAndStop(hs *http.Server, srv *server.Server, c config.Shutdown, signals <-chan os.Signal, logger *slog.Logger) error {
	start := time.Now()
	srv.StartDrain()
	delay := time.Duration(*c.DrainDelay)
	logger.Info("draining: readiness answers 503, still serving", "drain_delay_ms", delay.Milliseconds())
	timer := time.NewTimer(delay)
	select {
	case <-timer.C:
	case sig := <-signals:
		timer.Stop()
		logger.Info("second signal: ending the drain delay early", "signal", sig.String())
	}
	served, inFlight := srv.DrainStats()
	logger.Info("closing the listener", "served_while_draining", served, "in_flight", inFlight)
	shutCtx, cancel := context.WithTimeout(context.Background(), time.Duration(c.Timeout))
	defer cancel()
	err := hs.Shutdown(shutCtx)
	finished, left := srv.DrainStats()
	logger.Info("stopped", "drained_requests", finished, "unfinished_requests", left,
		"drain_ms", time.Since(start).Milliseconds())
	if err != nil {
		return fmt.Errorf("shutdown: %w", err)
	}
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

// printedTrace prints each migration of an upgrade to w, before it runs
// (one may take minutes on a large store) and after, with its time.
func printedTrace(w io.Writer) *sqlstore.MigrationTrace {
	return &sqlstore.MigrationTrace{
		Start: func(m string) { fmt.Fprintf(w, "applying schema migration %s\n", m) },
		Done: func(m string, took time.Duration) {
			fmt.Fprintf(w, "applied schema migration %s in %s\n", m, took.Round(time.Millisecond))
		},
	}
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
	st, err := backend.Open(sqlstore.WithMigrationTrace(ctx, printedTrace(stdout)), cfg.Database) // Open applies the migrations
	if err != nil {
		return fmt.Errorf("database%s: %w", cfg.Origin("database"), err)
	}
	defer st.Close()
	if r, ok := migrationReport(st); ok {
		fmt.Fprintf(stdout, "migrations applied (%s): %d known, latest %s; applied now: %s\n",
			st.Backend(), len(r.Known), latestVersion(r.Known), versionList(r.Applied))
	} else {
		fmt.Fprintf(stdout, "migrations applied (%s)\n", st.Backend())
	}
	return nil
}

// backupCmd is `latchkey backup [--config FILE] OUT`: a consistent
// snapshot of the SQLite database and its event log, beside a running
// server (sqlite.Backup). PostgreSQL is backed up with its own tools.
func backupCmd(ctx context.Context, args []string, stdout io.Writer) error {
	fs := flags("backup")
	path := fs.String("config", "", "YAML config `file`")
	if err := fs.Parse(args); err != nil {
		return parseError(fs, err)
	}
	if fs.NArg() != 1 {
		return usageError{errors.New("backup: want one argument, the file to write (latchkey backup [--config FILE] OUT)")}
	}
	out := fs.Arg(0)
	cfg, err := config.Load(*path, os.Environ())
	if err != nil {
		return err
	}
	db, ok := strings.CutPrefix(cfg.Database, "sqlite:")
	if !ok {
		return errors.New("backup: the database is PostgreSQL; back it up with pg_dump or your PostgreSQL backups (docs/DEPLOY.md)")
	}
	if err := sqlite.Backup(ctx, db, out); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "backup written: %s and %s-events; restore both beside each other as %s and %s-events, "+
		"with the server key file %s (not in the backup)\n", out, out, db, db, cfg.SecretKeyFile)
	return nil
}

// healthcheckCmd is `latchkey healthcheck [--config FILE]`: exit 0 when the
// instance of the config answers readiness 200 on its listen address. For
// container health checks: an image built from scratch has no curl.
func healthcheckCmd(ctx context.Context, args []string) error {
	fs := flags("healthcheck")
	path := fs.String("config", "", "YAML config `file`")
	if err := parse(fs, args); err != nil {
		return err
	}
	cfg, err := config.Load(*path, os.Environ())
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, "GET", "http://"+cfg.Listen+"/health/ready", nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return fmt.Errorf("healthcheck: %w", err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("healthcheck: readiness answered %d", resp.StatusCode)
	}
	return nil
}

func migrationReport(st store.Store) (sqlstore.MigrationReport, bool) {
	m, ok := st.(interface {
		Migrations() sqlstore.MigrationReport
	})
	if !ok {
		return sqlstore.MigrationReport{}, false
	}
	return m.Migrations(), true
}

// logMigrations says at start which migrations the binary found and which
// of them this instance applied: of instances starting at once on one
// PostgreSQL, one applies each migration and the others find it applied.
func logMigrations(logger *slog.Logger, st store.Store) {
	r, ok := migrationReport(st)
	if !ok {
		return
	}
	logger.Info("schema migrations", "store", st.Backend(), "known", len(r.Known), "latest", latestVersion(r.Known),
		"applied", versionList(r.Applied))
}

func latestVersion(vs []int) string {
	if len(vs) == 0 {
		return "none"
	}
	return fmt.Sprintf("%04d", vs[len(vs)-1])
}

// versionList writes versions as "0011,0012" ("none" when empty).
func versionList(vs []int) string {
	if len(vs) == 0 {
		return "none"
	}
	parts := make([]string, len(vs))
	for i, v := range vs {
		parts[i] = fmt.Sprintf("%04d", v)
	}
	return strings.Join(parts, ",")
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

// serveGC is the server's collector pacing unless the environment sets
// GOGC. The live heap is small (the token cache, requests in flight, pending
// events) and the allocation rate high: at Go's default GOGC of 100 the
// collector took 5 % of an introspection's CPU, and 400 cut server CPU per
// introspection by 10-15 %. A fixed 400, though, multiplies whatever is live
// at a collection, and an argon2id hash (19 MiB) live at one set the next
// target above 100 MiB. So the heap may grow by serveGCHeadroom between
// collections: GOGC 400 while the live heap is under 8 MiB, less above it,
// never under 100 (docs/PERFORMANCE.md, "Start-up and memory").
const serveGCHeadroom = 32 << 20

func paceMemory() {
	gcpace.EnableRelease() // an argon2id hash's 19 MiB leaves with it
	if os.Getenv("GOGC") == "" {
		gcpace.Start(gcpace.Pacer{Headroom: serveGCHeadroom, MinPercent: 100, MaxPercent: 400})
	}
}
