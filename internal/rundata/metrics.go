package rundata

import (
	"sort"
	"strconv"
	"strings"
	"time"
)

// MetricSample is one scrape of one component's /metrics plus process stats.
// Values are keyed by the Prometheus series in text form (see Key), e.g.
// `bulkhead_pool_in_use{pool="a"}`; histograms contribute their _sum and
// _count series. The runner adds "process_cpu_seconds_total" and
// "process_resident_memory_bytes" for every child from /proc.
type MetricSample struct {
	Time      time.Time          `json:"time"`
	Component string             `json:"component"` // "service", "proxy-A", "dep-A", ...
	Values    map[string]float64 `json:"values"`
}

// Components of the samples that are not processes of the run: the
// service under test, the runner's own process (the load generator), and
// the machine.
const (
	ServiceComponent = "service"
	LoadgenComponent = "loadgen"
	MachineComponent = "machine"
)

// ProxyComponent is the component name of the fault proxy in front of
// dependency dep ("proxy-A").
func ProxyComponent(dep string) string { return "proxy-" + dep }

// DepComponent is the component name of the stub of dependency dep
// ("dep-A").
func DepComponent(dep string) string { return "dep-" + dep }

// Metric names the analysis reads from the service's samples.
const (
	MetricPoolInUse          = "bulkhead_pool_in_use"
	MetricPoolLimit          = "bulkhead_pool_limit"
	MetricPoolWaiting        = "bulkhead_pool_waiting"
	MetricPoolQueueLimit     = "bulkhead_pool_queue_limit"
	MetricPoolRejected       = "bulkhead_pool_rejected_total"
	MetricPoolExhaustedSince = "bulkhead_pool_exhausted_since_seconds"
	MetricDepRequests        = "bulkheadlab_dependency_requests_total"
	MetricDepDurationSum     = "bulkheadlab_dependency_duration_seconds_sum"
	MetricDepDurationCount   = "bulkheadlab_dependency_duration_seconds_count"
	// The service's connection pools, labelled pool (an endpoint's name, or
	// "shared" when every dependency draws from one pool): slots, slots
	// held by calls in their round trip, calls waiting for a slot.
	MetricConnPoolLimit   = "bulkheadlab_conn_pool_limit"
	MetricConnPoolInUse   = "bulkheadlab_conn_pool_in_use"
	MetricConnPoolWaiting = "bulkheadlab_conn_pool_waiting"
	// MetricConnPoolExhaustedSince is when (Unix seconds) the pool's last
	// free slot was taken, 0 while one is free.
	MetricConnPoolExhaustedSince = "bulkheadlab_conn_pool_exhausted_since_seconds"
	// The time calls waited for a connection slot, labelled dependency
	// like MetricDepRequests (the histogram's _sum and _count), and the
	// calls whose deadline passed while they waited.
	MetricConnWaitSum      = "bulkheadlab_conn_wait_seconds_sum"
	MetricConnWaitCount    = "bulkheadlab_conn_wait_seconds_count"
	MetricConnWaitTimeouts = "bulkheadlab_conn_wait_timeouts_total"
	// The time calls held their connection slot (the histogram's _sum and
	// _count), labelled dependency.
	MetricConnHoldSum   = "bulkheadlab_conn_hold_seconds_sum"
	MetricConnHoldCount = "bulkheadlab_conn_hold_seconds_count"
	// MetricProxyInflight is a fault proxy's count of requests in flight:
	// seen from outside the service, its concurrent calls to the dependency.
	MetricProxyInflight = "faultproxy_inflight_requests"
	// MetricProxyInflightPeak is the most requests a fault proxy had in
	// flight at once since the previous scrape (a scrape resets it to the
	// count in flight): a burst between two samples that the in-flight
	// gauge misses.
	MetricProxyInflightPeak = "faultproxy_inflight_peak"
	// MetricProxyRequests is a fault proxy's request counter.
	MetricProxyRequests = "faultproxy_requests_total"
	// The time each call a fault proxy relayed took past it (histograms'
	// _sum and _count): the HTTP plane's upstream time to the answer's
	// head, the PostgreSQL plane's query from its arrival to its
	// ReadyForQuery. The TCP plane has none.
	MetricProxyUpstreamSum   = "faultproxy_upstream_duration_seconds_sum"
	MetricProxyUpstreamCount = "faultproxy_upstream_duration_seconds_count"
	MetricPgQuerySum         = "faultproxy_pg_query_duration_seconds_sum"
	MetricPgQueryCount       = "faultproxy_pg_query_duration_seconds_count"
	// MetricProxyCancelled counts the requests whose caller went away
	// while the proxy held them (the proxy notices a moment later, so they
	// may overlap with the call that took their permit).
	MetricProxyCancelled = "faultproxy_cancelled_total"
	MetricGoroutines     = "go_goroutines"
	MetricGoMaxProcs     = "go_sched_gomaxprocs_threads"
	MetricCPUSeconds     = "process_cpu_seconds_total"
	MetricResidentBytes  = "process_resident_memory_bytes"
	// MetricRunqueueWait is the time a process's threads were runnable but
	// not running (Linux /proc/<pid>/task/*/schedstat), in seconds.
	MetricRunqueueWait = "process_runqueue_wait_seconds_total"
	// The p99 over each sampling interval of the Go runtime's scheduling
	// latency and GC pauses of a process, in seconds (derived by the
	// sampler from the component's histograms).
	MetricSchedLatencyP99 = "bulkheadlab_go_sched_latency_seconds_p99"
	MetricGCPauseP99      = "bulkheadlab_go_gc_pause_seconds_p99"
	// The sum (seconds) of the scheduling-latency histogram: how long
	// goroutines waited to run in all (estimated from the runtime's fine
	// bucket midpoints).
	MetricSchedLatencySum = "bulkheadlab_go_sched_latency_seconds_sum"
	// The machine's CPU time (MachineComponent, from /proc/stat): in all,
	// and busy (all but idle and iowait), in CPU-seconds; the part of it
	// stolen by the hypervisor for other guests (steal, counted as busy);
	// and its CPUs.
	MetricMachineCPUSeconds   = "machine_cpu_seconds_total"
	MetricMachineBusySeconds  = "machine_cpu_busy_seconds_total"
	MetricMachineStealSeconds = "machine_cpu_steal_seconds_total"
	MetricMachineCPUs         = "machine_cpus"
)

