package main

import (
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
	for _, name := range []string{"client_credentials", "introspect", "introspect_usage_limit", "revoke",
		"authorization_code", "refresh", "device_polling", "events_search"} {
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
