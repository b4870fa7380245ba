package main

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib" // ANALYZE on the bench's PostgreSQL

	"github.com/latchkey/latchkey/internal/bench"
)

// benchCmd is `latchkey bench`: it starts `latchkey serve` (and the bare
// ceiling server) as child processes, so that the server's CPU time is its
// own, and drives each scenario over loopback.
func benchCmd(ctx context.Context, args []string, stdout io.Writer) error {
	fs := flags("bench")
	conns := fs.Int("connections", 32, "concurrent connections (closed loop)")
	dur := fs.Duration("duration", 10*time.Second, "load time per scenario (and as much again for its ceiling)")
	only := fs.String("scenarios", "", "comma-separated scenarios (default: all)")
	database := fs.String("database", "", "database of the server under test (default: SQLite in a temporary folder)")
	target := fs.String("target", "", "base URL of an already running server started with --print-config's configuration")
	printConfig := fs.Bool("print-config", false, "print the configuration the benchmark's server needs and exit")
	startups := fs.Int("startups", 5, "after the scenarios, restart the server this many times on its database and report the time to ready")
	profileDir := fs.String("profile", "", "write the server's CPU and allocation profiles of each scenario into this `folder`")
	preload := fs.Int("preload", 0, "before the server starts, bulk-load this many grants, access tokens and events (each) into its database")
	preloadTokens := fs.Int("preload-tokens", 0, "with --preload: this many access tokens instead (consecutive ones share a grant when there are more than grants)")
	preloadEvents := fs.Int("preload-events", 0, "with --preload: this many events instead")
	keyFile := fs.String("secret-key-file", "", "the server key `file` (made if missing; default: a new one per run); name the same file to run again on a --database an earlier run served")
	if err := parse(fs, args); err != nil {
		return err
	}
	if *printConfig {
		fmt.Fprint(stdout, bench.Config)
		return nil
	}
	scenarios := bench.Scenarios
	if *only != "" {
		scenarios = nil
		for _, name := range strings.Split(*only, ",") {
			found := false
			for _, s := range bench.Scenarios {
				if s.Name == strings.TrimSpace(name) {
					scenarios, found = append(scenarios, s), true
				}
			}
			if !found {
				return usageError{fmt.Errorf("bench: unknown scenario %q", name)}
			}
		}
	}
	if (*preloadTokens > 0 || *preloadEvents > 0) && *preload <= 0 {
		return usageError{errors.New("bench: --preload-tokens and --preload-events need --preload (the grants)")}
	}
	if (*profileDir != "" || *preload > 0 || *keyFile != "") && *target != "" {
		return usageError{errors.New("bench: --profile, --preload and --secret-key-file need the server bench starts (no --target)")}
	}
	base, serverPID, debugBase := *target, 0, ""
	var analyze *sql.DB    // PostgreSQL without autovacuum: ANALYZE before each scenario
	var dbCPU *postgresCPU // PostgreSQL on this machine: its CPU per request
	if base == "" {
		tmp, err := os.MkdirTemp("", "latchkey-bench-")
		if err != nil {
			return err
		}
		defer os.RemoveAll(tmp)
		db := *database
		if db == "" {
			db = "sqlite:" + filepath.Join(tmp, "latchkey.db")
		}
		cfg := filepath.Join(tmp, "bench.yaml")
		if err := os.WriteFile(cfg, []byte(bench.Config), 0o600); err != nil {
			return err
		}
		addr, err := freeAddr()
		if err != nil {
			return err
		}
		key := *keyFile
		if key == "" {
			key = filepath.Join(tmp, "secret.key")
		}
		env := []string{"LATCHKEY_LISTEN=" + addr, "LATCHKEY_DATABASE=" + db,
			"LATCHKEY_SECRET_KEY_FILE=" + key, "LATCHKEY_LOG_LEVEL=error",
			"LATCHKEY_SHUTDOWN_DRAIN_DELAY=0s"} // no balancer in front of the bench
		if *profileDir != "" {
			if err := os.MkdirAll(*profileDir, 0o755); err != nil {
				return err
			}
			debugAddr, err := freeAddr()
			if err != nil {
				return err
			}
			env, debugBase = append(env, "LATCHKEY_DEBUG_LISTEN="+debugAddr), "http://"+debugAddr
		}
		if *preload > 0 {
			size := bench.Each(*preload)
			if *preloadTokens > 0 {
				size.Tokens = *preloadTokens
			}
			if *preloadEvents > 0 {
				size.Events = *preloadEvents
			}
			p, err := bench.Preload(ctx, db, size, nil)
			if err != nil {
				return err
			}
			fmt.Fprintf(stdout, "preloaded %d grants, %d access tokens and %d events (%d rows) in %.1f s, %.0f rows/s; database %d MiB\n",
				size.Grants, size.Tokens, size.Events, p.Rows, p.Took.Seconds(), float64(p.Rows)/p.Took.Seconds(), p.Bytes>>20)
		}
		serveArgs := []string{"serve", "--config", cfg}
		cmd, err := startChild(ctx, serveArgs, env...)
		if err != nil {
			return err
		}
		defer func() { stopChild(cmd) }()
		base, serverPID = "http://"+addr, cmd.Process.Pid
		if err := waitHTTP(ctx, base+"/health/ready"); err != nil {
			return err
		}
		if *startups > 0 {
			defer func() {
				if ctx.Err() != nil {
					return
				}
				stopChild(cmd)
				var took []time.Duration
				for range *startups {
					var d time.Duration
					if cmd, d, err = timeToReady(ctx, serveArgs, env, base+"/health/ready"); err != nil {
						fmt.Fprintf(stdout, "\nstart to ready: %v\n", err)
						return
					}
					took = append(took, d)
					stopChild(cmd)
				}
				slices.Sort(took)
				fmt.Fprintf(stdout, "\nstart to ready on this database, %d starts: median %.1f ms (min %.1f, max %.1f)\n",
					len(took), ms(took[len(took)/2]), ms(took[0]), ms(took[len(took)-1]))
			}()
		}
		store := "sqlite"
		if strings.HasPrefix(db, "postgres") {
			store = "postgres"
			if dbCPU, err = localPostgresCPU(ctx, db); err != nil {
				return err
			}
			if analyze, err = autoanalyze(ctx, db); err != nil {
				return err
			}
			if analyze != nil {
				defer analyze.Close()
				fmt.Fprintln(stdout, "PostgreSQL runs with autovacuum off: before each scenario bench analyzes the tables autovacuum would")
			}
		}
		fmt.Fprintf(stdout, "latchkey bench: %s store, %d connections, %v per scenario, GOMAXPROCS of this machine: %d cores\n\n",
			store, *conns, *dur, numCPU())
	}
	client := bench.NewClient(*conns)
	var results []bench.Result
	for _, sc := range scenarios {
		if analyze != nil {
			if err := analyzeAsAutovacuum(ctx, analyze); err != nil {
				return fmt.Errorf("bench: analyze: %w", err)
			}
		}
		step, size, err := sc.Setup(ctx, base, client)
		if err != nil {
			return fmt.Errorf("bench: set up %s: %w", sc.Name, err)
		}
		bench.Load(ctx, client, *conns, *dur/10, step) // warm up
		var profiled chan error
		if debugBase != "" {
			profiled = make(chan error, 1)
			go func() { profiled <- fetchProfile(ctx, debugBase, sc.Name, *profileDir, 2**dur) }() // its slices and the ceiling's
		}
		ceil, err := startCeiling(ctx, *conns, size)
		if err != nil {
			return err
		}
		// The scenario and the ceiling take turns in short slices, so that
		// both see the same machine: on a shared VM its speed drifts by
		// tens of percent within a minute.
		var reqs, errs, ceilReqs int64
		var lat, reqLat, ceilLat []time.Duration
		var elapsed, ceilElapsed time.Duration
		var cpu, databaseCPU float64
		resetPeakRSS(serverPID)
		n := benchRounds(*dur)
		for range n {
			cpu0 := cpuSeconds(serverPID)
			var db0 map[int]float64
			if dbCPU != nil {
				db0 = dbCPU.snapshot()
			}
			rq, e, l, rl, el := bench.Load(ctx, client, *conns, *dur/time.Duration(n), step)
			cpu += cpuSeconds(serverPID) - cpu0
			if dbCPU != nil {
				databaseCPU += dbCPU.since(db0, dbCPU.snapshot())
			}
			reqs, errs, lat, reqLat, elapsed = reqs+rq, errs+e, append(lat, l...), append(reqLat, rl...), elapsed+el
			crq, cl, cel := ceil.load(ctx, *dur/time.Duration(n))
			ceilReqs, ceilLat, ceilElapsed = ceilReqs+crq, append(ceilLat, cl...), ceilElapsed+cel
		}
		ceil.stop()
		if profiled != nil {
			if err := <-profiled; err != nil {
				return err
			}
		}
		r := bench.Result{Name: sc.Name, Description: sc.Description, Requests: reqs, Errors: errs, Duration: elapsed,
			BodyBytes: size, CPUPer1000: math.NaN(), DatabaseCPUPer1000: math.NaN(), CeilingRPS: float64(ceilReqs) / ceilElapsed.Seconds()}
		r.P50, r.P90, r.P99, r.Max = bench.Percentiles(lat)
		_, _, r.RequestP99, _ = bench.Percentiles(reqLat)
		_, _, r.CeilingP99, _ = bench.Percentiles(ceilLat)
		if serverPID != 0 && reqs > 0 {
			r.CPUPer1000 = cpu / float64(reqs) * 1000
		}
		if dbCPU != nil && reqs > 0 {
			r.DatabaseCPUPer1000 = databaseCPU / float64(reqs) * 1000
		}
		r.PeakRSS = peakRSS(serverPID)
		results = append(results, r)
	}
	printResults(stdout, results)
	return nil
}

