package faultproxy

import (
	"math"
	"time"
)

// Latency distributions.
const (
	// DistUniform: Latency + U(−Jitter, +Jitter). Requires Jitter ≤ Latency.
	DistUniform = "uniform"
	// DistPareto: Latency + a Lomax (Pareto II) sample of scale Jitter and
	// shape ParetoShape; never below Latency, heavy right tail, capped at Max.
	DistPareto = "pareto"
	// DistLognormal: Latency·exp(σZ) with σ = ln(1 + Jitter/Latency), so the
	// median is Latency and one σ multiplies it by (1 + Jitter/Latency);
	// capped at Max. Requires Latency > 0.
	DistLognormal = "lognormal"
)

// ParetoShape is the tail index of the pareto distribution: below 2 the
// variance is infinite, the classic heavy tail of service latencies.
const ParetoShape = 1.5

// defaultTailCap is the default Max of a heavy-tailed latency, in jitters
// above Latency.
const defaultTailCap = 100

func validateLatency(f Fault, field string) error {
	for _, d := range []struct {
		name string
		v    time.Duration
	}{{"latency", f.Latency}, {"jitter", f.Jitter}, {"max", f.Max}} {
		if d.v < 0 {
			return fieldErr(field+"."+d.name, "must not be negative, got %v", d.v)
		}
		if d.v > MaxDuration {
			return fieldErr(field+"."+d.name, "must be at most %v, got %v", MaxDuration, d.v)
		}
	}
	switch f.Distribution {
	case "", DistUniform:
		if f.Jitter > f.Latency {
			return fieldErr(field+".jitter", "%v exceeds latency %v: a uniform delay would be negative", f.Jitter, f.Latency)
		}
	case DistPareto:
	case DistLognormal:
		if f.Latency == 0 {
			return fieldErr(field+".latency", "must be positive for the lognormal distribution")
		}
	default:
		return fieldErr(field+".distribution", "unknown distribution %q (want uniform, pareto or lognormal)", f.Distribution)
	}
	if f.Max != 0 && f.Max < f.Latency {
		return fieldErr(field+".max", "%v is below latency %v", f.Max, f.Latency)
	}
	return nil
}

func normalizeLatency(f Fault) Fault {
	if f.Distribution == "" {
		f.Distribution = DistUniform
	}
	if f.Max == 0 && f.Distribution != DistUniform {
		f.Max = min(f.Latency+defaultTailCap*f.Jitter, MaxDuration)
	}
	return f
}

// noLatencyFields rejects latency parameters on fault types without a
// delay.
func noLatencyFields(f Fault, field string) error {
	const msg = "only valid for type latency or capacity"
	switch {
	case f.Latency != 0:
		return fieldErr(field+".latency", msg)
	case f.Jitter != 0:
		return fieldErr(field+".jitter", msg)
	case f.Distribution != "":
		return fieldErr(field+".distribution", msg)
	case f.Max != 0:
		return fieldErr(field+".max", msg)
	}
	return nil
}

// sampleDelay draws one delay of the latency fault f (valid, normalised).
// The result is within [0, Max] (or [Latency−Jitter, Latency+Jitter] for
// uniform).
func sampleDelay(f *Fault, r *reqRand) time.Duration {
	lat, jit := float64(f.Latency), float64(f.Jitter)
	var d float64
	switch f.Distribution {
	case DistPareto:
		u := 1 - r.Float64() // (0, 1]
		d = lat + jit*(math.Pow(u, -1/ParetoShape)-1)
	case DistLognormal:
		d = lat * math.Exp(math.Log1p(jit/lat)*r.NormFloat64())
	default:
		return f.Latency + time.Duration((2*r.Float64()-1)*jit)
	}
	if f.Max > 0 && !(d <= float64(f.Max)) { // also catches +Inf and NaN
		return f.Max
	}
	return time.Duration(d)
}

// waitResult says how a delay ended.
type waitResult int

const (
	waitDone      waitResult = iota // the full delay elapsed
	waitCancelled                   // the caller went away
	waitStopped                     // the proxy is closing
)

// wait blocks until d after start, ending early if cancel (the caller went
// away) or stop is closed. It returns how it ended and how long after start it returned.
// Measuring from start (the request's arrival) keeps the proxy's own work
// inside the requested delay. The deadline is kept by the waker's kernel
// timer where there is one (see waker.go), else by a Go timer.
func wait(cancel, stop <-chan struct{}, start time.Time, d time.Duration) (waitResult, time.Duration) {
	deadline := start.Add(d)
	var kernel <-chan struct{}
	var goTimer <-chan time.Time
	if w := theWaker(); w != nil {
		it := w.add(deadline)
		defer w.cancel(it)
		kernel = it.ch
	} else {
		t := time.NewTimer(time.Until(deadline))
		defer t.Stop()
		goTimer = t.C
	}
	select {
	case <-kernel:
		return waitDone, time.Since(start)
	case <-goTimer:
		return waitDone, time.Since(start)
	case <-cancel:
		return waitCancelled, time.Since(start)
	case <-stop:
		return waitStopped, time.Since(start)
	}
}
