package service

import (
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"golang.org/x/net/http/httpguts"

	"github.com/bulkheadlab/bulkheadlab/internal/rundata"
)

// Class is a request's criticality: what it is worth keeping when the
// service has to refuse something.
type Class string

const (
	// ClassCritical may use every permit of its pool, the reserved ones
	// included. It is the default class, as in Google's criticality
	// propagation: a request nobody marked is not shed for being unmarked.
	ClassCritical Class = rundata.PriorityCritical
	// ClassSheddable may hold at most a pool's size less its reserved
	// permits; past that it is refused at once.
	ClassSheddable Class = rundata.PrioritySheddable
)

// classes lists the classes, in the order of their metric series.
var classes = []Class{ClassCritical, ClassSheddable}

// DefaultPriorityHeader is the request header that names the class.
const DefaultPriorityHeader = "X-Priority"

// ParseClass parses "critical" or "sheddable".
func ParseClass(s string) (Class, error) {
	switch c := Class(s); c {
	case ClassCritical, ClassSheddable:
		return c, nil
	}
	return "", fmt.Errorf("class must be %q or %q, got %q", ClassCritical, ClassSheddable, s)
}

// PriorityConfig configures the priority stage: each request's class (a
// header, or fixed per endpoint) and, per pool, permits reserved for the
// critical class: of a pool of N permits with R reserved, sheddable calls
// hold at most N−R at once (holding or waiting for a permit), so R are
// always left for critical ones. The reserved permits sit idle while
// critical traffic is quiet: that is the mechanism's cost, exported as
// bulkheadlab_priority_reserved_idle_permits and its time integral.
type PriorityConfig struct {
	// Header names the class ("" means DefaultPriorityHeader); its value
	// is critical or sheddable, any other value is answered 400.
	Header string
	// Default is the class of a request without the header ("" means
	// ClassCritical).
	Default Class
	// Classes fixes the class of an endpoint's requests, whatever their
	// header says (keyed by endpoint name).
	Classes map[string]Class
	// Reserved is the permits of each pool reserved for the critical class
	// (keyed by pool name; a pool not listed reserves none). At most the
	// pool's size. A pool that reserves none does not limit sheddable
	// calls: they wait in its queue like any other.
	Reserved map[string]int
}

func (pc PriorityConfig) header() string {
	if pc.Header == "" {
		return DefaultPriorityHeader
	}
	return pc.Header
}

func (pc PriorityConfig) defaultClass() Class {
	if pc.Default == "" {
		return ClassCritical
	}
	return pc.Default
}

// validate reports the first invalid field as a *ConfigError
// (priority_header, priority_default, priority_classes[.endpoint],
// priority_reserved[.pool]); pools are the layout's.
func (pc PriorityConfig) validate(endpoints []string, pools []PoolSpec) error {
	if pc.Header != "" && !httpguts.ValidHeaderFieldName(pc.Header) {
		return fieldErrorf("priority_header", "%q is not a valid header name", pc.Header)
	}
	if pc.Default != "" {
		if _, err := ParseClass(string(pc.Default)); err != nil {
			return fieldErrorf("priority_default", "%v", err)
		}
	}
	for _, e := range sortedKeys(pc.Classes) {
		if !slices.Contains(endpoints, e) {
			return fieldErrorf("priority_classes", "no endpoint %q (endpoints: %s)", e, strings.Join(endpoints, ", "))
		}
		if _, err := ParseClass(string(pc.Classes[e])); err != nil {
			return fieldErrorf("priority_classes."+e, "%v", err)
		}
	}
	if len(pools) == 0 {
		return fieldErrorf("priority_reserved", "reserves permits of pools, and the layout has none")
	}
	size := map[string]int{}
	names := make([]string, len(pools))
	for i, ps := range pools {
		size[ps.Name], names[i] = ps.Config.Size, ps.Name
	}
	for _, p := range sortedKeys(pc.Reserved) {
		n, ok := size[p]
		r := pc.Reserved[p]
		switch {
		case !ok:
			return fieldErrorf("priority_reserved", "no pool %q (pools: %s)", p, strings.Join(names, ", "))
		case r < 0 || r > n:
			return fieldErrorf("priority_reserved."+p, "must be between 0 and the pool's size %d, got %d", n, r)
		}
	}
	return nil
}

// reservation is one pool's share between the classes. Safe for
// concurrent use.
type reservation struct {
	pool           string
	size, reserved int
	mu             sync.Mutex
	inFlight       [2]int // by index in classes
	// idleSeconds integrates max(0, reserved − critical in flight) over
	// time up to last.
	idleSeconds float64
	last        time.Time
}

func classIndex(c Class) int {
	if c == ClassSheddable {
		return 1
	}
	return 0
}

// advance integrates the idle reserved permits up to now (mu held).
func (r *reservation) advance(now time.Time) {
	r.idleSeconds += float64(r.idle()) * now.Sub(r.last).Seconds()
	r.last = now
}

// idle is the reserved permits no critical call uses (mu held): the
// permits a sheddable call may not take though nobody holds them.
func (r *reservation) idle() int { return max(0, r.reserved-r.inFlight[0]) }

// acquire admits a call of class c, or refuses a sheddable one at its
// share.
func (r *reservation) acquire(c Class) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	i := classIndex(c)
	if c == ClassSheddable && r.reserved > 0 && r.inFlight[i] >= r.size-r.reserved {
		return false
	}
	r.advance(time.Now())
	r.inFlight[i]++
	return true
}

func (r *reservation) release(c Class) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.advance(time.Now())
	r.inFlight[classIndex(c)]--
}

