package gcpace

import (
	"runtime"
	"runtime/debug"
	"testing"
)

func TestPercent(t *testing.T) {
	p := Pacer{Headroom: 32 << 20, MinPercent: 100, MaxPercent: 400}
	for _, tc := range []struct {
		live uint64
		want int
	}{
		{0, 400},
		{4 << 20, 400},   // small live heap: the ceiling
		{16 << 20, 200},  // 32 MiB of headroom over 16 MiB live
		{25 << 20, 128},  // an argon2id hash live at the collection
		{64 << 20, 100},  // large live heap: never below Go's default
		{512 << 20, 100}, //
	} {
		if got := p.Percent(tc.live); got != tc.want {
			t.Errorf("Percent(%d MiB) = %d, want %d", tc.live>>20, got, tc.want)
		}
	}
}

// Start follows the live heap: with 200 MiB live the percent falls to the
// floor, and when it is garbage again it climbs back to the ceiling.
func TestStartFollowsTheLiveHeap(t *testing.T) {
	old := debug.SetGCPercent(100)
	defer debug.SetGCPercent(old)
	Start(Pacer{Headroom: 32 << 20, MinPercent: 100, MaxPercent: 400})
	big := make([]byte, 200<<20)
	for i := range big {
		big[i] = 1 // resident and live
	}
	gcUntil(t, func(pct int) bool { return pct == 100 })
	runtime.KeepAlive(big)
	gcUntil(t, func(pct int) bool { return pct == 400 })
}

// gcUntil collects until the finalizer has set a percent that ok accepts.
func gcUntil(t *testing.T, ok func(int) bool) {
	t.Helper()
	for range 100 {
		runtime.GC()
		runtime.GC() // the finalizer of the first cycle has run by the end of the second
		pct := debug.SetGCPercent(-1)
		debug.SetGCPercent(pct)
		if ok(pct) {
			return
		}
	}
	t.Fatal("the pacer did not set the expected percent")
}
