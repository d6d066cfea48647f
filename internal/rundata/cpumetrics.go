package rundata

// Metric names of the CPU claim, read from the service's samples (and
// present in every Go component's: internal/runtimestats).
const (
	// The Go runtime's CPU accounting (runtime/metrics /cpu/classes/...),
	// in CPU-seconds: the GC's (background, assists, pauses), the unused
	// part, and GOMAXPROCS × wall time. The GC's share of the CPU the
	// process used over an interval is ΔGC / (ΔTotal − ΔIdle).
	MetricGoCPUGC    = "bulkheadlab_go_cpu_gc_seconds_total"
	MetricGoCPUIdle  = "bulkheadlab_go_cpu_idle_seconds_total"
	MetricGoCPUTotal = "bulkheadlab_go_cpu_total_seconds_total"
	// The service's decoding of its dependencies' JSON bodies, labelled
	// dependency like MetricDepRequests: the histogram's _sum and _count,
	// and the bytes decoded.
	MetricDecodeSum   = "bulkheadlab_dependency_decode_seconds_sum"
	MetricDecodeCount = "bulkheadlab_dependency_decode_seconds_count"
	MetricDecodeBytes = "bulkheadlab_dependency_decoded_bytes_total"
)
