package faultproxy

import (
	"math/rand/v2"
	"time"
)

// faultSet is an immutable, validated and normalised list of faults. The
// proxy swaps whole sets atomically; nothing mutates a set once installed.
type faultSet struct {
	faults []Fault
	// roles are the faults' roles in the combination rule, by index.
	roles []role
	// answers are the terminal faults' actions, by index (nil for the
	// others).
	answers []answerer
	// prepared is what the faults' types built for them (preparer), by
	// index (nil if no type built anything).
	prepared []any
	// delays are the delays of the latency faults and the service time of
	// the capacity fault (delayer), by index.
	delays []Delay
	// shapers are the shaping faults' actions (bodyShaper), by index (nil
	// for the others).
	shapers []bodyShaper
	// capacity is the server of the set's capacity fault, nil if it has
	// none (a set has at most one).
	capacity *capacityServer
	// routes are the faults' routes (Fault.Match), by index (nil for a
	// fault without one); nil when no fault has one.
	routes []*route
}

// allMatched has every fault's bit set: a request that every fault acts
// on.
const allMatched = ^uint64(0)

// matched returns the faults (a bit each, MaxFaults ≤ 64) that act on the
// request l: those without a route, and those whose route it is of.
func (s *faultSet) matched(l *reqLine) uint64 {
	if s.routes == nil {
		return allMatched
	}
	var m uint64
	for i, r := range s.routes {
		if r == nil || l.match(r) {
			m |= 1 << i
		}
	}
	return m
}

var emptySet = &faultSet{}

// newFaultSet builds the set of the valid faults fs.
func newFaultSet(fs []Fault) *faultSet {
	if len(fs) == 0 {
		return emptySet
	}
	s := &faultSet{faults: make([]Fault, len(fs)), roles: make([]role, len(fs)), answers: make([]answerer, len(fs)), delays: make([]Delay, len(fs))}
	for i, f := range fs {
		t := lookupType(f.Type)
		s.faults[i] = f.normalized()
		s.roles[i] = t.role()
		s.answers[i], _ = t.faultType.(answerer)
		if dl, ok := t.faultType.(delayer); ok {
			s.delays[i] = dl.delayOf(&s.faults[i])
		}
		if sh, ok := t.faultType.(bodyShaper); ok {
			if s.shapers == nil {
				s.shapers = make([]bodyShaper, len(fs))
			}
			s.shapers[i] = sh
		}
		if pr, ok := t.faultType.(preparer); ok {
			if s.prepared == nil {
				s.prepared = make([]any, len(fs))
			}
			s.prepared[i] = pr.prepare(&s.faults[i])
		}
		if s.roles[i] == roleCapacity && s.capacity == nil {
			s.capacity = newCapacityServer(&s.faults[i])
		}
		if f.Match != "" {
			if s.routes == nil {
				s.routes = make([]*route, len(fs))
			}
			s.routes[i], _ = parseRoute(f.Match) // validated
		}
	}
	return s
}

// snapshot returns a copy of the faults that the caller may keep.
func (s *faultSet) snapshot() []Fault {
	out := make([]Fault, len(s.faults))
	for i, f := range s.faults {
		out[i] = f.normalized() // copies Headers
	}
	return out
}

// Decision is what the proxy does to one request.
type Decision struct {
	// Delay is the sum of the delays of the latency faults that fired,
	// plus the service time of a capacity fault that fired.
	Delay time.Duration
	// Latencies is the number of latency faults that fired.
	Latencies int
	// Terminal is the index in the set of the first terminal fault (error,
	// abort, hang, payload) that fired, or −1 if none did.
	Terminal int
	// TerminalType is the type of that fault, empty if none.
	TerminalType string
	// Capacity is whether the set's capacity fault fired: the request
	// takes one of its slots before anything else happens to it.
	Capacity bool
	// Shaped has bit i set when fault i of the set, a shaping one, fired:
	// a forwarded answer's body goes through it (shape.go).
	Shaped uint64
	// Shape names the types of the shaping faults that fired, joined
	// with "+"; empty if none did.
	Shape string
}

