package measure

import (
	"fmt"
	"math"
	"time"

	"github.com/bulkheadlab/bulkheadlab/analysis/render/words"
	"github.com/bulkheadlab/bulkheadlab/analysis/rundir"
	"github.com/bulkheadlab/bulkheadlab/internal/rundata"
)

// RecoveryHoldT, RecoveryHoldWindows and RecoveryHoldResults set the hold
// span of RecoveryRule: the shortest stretch over which "back at baseline"
// (AtBaseline) is judged, the longest of this many T, this many windows
// and enough windows for this many of the endpoint's results (a p99 needs
// them).
const (
	RecoveryHoldT       = 4
	RecoveryHoldWindows = 4
	RecoveryHoldResults = 100
)

// RecoveryRule documents how recovery is judged; the report prints it.
const RecoveryRule = "an endpoint has recovered at the start of the first window of the recovery phase from which every span of the hold (the longest of 4 T, 4 windows and 100 of its results) to the end of the phase is back at its baseline by P2's thresholds (p99 at most p2_max_p99_rise_t × T above the baseline p99, error rate at most p2_max_error_rate above the baseline's); the time to recover runs from the fault's end and must be at most recovery_max_t × T (plus the open delay of a breaker in the mode), with at least one hold span left after it; a recovery phase too short to tell leaves the run unjudged, as does a last miss in latency alone, no larger than 3 times the canary's worst delay in it, while the canary took over half its limit (the machine's)"

// RunRecovery is how a run's endpoints came back after the fault ended.
type RunRecovery struct {
	// BoundT is the longest time to recover the run is allowed, in T.
	BoundT Num `json:"bound_t"`
	// Judged is false when the recovery phase was too short to tell for an
	// endpoint that did not fail to recover.
	Judged bool `json:"judged"`
	// Recovered is true when every endpoint recovered within BoundT.
	Recovered bool `json:"recovered"`
	// TimeT is the longest of the endpoints' times to recover, in T; null
	// when one did not recover or could not be judged.
	TimeT     Num                `json:"time_t"`
	Endpoints []EndpointRecovery `json:"endpoints"`
}

// EndpointRecovery is one endpoint's recovery.
type EndpointRecovery struct {
	Endpoint string `json:"endpoint"`
	// Judged is false when the recovery phase ended before a hold span
	// after the last time it could still have recovered.
	Judged bool `json:"judged"`
	// Recovered is true when the endpoint got back to its baseline within
	// the bound and stayed there to the end of the recovery phase.
	Recovered bool `json:"recovered"`
	// TimeT is the time from the fault's end to the start of the stretch
	// that stayed at baseline, in T; null when there was none.
	TimeT Num `json:"time_t"`
	// Noisy is set when it was not judged because the canary was slow in
	// the last stretch that was not back at baseline.
	Noisy bool `json:"noisy,omitempty"`
	// HoldS is the endpoint's hold span in seconds.
	HoldS Num `json:"hold_s"`
	// LastP99Ms and LastErrorRate are the endpoint's numbers over the last
	// hold span of the recovery phase, and LastP99RiseT the rise of that p99
	// over the baseline p99 in T: what "did not recover" looked like.
	LastP99Ms     Num `json:"last_p99_ms"`
	LastP99RiseT  Num `json:"last_p99_rise_t"`
	LastErrorRate Num `json:"last_error_rate"`
}

// String is the endpoint's recovery in a few words: "/a recovered after
// 1.0 T", or "/a did not recover: last 1 s p99 250 ms (+0.92 T), 100 %
// errors".
func (e EndpointRecovery) String() string {
	if e.Recovered {
		return fmt.Sprintf("/%s recovered after %s T", e.Endpoint, words.FmtHuman(float64(e.TimeT)))
	}
	late := ""
	if !math.IsNaN(float64(e.TimeT)) {
		late = fmt.Sprintf(" within the bound (back after %s T)", words.FmtHuman(float64(e.TimeT)))
	}
	return fmt.Sprintf("/%s did not recover%s: at the end p99 %s ms (%+.2f T over baseline), %s %% errors", e.Endpoint, late,
		words.FmtHuman(float64(e.LastP99Ms)), float64(e.LastP99RiseT), words.FmtHuman(100*float64(e.LastErrorRate)))
}

