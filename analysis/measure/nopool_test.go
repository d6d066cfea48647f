package measure

import (
	"math"
	"testing"
	"time"

	"github.com/bulkheadlab/bulkheadlab/analysis/rundir"
	"github.com/bulkheadlab/bulkheadlab/internal/rundata"
)

// growthRun is a run whose fault phase lasts 2 s from t0+2s: the service's
// calls in flight to A sampled every 250 ms (2 before the fault, then
// inflight(t) after fault start) and its resident memory 30 MiB plus 320
// KiB per call; a limiter's counters and a proxy's count as given.
func growthRun(inflight func(t float64) float64, rejected float64) *Run {
	t0 := time.Unix(1_000_000, 0).UTC()
	from, to := t0.Add(2*time.Second), t0.Add(4*time.Second)
	r := &rundir.Run{Meta: rundata.RunMeta{
		Endpoints: []rundata.EndpointInfo{{Name: "a", Dependency: "A", Rate: 200}, {Name: "b", Dependency: "B", Rate: 50}},
		Phases: []rundata.PhaseSpan{{Name: rundata.PhaseBaseline, Start: t0, End: from}, {Name: rundata.PhaseFault, Start: from, End: to},
			{Name: rundata.PhaseRecovery, Start: to, End: to.Add(time.Second)}}}}
	for i := 0; i <= 20; i++ {
		at := t0.Add(time.Duration(i) * 250 * time.Millisecond)
		n := 2.0
		if at.After(from) {
			n = inflight(at.Sub(from).Seconds())
		}
		r.Metrics = append(r.Metrics,
			rundata.MetricSample{Time: at, Component: rundata.ServiceComponent, Values: map[string]float64{
				rundata.Key(MetricDepInflight, rundata.L("dependency", "a")):       n,
				rundata.MetricResidentBytes:                                        30<<20 + n*320*1024,
				rundata.Key(MetricRateLimitRate, rundata.L("dependency", "a")):     220,
				rundata.Key(MetricRateLimitRejected, rundata.L("dependency", "a")): rejected * float64(i) / 20,
			}},
			rundata.MetricSample{Time: at, Component: rundata.ProxyComponent("A"), Values: map[string]float64{rundata.MetricProxyInflight: min(n, 12)}})
	}
	return &Run{Data: r}
}

// counts is /a's fault-phase results: ok of them ok, limited refused by
// its rate limiter.
func counts(ok, limited int64) EndpointStats {
	var c rundata.Counts
	c[rundata.ClassOK], c[rundata.ClassLimited] = ok, limited
	return EndpointStats{Endpoint: "a", FaultCounts: c}
}

// TestMemoryStats: calls in flight that grow at λ through the fault give
// slopes of λ over it and both its halves, the memory their 320 KiB each;
// calls that stop at a bound give a second half that does not grow; a run
// without the service's own count reads the proxy's; a run stopped before
// its fault's records uses the schedule's rate.
func TestMemoryStats(t *testing.T) {
	near := func(name string, got Num, want, tol float64) {
		t.Helper()
		if math.IsNaN(float64(got)) || math.Abs(float64(got)-want) > tol {
			t.Errorf("%s = %v, want %v ± %v", name, got, want, tol)
		}
	}
	grow := growthRun(func(s float64) float64 { return 2 + 200*s }, 0)
	m := memoryStats(grow.Data, "a", counts(400, 0))
	near("offered", m.OfferedPerS, 200, 1e-9)
	near("slope", m.InflightSlope, 200, 1e-6)
	near("first half", m.FirstHalfSlope, 200, 1e-6)
	near("second half", m.SecondHalfSlope, 200, 1e-6)
	near("growth share", m.GrowthShare, 1, 1e-6)
	near("late growth share", m.LateGrowthShare, 1, 1e-6)
	near("in flight at the end", m.InflightEnd, 402, 1e-9)
	near("bytes per call", m.BytesPerCall, 320<<10, 1)
	near("RSS growth", m.RSSGrowth, 400*320.0/1024/(30+2*320.0/1024), 1e-6) // from 2 calls' worth at fault start
	if m.Source != InflightFromService {
		t.Errorf("source %q, want the service's", m.Source)
	}

	bounded := growthRun(func(s float64) float64 { return min(10, 2+200*s) }, 0)
	m = memoryStats(bounded.Data, "a", counts(400, 0))
	near("bounded: second half", m.LateGrowthShare, 0, 1e-9)
	near("bounded: peak", m.InflightPeak, 10, 1e-9)

	proxy := growthRun(func(s float64) float64 { return 2 + 200*s }, 0)
	for i := range proxy.Data.Metrics {
		delete(proxy.Data.Metrics[i].Values, rundata.Key(MetricDepInflight, rundata.L("dependency", "a")))
	}
	if m = memoryStats(proxy.Data, "a", counts(400, 0)); m.Source != InflightFromProxy || m.InflightPeak != 12 {
		t.Errorf("without the service's count: source %q, peak %v; want the proxy's, 12", m.Source, m.InflightPeak)
	}
	near("stopped: the schedule's rate", memoryStats(grow.Data, "a", EndpointStats{Endpoint: "a"}).OfferedPerS, 200, 1e-9)
}

// TestRateLimitStats: the share of /a's results of class limited, the
// service's own count over the fault, the limit, and the calls in flight
// by the service's count (waiting for a connection included), baseline and
// fault.
func TestRateLimitStats(t *testing.T) {
	r := growthRun(func(float64) float64 { return 50 }, 40)
	s := rateLimitStats(r.Data, "a", counts(390, 10))
	// The sample at fault start is still the baseline's 2.
	if s.LimitedShare != 10.0/400 || s.LimitPerS != 220 || s.OfferedPerS != 200 || s.InflightBaseline != 2 || math.Abs(float64(s.InflightFault)-(2+8*50)/9.0) > 1e-9 ||
		s.InflightSource != InflightFromService || math.Abs(float64(s.LimiterRejected)-16) > 1e-9 {
		t.Errorf("rate-limit numbers %+v", *s)
	}
}

// TestSlope: least squares, undefined below two points or without spread.
func TestSlope(t *testing.T) {
	if got := Slope([]float64{0, 1, 2, 3}, []float64{1, 3, 5, 7}); got != 2 {
		t.Errorf("slope %v, want 2", got)
	}
	for _, xs := range [][]float64{{1}, {1, 1}} {
		if got := Slope(xs, xs); !math.IsNaN(got) {
			t.Errorf("slope of %v = %v, want NaN", xs, got)
		}
	}
}
