package gcpace

import (
	"runtime/debug"
	"sync/atomic"
	"time"
)

// Releaser gives a large short-lived allocation's memory back to the OS
// when it ends. Go returns freed heap pages at the background scavenger's
// pace, so an argon2id hash's 19 MiB stayed resident long after the hash:
// the server started at 86 MiB after hashing the configured person's
// password, and stayed above 90 MiB after one sign-in. When the last
// transient in flight ends, a collection and a scavenge
// (debug.FreeOSMemory, about 5 ms of CPU with a 10 MiB live heap) run in
// the background, at most once per MinGap; under a steady stream of
// sign-ins the scavenger's pace is what it was.
type Releaser struct {
	MinGap   time.Duration
	released func() // tests: called after each release

	enabled  atomic.Bool
	inFlight atomic.Int64
	pending  atomic.Bool
	last     atomic.Int64 // unix nanoseconds of the last release
}

// transients is the process's releaser; EnableRelease turns it on.
var transients = &Releaser{MinGap: time.Second}

// EnableRelease makes Transient's ends release memory, for the rest of
// the process (latchkey serve; tests and tools leave it off).
func EnableRelease() { transients.enabled.Store(true) }

// Transient marks the start of a large short-lived allocation; call the
// func it returns when the allocation is garbage.
func Transient() (end func()) { return transients.Begin() }

// Begin is Transient for r.
func (r *Releaser) Begin() (end func()) {
	if !r.enabled.Load() {
		return func() {}
	}
	r.inFlight.Add(1)
	return r.end
}

func (r *Releaser) end() {
	if r.inFlight.Add(-1) == 0 && r.pending.CompareAndSwap(false, true) {
		go r.release()
	}
}

func (r *Releaser) release() {
	if wait := time.Duration(r.last.Load()+int64(r.MinGap)) - time.Duration(time.Now().UnixNano()); wait > 0 {
		time.Sleep(wait)
	}
	r.pending.Store(false)
	if r.inFlight.Load() > 0 {
		return // the last of those in flight releases when it ends
	}
	r.last.Store(time.Now().UnixNano())
	debug.FreeOSMemory()
	if r.released != nil {
		r.released()
	}
}