// aftermath adds what the fault left behind: how the endpoints came back,
// the permits it left taken (a pool that ran out of permits it had leaked
// is then named so as the exhausted resource), and every dependency's peak
// of calls in flight against its limit.
func aftermath(r *rundir.Run, s *RunSummary, ex rundata.Expectations) {
	s.Recovery = (&Run{Data: r}).Recovery(ex)
	s.Leaks = leakScan{r}.leaks(s.Inferred)
	s.Limits = limitChecker{r}.limitChecks(s.Inferred)
	s.Exhausted.markLeaked(s.Leaks)
}

// recoveryScan reads how each endpoint came back after the fault.
type recoveryScan struct{ run *rundir.Run }

// recoveryBoundT is the longest time to recover the run is allowed, in T:
// expectations.recovery_max_t plus the allowance its own policies need (a
// breaker stays open for its delay after the fault ended).
func (rs recoveryScan) recoveryBoundT(ex rundata.Expectations) float64 {
	b := ex.RecoveryMaxT
	if t := rs.run.Meta.Timeout; t > 0 && rs.run.Meta.RecoveryAllowance > 0 {
		b += float64(rs.run.Meta.RecoveryAllowance) / float64(t)
	}
	return b
}

// Recovery judges every endpoint's return to its baseline after the fault
// (RecoveryRule). It is nil when the run has no fault or no recovery phase.
func (r *Run) Recovery(ex rundata.Expectations) *RunRecovery {
	span, ok := r.Data.PhaseSpan(rundata.PhaseRecovery)
	_, faulted := r.Data.FaultStart()
	if !ok || !faulted || r.Data.Meta.Timeout <= 0 || r.Data.Meta.Window <= 0 || !span.End.After(span.Start) {
		return nil
	}
	fe := r.Data.FaultEnd()
	rs := recoveryScan{r.Data}
	rec := &RunRecovery{BoundT: Num(rs.recoveryBoundT(ex)), Judged: true, Recovered: true, TimeT: 0}
	for _, ep := range r.Data.Endpoints() {
		e := rs.endpointRecovery(ep, fe, ex, float64(rec.BoundT))
		rec.Endpoints = append(rec.Endpoints, e)
		switch {
		case e.Judged && !e.Recovered:
			rec.Recovered = false
		case !e.Judged:
			rec.Judged = false
		default:
			rec.TimeT = Num(max(float64(rec.TimeT), float64(e.TimeT)))
		}
	}
	if !rec.Recovered {
		rec.Judged = true // one endpoint that did not come back decides it
	}
	if !rec.Recovered || !rec.Judged {
		rec.TimeT = Undefined
	}
	return rec
}

// endpointRecovery applies RecoveryRule to one endpoint.
func (rs recoveryScan) endpointRecovery(ep string, fe time.Time, ex rundata.Expectations, boundT float64) EndpointRecovery {
	out := EndpointRecovery{Endpoint: ep, TimeT: Undefined, HoldS: Undefined, LastP99Ms: Undefined, LastP99RiseT: Undefined, LastErrorRate: Undefined}
	var ws []rundata.Window
	var results int64
	for _, w := range rs.run.EndpointWindows(ep) {
		if w.Phase == rundata.PhaseRecovery {
			ws = append(ws, w)
			results += w.Counts.Total()
		}
	}
	hold := int(math.Ceil(max(RecoveryHoldT*float64(rs.run.Meta.Timeout), RecoveryHoldWindows*float64(rs.run.Meta.Window)) / float64(rs.run.Meta.Window)))
	if results > 0 {
		hold = max(hold, int(math.Ceil(RecoveryHoldResults*float64(len(ws))/float64(results))))
	}
	out.HoldS = Num((time.Duration(hold) * rs.run.Meta.Window).Seconds())
	if len(ws) < hold {
		return out
	}
	base, baseErr, t := endpointWindows{rs.run}.baselineP99(ep), endpointWindows{rs.run}.baselineErrorRate(ep), Millis(rs.run.Meta.Timeout)
	atBaseline := func(span []rundata.Window) (bool, float64, float64) {
		// Nothing sent is nothing to judge; without a baseline p99 (no
		// baseline results) only the errors can be (AtBaseline).
		p99, errs := spanNumbers(span)
		return AtBaseline((p99-base)/t, errs, baseErr, ex), p99, errs
	}
	from := 0 // the first window from which every hold span is at baseline
	for j := 0; j+hold <= len(ws); j++ {
		if ok, _, _ := atBaseline(ws[j : j+hold]); !ok {
			from = j + 1
		}
	}
	_, p99, errs := atBaseline(ws[len(ws)-hold:])
	out.LastP99Ms, out.LastErrorRate, out.LastP99RiseT = Num(p99), Num(errs), Num(Ratio(p99-base, t))
	// latest is the last window the endpoint could still recover at.
	latest := -1
	for i, w := range ws {
		if w.Start.Sub(fe) <= time.Duration(boundT*float64(rs.run.Meta.Timeout)) {
			latest = i
		}
	}
	switch {
	case from > latest && from > 0 && rs.machineCouldExplain(ws[from-1:min(from-1+hold, len(ws))], base, baseErr, ex):
		// The last span that was not back is one the canary, a request that
		// does no work, was slow in too, and it missed by no more than that
		// delay could add: the machine's, not the service's.
		out.Noisy = true
		return out
	case from > latest:
		out.Judged = true // still not back when it had to be
	case len(ws)-from >= hold:
		out.Judged, out.Recovered = true, true
	default:
		return out // back at the end, but for less than a hold span: cannot tell
	}
	if len(ws)-from >= hold {
		out.TimeT = Num(float64(max(ws[from].Start.Sub(fe), 0)) / float64(rs.run.Meta.Timeout))
	}
	return out
}

