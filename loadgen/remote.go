package loadgen

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	vegeta "github.com/tsenart/vegeta/v12/lib"

	"github.com/bulkheadlab/bulkheadlab/internal/rundata"
)

// Remote sends a Config's load from other processes, Count shards of it
// (see Shard), and hands their results back to Run, which merges them as
// if one generator had sent the whole load: one set of windows, phases,
// histograms and validity, from every shard's every result.
type Remote interface {
	// Count is the number of shards.
	Count() int
	// Run gives every shard its Config (Shards(cfg, Count())[i]), releases
	// them together at one instant t0, calls started(t0) before the first
	// batch, hands each shard's batches to deliver as they come (deliver is
	// safe for concurrent use; an error from it ends that shard), and
	// returns when every shard ended, with one result per shard in index
	// order. It returns an error, without calling started, when the shards
	// could not be released (not every one answered). When ctx ends, the
	// shards stop.
	Run(ctx context.Context, cfg Config, started func(t0 time.Time), deliver func(shard int, batch []byte) error) ([]ShardResult, error)
}

// ShardResult is one shard's run as its Remote saw it.
type ShardResult struct {
	// Report is the shard's own report; nil when its stream ended without.
	Report *ShardReport
	// Err is why the shard's stream failed, if it did.
	Err error
	// Offset is the shard's clock minus this process's, and OffsetError
	// the bound on the measurement's error (half the best round trip).
	Offset, OffsetError time.Duration
}

// ShardStats is a shard's record in a merged Report.
type ShardStats = rundata.ShardStats

// ErrShards is wrapped by Run's error when the Remote could not release
// its shards: no load was sent.
var ErrShards = errors.New("loadgen: the shards could not be released")

// runRemote is Run for a load sent by cfg.Remote.
func runRemote(ctx context.Context, p *plan) (*Report, error) {
	cfg := p.cfg
	n := cfg.Remote.Count()
	if n < 1 || n > MaxShards {
		return nil, invalid("remote", "%d shards is not in [1, %d]", n, MaxShards)
	}
	scheds := make([]shardSum, len(cfg.Targets))
	for i, sc := range Shards(cfg, n) {
		sc.Remote = nil
		sp, err := sc.validate()
		if err != nil {
			return nil, fmt.Errorf("shard %d: %w", i, err)
		}
		for t := range scheds {
			scheds[t] = append(scheds[t], sp.schedules[t])
		}
	}
	views := make([]counts, len(scheds))
	for i, s := range scheds {
		views[i] = s
	}

	r := &remoteRun{p: p, n: n, merge: newMerger(n, len(cfg.Targets), p), phaseStop: make(chan struct{})}
	r.stopAt.Store(int64(p.duration))
	results, err := cfg.Remote.Run(ctx, cfg, func(t0 time.Time) { r.start(ctx, t0, views) }, r.deliver)
	if r.agg == nil {
		if err == nil {
			err = errors.New("the remote never started")
		}
		return nil, fmt.Errorf("%w: %w", ErrShards, err)
	}
	return r.finish(ctx, results, err)
}

// remoteRun is the merging side of a Remote's run.
type remoteRun struct {
	p     *plan
	n     int
	merge *merger

	agg       *aggregator
	logs      []*bufio.Writer
	t0        time.Time
	samples   chan sample
	aggDone   chan struct{}
	phaseStop chan struct{}
	phaseWG   sync.WaitGroup
	unhook    func() bool
	stopAt    atomic.Int64
	err       error
}

// start builds the aggregator once t0 is known.
func (r *remoteRun) start(ctx context.Context, t0 time.Time, views []counts) {
	agg, logs, err := newRunAggregator(r.p, t0, views)
	if err != nil {
		r.err = err
		agg, logs, _ = newRunAggregator(withoutHdrLogs(r.p), t0, views)
	}
	r.agg, r.logs, r.t0 = agg, logs, t0
	r.samples = make(chan sample, 8192)
	r.aggDone = make(chan struct{})
	go func() {
		defer close(r.aggDone)
		agg.loop(r.samples, r.p.cfg.Progress)
	}()
	r.merge.start(t0, r.samples)
	if fn := r.p.cfg.OnPhase; fn != nil {
		r.phaseWG.Go(func() { announcePhases(r.p.cfg.Phases, r.p.spans, t0, fn, r.phaseStop) })
	}
	r.unhook = context.AfterFunc(ctx, func() {
		r.stopAt.Store(min(int64(r.p.duration), int64(time.Since(t0))))
	})
}

func withoutHdrLogs(p *plan) *plan {
	q := *p
	q.cfg.HdrLog = nil
	return &q
}

// deliver decodes one batch of shard into the merge.
func (r *remoteRun) deliver(shard int, batch []byte) error {
	if shard < 0 || shard >= r.n {
		return fmt.Errorf("loadgen: shard %d is not in [0, %d)", shard, r.n)
	}
	return r.merge.add(shard, batch)
}

