package rundata

import (
	"strings"
	"time"
)

// Audit is a blast-radius audit's configuration as the analysis reads it:
// the spec's `audit:` block. An audit runs a control run and then every
// dependency × fault in turn against one service, and maps which
// endpoints each one took down. Zero fields take DefaultAudit's values.
type Audit struct {
	// Faults are the faults each dependency gets in turn: "slow" (a delay
	// of SlowT × T), "failing" (an error answer), "ladder" (a delay of
	// each of Ladder × T, a condition each).
	Faults []string `yaml:"faults,omitempty" json:"faults,omitempty"`
	// SlowT is the slow fault's delay in units of T (default 0.9).
	SlowT float64 `yaml:"slow_t,omitempty" json:"slow_t,omitempty"`
	// Ladder are the delays, in units of T, of the "ladder" fault.
	Ladder []float64 `yaml:"ladder,omitempty" json:"ladder,omitempty"`
	// Critical endpoints must be ISOLATED from every dependency they do
	// not call; `audit --check` fails naming the cell otherwise.
	Critical []string `yaml:"critical,omitempty" json:"critical,omitempty"`
	// Calls is the call graph as declared (endpoint → the dependencies it
	// calls); the calibration measures it, and a difference is reported.
	Calls map[string][]string `yaml:"calls,omitempty" json:"calls,omitempty"`
	// DegradedP99RiseT and DegradedErrorRate: a cell is degraded when its
	// endpoint's fault-phase p99 rose above its baseline by at least this
	// many T, or its fault-phase error rate reached this share (defaults:
	// the expectations' P2 limits, 0.25 T and 1 %), beyond what the control
	// run shows of the same endpoint.
	DegradedP99RiseT  float64 `yaml:"degraded_p99_rise_t,omitempty" json:"degraded_p99_rise_t,omitempty"`
	DegradedErrorRate float64 `yaml:"degraded_error_rate,omitempty" json:"degraded_error_rate,omitempty"`
	// Calibration sends each endpoint's traffic alone, before the matrix,
	// to measure the call graph.
	Calibration Calibration `yaml:"calibration,omitempty" json:"calibration,omitzero"`
	// Abort are the stop conditions: any of them, met while a fault is in
	// place, removes it at once and marks the cell ABORTED.
	Abort []AbortRule `yaml:"abort,omitempty" json:"abort,omitempty"`
	// OnAbort is what the audit does after a cell is aborted: "continue"
	// (the default: the next cell) or "stop" (the rest are skipped).
	OnAbort string `yaml:"on_abort,omitempty" json:"on_abort,omitempty"`
	// Columns are the matrix's faults, a condition each, in order: the
	// spec fills them in from Faults (or from conditions written by hand),
	// so that the analysis knows which dependency and fault each
	// condition is.
	Columns []AuditColumn `yaml:"columns,omitempty" json:"columns,omitempty"`
}

// AuditColumn is one fault of an audit's matrix: a condition of its runs.
type AuditColumn struct {
	Condition  string `yaml:"condition" json:"condition"`   // e.g. "slow-pay"
	Dependency string `yaml:"dependency" json:"dependency"` // "PAY"
	Fault      string `yaml:"fault" json:"fault"`           // "slow", "failing", "slow 0.5T"
	// Class, when set, is the class of the dependency's calls the fault
	// acts on (its calls only: a PostgreSQL dependency's statement class,
	// an HTTP one's route class): the column is "DB/report", not the
	// whole dependency.
	Class string `yaml:"class,omitempty" json:"class,omitempty"`
	// Load, when set, are the endpoints whose rates the column's condition
	// sets (a condition of the spec's own with rates: one tenant's or one
	// load class's surge). They are the column's cause, as the endpoints
	// that call a faulted dependency are; the others are judged against
	// them. A column of load alone (no fault) has no Dependency.
	Load []string `yaml:"load,omitempty" json:"load,omitempty"`
}

// LoadOnly is whether the column's condition faults nothing and only
// raises its Load's rates.
func (c AuditColumn) LoadOnly() bool { return c.Dependency == "" && len(c.Load) > 0 }

// Target is what the column faults: the dependency, "DEP/class", or for a
// column of load alone "load of /a+/b".
func (c AuditColumn) Target() string {
	switch {
	case c.LoadOnly():
		return "load of /" + strings.Join(c.Load, "+/")
	case c.Class == "":
		return c.Dependency
	}
	return c.Dependency + "/" + c.Class
}

// CallClass is a named class of a dependency's calls: a PostgreSQL
// dependency's statements whose text matches Match (RE2), or an HTTP
// dependency's requests whose method and path it matches (a route,
// faultproxy.ValidateRoute).
type CallClass struct {
	Name  string `json:"name"`
	Match string `json:"match"`
}

