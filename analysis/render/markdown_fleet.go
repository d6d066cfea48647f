package render

import (
	"bytes"
	"fmt"
	"strings"

	"github.com/bulkheadlab/bulkheadlab/analysis/measure"
	"github.com/bulkheadlab/bulkheadlab/analysis/verdict"
)

// writeFleetMD writes, for runs of a fleet, what the fleet put on the
// culprit's dependency (with the experiment's fleet claims) and every
// instance's pools: peak in use against its own limit, Little's law for its
// share of the load, and what ran out first in it. Nothing for an
// experiment of single instances without fleet claims.
func writeFleetMD(b *bytes.Buffer, s *verdict.Summary) {
	var fleet, inst []measure.RunSummary
	for _, r := range s.Runs {
		if r.Fleet != nil {
			fleet = append(fleet, r)
		}
		if len(r.Instances) > 0 {
			inst = append(inst, r)
		}
	}
	if len(fleet) == 0 && len(inst) == 0 {
		return
	}
	p := func(format string, a ...any) { fmt.Fprintf(b, format+"\n", a...) }
	ex := s.Expectations
	if len(fleet) == 0 && allPerPool(inst) {
		writeProcessesMD(b, inst)
		return
	}
	p("## Fleet\n")
	if len(fleet) > 0 {
		p("What each run's fleet put on /%s's dependency over the fault phase, against Little's law: K = min(N·L, λ·W) calls, "+
			"each taking W = s·max(1, K/C) (predicted before the run from N, L, λ, s and C). Concurrency is the proxy's in-flight count "+
			"(mean of the samples); in service and waiting are the dependency's own; call time is the instances' mean dependency call.\n", ex.Culprit)
		p("| run | N | L | N·L | C | λ req/s | concurrency (predicted K) | in service + waiting | call time ms (predicted W) | /%s ok req/s | rejected | dependency failed |", ex.Culprit)
		p("|---|---|---|---|---|---|---|---|---|---|---|---|")
		for _, r := range fleet {
			f := r.Fleet
			p("| %s | %d | %d | %d | %s | %s | %s (%s) | %s + %s | %s (%s) | %s | %s | %s |", r.ID, f.Instances, f.PerInstanceLimit, f.FleetLimit,
				measure.FmtNum(f.Capacity), measure.FmtNum(f.OfferedPerS), measure.FmtNum(f.ConcurrencyOnDep), measure.FmtNum(f.PredictedConcurrency),
				measure.FmtNum(f.DepInService), measure.FmtNum(f.DepWaiting), measure.FmtNum(f.MeasuredWaitMs), measure.FmtNum(f.PredictedWaitMs),
				measure.FmtNum(f.OKPerS), pct(f.RejectedShare), pct(f.DepFailedShare))
		}
		p("")
	}
	if len(inst) > 0 {
		p("Every instance on its own: peak permits in use per pool against the instance's limit over the fault phase, Little's law for its share " +
			"of the load (measured ÷ predicted demand), and the resource that ran out first in it.\n")
		writeInstanceRows(b, "instance", inst)
	}
}

// writeInstanceRows writes the table of every instance's pools (peak in
// use / limit, demand ratio) and what ran out first in it; what names the
// instance column.
func writeInstanceRows(b *bytes.Buffer, what string, runs []measure.RunSummary) {
	p := func(format string, a ...any) { fmt.Fprintf(b, format+"\n", a...) }
	p("| run | %s | peak in use / limit (demand ratio) | exhausted first |", what)
	p("|---|---|---|---|")
	for _, r := range runs {
		for _, is := range r.Instances {
			var pools []string
			for _, ps := range is.Pools {
				pools = append(pools, fmt.Sprintf("%s %s/%d (%s)", ps.Pool, measure.FmtNum(ps.PeakInUse), ps.Limit, measure.FmtNum(ps.DemandRatio)))
			}
			p("| %s | %s | %s | %s |", r.ID, instanceName(is), strings.Join(pools, ", "), mdEscape(is.Exhausted.Resource))
		}
	}
	p("")
}

// allPerPool reports whether every run's instances are processes per pool
// (processes: per-endpoint), none a fleet's.
func allPerPool(runs []measure.RunSummary) bool {
	for _, r := range runs {
		if !measure.PerPool(r.Instances) {
			return false
		}
	}
	return len(runs) > 0
}

// instanceName is an instance's component, with the endpoints it served
// when it is a process per pool: "service-1 (/a)".
func instanceName(is measure.InstanceStats) string {
	if len(is.Endpoints) == 0 {
		return is.Instance
	}
	eps := make([]string, len(is.Endpoints))
	for i, e := range is.Endpoints {
		eps[i] = "/" + e
	}
	return is.Instance + " (" + strings.Join(eps, ", ") + ")"
}

// writeProcessesMD writes, for runs of a service run as a process per pool
// (processes: per-endpoint), every process's pools and what ran out first
// in it.
func writeProcessesMD(b *bytes.Buffer, runs []measure.RunSummary) {
	p := func(format string, a ...any) { fmt.Fprintf(b, format+"\n", a...) }
	p("## Processes\n")
	p("Every process of a service run as a process per pool (processes: per-endpoint) on its own: the endpoints it served, peak permits " +
		"in use per pool against its limit over the fault phase, Little's law for its endpoints' load (measured ÷ predicted demand), and " +
		"the resource that ran out first in it.\n")
	writeInstanceRows(b, "process (endpoints)", runs)
}
