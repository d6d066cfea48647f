package measure

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"

	"github.com/bulkheadlab/bulkheadlab/analysis/render/words"
	"github.com/bulkheadlab/bulkheadlab/analysis/rundir"
	"github.com/bulkheadlab/bulkheadlab/internal/rundata"
)

// Sources of a TimeSplit.
const (
	// TimingServer: the responses' Server-Timing headers, a distribution
	// per metric (the load generator's rundata.ServerTiming).
	TimingServer = "server-timing"
	// TimingConnMetrics: the built-in service's connection wait and hold
	// histograms (bulkheadlab_conn_wait_seconds, _conn_hold_seconds), of
	// which the samples keep the sum and count: means only.
	TimingConnMetrics = "conn-metrics"
)

// The parts a TimingConnMetrics split names.
const (
	ConnWaitPart = "conn_wait"
	ConnHoldPart = "conn_hold"
)

// When a role grew from the baseline to the fault phase: the mean of its
// parts together (the mean latency is the mean wait plus the mean work, so
// the means say where added time went) rose by more than TimeGrowthMinMs,
// by more than TimeGrowthShare of its baseline mean, and by at least
// TimeGrowthOfRise of the other role's rise (a role that moved a few
// milliseconds beside one that moved 80 stayed flat: its move is the
// machine's noise, not where the time went).
const (
	TimeGrowthMinMs  = 2.0
	TimeGrowthShare  = 0.5
	TimeGrowthOfRise = 0.1
)

// WhereTime is where a run's endpoints spent their time, phase by phase:
// waiting (for a pool's connection, in a queue) or working (a query, a
// call), as the service itself said in its Server-Timing headers or in the
// histograms it exports, or, for the built-in service, as its connection
// metrics measure it.
type WhereTime struct {
	// Rows are per endpoint (sorted) and phase (in order, warmup left
	// out), then per scope of the service's histograms that is no endpoint
	// (sorted).
	Rows []TimeSplit `json:"rows"`
	// Shifts say, per endpoint or scope and source, what grew from the
	// baseline to the fault phase.
	Shifts []TimeShift `json:"shifts,omitempty"`
	// Notes say which histograms of external.timing.histograms gave no
	// row, and why (the service never exported one, …).
	Notes []string `json:"notes,omitempty"`
}

// TimeSplit is one endpoint's time in one phase, from one source.
type TimeSplit struct {
	// Endpoint is the endpoint; "" for a row of TimingMetrics whose scope
	// is no endpoint.
	Endpoint string `json:"endpoint"`
	// Scope (TimingMetrics) is what the histograms' series of the row
	// have in common when it is no endpoint: "service" (all of them),
	// `pool=orders` (the value of external.timing.histograms.by).
	Scope  string `json:"scope,omitempty"`
	Phase  string `json:"phase"`
	Source string `json:"source"`
	// Wait and Work are the parts of each role, sorted by name; the
	// metrics of the role rundata.TimingIgnore are left out.
	Wait []TimePart `json:"wait,omitempty"`
	Work []TimePart `json:"work,omitempty"`
	// With and Without (TimingServer) count the phase's results whose
	// response carried the header and those that did not; Bad the
	// malformed entries ignored. Undefined for TimingConnMetrics.
	With    Num `json:"with"`
	Without Num `json:"without"`
	Bad     Num `json:"bad"`
}

// TimePart is one metric's distribution over a phase. P50Ms and P99Ms are
// undefined for TimingConnMetrics (means only) and for a TimingMetrics
// summary or histogram without a +Inf bucket.
type TimePart struct {
	Name   string `json:"name"`
	Desc   string `json:"desc,omitempty"`
	Count  Num    `json:"count"`
	P50Ms  Num    `json:"p50_ms"`
	P99Ms  Num    `json:"p99_ms"`
	MeanMs Num    `json:"mean_ms"`
}

// Growth outcomes of a TimeShift.
const (
	GrewWait    = "wait"
	GrewWork    = "work"
	GrewBoth    = "both"
	GrewNeither = "neither"
)

// TimeShift is what grew of an endpoint's time from the baseline to the
// fault phase.
type TimeShift struct {
	Endpoint string `json:"endpoint"`
	Scope    string `json:"scope,omitempty"`
	Source   string `json:"source"`
	// Grew is GrewWait, GrewWork, GrewBoth or GrewNeither, by the means of
	// each role's parts together (TimeGrowthMinMs, TimeGrowthShare,
	// TimeGrowthOfRise).
	Grew string `json:"grew"`
	// Text says it in words, with the fault phase's numbers.
	Text string `json:"text"`
}

// timingFamily adds where the run's time went; nil when the service sent
// no Server-Timing, exports no connection hold times and declares no
// histograms.
func timingFamily(r *rundir.Run, s *RunSummary, _ rundata.Expectations) {
	s.WhereTime = timeSplits{r}.whereTime()
}

