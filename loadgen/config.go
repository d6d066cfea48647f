package loadgen

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"time"

	vegeta "github.com/tsenart/vegeta/v12/lib"
)

// ErrInvalidConfig is wrapped by every Config validation error; the message
// names the offending field.
var ErrInvalidConfig = errors.New("invalid load generator config")

// Defaults and limits of Config.
const (
	DefaultWindow       = time.Second
	MinWindow           = 100 * time.Millisecond
	DefaultLagThreshold = 5 * time.Millisecond
	DefaultTimeout      = vegeta.DefaultTimeout
)

// Target is one endpoint under open-model load at a piecewise-constant
// rate: Rate, or a phase's Phase.Rates entry for the target.
type Target struct {
	// Name labels the endpoint in windows, phases and raw results ("a").
	Name string
	// Method defaults to GET.
	Method string
	// URL is where every request goes, unless URLs is set.
	URL string
	// URLs, if set, are the instances of a fleet behind no load balancer:
	// the target's requests go to each in turn (round-robin, in send
	// order), and URL must be empty. One schedule, one rate and one set of
	// windows for all of them: the endpoint, not an instance, is loaded.
	URLs   []string
	Header http.Header
	Body   []byte
	// Rate is the send rate in requests per second, in [0, 1e7], in every
	// phase whose Rates do not name this target; 0 pauses the target there
	// (see Phase.Rates). A target must send in at least one phase.
	Rate float64
	// Rules classify results; nil means DefaultRules (the built-in service).
	Rules *Rules
	// Canary marks a target that measures the noise floor of the system
	// under test rather than its behaviour: a request path that does no
	// work (such as /healthz), sent at a low rate. Its latency p99 in every
	// judged phase must stay under Config.CanaryMaxP99, or the run is
	// invalid: the service itself, or the machine, was too slow to answer.
	// (Its few requests make its lag p99 close to its maximum, so the lag
	// limit applies to the other targets only.)
	Canary bool
	// Retry, if set, makes the target's client retry failed responses (not
	// for a canary).
	Retry *Retry
}

// Phase is a labelled stretch of the run. Phases run back to back.
type Phase struct {
	Name     string
	Duration time.Duration
	// Rates maps a target name to its send rate (requests per second, in
	// [0, 1e7]) during this phase; a target not named keeps Target.Rate.
	// A phase whose rate differs from the previous phase's restarts that
	// target's schedule at the phase start: its first request is due
	// exactly then and the next every 1/rate. Optional.
	//
	// Rate 0 pauses the target for the phase: it sends nothing, and its
	// schedule restarts at the start of the next phase with a positive
	// rate. A paused phase is not judged: its PhaseStats has Paused and
	// Excluded set, Expected 0, and no reasons; its windows have no
	// requests (Expected 0, TargetRate 0).
	Rates map[string]float64
	// Cancel maps a target name (not a canary's) to the share of its
	// requests in this phase that the client gives up on (see Cancel).
	// Optional.
	Cancel map[string]Cancel
}

// Config configures Run. The zero values of optional fields are documented
// per field.
type Config struct {
	// Targets are attacked concurrently, each by its own vegeta attacker.
	Targets []Target
	// Phases run back to back; the attack lasts the sum of their durations.
	Phases []Phase
	// Timeout is the client's request timeout; 0 means DefaultTimeout.
	Timeout time.Duration
	// Window is the recording window; 0 means DefaultWindow; at least MinWindow.
	Window time.Duration
	// LagThreshold is the validity limit on schedule-lag p99; 0 means
	// DefaultLagThreshold.
	LagThreshold time.Duration
	// Raw maps a target name to a writer that receives its raw results in
	// vegeta's gob encoding, bodies dropped (readable by `vegeta report`).
	// Optional; Run buffers writes and flushes before it returns but does
	// not close the writers.
	Raw map[string]io.Writer
	// HdrLog maps a target name to a writer that receives an HdrHistogram
	// interval log (one untagged histogram of latency from the actual send
	// and one Tag=intended histogram per window; values in nanoseconds).
	HdrLog map[string]io.Writer
	// OnPhase is called when each phase starts, including the first, with
	// the phase's scheduled start. Calls are sequential on a goroutine of
	// their own, so a slow callback delays later OnPhase calls but never the
	// attack. Run waits for a running callback before it returns.
	OnPhase func(p Phase, start time.Time)
	// OnWindow is called with each closed window, in order per endpoint, on
	// the aggregator goroutine: it must be quick. Optional.
	OnWindow func(Window)
	// OnResult is called with every recorded result of a target (not a
	// retrying client's attempt records, nor a burst's requests), on the
	// aggregator goroutine as it records it: it must be quick, and should
	// hand anything slow to a goroutine of its own. Results come about in
	// the order they completed, per target. Optional.
	OnResult func(ResultEvent)
	// Progress is called about every second on the aggregator goroutine
	// with a snapshot: it must be quick. Optional.
	Progress func(Snapshot)
	// MaxWorkers caps vegeta's workers per target; 0 means unlimited, the
	// only setting that keeps the open model. For tests of the validity check.
	MaxWorkers uint64
	// ExcludeFromValidity names phases (e.g. "warmup") whose verdict does not
	// count towards Report.Valid.
	ExcludeFromValidity []string
	// CanaryMaxP99 is the validity limit on a canary target's latency p99
	// in each judged phase; 0 means no limit.
	CanaryMaxP99 time.Duration
	// Health, if set, requires every target to be healthy in the phases it
	// names (typically the baseline): a run whose target did not answer is
	// invalid, not evidence.
	Health *Health
	// Arrivals is how each target's requests are spread in time; the zero
	// value is evenly spaced and in lock-step.
	Arrivals Arrivals
	// InjectLag is a deliberate TEST FAULT, never for real use: every send
	// leaves a further uniform draw of [0, InjectLag) after it is due (a
	// pacer late by that much, its schedule lag p99 about InjectLag), so that
	// the sensitivity of the verdicts to schedule lag can be measured. Zero:
	// off.
	InjectLag time.Duration
	// Seed seeds the choice of the requests that Phase.Cancel gives up on;
	// each target derives its own stream from it and its name. A run with
	// the same Seed gives up on the same requests.
	Seed int64
	// Bursts release requests to a target at one instant each, on top of
	// its schedule (see Burst); their records are Report.Bursts. Optional.
	Bursts []Burst
	// Shard, if set, makes this run one shard of the load (see Shard): the
	// run sends its share of every rate. Optional.
	Shard Shard
	// Remote, if set, sends the load from other processes instead of this
	// one (see Remote); Run merges their results as its own. Optional.
	Remote Remote
	// BurstRaw maps a burst's label to a writer that receives its raw
	// results in vegeta's encoding (see Raw; Attack is the label, Seq the
	// request's index). Optional; Run flushes but does not close them.
	BurstRaw map[string]io.Writer
}