// autoanalyze opens the database when its PostgreSQL runs without
// autovacuum: the planner then has no statistics of the tables the
// scenarios grow (a development server may run so; a default one analyzes
// a table after a tenth of it changed), and would plan the searches of an
// empty table. It returns nil when autovacuum is on.
func autoanalyze(ctx context.Context, dsn string) (*sql.DB, error) {
	db, err := sql.Open("pgx", dsn)
	if err != nil {
		return nil, err
	}
	var on string
	if err := db.QueryRowContext(ctx, "SHOW autovacuum").Scan(&on); err != nil {
		db.Close()
		return nil, fmt.Errorf("bench: %w", err)
	}
	if on == "on" {
		db.Close()
		return nil, nil
	}
	return db, nil
}

// analyzeAsAutovacuum analyzes the tables that autovacuum, at its default
// threshold, would have analyzed by now: those with more rows changed
// since their last analysis than 50 and a tenth of the table. Not the
// others: an ANALYZE of a table nothing wrote yet records it as empty,
// and PostgreSQL then plans a lookup by its key as a sequential scan and
// keeps that plan cached while the table grows; a table never analyzed
// is planned as ten pages, and its key lookups use the index.
func analyzeAsAutovacuum(ctx context.Context, db *sql.DB) error {
	rows, err := db.QueryContext(ctx, `SELECT s.relid::regclass::text FROM pg_stat_user_tables s
		JOIN pg_class c ON c.oid = s.relid WHERE s.n_mod_since_analyze > 50 + 0.1 * greatest(c.reltuples, 0)`)
	if err != nil {
		return err
	}
	var tables []string
	for rows.Next() {
		var t string
		if err := rows.Scan(&t); err != nil {
			rows.Close()
			return err
		}
		tables = append(tables, t)
	}
	if err := rows.Err(); err != nil {
		return err
	}
	if len(tables) == 0 {
		return nil
	}
	_, err = db.ExecContext(ctx, "ANALYZE "+strings.Join(tables, ", "))
	return err
}