// finish merges the shards' reports into the run's.
func (r *remoteRun) finish(ctx context.Context, results []ShardResult, runErr error) (*Report, error) {
	interrupted := r.unhook != nil && !r.unhook()
	r.merge.close()
	close(r.samples)
	<-r.aggDone
	close(r.phaseStop)
	r.phaseWG.Wait()

	stop := r.stopAt.Load()
	r.agg.flush(stop)
	cfg := r.p.cfg
	sent := make([]int64, len(cfg.Targets))
	stats := make([]ShardStats, r.n)
	var bursts []rundata.BurstStats
	for i := range stats {
		st := &stats[i]
		st.Index = i
		if i < len(results) {
			res := results[i]
			st.Offset, st.OffsetError = res.Offset, res.OffsetError
			if res.Err != nil {
				st.Error = res.Err.Error()
			}
			if rep := res.Report; rep != nil {
				st.Late, st.Samples, st.Interrupted = rep.Late, rep.Samples, rep.Interrupted
				for t := range min(len(sent), len(rep.Sent)) {
					sent[t] += rep.Sent[t]
					st.Sent += rep.Sent[t]
				}
				if i == 0 {
					bursts = rep.Bursts
				}
			}
		}
		r.merge.fill(i, st)
	}
	rep := &Report{Start: r.t0, End: time.Now(), Windows: r.agg.windows,
		Phases: r.agg.phaseStats(stop, sent, cfg), Interrupted: interrupted, Bursts: bursts, Shards: stats}
	if len(bursts) != len(cfg.Bursts) {
		rep.Bursts = make([]rundata.BurstStats, len(cfg.Bursts))
		for i, b := range cfg.Bursts {
			rep.Bursts[i] = rundata.BurstStats{Label: b.Label, Target: b.Target, Abandoned: true}
		}
	}
	judgeShards(rep, r.p, len(results) == r.n)
	judgeRun(rep)
	errs := []error{r.err, r.agg.err, r.merge.err}
	for _, l := range r.logs {
		errs = append(errs, l.Flush())
	}
	if rep.Interrupted {
		return rep, ctx.Err()
	}
	if runErr != nil {
		errs = append(errs, runErr)
	}
	return rep, errors.Join(errs...)
}

// ClockLimit is the most a shard's clock may be uncertain against the
// runner's (half the best round trip of its clock exchange) for a run
// with lag threshold lag and windows of window: the lag threshold, or a
// quarter window when that is more. A result belongs to the window and the
// phase of its intended send time by its shard's clock, so an error of a
// quarter window moves at most a quarter of a window's results across a
// boundary (the phases' boundaries, where the faults switch, have the
// overran rule); a runner that reaches its shards through a cluster's API
// server measures round trips of several milliseconds, more than the lag
// threshold alone allows.
func ClockLimit(lag, window time.Duration) time.Duration { return max(lag, window/4) }

// judgeShards makes every judged phase INVALID for what went wrong with a
// shard: the fleet's numbers can hide one shard (1/N of the requests)
// lagging, or missing.
func judgeShards(rep *Report, p *plan, complete bool) {
	lim := p.lag
	var bs []rundata.Broken
	if !complete {
		bs = append(bs, rundata.Broken{Rule: rundata.RuleShardsMissing})
	}
	for _, st := range rep.Shards {
		at := func(rule rundata.Rule, measured, limit float64, unit rundata.Unit) rundata.Broken {
			shard := st.Index
			return rundata.Broken{Rule: rule, Shard: &shard, Measured: measured, Limit: limit, Unit: unit}
		}
		switch {
		case st.Error != "":
			b := at(rundata.RuleShardFailed, 0, 0, rundata.UnitCount)
			b.Error = st.Error
			bs = append(bs, b)
		case st.Interrupted:
			bs = append(bs, at(rundata.RuleShardStopped, 0, 0, rundata.UnitCount))
		}
		if st.Late > lim {
			bs = append(bs, at(rundata.RuleShardLate, float64(st.Late), float64(lim), rundata.UnitNanos))
		}
		if clock := ClockLimit(p.lag, p.window); st.OffsetError > clock {
			bs = append(bs, at(rundata.RuleShardClock, float64(st.OffsetError), float64(clock), rundata.UnitNanos))
		}
		for _, ph := range st.LateShare {
			if ph.Share > maxLateShare && !slices.Contains(p.cfg.ExcludeFromValidity, ph.Phase) {
				b := at(rundata.RuleShardLag, 100*ph.Share, 100*maxLateShare, rundata.UnitPercent)
				b.Threshold, b.LatePhase = lim, ph.Phase
				bs = append(bs, b)
			}
		}
	}
	if len(bs) == 0 {
		return
	}
	for i := range rep.Phases {
		ps := &rep.Phases[i]
		if ps.Excluded || ps.Paused {
			continue
		}
		ps.Valid = false
		for _, b := range bs {
			b.Endpoint, b.Phase = ps.Endpoint, ps.Phase
			ps.Broken = append(ps.Broken, b)
		}
	}
}

// maxLateShare is the largest share of a shard's requests in a judged
// phase whose schedule lag may reach the threshold.
const maxLateShare = 0.01

