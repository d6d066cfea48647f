package runner

import (
	"fmt"
	"io"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/bulkheadlab/bulkheadlab/analysis/render/words"
	"github.com/bulkheadlab/bulkheadlab/experiments/plan"
	"github.com/bulkheadlab/bulkheadlab/internal/rundata"
	"github.com/bulkheadlab/bulkheadlab/internal/textwrap"
	"github.com/bulkheadlab/bulkheadlab/loadgen"
)

// Progress receives the runner's live progress. Snapshot, Window and Pools
// are called from the load generator's and the sampler's goroutines; an
// implementation must be safe for concurrent use and quick.
type Progress interface {
	// RunStarted: attempt is 1, or 2 and up when an INVALID run is run again.
	RunStarted(run plan.Run, n, total, attempt int)
	Snapshot(run plan.Run, s loadgen.Snapshot)
	Window(run plan.Run, w loadgen.Window)
	Pools(run plan.Run, samples []rundata.MetricSample)
	RunEnded(run plan.Run, meta rundata.RunMeta, err error)
}

// DefaultWidth is the width TextProgress wraps to when Width is 0.
const DefaultWidth = 100

// PhaseProgress is implemented by a Progress that wants a run's phase
// records (phases.json) once its load has ended, before RunEnded.
type PhaseProgress interface {
	Phases(run plan.Run, phases []rundata.PhaseStats)
}

// TextProgress writes progress as text. On a terminal it redraws one status
// line a second (run, phase, elapsed/total, the current phase's success %
// and the last window's p99 per endpoint, pool use); it always prints one
// line per run when it ends: status, validity (with the reasons of an
// INVALID run), each endpoint's success and p99 over the fault phase (the
// numbers the report uses), the attempts so far and the time left. It is
// safe for concurrent use.
type TextProgress struct {
	W        io.Writer
	Terminal bool
	// Total is one run's load duration, for "elapsed/total".
	Total time.Duration
	// Width is the terminal's width the lines a run ends with are wrapped
	// to; 0 means DefaultWidth.
	Width int

	mu      sync.Mutex
	n, of   int
	attempt int
	pools   string
	last    loadgen.Snapshot
	phase   string                    // phase of the latest window
	byPhase map[[2]string]*phaseCount // endpoint, phase → counts
	start   time.Time
	// records are the run's phase records, once its load has ended.
	records []rundata.PhaseStats
	// began is when the first attempt started; attempts counts every
	// attempt started, spent the wall time of those that ended.
	began    time.Time
	attempts int
	ended    int
	spent    time.Duration
}

type phaseCount struct {
	counts loadgen.Counts
	p99    time.Duration // of the latest window
}

var _ Progress = (*TextProgress)(nil)

// RunStarted implements Progress.
func (p *TextProgress) RunStarted(run plan.Run, n, total, attempt int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.n, p.of, p.attempt, p.pools, p.last, p.start = n, total, attempt, "", loadgen.Snapshot{}, time.Now()
	p.phase, p.byPhase, p.records = "", map[[2]string]*phaseCount{}, nil
	if p.attempts == 0 {
		p.began = p.start
	}
	p.attempts++
	if p.Terminal {
		fmt.Fprintf(p.W, "\r\033[K[%d/%d] %s%s: starting components", n, total, run.ID, retryNote(attempt))
	}
}

func retryNote(attempt int) string {
	if attempt <= 1 {
		return ""
	}
	return fmt.Sprintf(" (run again: attempt %d)", attempt)
}

// Snapshot implements Progress.
func (p *TextProgress) Snapshot(run plan.Run, s loadgen.Snapshot) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.last = s
	if !p.Terminal {
		return
	}
	fmt.Fprintf(p.W, "\r\033[K[%d/%d] %s %-8s %4.0fs/%.0fs %s%s", p.n, p.of, run.ID, s.Phase,
		s.Elapsed.Seconds(), p.Total.Seconds(), p.endpointsLine(p.phase, "now"), p.pools)
}

// Window implements Progress: it accounts the window to its phase.
func (p *TextProgress) Window(_ plan.Run, w loadgen.Window) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.byPhase == nil {
		p.byPhase = map[[2]string]*phaseCount{}
	}
	k := [2]string{w.Endpoint, w.Phase}
	pc := p.byPhase[k]
	if pc == nil {
		pc = &phaseCount{}
		p.byPhase[k] = pc
	}
	for i, c := range w.Counts {
		pc.counts[i] += c
	}
	pc.p99 = w.Latency.P99
	p.phase = w.Phase
}

// Pools implements Progress: it keeps the service's pool use for the line
// (a fleet's: summed over its instances).
func (p *TextProgress) Pools(_ plan.Run, samples []rundata.MetricSample) {
	sum := map[string]*[3]float64{} // pool → in use, limit, waiting
	for _, sm := range samples {
		if sm.Component != rundata.ServiceComponent && !rundata.IsInstanceComponent(sm.Component) {
			continue
		}
		for _, pool := range rundata.LabelValues(sm.Values, rundata.MetricPoolInUse, "pool") {
			key := func(m string) string { return rundata.Key(m, rundata.L("pool", pool)) }
			if sum[pool] == nil {
				sum[pool] = &[3]float64{}
			}
			sum[pool][0] += sm.Values[key(rundata.MetricPoolInUse)]
			sum[pool][1] += sm.Values[key(rundata.MetricPoolLimit)]
			sum[pool][2] += sm.Values[key(rundata.MetricPoolWaiting)]
		}
	}
	var parts []string
	for pool, v := range sum {
		parts = append(parts, fmt.Sprintf("%s %.0f/%.0f+%.0fq", pool, v[0], v[1], v[2]))
	}
	sort.Strings(parts)
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(parts) > 0 {
		p.pools = "  pool " + strings.Join(parts, " ")
	}
}

