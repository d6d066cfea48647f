package loadgen

import (
	"math/rand/v2"
	"sync/atomic"
	"time"

	vegeta "github.com/tsenart/vegeta/v12/lib"
)

// pacer releases request n at t0 + schedule.at(n), for every
// attacker of a run from the same t0, so all targets start together and
// stop after their last scheduled request. It never waits for responses:
// with unlimited workers vegeta starts a new worker when all are busy.
//
// A request that is due while the attacker is behind is released at once.
// Past deadline (the end of the run plus a grace period) the pacer stops
// releasing overdue requests, so a starved run ends on time; the unsent
// requests are counted as dropped (like k6's dropped_iterations).
//
// vegeta calls Pace from a single goroutine.
type pacer struct {
	t0       time.Time
	sched    schedule
	deadline time.Time
	done     <-chan struct{}
	timer    *time.Timer
	released atomic.Int64 // requests released when Pace was last called

	// lag, if set, is the deliberate TEST FAULT Config.InjectLag: each
	// release waits a further uniform draw of [0, lag) after its due time.
	lag *injectedLag
}

// injectedLag delays releases by a seeded uniform draw of [0, max).
type injectedLag struct {
	max time.Duration
	rng *rand.Rand
}

var _ vegeta.Pacer = (*pacer)(nil)

func newPacer(t0 time.Time, sched schedule, deadline time.Time, done <-chan struct{}) *pacer {
	t := time.NewTimer(time.Hour)
	t.Stop()
	return &pacer{t0: t0, sched: sched, deadline: deadline, done: done, timer: t}
}

// Pace implements vegeta.Pacer. It sleeps itself (interruptibly) and
// returns a zero wait, so a stop request does not wait out a long interval.
func (p *pacer) Pace(_ time.Duration, hits uint64) (time.Duration, bool) {
	n := int64(hits)
	p.released.Store(n)
	if n >= p.sched.total {
		return 0, true
	}
	due := p.t0.Add(time.Duration(p.sched.at(n)))
	if p.lag != nil {
		due = due.Add(time.Duration(p.lag.rng.Int64N(int64(p.lag.max))))
	}
	if d := time.Until(due); d > 0 {
		p.timer.Reset(d)
		select {
		case <-p.timer.C:
		case <-p.done:
			p.timer.Stop()
			return 0, true
		}
	} else if time.Now().After(p.deadline) {
		return 0, true
	}
	select {
	case <-p.done:
		return 0, true
	default:
		return 0, false
	}
}

// Rate implements vegeta.Pacer: the scheduled rate at elapsed, taken as an
// offset from t0.
func (p *pacer) Rate(elapsed time.Duration) float64 { return p.sched.rateAt(int64(elapsed)) }
