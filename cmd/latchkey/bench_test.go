package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A short run of every scenario: each sets itself up and runs without an
// error. No timing is asserted: figures belong in docs/PERFORMANCE.md.
func TestBenchSmoke(t *testing.T) {
	out, err := command(t, nil, "bench", "--duration", "300ms", "--connections", "2").CombinedOutput()
	if err != nil {
		t.Fatalf("bench: %v\n%s", err, out)
	}
	table := string(out)
	for _, name := range []string{"client_credentials", "introspect", "introspect_usage_limit", "revoke", "issue_revoke",
		"authorization_code", "authorization_code_openid", "authorization_code_jwt", "client_credentials_jwt", "refresh", "refresh_jwt", "logout",
		"device_polling", "events_search"} {
		found := false
		for _, line := range strings.Split(table, "\n") {
			f := strings.Fields(line)
			if len(f) >= 10 && f[0] == name && strings.HasSuffix(f[4], "ms") {
				found = true
				if f[8] != "0" {
					t.Errorf("%s: %s errors", name, f[8])
				}
			}
		}
		if !found {
			t.Errorf("no result line for %s:\n%s", name, table)
		}
	}
}

// --profile saves the server's CPU and allocation profiles per scenario,
// taken from the profiler on its own address (debug_listen).
func TestBenchProfile(t *testing.T) {
	dir := t.TempDir()
	out, err := command(t, nil, "bench", "--scenarios", "introspect", "--duration", "2s", "--connections", "2",
		"--profile", dir).CombinedOutput()
	if err != nil {
		t.Fatalf("bench: %v\n%s", err, out)
	}
	for _, name := range []string{"introspect.cpu.pprof", "introspect.allocs.pprof"} {
		b, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		if len(b) < 100 || b[0] != 0x1f || b[1] != 0x8b { // pprof's format is gzipped protobuf
			t.Errorf("%s is not a profile (%d bytes)", name, len(b))
		}
	}
	if out, err := command(t, nil, "bench", "--profile", dir, "--target", "http://127.0.0.1:1").CombinedOutput(); err == nil {
		t.Errorf("--profile with --target (a server bench cannot profile) was accepted:\n%s", out)
	}
}

// --secret-key-file lets a second run serve the database a first run
// wrote (a grown database is loaded once and measured many times); without
// it each run makes a new server key, which that database refuses.
func TestBenchSecretKeyFile(t *testing.T) {
	dir := t.TempDir()
	db, key := "sqlite:"+filepath.Join(dir, "latchkey.db"), filepath.Join(dir, "secret.key")
	run := func(extra ...string) ([]byte, error) {
		args := append([]string{"bench", "--scenarios", "introspect", "--duration", "200ms", "--connections", "2",
			"--startups", "0", "--database", db}, extra...)
		return command(t, nil, args...).CombinedOutput()
	}
	for i := range 2 {
		if out, err := run("--secret-key-file", key); err != nil {
			t.Fatalf("run %d with the same key file: %v\n%s", i+1, err, out)
		}
	}
	if out, err := run(); err == nil {
		t.Errorf("a run with a new server key served the database another key wrote:\n%s", out)
	}
	if out, err := command(t, nil, "bench", "--secret-key-file", key, "--target", "http://127.0.0.1:1").CombinedOutput(); err == nil {
		t.Errorf("--secret-key-file with --target was accepted:\n%s", out)
	}
}
