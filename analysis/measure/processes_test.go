package measure

import (
	"math"
	"testing"
	"time"

	"github.com/bulkheadlab/bulkheadlab/analysis/rundir"
	"github.com/bulkheadlab/bulkheadlab/internal/rundata"
)

// TestProcessesStats: a run of two processes (one per pool) costs their
// count, their resident memory together (mean over the baseline, mean and
// peak over the fault), their GOMAXPROCS together and the CPU they used
// over the fault; a run of one process counts one, and a run without
// expectations.processes has none of these numbers.
func TestProcessesStats(t *testing.T) {
	t0 := time.Unix(1_000_000, 0).UTC()
	from, to := t0.Add(2*time.Second), t0.Add(4*time.Second)
	r := &rundir.Run{Meta: rundata.RunMeta{Instances: []string{"service-1", "service-2"},
		InstanceEndpoints: map[string][]string{"service-1": {"a"}, "service-2": {"b"}},
		Phases:            []rundata.PhaseSpan{{Name: rundata.PhaseBaseline, Start: t0, End: from}, {Name: rundata.PhaseFault, Start: from, End: to}}}}
	for i := 0; i < 16; i++ {
		at := t0.Add(time.Duration(i)*250*time.Millisecond + 125*time.Millisecond) // between the phases' edges
		rssA := 30 << 20
		if at.After(from) {
			rssA = 40 << 20 // the decoding process grows in the fault
		}
		cpu := 0.05 * float64(i) / 4 // 0.05 cores each before the fault
		if at.After(from) {
			cpu = 0.1 + 0.3*at.Sub(from).Seconds() // 0.3 cores each in it
		}
		// The two processes as rundir.Load's fleet view sums them.
		r.Metrics = append(r.Metrics, rundata.MetricSample{Time: at, Component: rundata.ServiceComponent, Values: map[string]float64{
			rundata.MetricResidentBytes: float64(rssA + 28<<20), rundata.MetricGoMaxProcs: 2, rundata.MetricCPUSeconds: 2 * cpu}})
	}
	ex := rundata.DefaultExpectations()
	ex.Processes = &rundata.ProcessesRoles{CPU: "payload"}
	var s RunSummary
	processesFamily(r, &s, ex)
	p := s.Processes
	if p == nil {
		t.Fatal("no processes numbers with expectations.processes")
	}
	mib := func(n Num) float64 { return float64(n) / (1 << 20) }
	if p.Processes != 2 || mib(p.BaselineRSSBytes) != 58 || mib(p.RSSBytes) != 68 || mib(p.PeakRSSBytes) != 68 || p.GOMAXPROCS != 2 {
		t.Errorf("processes %d, rss %.1f/%.1f/%.1f MiB, GOMAXPROCS %v; want 2, 58/68/68, 2", p.Processes, mib(p.BaselineRSSBytes), mib(p.RSSBytes), mib(p.PeakRSSBytes), p.GOMAXPROCS)
	}
	if c := float64(p.Cores); c < 0.55 || c > 0.65 {
		t.Errorf("cores %v, want 0.6 (0.3 each)", c)
	}
	if ProcessesOf(RunSummary{}).Processes != 0 || !math.IsNaN(float64(ProcessesOf(RunSummary{}).PeakRSSBytes)) {
		t.Errorf("ProcessesOf a run without numbers: %+v", ProcessesOf(RunSummary{}))
	}
	var none RunSummary
	processesFamily(r, &none, rundata.DefaultExpectations())
	if none.Processes != nil {
		t.Errorf("processes numbers without expectations.processes: %+v", none.Processes)
	}
	one := &rundir.Run{Meta: rundata.RunMeta{Phases: r.Meta.Phases}}
	if got := processesStats(one); got.Processes != 1 {
		t.Errorf("one process counted %d", got.Processes)
	}
}
