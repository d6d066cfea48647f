package loadgen

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"
	vegeta "github.com/tsenart/vegeta/v12/lib"

	"github.com/bulkheadlab/bulkheadlab/internal/rundata"
)

// startLead is how far in the future t0 is set, so that every attacker is
// running before the first request is due.
const startLead = 10 * time.Millisecond

// Snapshot is the progress of a run, delivered about every second.
type Snapshot struct {
	Time    time.Time     `json:"time"`
	Elapsed time.Duration `json:"elapsed_ns"`
	// Phase is the phase at Elapsed; empty after the last one.
	Phase     string             `json:"phase"`
	Endpoints []EndpointSnapshot `json:"endpoints"`
}

// EndpointSnapshot is one endpoint's progress.
type EndpointSnapshot struct {
	Name       string  `json:"name"`
	TargetRate float64 `json:"target_rate"`
	// Received is the number of results recorded so far; Counts splits it.
	Received int64  `json:"received"`
	Counts   Counts `json:"counts"`
	// Last is the most recent closed window (zero before the first).
	Last Window `json:"last"`
}

// Run attacks every target at its per-phase rates, all from the same start
// t0 and for the sum of the phase durations, fires the bursts, records
// windows, phases and bursts, and judges validity. It blocks until every
// result is recorded. When ctx ends first, in-flight requests are aborted
// (and not recorded) and Run returns the partial report with ctx's error.
// Output write errors are returned with the otherwise complete report.
func Run(ctx context.Context, cfg Config) (*Report, error) {
	p, err := cfg.validate()
	if err != nil {
		return nil, err
	}
	if cfg.Remote != nil {
		return runRemote(ctx, p)
	}
	t0 := time.Now().Add(startLead)
	scheds := make([]counts, len(p.schedules))
	for i, s := range p.schedules {
		scheds[i] = s
	}
	agg, logs, err := newRunAggregator(p, t0, scheds)
	if err != nil {
		return nil, err
	}
	samples := make(chan sample, 8192)
	aggDone := make(chan struct{})
	go func() {
		defer close(aggDone)
		agg.loop(samples, cfg.Progress)
	}()
	phaseStop := make(chan struct{})
	var phaseWG sync.WaitGroup
	if cfg.OnPhase != nil {
		phaseWG.Go(func() { announcePhases(cfg.Phases, p.spans, t0, cfg.OnPhase, phaseStop) })
	}

	var stopAt atomic.Int64 // offset at which ctx ended the run
	stopAt.Store(int64(p.duration))
	bursts := startBursts(ctx, p, t0)
	set := newAttackSet(ctx, p, t0, samples)
	unhook := context.AfterFunc(ctx, func() {
		stopAt.Store(min(int64(p.duration), int64(time.Since(t0))))
		for _, a := range set.atks {
			a.Stop()
		}
	})
	fwdErrs := set.run(ctx, p, t0, samples)
	burstStats, burstErr := bursts.wait()
	interrupted := !unhook()
	close(samples)
	<-aggDone
	close(phaseStop)
	phaseWG.Wait()

	stop := stopAt.Load()
	agg.flush(stop)
	sent := make([]int64, len(set.pacers))
	for i, pc := range set.pacers {
		sent[i] = pc.released.Load()
	}
	rep := &Report{Start: t0, End: time.Now(), Windows: agg.windows,
		Phases: agg.phaseStats(stop, sent, cfg), Interrupted: interrupted, Bursts: burstStats}
	judgeRun(rep)
	errs := append(fwdErrs, agg.err, burstErr)
	for _, l := range logs {
		errs = append(errs, l.Flush())
	}
	if rep.Interrupted {
		return rep, ctx.Err()
	}
	return rep, errors.Join(errs...)
}

