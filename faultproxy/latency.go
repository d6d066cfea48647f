package faultproxy

import (
	"context"
	"fmt"
	"math"
	"net/http"
	"time"
)

// TypeLatency is the latency fault: an affected request waits before it
// goes on, Latency ± Jitter or a heavy-tailed delay (see the
// distributions). The delays of every latency fault that fired add up, and
// the request waits once for their sum (Proxy.delay, Proxy.delayRaw).
const TypeLatency = "latency"

// Delay is the parameters of a latency fault, and a capacity fault's
// service time.
type Delay struct {
	// Latency is the base delay (optional: zero adds none).
	Latency time.Duration `fault:"latency"`
	// Jitter is the spread: ± Jitter for "uniform" (so Jitter ≤
	// Latency), the tail scale for "pareto" and "lognormal".
	Jitter time.Duration `fault:"jitter"`
	// Distribution is "uniform" (default), "pareto" or "lognormal".
	Distribution string `fault:"distribution" default:"uniform" want:"uniform, pareto or lognormal"`
	// Max caps a heavy-tailed delay; zero means Latency + 100·Jitter.
	Max time.Duration `fault:"max"`
}

// latencyType is the latency fault type.
type latencyType struct{}

func (latencyType) name() string { return TypeLatency }
func (latencyType) role() role   { return roleDelay }
func (latencyType) params() any  { return Delay{} }

func (latencyType) validate(f *Fault, field string) error {
	d := params[Delay](f)
	return d.validate(field)
}

func (latencyType) normalized(f Fault) Fault {
	f.Params = params[Delay](&f).normalized()
	return f
}

func (latencyType) delayOf(f *Fault) Delay { return params[Delay](f) }

// hold: the delay adds to the call; a heavy tail has no bound.
func (latencyType) hold(f *Fault, _ int64) Hold { return params[Delay](f).hold() }

// counterparts: the TCP plane delays each chunk of the answers (downstream)
// as much, the PostgreSQL plane holds each query's answer; both draw a
// uniform jitter only.
func (latencyType) counterparts() map[string]counterpart {
	uniform := func(f *Fault, plane string) (Delay, error) {
		d := params[Delay](f)
		if d.Distribution != "" && d.Distribution != DistUniform {
			return d, fieldErr("fault.distribution", "the %s plane's latency fault is uniform; got %q", plane, d.Distribution)
		}
		return d, nil
	}
	return map[string]counterpart{
		PlaneTCP: func(f *Fault) (map[string]any, error) {
			d, err := uniform(f, PlaneTCP)
			return map[string]any{"type": "latency", "stream": "downstream", "latency": d.Latency.String(), "jitter": d.Jitter.String()}, err
		},
		PlanePostgres: func(f *Fault) (map[string]any, error) {
			d, err := uniform(f, PlanePostgres)
			return map[string]any{"type": "latency", "latency": d.Latency.String(), "jitter": d.Jitter.String()}, err
		},
	}
}

func (latencyType) describe(f *Fault) string { return "latency " + params[Delay](f).String() }

// String says what the delay is: "225ms ± 10ms", "100ms, pareto tail of
// scale 20ms, at most 2.1s".
func (d Delay) String() string {
	switch d.Distribution {
	case DistPareto, DistLognormal:
		s := fmt.Sprintf("%v, %s tail of scale %v", d.Latency, d.Distribution, d.Jitter)
		if d.Max > 0 {
			s += fmt.Sprintf(", at most %v", d.Max)
		}
		return s
	}
	if d.Jitter == 0 {
		return d.Latency.String()
	}
	return fmt.Sprintf("%v ± %v", d.Latency, d.Jitter)
}

func (latencyType) example() Fault {
	return Fault{Type: TypeLatency, Percent: 100, Params: Delay{Latency: 225 * time.Millisecond, Jitter: 10 * time.Millisecond}}
}

// hold is how the delay changes a call: it adds Latency on average; at
// least Latency − Jitter (uniform) or Latency (pareto), nothing known of a
// lognormal one; at most Latency + Jitter, no bound for a heavy tail.
func (d Delay) hold() Hold {
	h := Hold{Kind: HoldAdds, Mean: d.Latency, Most: Unbounded, Param: "latency"}
	switch d.Distribution {
	case DistPareto:
		h.Least = d.Latency
	case DistLognormal:
	default:
		h.Least, h.Most = max(d.Latency-d.Jitter, 0), d.Latency+d.Jitter
	}
	h.Text = fmt.Sprintf("%v (jitter %v)", d.Latency, d.Jitter)
	return h
}

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

// validate checks the delay's fields, naming them under field.
func (f Delay) validate(field string) error {
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

// normalized fills in the distribution and a heavy tail's cap.
func (f Delay) normalized() Delay {
	if f.Distribution == "" {
		f.Distribution = DistUniform
	}
	if f.Max == 0 && f.Distribution != DistUniform {
		f.Max = min(f.Latency+defaultTailCap*f.Jitter, MaxDuration)
	}
	return f
}

// sampleDelay draws one delay of the latency fault f (valid, normalised).
// The result is within [0, Max] (or [Latency−Jitter, Latency+Jitter] for
// uniform).
func sampleDelay(f *Delay, r *reqRand) time.Duration {
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

// delay waits until the decided delay after start (the request's arrival,
// or when it got a slot of a capacity fault). It reports false if the
// request must not go on: the caller went away (the request is dropped) —
// or it aborts the connection if the proxy is closing.
func (p *Proxy) delay(ctx context.Context, r *http.Request, start time.Time, d Decision, e *LedgerEntry) bool {
	if d.Delay <= 0 {
		p.noteNoDelay(d, e)
		return true
	}
	switch p.waitDelay(ctx.Done(), start, d, e) {
	case waitCancelled:
		p.record(r, d, *e)
		return false
	case waitStopped:
		p.record(r, d, *e)
		abort()
	}
	return true
}

// noteNoDelay records latency faults that fired with a zero delay.
func (p *Proxy) noteNoDelay(d Decision, e *LedgerEntry) {
	p.m.injected[TypeLatency].Add(float64(d.Latencies))
	e.RequestedDelayMS = ms(d.Delay)
	p.m.delay.Observe(0)
}

// waitDelay waits until d's delay after start, or until gone closes or
// the proxy stops, and notes the wait in the metrics and in e (outcome
// "cancelled" or "stopped" when it did not run out). Both data planes
// delay through it.
func (p *Proxy) waitDelay(gone <-chan struct{}, start time.Time, d Decision, e *LedgerEntry) waitResult {
	p.m.injected[TypeLatency].Add(float64(d.Latencies))
	e.RequestedDelayMS = ms(d.Delay)
	res, actual := wait(gone, p.stop, start, d.Delay)
	p.m.delay.Observe(actual.Seconds())
	e.DelayMS = ms(actual)
	switch res {
	case waitCancelled:
		p.m.cancelled.Inc()
		e.Outcome = "cancelled"
	case waitStopped:
		e.Outcome = "stopped"
	}
	return res
}

// delayRaw waits the decided delay from start, watching the client through
// w. It reports false if the request ends here (the client went away or
// the proxy is closing: the connection is cut), recorded.
func (p *Proxy) delayRaw(c *rconn, w *clientWatch, start time.Time, d Decision, e *LedgerEntry) bool {
	if d.Delay <= 0 {
		p.noteNoDelay(d, e)
		return true
	}
	if p.waitDelay(w.gone(), start, d, e) != waitDone {
		p.recordID(c.req.requestID, d, *e)
		return false
	}
	return true
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
