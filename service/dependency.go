package service

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"time"

	"github.com/bulkheadlab/bulkheadlab/internal/rundata"
	"github.com/prometheus/client_golang/prometheus"
)

// Dependency call outcomes (the outcome label of
// bulkheadlab_dependency_requests_total).
const (
	outcomeOK      = "ok"
	outcomeTimeout = "timeout"
	outcomeError   = "error"
	// outcomeCancelled: the client went away before the dependency answered;
	// neither the dependency's fault nor the timeout's.
	outcomeCancelled = "cancelled"
)

// dependency is one downstream the service calls, with its own transport.
// Its calls hold a slot of its connection pool (its own, or one shared with
// the other dependencies) for their round trip. Safe for concurrent use.
type dependency struct {
	name      string
	url       string
	transport *http.Transport
	client    *http.Client

	// db and query are set for a database dependency (dbdependency.go):
	// a call runs query on db instead of a GET of url.
	db    *sql.DB
	query string

	conns        *connPool
	connWait     prometheus.Observer
	connHold     prometheus.Observer
	connTimeouts prometheus.Counter
	decodeTime   prometheus.Observer
	decodedBytes prometheus.Counter

	// inflight counts the calls in flight, each holding mem's state; New
	// sets them (a bare dependency counts into a gauge nobody exports and
	// holds no state).
	inflight prometheus.Gauge
	mem      *callMemory
}

