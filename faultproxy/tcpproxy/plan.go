package tcpproxy

import (
	"math/rand/v2"
	"strings"
	"time"
)

// Directions of a connection's data, the index of its two pipes.
const (
	dirUp   = 0 // client → upstream (Toxiproxy's "upstream" stream)
	dirDown = 1 // upstream → client ("downstream")
)

// stage acts on the chunks of one stream of one connection under one fault
// set, in the set's order: it hands each chunk (possibly changed, split or
// delayed) to next, or drops it, or ends the connection with an error. A
// stage belongs to one pipe and is used by one goroutine at a time: the
// pipe's reader if it comes before the chain's first latency fault, else
// the writer of the pipe's delay line.
type stage interface {
	pass(p *pipe, b []byte, next *link) error
}

// link chains a pipe's stages; a nil link writes to the pipe's destination.
type link struct {
	st   stage
	next *link
}

// write hands b to the chain starting at l.
func (l *link) write(p *pipe, b []byte) error {
	if l == nil {
		return p.out(b)
	}
	return l.st.pass(p, b, l.next)
}

// kind is what a fault type's file declares about it.
type kind struct {
	// fields are the parameters it takes besides type, percent, stream.
	fields []string
	// validate checks its parameters (the common ranges are checked).
	validate func(f Fault, field string) error
	// stage returns its per-stream state for one connection; nil for
	// faults that act on the connection only (down).
	stage func(f Fault, r *rand.Rand) stage
}

// kinds is filled by each fault type's file.
var kinds = map[string]kind{}

// closeDelayer is a stage that holds back the close of its stream
// (slow_close).
type closeDelayer interface{ closeDelay() time.Duration }

// plan is what one fault set does to one connection: the faults that its
// rolls chose, as the stages of each direction. Immutable once published.
type plan struct {
	gen        uint64
	decision   string   // "pass", "latency", "latency+reset"...
	fired      []string // fault types, in list order
	chain      [2]*link
	closeDelay [2]time.Duration
	down       bool
	// closeAfter is the earliest time-out of a timeout fault that fired
	// (hasTimeout), zero for one that never closes.
	closeAfter time.Duration
	hasTimeout bool
}

var passPlan = &plan{decision: "pass"}

// mix derives a stream of the proxy's seed for one purpose.
func mix(vs ...uint64) uint64 {
	h := uint64(0x9e3779b97f4a7c15)
	for _, v := range vs {
		h ^= v + 0x9e3779b97f4a7c15 + h<<6 + h>>2
		h *= 0xbf58476d1ce4e5b9
		h ^= h >> 31
	}
	return h
}

// newPlan rolls every fault of set for connection seq: fault i applies
// with its percent, from a generator of (seed, seq, set generation), so a
// run with the same seed and the same connection order decides the same.
// Each stage that fires gets a generator of its own (jitter, slice sizes).
func newPlan(set *faultSet, seed, seq uint64) *plan {
	if len(set.faults) == 0 {
		return &plan{gen: set.gen, decision: "pass"}
	}
	r := rand.New(rand.NewPCG(seed, mix(seq, set.gen)))
	pl := &plan{gen: set.gen}
	var tails [2]*link
	for i, f := range set.faults {
		if !(r.Float64()*100 < f.Percent) {
			continue
		}
		pl.fired = append(pl.fired, f.Type)
		k := kinds[f.Type]
		if f.Type == TypeDown {
			pl.down = true
			continue
		}
		if f.Type == TypeTimeout && (!pl.hasTimeout || (f.Timeout > 0 && (pl.closeAfter == 0 || f.Timeout < pl.closeAfter))) {
			pl.hasTimeout, pl.closeAfter = true, f.Timeout
		}
		for _, d := range dirsOf(f.Stream) {
			st := k.stage(f, rand.New(rand.NewPCG(seed^uint64(i+1), mix(seq, set.gen, uint64(d)))))
			if cd, ok := st.(closeDelayer); ok {
				pl.closeDelay[d] += cd.closeDelay()
			}
			l := &link{st: st}
			if tails[d] == nil {
				pl.chain[d] = l
			} else {
				tails[d].next = l
			}
			tails[d] = l
		}
	}
	pl.decision = "pass"
	if len(pl.fired) > 0 {
		pl.decision = strings.Join(pl.fired, "+")
	}
	return pl
}

func dirsOf(stream string) []int {
	switch stream {
	case StreamUpstream:
		return []int{dirUp}
	case StreamBoth:
		return []int{dirUp, dirDown}
	}
	return []int{dirDown}
}

// faultSet is an immutable, validated set with its generation (each
// SetFaults makes a new one).
type faultSet struct {
	gen    uint64
	faults []Fault
}

func (s *faultSet) snapshot() []Fault {
	out := make([]Fault, len(s.faults))
	copy(out, s.faults)
	return out
}
