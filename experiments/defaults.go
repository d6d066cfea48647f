package experiments

import (
	"time"
)

// Defaults of DESIGN §5, used for every field a spec leaves out.
const (
	DefaultTimeout    = 250 * time.Millisecond
	DefaultPoolSize   = 20
	DefaultQueue      = 20
	DefaultConns      = 64
	DefaultDepLatency = 10 * time.Millisecond
	DefaultDepJitter  = 2 * time.Millisecond
	DefaultBodySize   = 64
	DefaultRate       = 200.0
	DefaultWindow     = 250 * time.Millisecond
	DefaultWarmup     = 2 * time.Second
	DefaultBaseline   = 5 * time.Second
	DefaultFault      = 10 * time.Second
	DefaultRecovery   = 5 * time.Second
	// DefaultSlowFactor is the slow fault's latency in units of T.
	DefaultSlowFactor = 0.9
	// DefaultSlowJitter is the slow fault's jitter (capped so that the
	// delay plus jitter stays below T).
	DefaultSlowJitter = 10 * time.Millisecond
	// DefaultFailStatus is the failing fault's status.
	DefaultFailStatus = 503
	// BusyDemandFactor: the busy condition raises /a's demand to this many
	// times its bulkhead (P/2), while keeping the shared pool below P.
	BusyDemandFactor = 1.25
)

// BuiltinConditions are the names of the built-in conditions, in order.
var BuiltinConditions = []string{CondHealthy, CondSlow, CondFailing, CondBusy}

func isBuiltin(name string) bool {
	for _, b := range BuiltinConditions {
		if b == name {
			return true
		}
	}
	return false
}

// applyDefaults fills every unset field of s, except the built-in
// conditions' contents and relative durations (see resolve).
func (s *Spec) applyDefaults() {
	if s.Repeats == 0 {
		s.Repeats = 1
	}
	sv := &s.Service
	if sv.Timeout.IsZero() {
		sv.Timeout = Abs(DefaultTimeout)
	}
	if sv.PoolSize == 0 {
		sv.PoolSize = DefaultPoolSize
	}
	if sv.Queue == nil {
		q := DefaultQueue
		sv.Queue = &q
	}
	if sv.MaxWait.IsZero() {
		sv.MaxWait = RelT(1)
	}
	if sv.Conns == 0 {
		sv.Conns = DefaultConns
	}
	for _, d := range []*Dependency{&s.Dependencies.A, &s.Dependencies.B} {
		if d.Latency.IsZero() && d.Jitter.IsZero() {
			d.Latency, d.Jitter = Abs(DefaultDepLatency), Abs(DefaultDepJitter)
		}
		if d.Size == 0 {
			d.Size = DefaultBodySize
		}
	}
	if s.Load.Rates.A == 0 {
		s.Load.Rates.A = DefaultRate
	}
	if s.Load.Rates.B == 0 {
		s.Load.Rates.B = DefaultRate
	}
	if s.Load.Window.IsZero() {
		s.Load.Window = Abs(DefaultWindow)
	}
	ph := &s.Phases
	for _, p := range []struct {
		d   *Duration
		def time.Duration
	}{{&ph.Warmup, DefaultWarmup}, {&ph.Baseline, DefaultBaseline}, {&ph.Fault, DefaultFault}, {&ph.Recovery, DefaultRecovery}} {
		if p.d.IsZero() {
			*p.d = Abs(p.def)
		}
	}
	if len(s.Conditions) == 0 {
		for _, n := range BuiltinConditions {
			s.Conditions = append(s.Conditions, Condition{Name: n})
		}
	}
	if len(s.Modes) == 0 {
		s.Modes = []Mode{{Name: ModeShared}, {Name: ModeBulkhead}}
	}
	s.Expectations = s.Expectations.WithDefaults()
}