// Phases implements PhaseProgress: the run's line then gives each
// endpoint's fault-phase p99 from them, as the report does.
func (p *TextProgress) Phases(_ plan.Run, phases []rundata.PhaseStats) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.records = phases
}

// RunEnded implements Progress.
func (p *TextProgress) RunEnded(run plan.Run, meta rundata.RunMeta, err error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.ended++
	p.spent += time.Since(p.start)
	if p.Terminal {
		fmt.Fprint(p.W, "\r\033[K")
	}
	validity := "valid"
	switch {
	case meta.Status != rundata.StatusComplete:
		validity = "-"
	case !meta.Valid:
		validity = "INVALID"
	}
	phase := rundata.PhaseFault
	if !p.hasPhase(phase) {
		phase = p.phase
	}
	line := fmt.Sprintf("[%d/%d] %-24s %-11s %-7s %5.1fs %s", p.n, p.of, run.ID, meta.Status, validity,
		time.Since(p.start).Seconds(), p.endpointsLine(phase, phase))
	if p.attempt > 1 {
		line += fmt.Sprintf("  (attempt %d)", p.attempt)
	}
	line += "  " + p.eta()
	if a := meta.Abort; a != nil {
		line += "  ABORTED: " + a.Trigger
	}
	if err != nil {
		line += "  error: " + err.Error()
	}
	width := p.Width
	if width <= 0 {
		width = DefaultWidth
	}
	fmt.Fprint(p.W, textwrap.Indent(line, width, "      "))
	if meta.Status == rundata.StatusComplete && !meta.Valid {
		var reasons []string
		for _, g := range words.Groups(attemptOf(meta).Broken) {
			r := words.Short(g.Name, g.Worst)
			if n := len(g.Where); n > 0 {
				r += " (" + strings.Join(g.Where[:min(n, 3)], ", ")
				if n > 3 {
					r += fmt.Sprintf(" and %d more", n-3)
				}
				r += ")"
			}
			reasons = append(reasons, r)
		}
		note := "excluded from every verdict"
		if p.attempt <= run.Retries {
			note = "it runs again at the end of this round"
		}
		for i, l := range textwrap.Wrap(fmt.Sprintf("INVALID (%s): %s", note, strings.Join(reasons, "; ")), width-8) {
			indent := "        "
			if i == 0 {
				indent = "      "
			}
			fmt.Fprintln(p.W, indent+l)
		}
	}
}

func (p *TextProgress) hasPhase(phase string) bool {
	for k := range p.byPhase {
		if k[1] == phase {
			return true
		}
	}
	return false
}

// eta counts the attempts so far and estimates the time left from the mean
// attempt: "attempt 7 (5 of 24 runs), about 2m10s left". Runs still to be
// run again are not known yet, so it can only grow by them.
func (p *TextProgress) eta() string {
	s := fmt.Sprintf("attempt %d of the experiment", p.attempts)
	if p.ended == 0 || p.of == 0 {
		return s
	}
	left := p.of - p.n
	if left <= 0 {
		return s + ", the last run"
	}
	mean := p.spent / time.Duration(p.ended)
	runs := "runs"
	if left == 1 {
		runs = "run"
	}
	return s + fmt.Sprintf(", about %s left (%d %s × %s; more if any is run again)", (time.Duration(left)*mean).Round(time.Second), left, runs, mean.Round(100*time.Millisecond))
}

// phaseP99 is the p99 of endpoint ep over phase from the run's phase
// records, as the report computes it; ok false without them or a result.
func (p *TextProgress) phaseP99(ep, phase string) (time.Duration, bool) {
	for _, r := range p.records {
		if r.Endpoint == ep && r.Phase == phase {
			return r.Latency.P99, r.Counts.Total() > 0
		}
	}
	return 0, false
}

// endpointsLine summarises each endpoint of the last snapshot: its success
// % over the given phase and its p99 — over the phase from the phase
// records once the run ended, else its latest window's ("—" when it had no
// result); label names the phase.
func (p *TextProgress) endpointsLine(phase, label string) string {
	var b strings.Builder
	for _, e := range p.last.Endpoints {
		if e.Name == rundata.CanaryEndpoint {
			continue
		}
		pc := p.byPhase[[2]string{e.Name, phase}]
		if pc == nil {
			pc = &phaseCount{}
		}
		ok := "  —  "
		if t := pc.counts.Total(); t > 0 {
			ok = fmt.Sprintf("%5.1f%%", 100*float64(pc.counts[loadgen.ClassOK])/float64(t))
		}
		p99 := "—"
		if d, ok := p.phaseP99(e.Name, phase); ok {
			p99 = fmtMs(d)
		} else if p.records == nil && pc.counts.Total() > 0 {
			p99 = fmtMs(pc.p99)
		}
		fmt.Fprintf(&b, "  /%s %s ok %s p99 %s", e.Name, label, ok, p99)
	}
	return b.String()
}

// fmtMs writes d in milliseconds as the report does (words.Fmt3).
func fmtMs(d time.Duration) string { return words.Fmt3(float64(d)/float64(time.Millisecond)) + " ms" }