// Health is the validity rule that a target answered normally in a phase.
type Health struct {
	// Phases are the phases the rule applies to.
	Phases []string
	// MinSuccess is the smallest share of ok results, in [0, 1].
	MinSuccess float64
	// MaxUnreachable is the largest share of results that never got an
	// answer (transport errors and client timeouts), in [0, 1].
	MaxUnreachable float64
	// Stationary, if set, also requires each target (not a canary) to be
	// steady through the phase (see Stationarity).
	Stationary *Stationarity
}

// plan is a validated Config with derived values.
type plan struct {
	cfg         Config
	window      time.Duration
	lag         time.Duration
	timeout     time.Duration
	duration    time.Duration
	spans       []phaseSpan
	classifiers []*Classifier
	schedules   []schedule // per target
	bursts      []*burstPlan
}

// FieldError is a Config error that names its field ("targets[0].rate").
type FieldError struct{ Field, Msg string }

func (e *FieldError) Error() string {
	return fmt.Sprintf("loadgen: %s: %v: %s", e.Field, ErrInvalidConfig, e.Msg)
}

func (e *FieldError) Unwrap() error { return ErrInvalidConfig }

func invalid(field, format string, args ...any) error {
	return &FieldError{Field: field, Msg: fmt.Sprintf(format, args...)}
}

// validate checks cfg and fills in defaults.
func (cfg Config) validate() (*plan, error) {
	p := &plan{cfg: cfg, window: cfg.Window, lag: cfg.LagThreshold, timeout: cfg.Timeout}
	if p.window == 0 {
		p.window = DefaultWindow
	}
	if p.lag == 0 {
		p.lag = DefaultLagThreshold
	}
	if p.timeout == 0 {
		p.timeout = DefaultTimeout
	}
	switch {
	case p.window < MinWindow:
		return nil, invalid("window", "%v is below the minimum %v", p.window, MinWindow)
	case p.lag < 0:
		return nil, invalid("lag threshold", "%v is negative", p.lag)
	case p.timeout < 0:
		return nil, invalid("timeout", "%v is negative", p.timeout)
	case len(cfg.Targets) == 0:
		return nil, invalid("targets", "at least one target is required")
	case len(cfg.Phases) == 0:
		return nil, invalid("phases", "at least one phase is required")
	case cfg.CanaryMaxP99 < 0:
		return nil, invalid("canary max p99", "%v is negative", cfg.CanaryMaxP99)
	}
	if h := cfg.Health; h != nil && (!(h.MinSuccess >= 0 && h.MinSuccess <= 1) || !(h.MaxUnreachable >= 0 && h.MaxUnreachable <= 1)) {
		return nil, invalid("health", "shares must be within [0, 1], got min success %v, max unreachable %v", h.MinSuccess, h.MaxUnreachable)
	}
	names := map[string]bool{}
	for i, t := range cfg.Targets {
		cl, err := t.validate(fmt.Sprintf("targets[%d]", i), names)
		if err != nil {
			return nil, err
		}
		p.classifiers = append(p.classifiers, cl)
	}
	seen := map[string]bool{}
	for i, ph := range cfg.Phases {
		field := fmt.Sprintf("phases[%d]", i)
		switch {
		case ph.Name == "":
			return nil, invalid(field+".name", "empty")
		case seen[ph.Name]:
			return nil, invalid(field+".name", "duplicate phase %q", ph.Name)
		case ph.Duration <= 0:
			return nil, invalid(field+".duration", "%v is not positive", ph.Duration)
		}
		if err := validateRates(field+".rates", ph.Rates, names); err != nil {
			return nil, err
		}
		if err := p.validateCancels(field+".cancel", ph); err != nil {
			return nil, err
		}
		seen[ph.Name] = true
		p.spans = append(p.spans, phaseSpan{name: ph.Name, start: int64(p.duration), end: int64(p.duration + ph.Duration)})
		p.duration += ph.Duration
	}
	if err := cfg.Shard.validate(); err != nil {
		return nil, err
	}
	if err := cfg.Arrivals.validate(); err != nil {
		return nil, err
	}
	var err error
	if p.schedules, err = p.buildSchedules(); err != nil {
		return nil, err
	}
	if err := p.buildBursts(); err != nil {
		return nil, err
	}
	for field, m := range map[string]map[string]io.Writer{"raw": cfg.Raw, "hdr log": cfg.HdrLog} {
		for name, w := range m {
			if !names[name] || w == nil {
				return nil, invalid(field, "%q is not a target name or has a nil writer", name)
			}
		}
	}
	return p, nil
}