// resolveDurations makes every Duration absolute, given T.
func (s *Spec) resolveDurations() {
	t := s.Service.Timeout.Resolve(0)
	abs := func(d *Duration) { *d = Abs(d.Resolve(t)) }
	abs(&s.Service.MaxWait)
	abs(&s.Dependencies.A.Latency)
	abs(&s.Dependencies.A.Jitter)
	abs(&s.Dependencies.B.Latency)
	abs(&s.Dependencies.B.Jitter)
	abs(&s.Load.Window)
	abs(&s.Phases.Warmup)
	abs(&s.Phases.Baseline)
	abs(&s.Phases.Fault)
	abs(&s.Phases.Recovery)
	if s.Load.ClientTimeout.IsZero() {
		s.Load.ClientTimeout = Abs(2 * (t + s.Service.MaxWait.D))
	}
	abs(&s.Load.ClientTimeout)
	for i := range s.Conditions {
		for j := range s.Conditions[i].Faults {
			f := &s.Conditions[i].Faults[j]
			abs(&f.Latency)
			abs(&f.Jitter)
		}
	}
}

// expandConditions fills in the built-in conditions and fault defaults.
// It runs after resolveDurations.
func (s *Spec) expandConditions() {
	t := s.Service.Timeout.D
	for i := range s.Conditions {
		c := &s.Conditions[i]
		if c.Dependency == "" {
			c.Dependency = "A"
		}
		if isBuiltin(c.Name) && len(c.Faults) == 0 && c.Rates == nil {
			s.builtin(c, t)
		}
		for j := range c.Faults {
			f := &c.Faults[j]
			if f.Percent == 0 {
				f.Percent = 100
			}
			if f.Type == "latency" && f.Distribution == "" {
				f.Distribution = "uniform"
			}
			if f.Type == "error" && f.Status == 0 {
				f.Status = DefaultFailStatus
			}
		}
	}
}

func (s *Spec) builtin(c *Condition, t time.Duration) {
	switch c.Name {
	case CondSlow:
		lat := time.Duration(DefaultSlowFactor * float64(t))
		jit := min(DefaultSlowJitter, (t-lat)/2)
		c.Faults = []Fault{{Type: "latency", Percent: 100, Latency: Abs(lat), Jitter: Abs(jit), Distribution: "uniform"}}
		if c.Description == "" {
			c.Description = "A answers just within the timeout (0.9T)"
		}
	case CondFailing:
		c.Faults = []Fault{{Type: "error", Percent: 100, Status: DefaultFailStatus, Body: "injected failure"}}
		if c.Description == "" {
			c.Description = "A fails at once with 503"
		}
	case CondBusy:
		rate, extra := s.Busy()
		c.Rates = &Rates{A: rate}
		if extra > 0 {
			c.Faults = []Fault{{Type: "latency", Percent: 100, Latency: Abs(extra), Distribution: "uniform"}}
		}
		if c.Description == "" {
			c.Description = "A healthy but busier: /a's demand exceeds its bulkhead (P/2), not the shared pool"
		}
	case CondHealthy:
		if c.Description == "" {
			c.Description = "no fault (control)"
		}
	}
}

// BusyRateFactor is how much the busy condition multiplies /a's rate.
const BusyRateFactor = 2

// Busy returns the /a rate and the extra latency of A in the built-in busy
// condition. By Little's law /a's demand λ·W should be BusyDemandFactor·P/2
// permits (capped halfway between P/2 and what the shared pool has left
// beside /b, so the shared pool is not exhausted). Reaching it by rate
// alone would take 1250/s at the default 10 ms, which a 2-core machine
// cannot send validly through five processes; so busy doubles /a's rate and
// lets A answer more slowly — still healthy, far below T — for the rest:
// W = demand/λ, extra = W − A's normal latency (from the fault phase on,
// through the proxy, like the rate). It needs absolute durations.
func (s *Spec) Busy() (rate float64, extra time.Duration) {
	p := float64(s.Service.PoolSize)
	wa := s.Dependencies.A.Latency.D.Seconds()
	wb := s.Dependencies.B.Latency.D.Seconds()
	rate = BusyRateFactor * s.Load.Rates.A
	if rate <= 0 {
		return s.Load.Rates.A, 0
	}
	demand := min(BusyDemandFactor*p/2, (p/2+(p-s.Load.Rates.B*wb))/2)
	w := demand / rate
	if w <= wa {
		return rate, 0
	}
	extra = time.Duration((w - wa) * float64(time.Second)).Round(time.Millisecond)
	return rate, min(extra, s.Service.Timeout.D/2)
}