// SharedConnPool is the name of the built-in service's one connection pool
// when every dependency draws from it (conns_layout: shared); every other
// connection pool is named after its endpoint.
const SharedConnPool = "shared"

// Metric names of finite capacity (DepConfig.Capacity of a stub, the
// capacity fault of a proxy); the dependency-capacity rule reads them.
const (
	// A dependency stub's (DepComponent samples): its capacity (0:
	// unlimited), the requests holding a slot and those waiting for one,
	// and the _sum and _count of the waits of those that got one.
	MetricStubCapacity       = "bulkheadlab_dep_capacity"
	MetricStubInService      = "bulkheadlab_dep_in_service"
	MetricStubQueueLength    = "bulkheadlab_dep_queue_length"
	MetricStubQueueWaitSum   = "bulkheadlab_dep_queue_wait_seconds_sum"
	MetricStubQueueWaitCount = "bulkheadlab_dep_queue_wait_seconds_count"
	// A fault proxy's capacity fault (ProxyComponent samples), the same
	// series: its capacity (0: no capacity fault set), the affected
	// requests holding a slot and those waiting for one, and their waits.
	MetricProxyCapacity       = "faultproxy_capacity_limit"
	MetricProxyInService      = "faultproxy_capacity_in_service"
	MetricProxyQueueLength    = "faultproxy_capacity_queue_length"
	MetricProxyQueueWaitSum   = "faultproxy_capacity_queue_wait_seconds_sum"
	MetricProxyQueueWaitCount = "faultproxy_capacity_queue_wait_seconds_count"
)

// Label is one label of a series key.
type Label struct{ Name, Value string }

// Key renders a series key: name{l1="v1",l2="v2"} with the labels sorted by
// name and values quoted as Go strings; just name without labels. It is the
// one way the runner writes keys and the analysis looks them up.
func Key(name string, labels ...Label) string {
	if len(labels) == 0 {
		return name
	}
	ls := append([]Label(nil), labels...)
	sort.Slice(ls, func(i, j int) bool { return ls[i].Name < ls[j].Name })
	var b strings.Builder
	b.WriteString(name)
	b.WriteByte('{')
	for i, l := range ls {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(l.Name)
		b.WriteByte('=')
		b.WriteString(strconv.Quote(l.Value))
	}
	b.WriteByte('}')
	return b.String()
}

// L is shorthand for a Label.
func L(name, value string) Label { return Label{Name: name, Value: value} }

// ParseKey splits a series key written by Key into its metric name and
// labels. ok is false when key is not of that form.
func ParseKey(key string) (name string, labels map[string]string, ok bool) {
	i := strings.IndexByte(key, '{')
	if i < 0 {
		return key, nil, key != ""
	}
	name, rest := key[:i], key[i+1:]
	if name == "" || !strings.HasSuffix(rest, "}") {
		return "", nil, false
	}
	rest = rest[:len(rest)-1]
	labels = map[string]string{}
	for rest != "" {
		eq := strings.IndexByte(rest, '=')
		if eq <= 0 {
			return "", nil, false
		}
		ln := rest[:eq]
		q, err := strconv.QuotedPrefix(rest[eq+1:])
		if err != nil {
			return "", nil, false
		}
		v, _ := strconv.Unquote(q)
		labels[ln] = v
		rest = rest[eq+1+len(q):]
		if rest == "" {
			break
		}
		if rest[0] != ',' {
			return "", nil, false
		}
		rest = rest[1:]
	}
	return name, labels, true
}

// Sum adds up every series of metric name in values whose labels include all
// of want; found is false when no series matched.
func Sum(values map[string]float64, name string, want ...Label) (sum float64, found bool) {
	for k, v := range values {
		if !strings.HasPrefix(k, name) {
			continue
		}
		n, labels, ok := ParseKey(k)
		if !ok || n != name || !hasLabels(labels, want) {
			continue
		}
		sum += v
		found = true
	}
	return sum, found
}

// LabelValues returns the sorted distinct values of label over every series
// of metric name in values.
func LabelValues(values map[string]float64, name, label string) []string {
	set := map[string]bool{}
	for k := range values {
		if !strings.HasPrefix(k, name) {
			continue
		}
		if n, labels, ok := ParseKey(k); ok && n == name {
			if v, ok := labels[label]; ok {
				set[v] = true
			}
		}
	}
	out := make([]string, 0, len(set))
	for v := range set {
		out = append(out, v)
	}
	sort.Strings(out)
	return out
}

func hasLabels(labels map[string]string, want []Label) bool {
	for _, l := range want {
		if labels[l.Name] != l.Value {
			return false
		}
	}
	return true
}