// newDependency returns the dependency name at url, whose calls draw from
// conns. Its transport keeps up to limit connections (the connection pool's
// limit, so that the pool, not the transport, is what a call waits for).
func newDependency(name, url string, limit int, conns *connPool, m connWaitMetrics, dm decodeMetrics) *dependency {
	t := &http.Transport{
		Proxy:               nil, // never route the experiment through an environment proxy
		DialContext:         (&net.Dialer{Timeout: 5 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
		MaxConnsPerHost:     limit,
		MaxIdleConnsPerHost: limit,
		MaxIdleConns:        limit,
		IdleConnTimeout:     90 * time.Second,
	}
	return &dependency{name: name, url: url, transport: t, client: &http.Client{Transport: t},
		conns: conns, connWait: m.wait.WithLabelValues(name), connHold: m.hold.WithLabelValues(name), connTimeouts: m.timeouts.WithLabelValues(name),
		decodeTime: dm.seconds.WithLabelValues(name), decodedBytes: dm.bytes.WithLabelValues(name),
		inflight: prometheus.NewGauge(prometheus.GaugeOpts{Name: "unexported"}), mem: &callMemory{}}
}

// callResult is what one dependency call produced.
type callResult struct {
	outcome     string
	body        []byte
	contentType string
	err         error
	elapsed     time.Duration
	// decodeTime is how long decoding its JSON body took (zero: not JSON).
	decodeTime time.Duration
}

// call performs GET url under ctx (which carries the timeout T) and reads
// the whole body, so a body that arrives too late is a timeout too; a body
// longer than maxBody is an error (ErrBodyTooLarge), never truncated. A
// JSON body is then decoded (see decoded): the caller holds its permit
// through the decode, but not its connection, and the decode does not count
// against T or the call's elapsed time. The wait
// for a connection slot counts against ctx: a call whose deadline passes
// while it waits is a timeout that never reached the dependency.
//
// The call is in the dependency's in-flight gauge, and holds its request's
// state, from its start to its return.
func (d *dependency) call(ctx context.Context, requestID string, maxBody int64) callResult {
	d.inflight.Inc()
	defer d.inflight.Dec()
	defer d.mem.hold()()
	start := time.Now()
	res := d.do(ctx, requestID, maxBody)
	res.elapsed = time.Since(start)
	if res.err != nil {
		switch err := ctx.Err(); {
		case errors.Is(err, context.DeadlineExceeded):
			res.outcome = outcomeTimeout
		case errors.Is(err, context.Canceled):
			res.outcome = outcomeCancelled
		default:
			res.outcome = outcomeError
		}
		return res
	}
	return d.decoded(res)
}

func (d *dependency) do(ctx context.Context, requestID string, maxBody int64) callResult {
	if d.db != nil {
		return d.doQuery(ctx, maxBody)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, d.url, nil)
	if err != nil {
		return callResult{err: fmt.Errorf("dependency %s: %w", d.name, err)}
	}
	req.Header.Set(rundata.HeaderRequestID, requestID)
	if err := d.acquireConn(ctx); err != nil {
		return callResult{err: err}
	}
	defer d.releaseConn(time.Now()) // deferred first, so it runs after the body is closed
	resp, err := d.client.Do(req)
	if err != nil {
		return callResult{err: fmt.Errorf("dependency %s: %w", d.name, err)}
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxBody+1))
	if err != nil {
		return callResult{err: fmt.Errorf("dependency %s: reading body: %w", d.name, err)}
	}
	if int64(len(body)) > maxBody {
		return callResult{err: fmt.Errorf("dependency %s: %w (%d bytes)", d.name, ErrBodyTooLarge, maxBody)}
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return callResult{err: fmt.Errorf("dependency %s answered %s", d.name, resp.Status)}
	}
	return callResult{outcome: outcomeOK, body: body, contentType: resp.Header.Get("Content-Type")}
}

// acquireConn takes a slot of the dependency's connection pool within ctx
// and records the wait; the caller releases it. A deadline that passes
// while it waits is counted as a connection timeout.
func (d *dependency) acquireConn(ctx context.Context) error {
	waited, err := d.conns.acquire(ctx)
	if err != nil {
		if errors.Is(err, context.DeadlineExceeded) {
			d.connTimeouts.Inc()
		}
		return fmt.Errorf("dependency %s: waiting %v for a connection of pool %s: %w", d.name, waited.Round(time.Microsecond), d.conns.name, err)
	}
	d.connWait.Observe(waited.Seconds())
	return nil
}

// releaseConn gives back the connection slot taken at got and records
// how long the call held it.
func (d *dependency) releaseConn(got time.Time) {
	d.conns.release()
	d.connHold.Observe(time.Since(got).Seconds())
}

// serviceMetrics are the service's own metrics (the pools collect theirs).
type serviceMetrics struct {
	requests *prometheus.CounterVec
	duration *prometheus.HistogramVec
	inflight *prometheus.GaugeVec
	// depInflight and stateBytes are the calls in flight per dependency
	// and the request state they hold.
	depInflight *prometheus.GaugeVec
	stateBytes  prometheus.Gauge
}

func newServiceMetrics() serviceMetrics {
	return serviceMetrics{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: rundata.MetricDepRequests,
			Help: "Dependency calls by dependency (labelled with the calling endpoint's name: a, b) and outcome (ok, timeout, error, cancelled by the client).",
		}, []string{"dependency", "outcome"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "bulkheadlab_dependency_duration_seconds",
			Help:    "Duration of dependency calls, whatever their outcome.",
			Buckets: []float64{0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.15, 0.2, 0.25, 0.3, 0.5, 1, 2.5, 5, 10},
		}, []string{"dependency"}),
		inflight: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "bulkheadlab_http_inflight_requests",
			Help: "Requests being served, by endpoint (a, b), including those waiting for a permit.",
		}, []string{"endpoint"}),
		depInflight: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "bulkheadlab_dependency_inflight",
			Help: "Dependency calls in flight (waiting for a connection, in their round trip or decoding), by dependency; by Little's law arrival rate × call duration when nothing bounds them.",
		}, []string{"dependency"}),
		stateBytes: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "bulkheadlab_request_state_bytes",
			Help: "Bytes of request state held by the dependency calls in flight (request_state_bytes each).",
		}),
	}
}

func (m serviceMetrics) register(r prometheus.Registerer, endpoints []string) {
	r.MustRegister(m.requests, m.duration, m.inflight, m.depInflight, m.stateBytes)
	for _, e := range endpoints { // export zeros from the start
		m.inflight.WithLabelValues(e)
		m.depInflight.WithLabelValues(e)
		m.duration.WithLabelValues(e)
		for _, o := range []string{outcomeOK, outcomeTimeout, outcomeError, outcomeCancelled} {
			m.requests.WithLabelValues(e, o)
		}
	}
}

func (m serviceMetrics) observe(dep string, res callResult) {
	m.requests.WithLabelValues(dep, res.outcome).Inc()
	m.duration.WithLabelValues(dep).Observe(res.elapsed.Seconds())
}