// fetchProfile saves the server's CPU profile over most of the measured load
// and its allocation profile after it, for `go tool pprof`.
func fetchProfile(ctx context.Context, debugBase, name, dir string, d time.Duration) error {
	secs := max(1, int(d.Seconds())-1)
	get := func(path, file string) error {
		req, _ := http.NewRequestWithContext(ctx, "GET", debugBase+path, nil)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return fmt.Errorf("bench: profile %s: %w", name, err)
		}
		defer resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("bench: profile %s: status %d", name, resp.StatusCode)
		}
		f, err := os.Create(filepath.Join(dir, file))
		if err != nil {
			return err
		}
		if _, err := io.Copy(f, resp.Body); err != nil {
			f.Close()
			return err
		}
		return f.Close()
	}
	if err := get("/debug/pprof/profile?seconds="+strconv.Itoa(secs), name+".cpu.pprof"); err != nil {
		return err
	}
	return get("/debug/pprof/allocs", name+".allocs.pprof")
}

func printResults(w io.Writer, results []bench.Result) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	// Columns are only ever added at the end: scripts read them by position.
	fmt.Fprintln(tw, "scenario\treq/s\tceiling req/s\tratio\tp50\tp90\tp99\tmax\terrors\tserver CPU s/1k req\tceiling p99\tserver peak RSS\trequest p99\tdatabase CPU s/1k req\t")
	ms := func(d time.Duration) string { return strconv.FormatFloat(float64(d)/1e6, 'f', 2, 64) + "ms" }
	seconds := func(s float64) string {
		if math.IsNaN(s) {
			return "n/a"
		}
		return strconv.FormatFloat(s, 'f', 3, 64)
	}
	for _, r := range results {
		cpu, dbCPU, rss := seconds(r.CPUPer1000), seconds(r.DatabaseCPUPer1000), "n/a"
		if r.PeakRSS > 0 {
			rss = strconv.FormatFloat(float64(r.PeakRSS)/(1<<20), 'f', 1, 64) + "MiB"
		}
		fmt.Fprintf(tw, "%s\t%.0f\t%.0f\t%.0f%%\t%s\t%s\t%s\t%s\t%d\t%s\t%s\t%s\t%s\t%s\t\n", r.Name, r.RPS(), r.CeilingRPS, r.Ratio()*100,
			ms(r.P50), ms(r.P90), ms(r.P99), ms(r.Max), r.Errors, cpu, ms(r.CeilingP99), rss, ms(r.RequestP99), dbCPU)
	}
	tw.Flush()
	fmt.Fprintln(w)
	for _, r := range results {
		fmt.Fprintf(w, "  %-24s %s\n", r.Name, r.Description)
	}
}