// merger orders the shards' samples by completion for the aggregator: a
// sample goes on once every shard's watermark has passed it (or its shard
// ended), so that the merged stream is in completion order to within the
// shards' flush interval. It also counts each shard's late requests per
// phase and writes the raw results.
type merger struct {
	mu   sync.Mutex
	p    *plan
	wm   []int64 // per shard
	h    sampleHeap
	out  chan<- sample
	t0   time.Time
	raw  []*vegeta.Encoder // per target; nil entries
	bufs []*bufio.Writer
	err  error
	dec  []sample
	// late and total count, per shard and phase, the results whose
	// schedule lag reached the threshold, and all results.
	late, total [][]int64
}

func newMerger(n, targets int, p *plan) *merger {
	m := &merger{p: p, wm: make([]int64, n), late: make([][]int64, n), total: make([][]int64, n)}
	for i := range n {
		m.wm[i] = math.MinInt64
		m.late[i] = make([]int64, len(p.spans))
		m.total[i] = make([]int64, len(p.spans))
	}
	m.raw = make([]*vegeta.Encoder, targets)
	for i, t := range p.cfg.Targets {
		if w, ok := p.cfg.Raw[t.Name]; ok && w != nil {
			bw := bufio.NewWriterSize(w, 64<<10)
			m.bufs = append(m.bufs, bw)
			enc := vegeta.NewEncoder(bw)
			m.raw[i] = &enc
		}
	}
	return m
}

func (m *merger) start(t0 time.Time, out chan<- sample) {
	m.mu.Lock()
	m.t0, m.out = t0, out
	m.mu.Unlock()
}

// add decodes batch of shard and passes on what the watermarks allow.
func (m *merger) add(shard int, batch []byte) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	wm, ss, err := decodeBatch(batch, len(m.p.cfg.Targets), m.dec[:0])
	m.dec = ss[:0]
	if err != nil {
		return fmt.Errorf("shard %d: %w", shard, err)
	}
	lag := int64(m.p.lag)
	for _, s := range ss {
		if !s.isAttempt() {
			if pi := phaseIndexOf(m.p.spans, s.intended); pi >= 0 {
				m.total[shard][pi]++
				if s.actual-s.intended >= lag {
					m.late[shard][pi]++
				}
			}
		}
		m.h.push(s)
	}
	m.wm[shard] = max(m.wm[shard], wm)
	m.release(slices.Min(m.wm))
	return nil
}

// release passes on every held sample that completed before low.
func (m *merger) release(low int64) {
	for m.h.Len() > 0 && m.h[0].done() < low {
		s := m.h.pop()
		if enc := m.raw[s.ep]; enc != nil && !s.isAttempt() && m.err == nil {
			m.err = enc.Encode(m.result(s))
		}
		m.out <- s
	}
}

// result is s as vegeta's result, for the raw output.
func (m *merger) result(s sample) *vegeta.Result {
	return &vegeta.Result{Attack: m.p.cfg.Targets[s.ep].Name, Seq: s.seq, Code: s.code,
		Timestamp: m.t0.Add(time.Duration(s.actual)), Latency: time.Duration(s.latency),
		BytesIn: s.bytesIn, BytesOut: s.bytesOut, Error: s.errText}
}

// close passes on everything still held (the shards have ended).
func (m *merger) close() {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.release(math.MaxInt64)
	for m.h.Len() > 0 { // completed at MaxInt64: nothing real, but drain
		m.out <- m.h.pop()
	}
	for _, bw := range m.bufs {
		if err := bw.Flush(); err != nil && m.err == nil {
			m.err = fmt.Errorf("loadgen: raw results: %w", err)
		}
	}
}

// fill adds shard i's late counts to st.
func (m *merger) fill(i int, st *ShardStats) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for pi, sp := range m.p.spans {
		if t := m.total[i][pi]; t > 0 {
			st.LateShare = append(st.LateShare, rundata.PhaseShare{Phase: sp.name, Share: float64(m.late[i][pi]) / float64(t)})
		}
	}
}

// sampleHeap is a min-heap of samples by completion (typed, so that a
// sample is not boxed on its way through).
type sampleHeap []sample

func (h sampleHeap) Len() int { return len(h) }

func (h *sampleHeap) push(s sample) {
	*h = append(*h, s)
	a := *h
	for i := len(a) - 1; i > 0; {
		up := (i - 1) / 2
		if a[up].done() <= a[i].done() {
			break
		}
		a[up], a[i] = a[i], a[up]
		i = up
	}
}

func (h *sampleHeap) pop() sample {
	a := *h
	top := a[0]
	last := len(a) - 1
	a[0] = a[last]
	a = a[:last]
	for i := 0; ; {
		l, small := 2*i+1, i
		if l < len(a) && a[l].done() < a[small].done() {
			small = l
		}
		if r := l + 1; r < len(a) && a[r].done() < a[small].done() {
			small = r
		}
		if small == i {
			break
		}
		a[i], a[small] = a[small], a[i]
		i = small
	}
	*h = a
	return top
}