// priorityStage is the built priority stage: a reservation per pool.
type priorityStage struct {
	header     string
	def        Class
	fixed      map[string]Class
	byEndpoint map[string]*reservation
	pools      []*reservation
	requests   *prometheus.CounterVec

	reservedDesc, idleDesc, idleSecondsDesc, inFlightDesc, limitDesc *prometheus.Desc
}

// newPriorityStage builds the stage for the pools of layout, each
// endpoint's reservation that of the pool it draws from.
func newPriorityStage(pc PriorityConfig, layout *Layout, endpoints []string, r prometheus.Registerer) *priorityStage {
	ps := &priorityStage{header: pc.header(), def: pc.defaultClass(), fixed: pc.Classes, byEndpoint: map[string]*reservation{}}
	byPool := map[*Pool]*reservation{}
	now := time.Now()
	for _, e := range endpoints {
		p := layout.Pool(e)
		res, ok := byPool[p]
		if !ok {
			res = &reservation{pool: p.Name(), size: p.Config().Size, reserved: pc.Reserved[p.Name()], last: now}
			res.reserved = min(res.reserved, res.size) // a broken layout's pool may be another size
			byPool[p] = res
			ps.pools = append(ps.pools, res)
		}
		ps.byEndpoint[e] = res
	}
	pool, class := []string{"pool"}, []string{"pool", "class"}
	ps.requests = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: rundata.MetricPriorityRequests,
		Help: "Requests by the pool they draw from, class (critical, sheddable) and outcome: ok, timeout, error, over_share (a sheddable call refused at once: its class's share of the pool was in use), rejected (by the pool or another stage), cancelled, other.",
	}, []string{"pool", "class", "outcome"})
	ps.reservedDesc = prometheus.NewDesc(rundata.MetricPriorityReserved, "Permits of the pool reserved for the critical class.", pool, nil)
	ps.idleDesc = prometheus.NewDesc(rundata.MetricPriorityIdle, "Reserved permits no critical call uses: max(0, reserved − critical calls in flight), permits a sheddable call may not take.", pool, nil)
	ps.idleSecondsDesc = prometheus.NewDesc(rundata.MetricPriorityIdleSeconds, "Time integral of bulkheadlab_priority_reserved_idle_permits: its rate over an interval is the average number of reserved permits left idle.", pool, nil)
	ps.inFlightDesc = prometheus.NewDesc(rundata.MetricPriorityInflight, "Calls of the class admitted to the pool and not yet answered (holding or waiting for a permit).", class, nil)
	ps.limitDesc = prometheus.NewDesc(rundata.MetricPriorityClassLimit, "The most calls of the class the pool admits at once: its size for critical, size − reserved for sheddable.", class, nil)
	r.MustRegister(ps.requests, ps)
	for _, res := range ps.pools {
		for _, c := range classes {
			for _, o := range answerOutcomes {
				ps.requests.WithLabelValues(res.pool, string(c), o)
			}
		}
	}
	return ps
}

// Describe implements prometheus.Collector.
func (ps *priorityStage) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{ps.reservedDesc, ps.idleDesc, ps.idleSecondsDesc, ps.inFlightDesc, ps.limitDesc} {
		ch <- d
	}
}

// Collect implements prometheus.Collector; the idle integral is brought
// up to the scrape's time.
func (ps *priorityStage) Collect(ch chan<- prometheus.Metric) {
	gauge := func(d *prometheus.Desc, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, labels...)
	}
	for _, r := range ps.pools {
		r.mu.Lock()
		r.advance(time.Now())
		idle, idleSeconds, inFlight := r.idle(), r.idleSeconds, r.inFlight
		r.mu.Unlock()
		gauge(ps.reservedDesc, float64(r.reserved), r.pool)
		gauge(ps.idleDesc, float64(idle), r.pool)
		ch <- prometheus.MustNewConstMetric(ps.idleSecondsDesc, prometheus.CounterValue, idleSeconds, r.pool)
		for i, c := range classes {
			gauge(ps.inFlightDesc, float64(inFlight[i]), r.pool, string(c))
		}
		gauge(ps.limitDesc, float64(r.size), r.pool, string(ClassCritical))
		gauge(ps.limitDesc, float64(r.size-r.reserved), r.pool, string(ClassSheddable))
	}
}

// wrap puts the stage in front of endpoint's handler next.
func (ps *priorityStage) wrap(endpoint string, next http.Handler) http.Handler {
	res := ps.byEndpoint[endpoint]
	fixed, isFixed := ps.fixed[endpoint]
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		class := fixed
		if !isFixed {
			class = ps.def
			if v := r.Header.Get(ps.header); v != "" {
				c, err := ParseClass(v)
				if err != nil {
					writeJSON(w, http.StatusBadRequest, errorBody{Error: ps.header + ": " + err.Error(), Reason: "bad-priority"})
					return
				}
				class = c
			}
		}
		if !res.acquire(class) {
			ps.requests.WithLabelValues(res.pool, string(class), answerOverShare).Inc()
			writeOverShare(w, RejectPriority, fmt.Sprintf("pool %s: %d of its %d permits are reserved for critical calls, and sheddable ones hold the rest", res.pool, res.reserved, res.size))
			return
		}
		outcome := answerCancelled // if next panics
		defer func() {
			res.release(class)
			ps.requests.WithLabelValues(res.pool, string(class), outcome).Inc()
		}()
		outcome = serveObserved(next, w, r)
	})
}

var _ prometheus.Collector = (*priorityStage)(nil)