// String names the decision: "pass", "latency", "error", "latency+hang",
// "capacity", "capacity+latency+error", "latency+throttle"... A shaping
// fault is named only when no terminal one fired (which answers instead of
// the upstream).
func (d Decision) String() string {
	s := d.effects()
	switch {
	case !d.Capacity:
		return s
	case s == "pass":
		return TypeCapacity
	}
	return TypeCapacity + "+" + s
}

// effects names what happens to the request once it may go on.
func (d Decision) effects() string {
	switch {
	case d.Latencies > 0 && d.Terminal >= 0:
		if s, ok := latencyPlus[d.TerminalType]; ok { // built once: no allocation
			return s
		}
		return TypeLatency + "+" + d.TerminalType
	case d.Latencies > 0 && d.Shape != "":
		return TypeLatency + "+" + d.Shape
	case d.Latencies > 0:
		return TypeLatency
	case d.Terminal >= 0:
		return d.TerminalType
	case d.Shape != "":
		return d.Shape
	}
	return "pass"
}

// reqRand is the RNG of one request: math/rand/v2's PCG, and Float64 and
// NormFloat64 exactly as a rand.Rand over it computes them. A value, so a
// decision allocates nothing (rand.New(rand.NewPCG(...)) allocated twice).
type reqRand struct{ pcg rand.PCG }

// requestRand returns the RNG of request seq under seed. It is a pure
// function of (seed, seq): decisions are reproducible and concurrent
// requests share no state.
func requestRand(seed, seq uint64) reqRand {
	var r reqRand
	r.pcg.Seed(splitmix(seed^splitmix(seq)), splitmix(seq+0x632be59bd9b4e019))
	return r
}

// Float64 is rand.Rand's Float64: a uniform value in [0, 1).
func (r *reqRand) Float64() float64 { return float64(r.pcg.Uint64()<<11>>11) / (1 << 53) }

// NormFloat64 is rand.Rand's NormFloat64 over the same stream (rand.Rand
// holds no state of its own besides its source). The PCG is copied out and
// back so that only this rare draw (lognormal delays) allocates.
func (r *reqRand) NormFloat64() float64 {
	p := r.pcg
	x := rand.New(&p).NormFloat64()
	r.pcg = p
	return x
}

// splitmix is the SplitMix64 finaliser, used to decorrelate nearby seeds.
func splitmix(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9
	x = (x ^ (x >> 27)) * 0x94d049bb133111eb
	return x ^ (x >> 31)
}

// decide applies the combination rule (see the package doc) to request seq:
// every fault is rolled in order; fired latencies (and a capacity fault's
// service time) add up; the first fired terminal fault wins; fired shaping
// faults shape a forwarded answer. Only the faults whose bit is in matched
// act on the request (matched); each consumes its roll whether it acts or
// not, so that a request's decision does not depend on which routes the
// requests before it took.
func (s *faultSet) decide(seed, seq, matched uint64) Decision {
	d := Decision{Terminal: -1}
	if len(s.faults) == 0 || matched == 0 {
		return d
	}
	r := requestRand(seed, seq)
	for i := range s.faults {
		f := &s.faults[i]
		if !(r.Float64()*100 < f.Percent) || matched&(1<<i) == 0 {
			continue
		}
		switch s.roles[i] {
		case roleDelay:
			d.Delay += sampleDelay(&s.delays[i], &r)
			d.Latencies++
		case roleCapacity:
			if dl := &s.delays[i]; dl.Latency != 0 || dl.Jitter != 0 {
				d.Delay += sampleDelay(dl, &r)
			}
			d.Capacity = true
		case roleShape:
			d.Shaped |= 1 << i
			if d.Shape == "" {
				d.Shape = f.Type
			} else {
				d.Shape += "+" + f.Type
			}
		default:
			if d.Terminal < 0 {
				d.Terminal, d.TerminalType = i, f.Type
			}
		}
	}
	return d
}
