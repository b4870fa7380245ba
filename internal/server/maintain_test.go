package server

import (
	"testing"
	"time"
)

// A start waits half to one interval before its first sweep, and starts
// do not all wait alike.
func TestFirstSweepWaitsPartOfAnInterval(t *testing.T) {
	const interval = time.Minute
	seen := map[time.Duration]bool{}
	for range 1000 {
		d := firstSweep(interval)
		if d < interval/2 || d > interval {
			t.Fatalf("firstSweep(%v) = %v, want within [%v, %v]", interval, d, interval/2, interval)
		}
		seen[d] = true
	}
	if len(seen) < 900 {
		t.Errorf("1,000 starts waited %d different times", len(seen))
	}
	if d := firstSweep(0); d != 0 {
		t.Errorf("firstSweep(0) = %v", d)
	}
}