// httpURL reports whether raw is an absolute http(s) URL with a host.
func httpURL(raw string) bool {
	u, err := url.Parse(raw)
	return err == nil && (u.Scheme == "http" || u.Scheme == "https") && u.Host != ""
}

func (t Target) validate(field string, names map[string]bool) (*Classifier, error) {
	switch {
	case t.Name == "":
		return nil, invalid(field+".name", "empty")
	case names[t.Name]:
		return nil, invalid(field+".name", "duplicate target %q", t.Name)
	case !validRate(t.Rate):
		return nil, invalid(field+".rate", "%v is not in [0, 1e7] requests per second", t.Rate)
	}
	names[t.Name] = true
	if t.Retry != nil {
		if t.Canary {
			return nil, invalid(field+".retry", "a canary does not retry")
		}
		if err := t.Retry.validate(field + ".retry."); err != nil {
			return nil, err
		}
	}
	if len(t.URLs) > 0 {
		if t.URL != "" {
			return nil, invalid(field+".url", "set url or urls, not both")
		}
		for i, u := range t.URLs {
			if !httpURL(u) {
				return nil, invalid(fmt.Sprintf("%s.urls[%d]", field, i), "%q is not an http(s) URL", u)
			}
		}
	} else if !httpURL(t.URL) {
		return nil, invalid(field+".url", "%q is not an http(s) URL", t.URL)
	}
	rules := DefaultRules()
	if t.Rules != nil {
		rules = *t.Rules
	}
	cl, err := NewClassifier(rules)
	if err != nil {
		return nil, fmt.Errorf("loadgen: %s.%w (%w)", field, err, ErrInvalidConfig)
	}
	return cl, nil
}

// validRate reports whether r is a send rate: in [0, 1e7], 0 a pause.
func validRate(r float64) bool { return r >= 0 && r <= 1e7 }

// validateRates checks a phase's Rates against the target names, in name
// order so that the error is deterministic.
func validateRates(field string, rates map[string]float64, names map[string]bool) error {
	keys := make([]string, 0, len(rates))
	for name := range rates {
		keys = append(keys, name)
	}
	slices.Sort(keys)
	for _, name := range keys {
		switch r := rates[name]; {
		case !names[name]:
			return invalid(field+"."+name, "%q is not a target name", name)
		case !validRate(r):
			return invalid(field+"."+name, "%v is not in [0, 1e7] requests per second (0 pauses the target)", r)
		}
	}
	return nil
}

// rates returns t's rate in each phase.
func (p *plan) rates(t Target) []float64 {
	rates := make([]float64, len(p.cfg.Phases))
	for i, ph := range p.cfg.Phases {
		rates[i] = t.Rate
		if r, ok := ph.Rates[t.Name]; ok {
			rates[i] = r
		}
	}
	return rates
}

// buildSchedules returns each target's schedule over the phases.
func (p *plan) buildSchedules() ([]schedule, error) {
	out := make([]schedule, 0, len(p.cfg.Targets))
	starts := make([]int64, len(p.spans))
	for i, sp := range p.spans {
		starts[i] = sp.start
	}
	for ti, t := range p.cfg.Targets {
		rates := p.rates(t)
		if slices.Max(rates) == 0 {
			return nil, invalid(fmt.Sprintf("targets[%d]", ti), "target %q sends nothing: its rate is 0 in every phase", t.Name)
		}
		for i := range rates {
			rates[i] *= p.cfg.Shard.scale()
		}
		s, err := p.cfg.Arrivals.schedule(t.Name, p.cfg.Shard, starts, rates, int64(p.duration))
		if err != nil {
			return nil, err
		}
		out = append(out, s)
	}
	return out, nil
}