// A proxy's count of the calls of each class (labelled class): a
// PostgreSQL proxy's queries, an HTTP proxy's requests. ClassCallMetrics
// are both, for a reader that does not know the dependency's plane (a
// proxy exports one of them).
const (
	MetricPgClassQueries = "faultproxy_pg_class_queries_total"
	MetricClassRequests  = "faultproxy_class_requests_total"
)

// ClassCallMetrics are the metrics of a proxy's calls of each class, one
// per plane that classes its calls.
var ClassCallMetrics = []string{MetricPgClassQueries, MetricClassRequests}

// Fault kinds of an audit.
const (
	AuditSlow    = "slow"
	AuditFailing = "failing"
	AuditLadder  = "ladder"
	// AuditControl is the condition of the control run: no fault (the
	// built-in healthy condition).
	AuditControl = "healthy"
)

// OnAbort values.
const (
	OnAbortContinue = "continue"
	OnAbortStop     = "stop"
)

// Calibration is how the call graph is measured: Requests requests to
// each endpoint alone, at Rate per second, with the proxies' request
// counts read before and after.
type Calibration struct {
	Requests int     `yaml:"requests,omitempty" json:"requests,omitempty"`
	Rate     float64 `yaml:"rate,omitempty" json:"rate,omitempty"`
}

// AbortRule is one stop condition. Exactly one of ErrorRate, P99 and
// Probe is set. ErrorRate and P99 watch Endpoint's results ("*": each
// endpoint's on its own, the canary not among them) completed over the
// last For (a sliding window, For > 0), once the fault has been in place
// that long and with at least 5 results in the window: the condition is
// met when their error rate (results not ok) reaches ErrorRate, or their
// p99 latency reaches P99. Requests the client gave up on on purpose and
// the load generator's own errors are left out. Probe is a URL the audit
// GETs every ProbeInterval while a fault is in place: the condition is met
// when it has answered no 2xx for For, counted from the first probe that
// did not (a probe not answered within the interval counts as not 2xx).
type AbortRule struct {
	Endpoint  string        `yaml:"endpoint,omitempty" json:"endpoint,omitempty"`
	ErrorRate float64       `yaml:"error_rate,omitempty" json:"error_rate,omitempty"`
	P99       time.Duration `yaml:"p99,omitempty" json:"p99_ns,omitempty"`
	Probe     string        `yaml:"probe,omitempty" json:"probe,omitempty"`
	For       time.Duration `yaml:"for,omitempty" json:"for_ns,omitempty"`
	// ProbeInterval is how often Probe is asked (default 100 ms), one
	// request at a time; a request unanswered after For (at least the
	// interval) is For without a 2xx.
	ProbeInterval time.Duration `yaml:"probe_interval,omitempty" json:"probe_interval_ns,omitempty"`
}

// MarshalYAML writes r's durations as text ("500ms"), as a spec has them.
func (r AbortRule) MarshalYAML() (any, error) {
	dur := func(d time.Duration) string {
		if d == 0 {
			return ""
		}
		return d.String()
	}
	return struct {
		Endpoint      string  `yaml:"endpoint,omitempty"`
		ErrorRate     float64 `yaml:"error_rate,omitempty"`
		P99           string  `yaml:"p99,omitempty"`
		Probe         string  `yaml:"probe,omitempty"`
		For           string  `yaml:"for,omitempty"`
		ProbeInterval string  `yaml:"probe_interval,omitempty"`
	}{r.Endpoint, r.ErrorRate, dur(r.P99), r.Probe, dur(r.For), dur(r.ProbeInterval)}, nil
}

// UnmarshalYAML reads r as MarshalYAML writes it (durations as text).
func (r *AbortRule) UnmarshalYAML(unmarshal func(any) error) error {
	var t struct {
		Endpoint      string  `yaml:"endpoint"`
		ErrorRate     float64 `yaml:"error_rate"`
		P99           string  `yaml:"p99"`
		Probe         string  `yaml:"probe"`
		For           string  `yaml:"for"`
		ProbeInterval string  `yaml:"probe_interval"`
	}
	if err := unmarshal(&t); err != nil {
		return err
	}
	*r = AbortRule{Endpoint: t.Endpoint, ErrorRate: t.ErrorRate, Probe: t.Probe}
	for _, d := range []struct {
		s   string
		dst *time.Duration
	}{{t.P99, &r.P99}, {t.For, &r.For}, {t.ProbeInterval, &r.ProbeInterval}} {
		if d.s == "" {
			continue
		}
		v, err := time.ParseDuration(d.s)
		if err != nil {
			return err
		}
		*d.dst = v
	}
	return nil
}

// Abort is a stop condition that fired in a run: what triggered it, when,
// and when the faults were gone.
type Abort struct {
	// Rule is the condition as written, e.g. "/checkout error rate ≥ 0.5
	// for 500ms".
	Rule string `json:"rule"`
	// Endpoint is the endpoint whose results met it ("" for a probe).
	Endpoint string `json:"endpoint,omitempty"`
	// Trigger is what was seen, e.g. "/checkout error rate 0.82 over the
	// last 500ms (41 of 50)".
	Trigger string `json:"trigger"`
	// At is when the condition was found met; Cleared when every fault had
	// been removed (zero if removing one failed). Each removal is a fault
	// event of Action FaultAbort; when the fault phase ended between the
	// two, its faults were cleared as usual (FaultClear) and Cleared is
	// when the abort found them gone.
	At      time.Time `json:"at"`
	Cleared time.Time `json:"cleared,omitzero"`
}