// newRunAggregator builds the aggregator of a run and its HdrHistogram
// logs (header written); the returned writers must be flushed at the end.
func newRunAggregator(p *plan, t0 time.Time, scheds []counts) (*aggregator, []*bufio.Writer, error) {
	ac := aggConfig{t0: t0, window: int64(p.window), duration: int64(p.duration), lagThreshold: int64(p.lag),
		phases: p.spans, onWindow: p.cfg.OnWindow, onResult: p.cfg.OnResult,
		maxOpen: int(min(128, max(8, int64((p.timeout+time.Second)/p.window)+2)))}
	var bufs []*bufio.Writer
	for i, t := range p.cfg.Targets {
		ac.endpoints = append(ac.endpoints, t.Name)
		ac.schedules = append(ac.schedules, scheds[i])
		w, ok := p.cfg.HdrLog[t.Name]
		if !ok {
			ac.hdrLogs = append(ac.hdrLogs, nil)
			continue
		}
		bw := bufio.NewWriter(w)
		bufs = append(bufs, bw)
		lw := hdrhistogram.NewHistogramLogWriter(bw)
		ms := t0.UnixMilli()
		lw.SetBaseTime(ms)
		err := errors.Join(lw.OutputLogFormatVersion(),
			lw.OutputComment(fmt.Sprintf("[bulkheadlab loadgen endpoint %s, values in nanoseconds, Tag=intended is from the intended send time]", t.Name)),
			lw.OutputStartTime(ms), lw.OutputBaseTime(ms), lw.OutputLegend())
		if err != nil {
			return nil, nil, fmt.Errorf("loadgen: hdr log for %q: %w", t.Name, err)
		}
		ac.hdrLogs = append(ac.hdrLogs, lw)
	}
	return newAggregator(ac), bufs, nil
}

// attackSet is one attacker per target, built before any starts.
type attackSet struct {
	atks    []*vegeta.Attacker
	pacers  []*pacer
	trs     []*http.Transport
	giveUps []*giveUpTransport // per target; nil without Phase.Cancel
}

func newAttackSet(ctx context.Context, p *plan, t0 time.Time, samples chan<- sample) *attackSet {
	deadline := t0.Add(p.duration + max(p.lag, 10*time.Millisecond))
	n := len(p.cfg.Targets)
	s := &attackSet{atks: make([]*vegeta.Attacker, n), pacers: make([]*pacer, n), trs: make([]*http.Transport, n),
		giveUps: make([]*giveUpTransport, n)}
	for i, t := range p.cfg.Targets {
		s.trs[i] = newTransport()
		var rt http.RoundTripper = &cancelTransport{rt: s.trs[i], stop: ctx}
		if t.Retry != nil {
			ep := int32(i)
			retry := *t.Retry
			retry.Seed = p.cfg.Shard.seed(retry.Seed)
			rt = newRetryTransport(rt, retry, p.classifiers[i], p.schedules[i], func(intended int64, c rundata.RetryCounts) {
				samples <- sample{intended: intended, ep: ep, retry: c}
			})
		}
		if cs := p.cancelsOf(t); cs != nil {
			s.giveUps[i] = &giveUpTransport{next: rt, sched: p.schedules[i], spans: p.spans, cancels: cs,
				seed: p.cfg.Shard.seed(cancelSeed(p.cfg.Seed, t.Name))}
			rt = s.giveUps[i]
		}
		opts := []func(*vegeta.Attacker){
			vegeta.Client(&http.Client{Timeout: p.timeout, Transport: rt}),
			vegeta.MaxBody(0),
		}
		// Start with vegeta's default worker count; vegeta adds one whenever
		// every worker is busy (MaxWorkers stays unlimited), so a slow target
		// still gets all its requests. Pre-starting a timeout's worth of
		// workers (up to 2000 per target) was measured to cost more than it
		// saves: schedule-lag p99 8 ms instead of 3 ms at 5000 requests/s
		// against an out-of-process target on 2 cores.
		workers := uint64(vegeta.DefaultWorkers)
		if p.cfg.MaxWorkers > 0 {
			workers = min(workers, p.cfg.MaxWorkers)
			opts = append(opts, vegeta.MaxWorkers(p.cfg.MaxWorkers))
		}
		opts = append(opts, vegeta.Workers(workers))
		s.atks[i] = vegeta.NewAttacker(opts...)
		s.pacers[i] = newPacer(t0, p.schedules[i], deadline, ctx.Done())
		if lag := p.cfg.InjectLag; lag > 0 {
			s.pacers[i].lag = &injectedLag{max: lag, rng: rand.New(rand.NewPCG(uint64(p.cfg.Seed), uint64(i)))}
		}
	}
	return s
}

