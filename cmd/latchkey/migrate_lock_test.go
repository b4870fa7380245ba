package main

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	_ "github.com/jackc/pgx/v5/stdlib" // the pgx database/sql driver

	"github.com/latchkey/latchkey/internal/store/postgres"
	"github.com/latchkey/latchkey/internal/store/postgres/pgtest"
)

var appliedRE = regexp.MustCompile(`msg="schema migrations" store=postgres known=(\d+) latest=(\d+) applied=([0-9,]+|none)`)

// Three instances started at once on an empty PostgreSQL database: every
// migration is applied by exactly one of them (the others wait on the
// migration lock and then find it applied), each logs which it applied, and
// all three serve.
func TestThreeInstancesMigrateAnEmptyDatabaseOnce(t *testing.T) {
	db := pgtest.NewDatabase(t)
	dir := t.TempDir()
	cfgPath := filepath.Join(dir, "latchkey.yaml")
	if err := os.WriteFile(cfgPath, []byte(crashConfig), 0o600); err != nil {
		t.Fatal(err)
	}
	// The key file exists before the start: instances that create it at
	// once end up with one key anyway (docs/DESIGN.md), but this test is
	// about migrations.
	keyFile := filepath.Join(dir, "secret.key")
	if err := os.WriteFile(keyFile, []byte(strings.Repeat("k", 32)), 0o600); err != nil {
		t.Fatal(err)
	}
	var instances []*instance
	for i := range 3 {
		addr := freePort(t)
		in := &instance{name: fmt.Sprint(i), addr: addr, cfgPath: cfgPath, log: &syncBuffer{},
			env: []string{"LATCHKEY_LISTEN=" + addr, "LATCHKEY_DATABASE=" + db,
				"LATCHKEY_SECRET_KEY_FILE=" + keyFile, "LATCHKEY_LOG_LEVEL=info"}}
		in.cmd = command(t, in.env, "serve", "--config", cfgPath)
		in.cmd.Stderr = in.log
		instances = append(instances, in)
	}
	for _, in := range instances { // all three before any is ready
		if err := in.cmd.Start(); err != nil {
			t.Fatal(err)
		}
		cmd, in := in.cmd, in
		t.Cleanup(func() {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
			if t.Failed() {
				t.Logf("instance %s log:\n%s", in.name, in.log.String())
			}
		})
	}
	for _, in := range instances {
		waitReady(t, in.addr, in.cmd)
	}
	// Each log reaches its buffer through the pipe that exec copies from,
	// which can trail the instance's ready answer on a busy machine.
	for _, in := range instances {
		waitFor(t, "migration line from instance "+in.name, func() bool { return appliedRE.MatchString(in.log.String()) })
	}

	ms, err := postgres.Migrations()
	if err != nil {
		t.Fatal(err)
	}
	appliedBy := map[int][]string{}
	for _, in := range instances {
		m := appliedRE.FindStringSubmatch(in.log.String()) // there: waited for above
		if m[1] != strconv.Itoa(len(ms)) || m[2] != fmt.Sprintf("%04d", ms[len(ms)-1].Version) {
			t.Errorf("instance %s: known=%s latest=%s, want %d and %04d", in.name, m[1], m[2], len(ms), ms[len(ms)-1].Version)
		}
		if m[3] == "none" {
			continue
		}
		for _, v := range strings.Split(m[3], ",") {
			n, _ := strconv.Atoi(v)
			appliedBy[n] = append(appliedBy[n], in.name)
		}
	}
	for _, m := range ms {
		if got := appliedBy[m.Version]; len(got) != 1 {
			t.Errorf("migration %04d applied by instances %v, want exactly one", m.Version, got)
		}
	}

	versions := appliedMigrations(t, db)
	var want []int
	for _, m := range ms {
		want = append(want, m.Version)
	}
	if !slices.Equal(versions, want) {
		t.Errorf("schema_migrations %v, want %v", versions, want)
	}
	for _, in := range instances {
		tokenStatus(t, in.addr, 200)
		if out, err := command(t, in.env, "healthcheck").CombinedOutput(); err != nil {
			t.Errorf("healthcheck of a ready instance: %v %s", err, out)
		}
		stop(t, in.cmd)
		if err := command(t, in.env, "healthcheck").Run(); err == nil {
			t.Error("healthcheck of a stopped instance exited 0")
		}
	}
}