// timeSplits reads where the endpoints' time went, waiting or working:
// Server-Timing, connection hold times and histograms.
type timeSplits struct{ run *rundir.Run }

func (ts timeSplits) whereTime() *WhereTime {
	var w WhereTime
	hist := ts.histTiming()
	for _, ep := range ts.run.Endpoints() {
		w.add(ts.serverTimingRows(ep))
		w.add(ts.connTimingRows(ep))
		w.add(hist.rows[ep])
		delete(hist.rows, ep)
	}
	for _, scope := range slices.Sorted(maps.Keys(hist.rows)) {
		w.add(hist.rows[scope])
	}
	w.Notes = hist.notes
	if len(w.Rows)+len(w.Notes) == 0 {
		return nil
	}
	return &w
}

// add adds one endpoint's or scope's rows of one source, and their shift.
func (w *WhereTime) add(rows []TimeSplit) {
	if len(rows) == 0 {
		return
	}
	w.Rows = append(w.Rows, rows...)
	if sh, ok := timeShift(rows); ok {
		w.Shifts = append(w.Shifts, sh)
	}
}

// timedPhases are the run's phases whose time the report splits: all but
// the warmup, in order.
func (ts timeSplits) timedPhases() []string {
	var out []string
	for _, p := range ts.run.Meta.Phases {
		if p.Name != rundata.PhaseWarmup {
			out = append(out, p.Name)
		}
	}
	return out
}

// serverTimingRows are ep's phases as its Server-Timing headers tell them.
func (ts timeSplits) serverTimingRows(ep string) []TimeSplit {
	var out []TimeSplit
	for _, ph := range ts.timedPhases() {
		ps, ok := ts.run.PhaseSummary(ep, ph)
		if !ok || ps.ServerTiming == nil || ps.ServerTiming.With <= 0 {
			continue
		}
		st := ps.ServerTiming
		row := TimeSplit{Endpoint: ep, Phase: ph, Source: TimingServer, With: Num(st.With), Without: Num(st.Without), Bad: Num(st.Bad)}
		for _, m := range st.Metrics {
			part := TimePart{Name: m.Name, Desc: m.Desc, Count: Num(m.Dur.Count), P50Ms: Num(Millis(m.Dur.P50)),
				P99Ms: Num(Millis(m.Dur.P99)), MeanMs: Num(Millis(m.Dur.Mean))}
			switch ts.run.Meta.TimingRoles.RoleOf(m.Name, m.Desc) {
			case rundata.TimingWait:
				row.Wait = append(row.Wait, part)
			case rundata.TimingWork:
				row.Work = append(row.Work, part)
			}
		}
		out = append(out, row)
	}
	return out
}

// connTimingRows are ep's phases as the built-in service's connection
// metrics tell them: the mean wait for a connection and the mean time
// holding it. None for an endpoint without hold times (a service that
// exports only its waits, or none).
func (ts timeSplits) connTimingRows(ep string) []TimeSplit {
	if !observesConnPools(ts.run) {
		return nil
	}
	l := rundata.L("dependency", ep)
	var out []TimeSplit
	for _, ph := range ts.timedPhases() {
		span, ok := ts.run.PhaseSpan(ph)
		if !ok {
			continue
		}
		hold, holdN := ts.meanOver(rundata.MetricConnHoldSum, rundata.MetricConnHoldCount, l, span)
		if holdN <= 0 {
			continue
		}
		wait, waitN := ts.meanOver(rundata.MetricConnWaitSum, rundata.MetricConnWaitCount, l, span)
		row := TimeSplit{Endpoint: ep, Phase: ph, Source: TimingConnMetrics, With: Undefined, Without: Undefined, Bad: Undefined,
			Work: []TimePart{{Name: ConnHoldPart, Desc: "holding the connection: the query or call", Count: Num(holdN), P50Ms: Undefined, P99Ms: Undefined, MeanMs: hold}}}
		if waitN > 0 {
			row.Wait = []TimePart{{Name: ConnWaitPart, Desc: "waiting for a connection slot", Count: Num(waitN), P50Ms: Undefined, P99Ms: Undefined, MeanMs: wait}}
		}
		out = append(out, row)
	}
	return out
}

// meanOver is the mean in ms of a histogram's observations over span (its
// _sum and _count series of label l), and their number; 0 observations
// when the series are missing.
func (ts timeSplits) meanOver(sumName, countName string, l rundata.Label, span rundata.PhaseSpan) (Num, float64) {
	sum, ok1 := rundir.DeltaOver(ts.run.Metric(rundata.ServiceComponent, rundata.Key(sumName, l)), span.Start, span.End)
	n, ok2 := rundir.DeltaOver(ts.run.Metric(rundata.ServiceComponent, rundata.Key(countName, l)), span.Start, span.End)
	if !ok1 || !ok2 || n <= 0 {
		return Undefined, 0
	}
	return Num(1000 * sum / n), n
}