// run starts every attack, forwards the results into samples and returns
// when every attack has ended and every result has been forwarded.
func (s *attackSet) run(ctx context.Context, p *plan, t0 time.Time, samples chan<- sample) []error {
	results := make([]<-chan *vegeta.Result, len(s.atks))
	for i, t := range p.cfg.Targets {
		results[i] = s.atks[i].Attack(t.targeter(), s.pacers[i], 0, t.Name)
	}
	errs := make([]error, len(s.atks))
	var wg sync.WaitGroup
	for i, t := range p.cfg.Targets {
		f := forwarder{ctx: ctx, ep: int32(i), t0: t0, sched: s.pacers[i].sched, cl: p.classifiers[i], giveUp: s.giveUps[i], out: samples}
		wg.Go(func() { errs[i] = f.run(results[i], p.cfg.Raw[t.Name], t.Name) })
	}
	wg.Wait()
	for _, tr := range s.trs {
		tr.CloseIdleConnections()
	}
	return errs
}

// forwarder turns one attacker's results into samples and raw records.
type forwarder struct {
	ctx    context.Context
	ep     int32
	t0     time.Time
	sched  schedule
	cl     *Classifier
	giveUp *giveUpTransport // nil without Phase.Cancel
	out    chan<- sample
}

// run drains in until it is closed. Results of requests aborted because ctx
// ended are dropped. A raw write error stops raw output, not the run.
func (f forwarder) run(in <-chan *vegeta.Result, raw io.Writer, name string) error {
	var enc vegeta.Encoder
	var bw *bufio.Writer
	if raw != nil {
		bw = bufio.NewWriterSize(raw, 64<<10)
		enc = vegeta.NewEncoder(bw)
	}
	var err error
	for r := range in {
		if r.Code == 0 && f.ctx.Err() != nil {
			continue
		}
		r.Body = nil
		if enc != nil && err == nil {
			err = enc.Encode(r)
		}
		s := sample{
			intended: f.sched.at(int64(r.Seq)),
			actual:   int64(r.Timestamp.Sub(f.t0)),
			latency:  int64(r.Latency),
			ep:       f.ep,
			code:     r.Code,
			class:    f.cl.Classify(r.Code, r.Headers, r.Error),
			harness:  IsHarnessError(r.Code, r.Error),
			seq:      r.Seq,
			bytesIn:  r.BytesIn,
			bytesOut: r.BytesOut,
			errText:  r.Error,
		}
		if vals := r.Headers.Values(rundata.ServerTimingHeader); len(vals) > 0 {
			s.stSeen = true
			s.timing, s.stBad, s.stDropped = parseTiming(vals)
		}
		if f.giveUp.took(r.Seq) {
			s.class, s.harness, s.cancelled = ClassClientTimeout, false, true
		}
		f.out <- s
	}
	if bw != nil && err == nil {
		err = bw.Flush()
	}
	if err != nil {
		return fmt.Errorf("loadgen: raw results for %q: %w", name, err)
	}
	return nil
}

// announcePhases calls fn at each phase's scheduled start until stop closes.
func announcePhases(phases []Phase, spans []phaseSpan, t0 time.Time, fn func(Phase, time.Time), stop <-chan struct{}) {
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	for i, ph := range phases {
		at := t0.Add(time.Duration(spans[i].start))
		if d := time.Until(at); d > 0 {
			timer.Reset(d)
			select {
			case <-timer.C:
			case <-stop:
				return
			}
		}
		select {
		case <-stop:
			return
		default:
			fn(ph, at)
		}
	}
}

// loop records samples until in is closed, calling progress every second.
func (a *aggregator) loop(in <-chan sample, progress func(Snapshot)) {
	var tick <-chan time.Time
	if progress != nil {
		t := time.NewTicker(time.Second)
		defer t.Stop()
		tick = t.C
	}
	for {
		select {
		case s, ok := <-in:
			if !ok {
				return
			}
			a.add(s)
		case now := <-tick:
			progress(a.snapshot(now))
		}
	}
}

// snapshot describes the progress at now.
func (a *aggregator) snapshot(now time.Time) Snapshot {
	el := now.Sub(a.cfg.t0)
	s := Snapshot{Time: now, Elapsed: el}
	if pi := a.phaseIndex(int64(el)); pi >= 0 {
		s.Phase = a.cfg.phases[pi].name
	}
	for _, e := range a.eps {
		s.Endpoints = append(s.Endpoints, EndpointSnapshot{Name: e.name, TargetRate: e.sched.rateAt(int64(el)),
			Received: e.received, Counts: e.counts, Last: e.last})
	}
	return s
}
