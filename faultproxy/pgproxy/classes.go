package pgproxy

import (
	"regexp"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/bulkheadlab/bulkheadlab/faultproxy/internal/callclass"
)

// A Class is a named class of statements: the queries whose statement
// text matches Match (RE2, anywhere in the text, as a fault's match). The
// proxy counts the queries of each class, faults or not, so that how many
// statements of each class an endpoint runs can be measured from outside:
// faultproxy_pg_class_queries_total{class}, with the class's queries in
// flight and their durations beside it (the HTTP plane's route classes
// have the same series; internal/callclass counts both).
type Class = callclass.Class

// MaxClasses bounds a proxy's statement classes (a bit each per query).
const MaxClasses = callclass.Max

// ValidateClasses checks cs: at most MaxClasses, each with a name of
// letters, digits, _ and - (unique) and a match that compiles; errors name
// the class.
func ValidateClasses(cs []Class) error {
	return callclass.Validate(cs, "pgproxy: statement class", func(re string) error {
		_, err := regexp.Compile(re)
		return err
	})
}

// The series of the statement classes, by class (rundata.MetricPgClass*).
const (
	MetricClassQueries  = "faultproxy_pg_class_queries_total"
	MetricClassInflight = "faultproxy_pg_class_inflight_queries"
	MetricClassDuration = "faultproxy_pg_class_query_duration_seconds"
)

var classSeries = callclass.Series{
	Calls:        MetricClassQueries,
	Inflight:     MetricClassInflight,
	Duration:     MetricClassDuration,
	CallsHelp:    "Queries (a simple Query, or an extended batch up to its Sync) with a statement that matches the statement class, by class; a query may be of several.",
	InflightHelp: "Queries of the statement class in flight (its Query or Sync received, its answer not yet whole), by class.",
	DurationHelp: "Answered queries of the statement class: from the proxy's receipt of the query until its ReadyForQuery went to the client, by class.",
	Buckets:      prometheus.ExponentialBucketsRange(0.0001, 60, 24),
}

// classes are a proxy's statement classes, compiled, with their series.
type classes struct {
	res []*regexp.Regexp
	n   *callclass.Counters
}

func newClasses(cs []Class, reg *prometheus.Registry) classes {
	res, n := callclass.Build(cs, regexp.MustCompile, classSeries, reg) // validated
	return classes{res: res, n: n}
}

// match returns the classes (a bit each) whose expression text matches.
func (cs *classes) match(text []byte) uint64 {
	var m uint64
	for i, re := range cs.res {
		if re.Match(text) {
			m |= 1 << i
		}
	}
	return m
}

// count counts one query of each class in bits.
func (cs *classes) count(bits uint64) { cs.n.Count(bits) }

// enter counts a query of the classes in bits in flight; leave ends it
// after d, observed as its duration if answered.
func (cs *classes) enter(bits uint64) { cs.n.Enter(bits) }

func (cs *classes) leave(bits uint64, d time.Duration, answered bool) { cs.n.Leave(bits, d, answered) }