// timeShift compares one endpoint's fault row with its baseline row (one
// source); ok is false without both.
func timeShift(rows []TimeSplit) (TimeShift, bool) {
	var base, fault *TimeSplit
	for i := range rows {
		switch rows[i].Phase {
		case rundata.PhaseBaseline:
			base = &rows[i]
		case rundata.PhaseFault:
			fault = &rows[i]
		}
	}
	if base == nil || fault == nil {
		return TimeShift{}, false
	}
	wait, work := roleMeans(base.Wait, fault.Wait), roleMeans(base.Work, fault.Work)
	waitGrew, workGrew := wait.grew(work.rise()), work.grew(wait.rise())
	sh := TimeShift{Endpoint: fault.Endpoint, Scope: fault.Scope, Source: fault.Source, Grew: GrewNeither}
	switch {
	case waitGrew && workGrew:
		sh.Grew = GrewBoth
	case waitGrew:
		sh.Grew = GrewWait
	case workGrew:
		sh.Grew = GrewWork
	}
	var what string
	switch {
	case sh.Grew == GrewWait && work.names != "":
		what = "the wait grew (" + wait.String() + ") while the work stayed flat (" + work.String() + "): the time went to waiting, not to the work"
	case sh.Grew == GrewWait:
		what = "the wait grew (" + wait.String() + "); no work was reported"
	case sh.Grew == GrewWork && wait.names != "":
		what = "the work grew (" + work.String() + ") while the wait stayed flat (" + wait.String() + "): the work itself became slower"
	case sh.Grew == GrewWork:
		what = "the work grew (" + work.String() + "); no wait was reported"
	case sh.Grew == GrewBoth:
		what = "both grew: the wait (" + wait.String() + ") and the work (" + work.String() + ")"
	default:
		what = "neither the wait nor the work grew from the baseline"
	}
	sh.Text = fmt.Sprintf("%s: fault phase: %s; %s", fault.Who(), splitWords(*fault), what)
	return sh, true
}

// Who names the row's endpoint ("/search") or, for a row of the service's
// histograms that is no endpoint's, its scope ("service", "pool=orders").
func (t TimeSplit) Who() string {
	if t.Endpoint == "" {
		return t.Scope
	}
	return "/" + t.Endpoint
}

// roleMean is one role's parts together, their means summed, in the
// baseline and the fault phase.
type roleMean struct {
	names       string // "`pool`", "`pool` + `queue`"; "" for none
	base, fault float64
}

// roleMeans sums a role's parts' means in the baseline and the fault
// phase; a part missing in a phase counts 0 there.
func roleMeans(base, fault []TimePart) roleMean {
	var m roleMean
	var names []string
	for _, ps := range [][]TimePart{fault, base} {
		for _, p := range ps {
			if !slices.Contains(names, "`"+p.Name+"`") {
				names = append(names, "`"+p.Name+"`")
			}
		}
	}
	m.names = strings.Join(names, " + ")
	for _, p := range base {
		m.base += orZero(float64(p.MeanMs))
	}
	for _, p := range fault {
		m.fault += orZero(float64(p.MeanMs))
	}
	return m
}

func (m roleMean) rise() float64 { return m.fault - m.base }

// grew applies the growth rule (TimeGrowthMinMs, TimeGrowthShare,
// TimeGrowthOfRise) with other the other role's rise.
func (m roleMean) grew(other float64) bool {
	r := m.rise()
	return m.names != "" && r > max(TimeGrowthMinMs, TimeGrowthShare*m.base) && r >= TimeGrowthOfRise*other
}

// String says the role's move: "`pool` mean 0.2 → 85 ms".
func (m roleMean) String() string {
	return m.names + " mean " + words.FmtHuman(m.base) + " → " + words.FmtHuman(m.fault) + " ms"
}

// splitWords says a row in words: "waited 85.0 ms (p50) for `pool`,
// worked 10.8 ms (p50) on `db`".
func splitWords(row TimeSplit) string {
	var parts []string
	for _, p := range row.Wait {
		parts = append(parts, "waited "+partValue(p)+" for `"+p.Name+"`")
	}
	for _, p := range row.Work {
		parts = append(parts, "worked "+partValue(p)+" on `"+p.Name+"`")
	}
	if len(parts) == 0 {
		return "no wait or work reported"
	}
	return strings.Join(parts, ", ")
}

// partValue is a part's typical value: "85.0 ms (p50)", or its mean where
// it has no quantiles.
func partValue(p TimePart) string {
	if math.IsNaN(float64(p.P50Ms)) {
		return words.FmtHuman(float64(p.MeanMs)) + " ms (mean)"
	}
	return words.FmtHuman(float64(p.P50Ms)) + " ms (p50)"
}
