// Package callclass counts a fault proxy's calls by class, for every data
// plane that classes its calls: the PostgreSQL plane's statement classes
// (a query's statement text) and the HTTP plane's route classes (a
// request's method and path). Each plane matches its calls its own way and
// hands this package the classes a call is of, a bit each; the series are
// the same on both planes — per class, a counter of calls, a gauge of the
// calls in flight and a histogram of their durations, labelled class — so
// that what the harness measures per class (which classes an endpoint
// calls, a class's share of a dependency's calls) reads both alike.
package callclass

import (
	"fmt"
	mbits "math/bits"
	"regexp"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// A Class is a named class of a proxy's calls: those whose text (the
// plane's: a statement, a request's method and path) matches Match.
type Class struct {
	Name  string
	Match string
}

// Max bounds a proxy's classes (a bit each per call).
const Max = 64

// MaxMatchLen bounds a class's match expression, as a fault's.
const MaxMatchLen = 4 << 10

// nameRE is a class's name: as an endpoint's.
var nameRE = regexp.MustCompile(`^[A-Za-z0-9_][A-Za-z0-9_.-]{0,63}$`)

// Validate checks cs: at most Max, each with a name of letters, digits,
// _, . and - (unique) and a match that compile accepts. Errors begin with
// prefix and name the class: "pgproxy: statement class report: …".
func Validate(cs []Class, prefix string, compile func(string) error) error {
	if len(cs) > Max {
		return fmt.Errorf("%s: at most %d classes, got %d", prefix, Max, len(cs))
	}
	seen := map[string]bool{}
	for _, c := range cs {
		switch {
		case !nameRE.MatchString(c.Name):
			return fmt.Errorf("%s %q: want a name of letters, digits, _, . and - (at most 64)", prefix, c.Name)
		case seen[c.Name]:
			return fmt.Errorf("%s %q given twice", prefix, c.Name)
		case c.Match == "":
			return fmt.Errorf("%s %s: its match is empty", prefix, c.Name)
		case len(c.Match) > MaxMatchLen:
			return fmt.Errorf("%s %s: match at most %d bytes, got %d", prefix, c.Name, MaxMatchLen, len(c.Match))
		}
		if err := compile(c.Match); err != nil {
			return fmt.Errorf("%s %s: %v", prefix, c.Name, err)
		}
		seen[c.Name] = true
	}
	return nil
}

// Series names a plane's per-class series and says what its call is.
type Series struct {
	Calls    string // counter, e.g. faultproxy_class_requests_total
	Inflight string // gauge, e.g. faultproxy_class_inflight_requests
	Duration string // histogram, e.g. faultproxy_class_request_duration_seconds
	// CallsHelp, InflightHelp and DurationHelp are the series' help
	// texts, each ending with what the plane's call is.
	CallsHelp, InflightHelp, DurationHelp string
	Buckets                               []float64
}

// Counters are the per-class series of one proxy's classes, by bit: bit
// i of a call's classes is class i of the list New was given. A nil
// *Counters (no classes) counts nothing. The calls and those in flight
// are atomic counts read when the registry is gathered (an add each per
// call, where a Prometheus counter and gauge cost a compare-and-swap
// loop each); the durations a Prometheus histogram.
type Counters struct {
	names    []string
	calls    []atomic.Uint64
	inflight []atomic.Int64
	duration []prometheus.Observer
	callsD   *prometheus.Desc
	flightD  *prometheus.Desc
}

// New registers s's series on reg for the classes names, in order; nil
// when there are none (no series either).
func New(names []string, s Series, reg prometheus.Registerer) *Counters {
	if len(names) == 0 {
		return nil
	}
	duration := prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: s.Duration, Help: s.DurationHelp, Buckets: s.Buckets}, []string{"class"})
	c := &Counters{names: names, calls: make([]atomic.Uint64, len(names)), inflight: make([]atomic.Int64, len(names)),
		callsD:  prometheus.NewDesc(s.Calls, s.CallsHelp, []string{"class"}, nil),
		flightD: prometheus.NewDesc(s.Inflight, s.InflightHelp, []string{"class"}, nil)}
	for _, n := range names {
		c.duration = append(c.duration, duration.WithLabelValues(n))
	}
	reg.MustRegister(duration, c)
	return c
}

// Describe is prometheus.Collector's: the calls and in-flight series.
func (c *Counters) Describe(ch chan<- *prometheus.Desc) {
	ch <- c.callsD
	ch <- c.flightD
}

// Collect is prometheus.Collector's: each class's calls and in flight.
func (c *Counters) Collect(ch chan<- prometheus.Metric) {
	for i, n := range c.names {
		ch <- prometheus.MustNewConstMetric(c.callsD, prometheus.CounterValue, float64(c.calls[i].Load()), n)
		ch <- prometheus.MustNewConstMetric(c.flightD, prometheus.GaugeValue, float64(c.inflight[i].Load()), n)
	}
}

// Len is the number of classes.
func (c *Counters) Len() int {
	if c == nil {
		return 0
	}
	return len(c.names)
}

// Count counts one call of each class in bits.
func (c *Counters) Count(bits uint64) {
	for ; bits != 0 && c != nil; bits &= bits - 1 {
		if i := mbits.TrailingZeros64(bits); i < len(c.calls) {
			c.calls[i].Add(1)
		}
	}
}

// Enter counts a call of each class in bits in flight; Leave ends it.
func (c *Counters) Enter(bits uint64) {
	for ; bits != 0 && c != nil; bits &= bits - 1 {
		if i := mbits.TrailingZeros64(bits); i < len(c.inflight) {
			c.inflight[i].Add(1)
		}
	}
}

// Leave ends a call that Enter counted in flight with the same bits, and
// observes its duration d in each class's histogram if observe.
func (c *Counters) Leave(bits uint64, d time.Duration, observe bool) {
	s := d.Seconds()
	for ; bits != 0 && c != nil; bits &= bits - 1 {
		if i := mbits.TrailingZeros64(bits); i < len(c.inflight) {
			c.inflight[i].Add(-1)
			if observe {
				c.duration[i].Observe(s)
			}
		}
	}
}

// Build compiles the match of each class of cs with compile (cs
// validated) and registers their series: the plane's matchers, by bit,
// and their counters; nothing for no classes.
func Build[M any](cs []Class, compile func(string) M, s Series, reg prometheus.Registerer) ([]M, *Counters) {
	if len(cs) == 0 {
		return nil, nil
	}
	ms := make([]M, len(cs))
	names := make([]string, len(cs))
	for i, c := range cs {
		ms[i], names[i] = compile(c.Match), c.Name
	}
	return ms, New(names, s, reg)
}
