package loadgen

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/bulkheadlab/bulkheadlab/internal/rundata"
)

// ShardFlushInterval is how often a shard sends the results it has.
const ShardFlushInterval = 50 * time.Millisecond

// shardBatchSamples is the most samples a shard holds before it sends them
// early.
const shardBatchSamples = 4096

// ShardReport is a shard's account of its run, after its last batch.
type ShardReport struct {
	Shard Shard `json:"shard"`
	// Late is how long after t0 (by the shard's clock) its attack began;
	// requests due before then went out late.
	Late time.Duration `json:"late_ns"`
	// Sent is, per target, how many requests the shard's pacers released.
	Sent []int64 `json:"sent"`
	// Samples is how many results and attempt records it sent.
	Samples int64 `json:"samples"`
	// Bursts are the records of the Config's bursts (shard 0's only).
	Bursts []rundata.BurstStats `json:"bursts,omitempty"`
	// Interrupted is set when the shard's run ended before its end.
	Interrupted bool `json:"interrupted,omitempty"`
	// Errors are the run's own errors (a burst's raw output, a result
	// stream), as text.
	Errors []string `json:"errors,omitempty"`
}

// PreparedShard is a shard's validated Config, its schedules computed,
// waiting for its start. It is used once.
type PreparedShard struct {
	p *plan
}

// Limits of a shard's load, checked by PrepareShard before anything is
// computed, whatever its targets: a shard obeys a process that reached its
// port, and its memory and its sends must not grow with what it is asked.
const (
	// MaxShardRequests bounds the requests a shard is armed to send, summed
	// over its targets and phases (rate × duration): 10⁹, about 11.6 k/s
	// for a day, or 280 k/s for an hour.
	MaxShardRequests = 1_000_000_000
	// MaxShardPoisson bounds the Poisson arrival times a shard computes
	// ahead, summed over its targets (8 bytes each: 160 MB).
	MaxShardPoisson = 20_000_000
	// MaxShardDuration bounds a shard's attack (the sum of the phases).
	MaxShardDuration = 24 * time.Hour
)

// ErrShardLimit is wrapped by PrepareShard's error when a load exceeds a
// shard's limits (it also wraps ErrInvalidConfig).
var ErrShardLimit = errors.New("beyond a shard's limits")

// checkShardLimits refuses, with an error naming the field, a load beyond
// the shard limits, from the phases alone (nothing allocated per request).
func checkShardLimits(cfg Config) error {
	var dur time.Duration
	for _, ph := range cfg.Phases {
		if ph.Duration < 0 || ph.Duration > MaxShardDuration {
			return fmt.Errorf("%w: %w", ErrShardLimit, invalid("phases", "phase %q lasts %v, beyond %v", ph.Name, ph.Duration, MaxShardDuration))
		}
		dur += ph.Duration
	}
	if dur > MaxShardDuration {
		return fmt.Errorf("%w: %w", ErrShardLimit, invalid("phases", "the phases last %v in all, beyond %v", dur, MaxShardDuration))
	}
	total := 0.0
	for _, t := range cfg.Targets {
		for _, ph := range cfg.Phases {
			r := t.Rate
			if pr, ok := ph.Rates[t.Name]; ok {
				r = pr
			}
			total += max(r, 0) * ph.Duration.Seconds() * cfg.Shard.scale()
		}
	}
	switch {
	case !(total <= MaxShardRequests):
		return fmt.Errorf("%w: %w", ErrShardLimit, invalid("targets", "~%.3g requests (rate × duration over every target and phase), beyond a shard's %d: split the load over more shards", total, MaxShardRequests))
	case cfg.Arrivals.Process == ArrivalsPoisson && total > MaxShardPoisson:
		return fmt.Errorf("%w: %w", ErrShardLimit, invalid("arrivals", "a Poisson schedule of ~%.3g requests over every target, beyond a shard's %d computed ahead: split the load over more shards, or use constant arrivals", total, MaxShardPoisson))
	}
	return nil
}

