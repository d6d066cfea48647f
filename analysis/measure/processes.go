package measure

import (
	"github.com/bulkheadlab/bulkheadlab/analysis/rundir"
	"github.com/bulkheadlab/bulkheadlab/internal/rundata"
)

// ProcessesRun is what one run's layout cost in processes, memory and CPU:
// seed-004's walls of "separate processes" against "a semaphore per
// dependency inside one process ... for none of the operational cost". A
// service of several processes (a process per pool, or a fleet) is read as
// their sum (rundir's fleet view: resident memory, CPU seconds and
// GOMAXPROCS add up).
type ProcessesRun struct {
	// Processes is how many processes the service ran as.
	Processes int `json:"processes"`
	// BaselineRSSBytes is their resident memory together, the mean over
	// the baseline phase (before any fault: what the layout costs at
	// rest); RSSBytes the mean over the fault phase and PeakRSSBytes its
	// largest sample there.
	BaselineRSSBytes Num `json:"baseline_rss_bytes"`
	RSSBytes         Num `json:"rss_bytes"`
	PeakRSSBytes     Num `json:"peak_rss_bytes"`
	// GOMAXPROCS is the CPUs they may run Go code on, together; Cores the
	// CPU they used over the fault phase, in cores.
	GOMAXPROCS Num `json:"gomaxprocs"`
	Cores      Num `json:"cores"`
}

// processesFamily adds what the run's layout cost when the experiment
// names the processes claim.
func processesFamily(r *rundir.Run, s *RunSummary, ex rundata.Expectations) {
	if ex.Processes != nil {
		s.Processes = processesStats(r)
	}
}

// processesStats computes the run's ProcessesRun.
func processesStats(run *rundir.Run) *ProcessesRun {
	p := &ProcessesRun{Processes: max(1, len(run.Meta.Instances)), BaselineRSSBytes: Undefined, RSSBytes: Undefined, PeakRSSBytes: Undefined,
		GOMAXPROCS: Undefined, Cores: Undefined}
	rss := run.Metric(rundata.ServiceComponent, rundata.MetricResidentBytes)
	if b, ok := run.PhaseSpan(rundata.PhaseBaseline); ok {
		p.BaselineRSSBytes = meanOver(rss, b.Start, b.End)
	}
	from, ok := run.FaultStart()
	if !ok {
		return p
	}
	to := run.FaultEnd()
	p.RSSBytes, p.PeakRSSBytes = meanOver(rss, from, to), peakOver(rss, from, to)
	if g := run.Metric(rundata.ServiceComponent, rundata.MetricGoMaxProcs); len(g) > 0 {
		p.GOMAXPROCS = Num(g[len(g)-1].Value)
	}
	if d, ok := rundir.DeltaOver(run.Metric(rundata.ServiceComponent, rundata.MetricCPUSeconds), from, to); ok && to.After(from) {
		p.Cores = Num(d / to.Sub(from).Seconds())
	}
	return p
}

// ProcessesOf is r's ProcessesRun, every number undefined when it has
// none.
func ProcessesOf(r RunSummary) ProcessesRun {
	if r.Processes == nil {
		return ProcessesRun{BaselineRSSBytes: Undefined, RSSBytes: Undefined, PeakRSSBytes: Undefined, GOMAXPROCS: Undefined, Cores: Undefined}
	}
	return *r.Processes
}
