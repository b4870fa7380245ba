package main

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"strconv"
	"strings"
)

// postgresCPU measures the CPU time of a PostgreSQL server on this machine:
// its postmaster and every process the postmaster started (the backends,
// the WAL writer, the checkpointer, autovacuum). With it the bench reports
// what the database spends on a scenario beside the server under test.
type postgresCPU struct {
	postmaster int
}

// localPostgresCPU finds the postmaster of the server dsn names, through
// the backend that answers: a process of this machine with that PID whose
// title names the session (its database and the client's port); nil when
// there is none, as for a server on another machine.
func localPostgresCPU(ctx context.Context, dsn string) (*postgresCPU, error) {
	db, err := sql.Open("pgx", dsn)
	if err != nil {
		return nil, err
	}
	defer db.Close()
	var backend int
	var database string
	var port sql.NullInt64 // NULL over a Unix socket
	if err := db.QueryRowContext(ctx, `SELECT pg_backend_pid(), current_database(), inet_client_port()`).
		Scan(&backend, &database, &port); err != nil {
		return nil, fmt.Errorf("bench: PostgreSQL's backend: %w", err)
	}
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", backend))
	if err != nil {
		return nil, nil // another machine's (or another namespace's) process
	}
	name, f, ok := procStat(string(b))
	if !ok || name != "postgres" {
		return nil, nil // a PID of this machine, but not a backend
	}
	title, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", backend))
	if err != nil || !isSessionTitle(string(title), database, port) {
		return nil, nil // a local server's backend, but not this session's
	}
	ppid, err := strconv.Atoi(f[1])
	if err != nil {
		return nil, nil
	}
	return &postgresCPU{postmaster: ppid}, nil
}

// isSessionTitle tells whether a backend's process title ("postgres:
// 15/main: user database 127.0.0.1(54321) idle") names a session on
// database from the client's port, or over a Unix socket ("[local]").
func isSessionTitle(title, database string, port sql.NullInt64) bool {
	client := "[local]"
	if port.Valid {
		client = "(" + strconv.FormatInt(port.Int64, 10) + ")"
	}
	return strings.Contains(title, " "+database+" ") && strings.Contains(title, client)
}

// snapshot is the CPU seconds of each of the server's processes by PID.
func (p *postgresCPU) snapshot() map[int]float64 {
	m := map[int]float64{}
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return m
	}
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue // ended meanwhile
		}
		_, f, ok := procStat(string(b))
		if !ok {
			continue
		}
		if ppid, _ := strconv.Atoi(f[1]); pid != p.postmaster && ppid != p.postmaster {
			continue
		}
		m[pid] = statCPU(f)
	}
	return m
}

// since is the CPU seconds the server's processes spent between two
// snapshots: a process started between them counts from zero, and one
// that ended meanwhile is missed (a connection pool keeps its backends).
func (p *postgresCPU) since(before, after map[int]float64) float64 {
	var s float64
	for pid, t := range after {
		s += t - before[pid]
	}
	return s
}

// procStat splits /proc/PID/stat into the command name and the fields
// after it (f[0] is the state, f[1] the parent's PID).
func procStat(s string) (name string, f []string, ok bool) {
	i, j := strings.IndexByte(s, '('), strings.LastIndexByte(s, ')')
	if i < 0 || j < i || j+2 > len(s) {
		return "", nil, false
	}
	f = strings.Fields(s[j+2:])
	return s[i+1 : j], f, len(f) >= 13
}

// statCPU is user plus system time, fields 14 and 15 of /proc/PID/stat.
func statCPU(f []string) float64 {
	u, _ := strconv.ParseFloat(f[11], 64)
	st, _ := strconv.ParseFloat(f[12], 64)
	return (u + st) / 100 // USER_HZ is 100 on Linux
}