// CallGraphFile is the results folder's measured call graph (CallGraph).
const CallGraphFile = "callgraph.json"

// CallGraph is the call graph an audit's calibration measured: which
// dependencies' proxies saw calls while each endpoint's traffic ran alone.
type CallGraph struct {
	// Requests is how many requests each endpoint got; Rate their rate.
	Requests int     `json:"requests"`
	Rate     float64 `json:"rate"`
	// Endpoints are the endpoints in order, each with the calls every
	// dependency's proxy saw per request while it ran alone (the calls in
	// an idle stretch of the same length subtracted).
	Endpoints []EndpointCalls `json:"endpoints"`
	// Edges are the calls found: endpoint → the dependencies it calls (at
	// least MinCallsPerRequest calls per request).
	Edges map[string][]string `json:"edges"`
	// Failed are the endpoints whose calibration requests did not get a
	// 2xx (their calls may be missing).
	Failed map[string]string `json:"failed,omitempty"`
}

// EndpointCalls is one endpoint's calls per request, by dependency.
type EndpointCalls struct {
	Endpoint string             `json:"endpoint"`
	OK       int                `json:"ok"` // requests answered 2xx
	Calls    map[string]float64 `json:"calls_per_request"`
	// Classes are, per dependency with classes (statement classes of a
	// PostgreSQL one, route classes of an HTTP one), the calls of each
	// class per request (a call may be of several).
	Classes map[string]map[string]float64 `json:"class_calls_per_request,omitempty"`
}

// ClassCalls is endpoint ep's calls of class cls of dependency dep per
// request, as g measured them; false when g did not measure it (no classes
// counted, or ep's requests unanswered).
func (g *CallGraph) ClassCalls(ep, dep, cls string) (float64, bool) {
	if g == nil {
		return 0, false
	}
	if _, failed := g.Failed[ep]; failed {
		return 0, false
	}
	for _, ec := range g.Endpoints {
		if ec.Endpoint == ep {
			n, ok := ec.Classes[dep][cls]
			return n, ok
		}
	}
	return 0, false
}

// ClassShare is the share of endpoint ep's calls to dependency dep that
// are of class cls, as g measured them; false when g did not measure it or
// ep does not call dep.
func (g *CallGraph) ClassShare(ep, dep, cls string) (float64, bool) {
	n, ok := g.ClassCalls(ep, dep, cls)
	if !ok {
		return 0, false
	}
	var total float64
	for _, ec := range g.Endpoints {
		if ec.Endpoint == ep {
			total = ec.Calls[dep]
		}
	}
	if !(total >= MinCallsPerRequest) {
		return 0, false
	}
	return min(1, max(0, n/total)), true
}

// MinCallsPerRequest is the fewest calls per request of an endpoint to a
// dependency that make an edge of the call graph: an endpoint that calls
// a dependency on one request in ten still calls it.
const MinCallsPerRequest = 0.1

// DefaultAudit returns the defaults of every zero field.
func DefaultAudit() Audit {
	return Audit{
		Faults: []string{AuditSlow, AuditFailing}, SlowT: 0.9,
		DegradedP99RiseT: 0.25, DegradedErrorRate: 0.01,
		Calibration: Calibration{Requests: 20, Rate: 20},
		OnAbort:     OnAbortContinue,
	}
}

// WithDefaults returns a with every zero field set from DefaultAudit.
func (a Audit) WithDefaults() Audit {
	d := DefaultAudit()
	if len(a.Faults) == 0 {
		a.Faults = d.Faults
	}
	if a.SlowT == 0 {
		a.SlowT = d.SlowT
	}
	if a.DegradedP99RiseT == 0 {
		a.DegradedP99RiseT = d.DegradedP99RiseT
	}
	if a.DegradedErrorRate == 0 {
		a.DegradedErrorRate = d.DegradedErrorRate
	}
	if a.Calibration.Requests == 0 {
		a.Calibration.Requests = d.Calibration.Requests
	}
	if a.Calibration.Rate == 0 {
		a.Calibration.Rate = d.Calibration.Rate
	}
	if a.OnAbort == "" {
		a.OnAbort = d.OnAbort
	}
	a.Abort = append([]AbortRule(nil), a.Abort...) // the caller's stay as they are
	for i, r := range a.Abort {
		if r.Endpoint == "" && r.Probe == "" {
			r.Endpoint = "*"
		}
		if r.Probe != "" && r.ProbeInterval == 0 {
			r.ProbeInterval = 100 * time.Millisecond
		}
		a.Abort[i] = r
	}
	return a
}
