package service

import (
	"fmt"
	"net/http"
	"runtime"
	"runtime/metrics"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// The service's memory: each dependency call can hold a request's state
// of Config.RequestStateBytes (a request's memory while it awaits its
// dependency), and Config.MaxHeapBytes is a hard ceiling on the heap past
// which the service answers 503 at once rather than allocate more. The
// heap and the resident set are exported by the Go and process collectors
// (go_memstats_heap_alloc_bytes, process_resident_memory_bytes); the
// ceiling acts on the runtime's live heap objects
// (/memory/classes/heap/objects:bytes, exported as
// bulkheadlab_heap_objects_bytes).

// RejectHeap is the X-Bulkhead-Reject value of the heap ceiling's refusals.
const RejectHeap = "heap"

// MaxRequestStateBytes bounds Config.RequestStateBytes.
const MaxRequestStateBytes = 64 << 20

// callMemory is what every dependency call holds: its slot in the
// dependency's in-flight gauge and its request's state.
type callMemory struct {
	stateBytes int
	inState    prometheus.Gauge // bytes of state held by calls in flight
}

// hold allocates a call's state, writing every page so that it is resident
// and not only reserved, and returns the function that lets it go.
func (m *callMemory) hold() func() {
	if m.stateBytes == 0 {
		return func() {}
	}
	state := make([]byte, m.stateBytes)
	for i := 0; i < len(state); i += 4096 {
		state[i] = 1
	}
	m.inState.Add(float64(m.stateBytes))
	return func() {
		runtime.KeepAlive(state)
		m.inState.Sub(float64(m.stateBytes))
	}
}

// heapObjects reads the bytes of the live and not-yet-swept heap objects
// (runtime/metrics; no stop-the-world).
func heapObjects(sample []metrics.Sample) uint64 {
	metrics.Read(sample)
	if sample[0].Value.Kind() != metrics.KindUint64 {
		return 0
	}
	return sample[0].Value.Uint64()
}

const heapObjectsMetric = "/memory/classes/heap/objects:bytes"

// heapGuard refuses requests while the heap is at or past its limit. It
// reads the heap at most once a millisecond. Safe for concurrent use.
type heapGuard struct {
	limit    uint64
	mu       sync.Mutex
	sample   []metrics.Sample // guarded by mu
	readAt   atomic.Int64     // Unix ns of the last read
	heap     atomic.Uint64
	rejected prometheus.Counter
}

const heapReadInterval = time.Millisecond

func newHeapGuard(limit int64, r prometheus.Registerer) *heapGuard {
	g := &heapGuard{limit: uint64(limit), sample: []metrics.Sample{{Name: heapObjectsMetric}}}
	g.rejected = prometheus.NewCounter(prometheus.CounterOpts{Name: "bulkheadlab_heap_guard_rejected_total",
		Help: "Requests refused at once (503, X-Bulkhead-Reject: heap) because the heap was at or past its ceiling."})
	r.MustRegister(g.rejected,
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "bulkheadlab_heap_guard_limit_bytes",
			Help: "The heap ceiling past which the service refuses requests."}, func() float64 { return float64(limit) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "bulkheadlab_heap_objects_bytes",
			Help: "Bytes of heap objects, live and not yet swept (runtime/metrics " + heapObjectsMetric + "): what the heap ceiling is compared with."},
			func() float64 { return float64(g.current(true)) }))
	return g
}

// current returns the heap's size, read again if the last read is older
// than heapReadInterval (or fresh is set) and no other caller is reading.
func (g *heapGuard) current(fresh bool) uint64 {
	now := time.Now().UnixNano()
	if !fresh && now-g.readAt.Load() < int64(heapReadInterval) {
		return g.heap.Load()
	}
	if !g.mu.TryLock() {
		return g.heap.Load()
	}
	defer g.mu.Unlock()
	v := heapObjects(g.sample)
	g.heap.Store(v)
	g.readAt.Store(now)
	return v
}

// heapObjectsGauge exports the live heap objects
// (bulkheadlab_heap_objects_bytes) of a service without a heap ceiling,
// read at scrape time: the memory the calls in flight hold, beside the
// resident set.
func heapObjectsGauge() prometheus.Collector {
	var mu sync.Mutex
	sample := []metrics.Sample{{Name: heapObjectsMetric}}
	return prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "bulkheadlab_heap_objects_bytes",
		Help: "Bytes of heap objects, live and not yet swept (runtime/metrics " + heapObjectsMetric + ")."},
		func() float64 {
			mu.Lock()
			defer mu.Unlock()
			return float64(heapObjects(sample))
		})
}

// wrap puts the guard in front of next.
func (g *heapGuard) wrap(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if h := g.current(false); h >= g.limit {
			g.rejected.Inc()
			writeOverShare(w, RejectHeap, fmt.Sprintf("heap %d bytes, at or past the ceiling of %d", h, g.limit))
			return
		}
		next.ServeHTTP(w, r)
	})
}