// benchRounds is how many slices a scenario's load time is cut into, each
// followed by as long a slice against the ceiling: about one per 2 s.
func benchRounds(d time.Duration) int { return int(min(max(d/(2*time.Second), 1), 10)) }

// ceilingServer is the bare handler in a child process, and its client.
type ceilingServer struct {
	cmd    *exec.Cmd
	client *http.Client
	conns  int
	step   bench.Step
}

// startCeiling starts the bare handler answering size bytes and warms it up.
func startCeiling(ctx context.Context, conns, size int) (*ceilingServer, error) {
	addr, err := freeAddr()
	if err != nil {
		return nil, err
	}
	cmd, err := startChild(ctx, []string{"bench-ceiling", "--listen", addr, "--size", strconv.Itoa(size)})
	if err != nil {
		return nil, err
	}
	url := "http://" + addr + "/"
	if err := waitHTTP(ctx, url); err != nil {
		stopChild(cmd)
		return nil, err
	}
	c := &ceilingServer{cmd: cmd, client: bench.NewClient(conns), conns: conns}
	c.step = func(ctx context.Context, hc *http.Client) (int, error) {
		req, _ := http.NewRequestWithContext(ctx, "POST", url, strings.NewReader("grant_type=client_credentials&scope=read"))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		req.SetBasicAuth("bench-cc", "x")
		resp, err := hc.Do(req)
		if err != nil {
			return 1, err
		}
		_, err = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return 1, err
	}
	c.load(ctx, 500*time.Millisecond) // warm up
	return c, nil
}

