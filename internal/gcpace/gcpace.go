// Package gcpace sets the collector's GOGC after every cycle from the live
// heap, so that the heap may grow by a fixed headroom rather than by a
// multiple of whatever was live at the last collection.
//
// A fixed GOGC of 400 (what latchkey's hot paths want: a small live heap
// and a high allocation rate) lets one transient spike set a huge target: an
// argon2id hash (19 MiB) live during a collection made the next target
// about 110 MiB, and the process's peak RSS 140 MiB, while the steady live
// heap was 6-10 MiB. Here GOGC is headroom/live, between a floor (Go's
// default, for large live heaps such as a person import) and a ceiling.
package gcpace

import (
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"sync"
)

// Pacer is the rule: GOGC = Headroom / live heap, in [MinPercent, MaxPercent].
type Pacer struct {
	Headroom   uint64 // bytes the heap may grow beyond the live heap between collections
	MinPercent int
	MaxPercent int
}

// Percent is the GOGC for a live heap of live bytes.
func (p Pacer) Percent(live uint64) int {
	if live == 0 {
		return p.MaxPercent
	}
	pct := p.Headroom * 100 / live
	return int(min(max(pct, uint64(p.MinPercent)), uint64(p.MaxPercent)))
}

var start sync.Once

// Start sets GOGC to p's percent for the current live heap and again after
// every collection, for the rest of the process. Only the first call counts.
func Start(p Pacer) {
	start.Do(func() {
		s := &state{p: p, sample: []metrics.Sample{{Name: "/gc/heap/live:bytes"}}, current: -1}
		s.adjust()
		s.arm()
	})
}

type state struct {
	p       Pacer
	sample  []metrics.Sample
	current int
}

// sentinel is garbage the moment it is made: its finalizer runs after the
// next collection. The pointer keeps it out of the tiny allocator, whose
// blocks can outlive the object.
type sentinel struct{ _ *int }

func (s *state) arm() {
	runtime.SetFinalizer(&sentinel{}, func(*sentinel) {
		s.adjust()
		s.arm()
	})
}

// adjust runs in the finalizer goroutine, one call at a time.
func (s *state) adjust() {
	metrics.Read(s.sample)
	if s.sample[0].Value.Kind() != metrics.KindUint64 {
		return
	}
	if pct := s.p.Percent(s.sample[0].Value.Uint64()); pct != s.current {
		debug.SetGCPercent(pct)
		s.current = pct
	}
}
