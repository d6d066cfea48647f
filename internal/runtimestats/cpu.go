package runtimestats

import (
	"runtime/metrics"

	"github.com/prometheus/client_golang/prometheus"
)

// Metric names of the runtime's CPU accounting (runtime/metrics
// /cpu/classes/...), counters in CPU-seconds. They are the runtime's
// estimates, not the kernel's: GOMAXPROCS integrated over wall time is
// CPUTotal, of which CPUIdle went unused and CPUGC was spent by the
// garbage collector (its background workers, assists by allocating
// goroutines, and pauses). The GC's share of the CPU the process used over
// an interval is ΔCPUGC / (ΔCPUTotal − ΔCPUIdle).
const (
	CPUGC    = "bulkheadlab_go_cpu_gc_seconds_total"
	CPUIdle  = "bulkheadlab_go_cpu_idle_seconds_total"
	CPUTotal = "bulkheadlab_go_cpu_total_seconds_total"
)

var cpuSources = []source{
	{CPUGC, "/cpu/classes/gc/total:cpu-seconds", "CPU time the garbage collector spent: background marking, assists and pauses (runtime/metrics /cpu/classes/gc/total:cpu-seconds, an estimate)."},
	{CPUIdle, "/cpu/classes/idle:cpu-seconds", "CPU time available to Go code that went unused (runtime/metrics /cpu/classes/idle:cpu-seconds, an estimate)."},
	{CPUTotal, "/cpu/classes/total:cpu-seconds", "GOMAXPROCS integrated over wall time: the CPU time available to Go code (runtime/metrics /cpu/classes/total:cpu-seconds)."},
}

// CPU is one sample of the runtime's CPU accounting, in CPU-seconds.
type CPU struct {
	GC, Idle, Total float64
}

// ReadCPU samples the runtime's CPU accounting of this process now. A
// class the runtime does not know reads as 0.
func ReadCPU() CPU {
	samples := readSources(cpuSources)
	v := make([]float64, len(samples))
	for i, s := range samples {
		if s.Value.Kind() == metrics.KindFloat64 {
			v[i] = s.Value.Float64()
		}
	}
	return CPU{GC: v[0], Idle: v[1], Total: v[2]}
}

func cpuDescs() []*prometheus.Desc {
	out := make([]*prometheus.Desc, len(cpuSources))
	for i, s := range cpuSources {
		out[i] = prometheus.NewDesc(s.name, s.help, nil, nil)
	}
	return out
}

func collectCPU(descs []*prometheus.Desc, ch chan<- prometheus.Metric) {
	c := ReadCPU()
	for i, v := range []float64{c.GC, c.Idle, c.Total} {
		ch <- prometheus.MustNewConstMetric(descs[i], prometheus.CounterValue, v)
	}
}
