package gcpace

import (
	"runtime"
	"runtime/metrics"
	"testing"
	"time"
)

// heapFree is the heap memory that is free but still resident.
func heapFree() uint64 {
	s := []metrics.Sample{{Name: "/memory/classes/heap/free:bytes"}}
	metrics.Read(s)
	return s[0].Value.Uint64()
}

//go:noinline
func transientAllocation() {
	buf := make([]byte, 19<<20)
	for i := 0; i < len(buf); i += 4096 {
		buf[i] = 1 // resident
	}
	runtime.KeepAlive(buf)
}

func newReleaser() (*Releaser, chan struct{}) {
	done := make(chan struct{}, 4)
	r := &Releaser{released: func() { done <- struct{}{} }}
	r.enabled.Store(true)
	return r, done
}

func waitRelease(t *testing.T, done chan struct{}) {
	t.Helper()
	select {
	case <-done:
	case <-time.After(time.Minute):
		t.Fatal("no release after the last transient ended")
	}
}

// The memory of an ended transient is no longer resident once released.
func TestReleaseReturnsTheTransientsMemory(t *testing.T) {
	r, done := newReleaser()
	end := r.Begin()
	transientAllocation()
	runtime.GC() // freed, but kept resident for reuse
	if free := heapFree(); free < 16<<20 {
		t.Skipf("the runtime already returned the allocation (%d MiB free and resident)", free>>20)
	}
	end()
	waitRelease(t, done)
	if free := heapFree(); free >= 8<<20 {
		t.Errorf("after the release %d MiB of free heap is still resident", free>>20)
	}
}

// No release while another transient is in flight: the last one to end
// releases, once.
func TestReleaseWaitsForTheLastInFlight(t *testing.T) {
	r, done := newReleaser()
	endA, endB := r.Begin(), r.Begin()
	endA()
	if r.pending.Load() {
		t.Fatal("a release was started while a transient is in flight")
	}
	endB()
	waitRelease(t, done)
	if n := r.inFlight.Load(); n != 0 {
		t.Errorf("%d transients in flight, want 0", n)
	}
}

// Off (tests, tools), a transient costs nothing and releases nothing.
func TestReleaseOff(t *testing.T) {
	r := &Releaser{released: func() { t.Error("released while off") }}
	r.Begin()()
	if r.inFlight.Load() != 0 || r.pending.Load() {
		t.Error("an off releaser counted a transient")
	}
}