// spanNumbers are the p99 (ms, estimated from the windows' quantiles; NaN
// without results) and the error rate of a run of windows.
func spanNumbers(ws []rundata.Window) (p99, errRate float64) {
	var tot, failed int64
	for _, w := range ws {
		tot += w.Counts.Total()
		failed += w.Counts.Failed()
	}
	if tot == 0 {
		return math.NaN(), 0
	}
	return Millis(mergedQuantile(ws, 0.99)), float64(failed) / float64(tot)
}

// mergedQuantile estimates quantile q (0–1) of the latencies of several
// windows together from each window's quantiles: the merged distribution
// is the count-weighted mix of each window's (cdfAt), inverted by
// bisection to within a microsecond.
func mergedQuantile(ws []rundata.Window, q float64) time.Duration {
	var n float64
	var hi time.Duration
	for _, w := range ws {
		n += float64(w.Latency.Count)
		hi = max(hi, w.Latency.Max)
	}
	if n == 0 {
		return 0
	}
	cdf := func(d time.Duration) float64 {
		var s float64
		for _, w := range ws {
			s += float64(w.Latency.Count) * cdfAt(w.Latency, d)
		}
		return s / n
	}
	lo := time.Duration(0)
	for hi-lo > time.Microsecond {
		mid := lo + (hi-lo)/2
		if cdf(mid) >= q {
			hi = mid
		} else {
			lo = mid
		}
	}
	return hi
}

// machineCouldExplain reports whether a stretch of an endpoint's windows
// that was not back at its baseline may be the machine's doing
// (MachineRule): the canary's latency went over half its validity limit in
// one of them (the machine delayed a request that does no work by a good
// part of what a run may bear), and the endpoint missed only on latency,
// by no more than that delay at every hop of its call could add. Errors beyond the baseline's
// are the service's whatever the canary did: a busy machine slows calls,
// it does not make a service reject them (a pool that leaked its permits
// answers 503 at once).
func (rs recoveryScan) machineCouldExplain(span []rundata.Window, base, baseErr float64, ex rundata.Expectations) bool {
	c := rs.run.Meta.Canary
	if c == nil || c.MaxP99 <= 0 || len(span) == 0 {
		return false
	}
	first, last := span[0].Start, span[len(span)-1].Start
	var worst time.Duration
	for _, w := range rs.run.EndpointWindows(rundata.CanaryEndpoint) {
		if !w.Start.Before(first) && !w.Start.After(last) && w.Latency.Count > 0 {
			worst = max(worst, w.Latency.Max)
		}
	}
	could := MachineCouldAddMs(worst, c.MaxP99)
	if could == 0 {
		return false
	}
	p99, errs := spanNumbers(span)
	if errs > MaxErrorRate(baseErr, ex) {
		return false
	}
	if math.IsNaN(p99) || math.IsNaN(base) {
		return true
	}
	over := p99 - base - ex.P2MaxP99RiseT*Millis(rs.run.Meta.Timeout)
	return over <= could
}