// PrepareShard validates cfg (a shard's: see Shard; Remote, Raw, HdrLog
// and the callbacks are ignored) and computes its schedules, so that the
// start costs nothing more. A load beyond MaxShardRequests,
// MaxShardPoisson or MaxShardDuration is refused first, with an error
// wrapping ErrShardLimit: what PrepareShard holds is bounded whatever it
// is asked.
func PrepareShard(cfg Config) (*PreparedShard, error) {
	cfg.Remote, cfg.Raw, cfg.HdrLog, cfg.BurstRaw = nil, nil, nil, nil
	cfg.OnPhase, cfg.OnWindow, cfg.OnResult, cfg.Progress = nil, nil, nil, nil
	if err := checkShardLimits(cfg); err != nil {
		return nil, err
	}
	p, err := cfg.validate()
	if err != nil {
		return nil, err
	}
	return &PreparedShard{p: p}, nil
}

// Duration is the length of the shard's attack.
func (s *PreparedShard) Duration() time.Duration { return s.p.duration }

// Run attacks from t0 (which should be in the future) to the end of the
// phases, sending the shard's results to emit in batches about every
// ShardFlushInterval, in completion order within a batch (see the batch
// format in batch.go). emit is called from one goroutine at a time; an
// error from it ends the attack. Run returns when every result was sent,
// with the shard's report; ctx ending first aborts in-flight requests and
// returns the report with ctx's error.
func (s *PreparedShard) Run(ctx context.Context, t0 time.Time, emit func(batch []byte) error) (*ShardReport, error) {
	p := s.p
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	samples := make(chan sample, 8192)
	b := &shardBatcher{t0: t0, emit: emit, cancel: cancel}
	var bw sync.WaitGroup
	bw.Go(func() { b.loop(samples) })

	bursts := startBursts(ctx, p, t0)
	set := newAttackSet(ctx, p, t0, samples)
	late := max(0, time.Since(t0))
	var interrupted atomic.Bool
	unhook := context.AfterFunc(ctx, func() {
		interrupted.Store(true)
		for _, a := range set.atks {
			a.Stop()
		}
	})
	fwdErrs := set.run(ctx, p, t0, samples)
	burstStats, burstErr := bursts.wait()
	unhook()
	close(samples)
	bw.Wait()

	rep := &ShardReport{Shard: p.cfg.Shard, Late: late, Sent: make([]int64, len(set.pacers)), Samples: b.n,
		Bursts: burstStats, Interrupted: interrupted.Load()}
	for i, pc := range set.pacers {
		rep.Sent[i] = pc.released.Load()
	}
	for _, err := range append(fwdErrs, burstErr, b.err) {
		if err != nil {
			rep.Errors = append(rep.Errors, err.Error())
		}
	}
	if b.err != nil {
		return rep, b.err
	}
	if rep.Interrupted {
		return rep, context.Cause(ctx)
	}
	return rep, errors.Join(fwdErrs...)
}

// shardBatcher gathers a shard's samples into batches.
type shardBatcher struct {
	t0     time.Time
	emit   func([]byte) error
	cancel func()
	n      int64
	err    error
	buf    []byte
	ss     []sample
}

func (b *shardBatcher) loop(in <-chan sample) {
	t := time.NewTicker(ShardFlushInterval)
	defer t.Stop()
	for {
		select {
		case s, ok := <-in:
			if !ok {
				b.flush(math.MaxInt64)
				return
			}
			b.ss = append(b.ss, s)
			if len(b.ss) >= shardBatchSamples {
				b.flush(int64(time.Since(b.t0)) - int64(ShardFlushInterval))
			}
		case <-t.C:
			b.flush(int64(time.Since(b.t0)) - int64(ShardFlushInterval))
		}
	}
}

// flush sends the samples held, sorted by completion, with watermark: a
// flush interval before the present, since a result completed just
// before it may still be on its way from its attacker. Nothing is sent
// after an error, but samples are still drained.
func (b *shardBatcher) flush(watermark int64) {
	if b.err != nil {
		b.ss = b.ss[:0]
		return
	}
	slices.SortFunc(b.ss, func(x, y sample) int {
		dx, dy := x.done(), y.done()
		switch {
		case dx < dy:
			return -1
		case dx > dy:
			return 1
		}
		return 0
	})
	b.buf = appendBatch(b.buf[:0], watermark, b.ss)
	b.n += int64(len(b.ss))
	b.ss = b.ss[:0]
	if err := b.emit(b.buf); err != nil {
		b.err = err
		b.cancel()
	}
}
