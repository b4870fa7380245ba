package main

import (
	"context"
	"database/sql"
	"testing"

	"github.com/latchkey/latchkey/internal/store/postgres/pgtest"
)

// The bench finds the PostgreSQL on this machine through its backend's
// parent, and counts the CPU its backends spend: a query that burns CPU in
// a backend shows up between two snapshots.
func TestPostgresCPUCountsTheBackends(t *testing.T) {
	ctx := context.Background()
	dsn := pgtest.NewDatabase(t)
	p, err := localPostgresCPU(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	if p == nil {
		t.Fatalf("no postmaster found for %s: the development and CI machines run PostgreSQL on this machine", dsn)
	}
	db, err := sql.Open("pgx", dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	db.SetMaxOpenConns(1)
	var backend int
	if err := db.QueryRowContext(ctx, `SELECT pg_backend_pid()`).Scan(&backend); err != nil {
		t.Fatal(err)
	}
	before := p.snapshot()
	if _, ok := before[backend]; !ok {
		t.Fatalf("backend %d not among the postmaster's processes %v", backend, before)
	}
	var n int64
	if err := db.QueryRowContext(ctx, `SELECT count(*) FROM generate_series(1, 5000000)`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	after := p.snapshot()
	// Five million rows take a backend well over the 10 ms a clock tick
	// counts, however loaded the machine.
	if spent := p.since(before, after); spent < 0.01 {
		t.Fatalf("%.3f s counted for a query of %d rows", spent, n)
	}
	if spent := after[backend] - before[backend]; spent < 0.01 {
		t.Fatalf("the backend that ran it: %.3f s", spent)
	}
}

// A process that started between the snapshots counts from zero; one that
// ended is left out, not subtracted.
func TestPostgresCPUSince(t *testing.T) {
	var p postgresCPU
	got := p.since(map[int]float64{1: 5, 2: 3}, map[int]float64{1: 6.5, 3: 0.25})
	if got != 1.75 {
		t.Fatalf("since = %v, want 1.75", got)
	}
}

func TestIsSessionTitle(t *testing.T) {
	port := sql.NullInt64{Int64: 54321, Valid: true}
	for _, tc := range []struct {
		title, database string
		port            sql.NullInt64
		want            bool
	}{
		{"postgres: 15/main: postgres lk_ab 127.0.0.1(54321) idle", "lk_ab", port, true},
		{"postgres: 15/main: postgres lk_ab [local] SELECT", "lk_ab", sql.NullInt64{}, true},
		{"postgres: 15/main: postgres lk_ab 127.0.0.1(54322) idle", "lk_ab", port, false},            // another session
		{"postgres: 15/main: postgres lk_abc 127.0.0.1(54321) idle", "lk_ab", port, false},           // another database
		{"postgres: 15/main: postgres lk_ab 127.0.0.1(54321) idle", "lk_ab", sql.NullInt64{}, false}, // not over a socket
		{"postgres: 15/main: checkpointer ", "lk_ab", port, false},
		{"", "lk_ab", port, false},
	} {
		if got := isSessionTitle(tc.title, tc.database, tc.port); got != tc.want {
			t.Errorf("isSessionTitle(%q, %q, %v) = %v, want %v", tc.title, tc.database, tc.port, got, tc.want)
		}
	}
}

func TestProcStat(t *testing.T) {
	tail := " S 1 2 3 4 5 6 7 8 9 10 250 50 0 0"
	for _, tc := range []struct {
		in   string
		name string
		ppid string
		cpu  float64
		ok   bool
	}{
		{in: "42 (postgres)" + tail, name: "postgres", ppid: "1", cpu: 3, ok: true},
		{in: "42 (a) (b c))" + tail, name: "a) (b c)", ppid: "1", cpu: 3, ok: true}, // a name may hold ")" and spaces
		{in: "42 (postgres) S 1 2", ok: false},                                      // cut short
		{in: "42 postgres" + tail, ok: false},
		{in: "", ok: false},
		{in: "42 (x)", ok: false},
		{in: ")(", ok: false},
	} {
		name, f, ok := procStat(tc.in)
		if ok != tc.ok {
			t.Errorf("%q: ok %v, want %v", tc.in, ok, tc.ok)
			continue
		}
		if !ok {
			continue
		}
		if name != tc.name || f[1] != tc.ppid || statCPU(f) != tc.cpu {
			t.Errorf("%q: %q, parent %s, %v s; want %q, %s, %v", tc.in, name, f[1], statCPU(f), tc.name, tc.ppid, tc.cpu)
		}
	}
}
