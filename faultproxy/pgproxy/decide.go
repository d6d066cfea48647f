package pgproxy

import (
	"math/rand/v2"
	"regexp"
	"strings"
	"time"
)

// faultSet is an immutable, validated set with its statement expressions
// compiled (nil for a fault without match).
type faultSet struct {
	faults []Fault
	res    []*regexp.Regexp
}

func newFaultSet(fs []Fault) *faultSet {
	s := &faultSet{faults: make([]Fault, len(fs)), res: make([]*regexp.Regexp, len(fs))}
	for i, f := range fs {
		s.faults[i] = f.normalized()
		if f.Match != "" {
			s.res[i] = regexp.MustCompile(f.Match) // validated
		}
	}
	return s
}

func (s *faultSet) snapshot() []Fault {
	out := make([]Fault, len(s.faults))
	copy(out, s.faults)
	return out
}

// match returns the faults (a bit each, MaxFaults ≤ 64) whose expression
// text matches.
func (s *faultSet) match(text []byte) uint64 {
	var m uint64
	for i, re := range s.res {
		if re == nil || re.Match(text) {
			m |= 1 << i
		}
	}
	return m
}

// decision is what the faults do to one query.
type decision struct {
	name  string        // "pass", "latency", "error", "latency+hang"...
	fired []string      // fault types, in list order
	delay time.Duration // the sum of the fired latencies
	err   *Fault        // the first fired error, if it came before any hang
	hang  bool          // the first fired terminal fault was a hang
}

// synthetic reports whether the proxy answers the query itself (an error)
// or never (a hang): its messages do not reach the upstream.
func (d *decision) synthetic() bool { return d.err != nil || d.hang }

var passDecision = decision{name: "pass"}

// decide rolls every fault of s for query seq whose bit is in matched:
// fault i applies with its percent, from a generator of (seed, seq), so a
// run with the same seed and the same query order decides the same (each
// fault consumes its roll whether it matched or not). Fired latencies add
// up; the first fired error or hang wins.
func (s *faultSet) decide(seed, seq, matched uint64) decision {
	if len(s.faults) == 0 || matched == 0 {
		return passDecision
	}
	r := queryRand(seed, seq)
	var d decision
	for i := range s.faults {
		f := &s.faults[i]
		roll := r.Float64()
		if matched&(1<<i) == 0 || !(roll*100 < f.Percent) {
			continue
		}
		d.fired = append(d.fired, f.Type)
		kinds[f.Type].act(f, &r, &d)
	}
	if len(d.fired) == 0 {
		return passDecision
	}
	d.name = strings.Join(d.fired, "+")
	return d
}

// qrand is the generator of one query: math/rand/v2's PCG seeded as the
// HTTP plane seeds a request's, a value so that a decision allocates
// nothing.
type qrand struct{ pcg rand.PCG }

func queryRand(seed, seq uint64) qrand {
	var r qrand
	r.pcg.Seed(splitmix(seed^splitmix(seq)), splitmix(seq+0x632be59bd9b4e019))
	return r
}

// Float64 is rand.Rand's Float64: a uniform value in [0, 1).
func (r *qrand) Float64() float64 { return float64(r.pcg.Uint64()<<11>>11) / (1 << 53) }

// splitmix is the SplitMix64 finaliser, used to decorrelate nearby seeds.
func splitmix(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9
	x = (x ^ (x >> 27)) * 0x94d049bb133111eb
	return x ^ (x >> 31)
}
