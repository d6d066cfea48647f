package pgproxy

import (
	"fmt"
	"regexp"

	"github.com/prometheus/client_golang/prometheus"
)

// A Class is a named class of statements: the queries whose statement
// text matches Match (RE2, anywhere in the text, as a fault's match). The
// proxy counts the queries of each class, faults or not, so that how many
// statements of each class an endpoint runs can be measured from outside
// (faultproxy_pg_class_queries_total{class}).
type Class struct {
	Name  string
	Match string
}

// MaxClasses bounds a proxy's statement classes (a bit each per query).
const MaxClasses = 64

// classNameRE is a class's name: as an endpoint's.
var classNameRE = regexp.MustCompile(`^[A-Za-z0-9_][A-Za-z0-9_.-]{0,63}$`)

// ValidateClasses checks cs: at most MaxClasses, each with a name of
// letters, digits, _ and - (unique) and a match that compiles; errors name
// the class.
func ValidateClasses(cs []Class) error {
	if len(cs) > MaxClasses {
		return fmt.Errorf("pgproxy: at most %d statement classes, got %d", MaxClasses, len(cs))
	}
	seen := map[string]bool{}
	for _, c := range cs {
		switch {
		case !classNameRE.MatchString(c.Name):
			return fmt.Errorf("pgproxy: statement class %q: want a name of letters, digits, _, . and - (at most 64)", c.Name)
		case seen[c.Name]:
			return fmt.Errorf("pgproxy: statement class %q given twice", c.Name)
		case c.Match == "":
			return fmt.Errorf("pgproxy: statement class %s: its match is empty", c.Name)
		case len(c.Match) > MaxMatchLen:
			return fmt.Errorf("pgproxy: statement class %s: match at most %d bytes, got %d", c.Name, MaxMatchLen, len(c.Match))
		}
		if _, err := regexp.Compile(c.Match); err != nil {
			return fmt.Errorf("pgproxy: statement class %s: %v", c.Name, err)
		}
		seen[c.Name] = true
	}
	return nil
}

// classes are a proxy's statement classes, compiled, with their counters.
type classes struct {
	res      []*regexp.Regexp
	counters []prometheus.Counter
}

// MetricClassQueries counts the queries of each statement class, by class.
const MetricClassQueries = "faultproxy_pg_class_queries_total" // rundata.MetricPgClassQueries

func newClasses(cs []Class, reg *prometheus.Registry) classes {
	if len(cs) == 0 {
		return classes{}
	}
	vec := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: MetricClassQueries,
		Help: "Queries (a simple Query, or an extended batch up to its Sync) with a statement that matches the statement class, by class; a query may be of several.",
	}, []string{"class"})
	reg.MustRegister(vec)
	out := classes{}
	for _, c := range cs {
		out.res = append(out.res, regexp.MustCompile(c.Match)) // validated
		out.counters = append(out.counters, vec.WithLabelValues(c.Name))
	}
	return out
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
func (cs *classes) count(bits uint64) {
	for i, c := range cs.counters {
		if bits&(1<<i) != 0 {
			c.Inc()
		}
	}
}
