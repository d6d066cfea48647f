package runner

import (
	"fmt"
	"io"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/bulkheadlab/bulkheadlab/experiments/plan"
	"github.com/bulkheadlab/bulkheadlab/internal/rundata"
	"github.com/bulkheadlab/bulkheadlab/loadgen"
)

// Progress receives the runner's live progress. Snapshot and Pools are
// called from the load generator's and the sampler's goroutines; an
// implementation must be safe for concurrent use and quick.
type Progress interface {
	RunStarted(run plan.Run, n, total int)
	Snapshot(run plan.Run, s loadgen.Snapshot)
	Pools(run plan.Run, samples []rundata.MetricSample)
	RunEnded(run plan.Run, meta rundata.RunMeta, err error)
}

// TextProgress writes progress as text. On a terminal it redraws one status
// line a second (run, phase, elapsed/total, success % and p99 of the last
// window per endpoint, pool use); otherwise it prints one plain line per run.
// It is safe for concurrent use.
type TextProgress struct {
	W        io.Writer
	Terminal bool
	// Total is one run's load duration, for "elapsed/total".
	Total time.Duration

	mu    sync.Mutex
	n, of int
	pools string
	last  loadgen.Snapshot
	start time.Time
}

var _ Progress = (*TextProgress)(nil)

// RunStarted implements Progress.
func (p *TextProgress) RunStarted(run plan.Run, n, total int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.n, p.of, p.pools, p.last, p.start = n, total, "", loadgen.Snapshot{}, time.Now()
	if p.Terminal {
		fmt.Fprintf(p.W, "\r\033[K[%d/%d] %s: starting components", n, total, run.ID)
	}
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
		s.Elapsed.Seconds(), p.Total.Seconds(), endpointsLine(s, true), p.pools)
}

// Pools implements Progress: it keeps the service's pool use for the line.
func (p *TextProgress) Pools(_ plan.Run, samples []rundata.MetricSample) {
	var parts []string
	for _, sm := range samples {
		if sm.Component != rundata.ServiceComponent {
			continue
		}
		for _, pool := range rundata.LabelValues(sm.Values, rundata.MetricPoolInUse, "pool") {
			key := func(m string) string { return rundata.Key(m, rundata.L("pool", pool)) }
			parts = append(parts, fmt.Sprintf("%s %.0f/%.0f+%.0fq", pool, sm.Values[key(rundata.MetricPoolInUse)],
				sm.Values[key(rundata.MetricPoolLimit)], sm.Values[key(rundata.MetricPoolWaiting)]))
		}
	}
	sort.Strings(parts)
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(parts) > 0 {
		p.pools = "  pool " + strings.Join(parts, " ")
	}
}

// RunEnded implements Progress.
func (p *TextProgress) RunEnded(run plan.Run, meta rundata.RunMeta, err error) {
	p.mu.Lock()
	defer p.mu.Unlock()
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
	line := fmt.Sprintf("[%d/%d] %-24s %-11s %-7s %5.1fs %s", p.n, p.of, run.ID, meta.Status, validity,
		time.Since(p.start).Seconds(), endpointsLine(p.last, false))
	if err != nil {
		line += "  error: " + err.Error()
	}
	fmt.Fprintln(p.W, line)
}

// endpointsLine summarises each endpoint: success % of the last window when
// live, of the whole run otherwise, and the p99 of the last window.
func endpointsLine(s loadgen.Snapshot, live bool) string {
	var b strings.Builder
	for _, e := range s.Endpoints {
		c, p99 := e.Counts, e.Last.Latency.P99
		if live {
			c = e.Last.Counts
		}
		ok := 0.0
		if t := c.Total(); t > 0 {
			ok = 100 * float64(c[loadgen.ClassOK]) / float64(t)
		}
		label := "p99"
		if !live {
			label = "last p99"
		}
		fmt.Fprintf(&b, "  /%s ok %5.1f%% %s %s", e.Name, ok, label, p99.Round(time.Millisecond))
	}
	return b.String()
}