// load runs the same closed-loop load against the bare handler for d.
func (c *ceilingServer) load(ctx context.Context, d time.Duration) (int64, []time.Duration, time.Duration) {
	reqs, _, lat, _, elapsed := bench.Load(ctx, c.client, c.conns, d, c.step)
	return reqs, lat, elapsed
}

func (c *ceilingServer) stop() { stopChild(c.cmd) }

// ceilingCmd is the hidden `latchkey bench-ceiling`: a bare net/http server
// with latchkey's server settings answering a JSON body of --size bytes.
func ceilingCmd(ctx context.Context, args []string) error {
	fs := flags("bench-ceiling")
	listen := fs.String("listen", "127.0.0.1:0", "address")
	size := fs.Int("size", 128, "answer size in bytes")
	if err := parse(fs, args); err != nil {
		return err
	}
	ln, err := net.Listen("tcp", *listen)
	if err != nil {
		return err
	}
	hs := newHTTPServer(bench.Ceiling(*size), slog.New(slog.NewTextHandler(io.Discard, nil)))
	go func() { <-ctx.Done(); hs.Close() }()
	if err := hs.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

func startChild(ctx context.Context, args []string, env ...string) (*exec.Cmd, error) {
	self, err := os.Executable()
	if err != nil {
		return nil, err
	}
	cmd := exec.CommandContext(ctx, self, args...)
	cmd.Env = append(os.Environ(), env...)
	cmd.Stderr = os.Stderr
	return cmd, cmd.Start()
}

func stopChild(cmd *exec.Cmd) {
	_ = cmd.Process.Signal(syscall.SIGTERM)
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		_ = cmd.Process.Kill()
	}
}

func waitHTTP(ctx context.Context, url string) error {
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		req, _ := http.NewRequestWithContext(ctx, "GET", url, nil)
		if resp, err := http.DefaultClient.Do(req); err == nil {
			resp.Body.Close()
			if resp.StatusCode < 500 {
				return nil
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	return fmt.Errorf("bench: %s did not answer within 30 s", url)
}

// timeToReady starts the server and returns it with the time from its
// start to its first 200 from readiness, polled every millisecond.
func timeToReady(ctx context.Context, args, env []string, readyURL string) (*exec.Cmd, time.Duration, error) {
	c := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}, Timeout: time.Second}
	start := time.Now()
	cmd, err := startChild(ctx, args, env...)
	if err != nil {
		return nil, 0, err
	}
	for time.Since(start) < 30*time.Second {
		req, _ := http.NewRequestWithContext(ctx, "GET", readyURL, nil)
		if resp, err := c.Do(req); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return cmd, time.Since(start), nil
			}
		}
		time.Sleep(time.Millisecond)
	}
	stopChild(cmd)
	return nil, 0, fmt.Errorf("%s did not answer 200 within 30 s", readyURL)
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// resetPeakRSS starts a new peak of pid's resident memory (Linux: "5" to
// clear_refs resets VmHWM); elsewhere, or without the right, the peak
// stays the process's whole life so far.
func resetPeakRSS(pid int) {
	if pid != 0 {
		_ = os.WriteFile(fmt.Sprintf("/proc/%d/clear_refs", pid), []byte("5"), 0)
	}
}

// peakRSS is pid's peak resident memory in bytes (VmHWM), 0 when unknown.
func peakRSS(pid int) int64 {
	if pid == 0 {
		return 0
	}
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			if err == nil {
				return kb << 10
			}
		}
	}
	return 0
}

func freeAddr() (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer l.Close()
	return l.Addr().String(), nil
}

// cpuSeconds is a process's user+system CPU time from /proc (Linux); 0 elsewhere.
func cpuSeconds(pid int) float64 {
	if pid == 0 {
		return 0
	}
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	_, f, ok := procStat(string(b))
	if !ok {
		return 0
	}
	return statCPU(f)
}

func numCPU() int { return runtime.NumCPU() }
