package spec

import (
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/bulkheadlab/bulkheadlab/experiments/plan"
	"github.com/bulkheadlab/bulkheadlab/service"
	"github.com/spf13/pflag"
)

const policySpec = `name: t
modes:
  - shared
  - name: shared-stack
    pools: shared
    policies:
      A:
        order: [breaker, retry, bulkhead, timeout]
        timeout: 0.8T
        retry: {attempts: 3, backoff: 0.1T, max_backoff: 1T, jitter: 0.2, on: [rejected], budget: {max_rate: 0.1}}
        breaker: {kind: time, failures: 5, period: 4T, delay: 8T, half_open_trials: 2}
        retry_after: 1s
  - name: adaptive
    pools: bulkhead
    policies:
      B: {limiter: {min: 1, max: 20, initial: 10, window: 2T}, bulkhead: failsafe}
`

// TestPolicyModesReachTheService: a mode's policies, with durations
// relative to T, arrive at the service's flags resolved and keyed by
// endpoint, each run's retry seeded from the run; the built-in modes carry
// none.
func TestPolicyModesReachTheService(t *testing.T) {
	s, err := Parse("t.yaml", []byte(policySpec))
	if err != nil {
		t.Fatal(err)
	}
	p, err := s.Plan()
	if err != nil {
		t.Fatal(err)
	}
	configs := map[string]service.Config{}
	for _, r := range p.Runs {
		if r.Repeat != 1 || r.Condition != CondSlow {
			continue
		}
		for _, c := range r.Components {
			if c.Kind == plan.KindService {
				c, _ = c.Resolve(map[string]string{"proxy-A": "http://127.0.0.1:1", "proxy-B": "http://127.0.0.1:2"})
				configs[r.Mode] = serveConfig(t, c.Args()[3:])
			}
		}
	}
	if c := configs[ModeShared]; c.Policies != nil {
		t.Errorf("shared carries policies: %+v", c.Policies)
	}
	a := configs["shared-stack"].Policies["a"]
	want := service.PolicyConfig{Order: []string{"breaker", "retry", "bulkhead", "timeout"}, Timeout: 200 * time.Millisecond,
		RetryAfter: time.Second,
		Retry: &service.RetryConfig{Attempts: 3, Backoff: 25 * time.Millisecond, MaxBackoff: 250 * time.Millisecond, Jitter: 0.2,
			On: []string{"rejected"}, Budget: &service.BudgetConfig{MaxRate: 0.1}},
		Breaker: &service.BreakerConfig{Kind: "time", Failures: 5, Period: time.Second, Delay: 2 * time.Second, HalfOpenTrials: 2}}
	if a.Retry == nil || a.Retry.Seed == 0 {
		t.Fatalf("shared-stack /a: %+v, want a seeded retry", a)
	}
	want.Retry.Seed = a.Retry.Seed
	if !reflect.DeepEqual(a, want) {
		t.Errorf("shared-stack /a:\n got %+v\nwant %+v", a, want)
	}
	if _, ok := configs["shared-stack"].Policies["b"]; ok {
		t.Error("shared-stack: /b got A's stack")
	}
	b := configs["adaptive"]
	if b.Layout.Mode != service.ModeBulkhead || b.Policies["b"].Limiter == nil || b.Policies["b"].Limiter.Window != 500*time.Millisecond {
		t.Errorf("adaptive: %+v", b)
	}
}

func serveConfig(t *testing.T, args []string) service.Config {
	t.Helper()
	var f service.ServeFlags
	fs := pflag.NewFlagSet("serve", pflag.ContinueOnError)
	f.Bind(fs)
	if err := fs.Parse(args); err != nil {
		t.Fatal(err)
	}
	c, err := f.Config()
	if err != nil {
		t.Fatalf("%v: %v", args, err)
	}
	return c
}

func TestPolicyErrorsNameFileLineField(t *testing.T) {
	for _, tc := range []struct{ yaml, want string }{
		{"name: t\nmodes:\n  - name: x\n    pools: shared\n    policies:\n      A:\n        breaker: {failures: 0, delay: 1s}\n",
			"t.yaml:7: modes[0].policies.A.breaker.failures: must be between 1"},
		{"name: t\nmodes:\n  - name: x\n    pools: shared\n    policies:\n      A:\n        retry:\n          attempts: 3\n          on: [slow]\n",
			`t.yaml:9: modes[0].policies.A.retry.on: unknown outcome "slow"`},
		{"name: t\nmodes:\n  - name: x\n    pools: shared\n    policies:\n      C: {timeout: 1T}\n",
			`t.yaml:6: modes[0].policies.C: no dependency "C"`},
		{"name: t\nmodes:\n  - name: x\n    pools: sharded\n", `t.yaml:4: modes[0].pools: must be shared, bulkhead, unbounded or ratelimit, got "sharded"`},
		{"name: t\nmodes:\n  - name: x\n", `t.yaml:3: modes[0].name: must be shared, bulkhead, unbounded or ratelimit, got "x" (a mode of your own name needs pools`},
		{"name: t\nmodes:\n  - name: shared\n    policies:\n      A: {timeout: 1T}\n", "t.yaml:4: modes[0].policies: the built-in modes"},
		{"name: t\nmodes:\n  - name: x\n    pools: shared\n    policies:\n      A: {timeout: 2T}\n", "t.yaml:6: modes[0].policies.A.timeout: must be between 0 (T) and T"},
		{"name: t\nmodes:\n  - name: x\n    pools: shared\n    policies:\n      A: {bulkhead: failsafe}\n", "modes[0].policies.A.bulkhead: failsafe replaces the endpoint's own pool"},
		{"name: t\nmodes:\n  - name: x\n    pools: shared\n    policies:\n      A:\n        order: [retry, bulkhead, timeout]\n",
			"t.yaml:7: modes[0].policies.A.order: retry is not configured"},
	} {
		_, err := Parse("t.yaml", []byte(tc.yaml))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Parse(%q) = %v, want %q", tc.yaml, err, tc.want)
		}
	}
}

// TestPolicySpecRoundTrip: a resolved spec with policies marshals to YAML
// that parses back to an equal spec.
func TestPolicySpecRoundTrip(t *testing.T) {
	s, err := Parse("t.yaml", []byte(policySpec))
	if err != nil {
		t.Fatal(err)
	}
	b, err := s.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	s2, err := Parse("t2.yaml", b)
	if err != nil {
		t.Fatalf("%v\n%s", err, b)
	}
	if !reflect.DeepEqual(s.Modes, s2.Modes) {
		t.Errorf("modes after a round trip:\n got %+v\nwant %+v", s2.Modes, s.Modes)
	}
}

// TestPolicyPresetsUnderThreeMinutes: each policy preset, one repeat, is
// expected to take under 3 minutes.
func TestPolicyPresetsUnderThreeMinutes(t *testing.T) {
	for _, n := range []string{"breaker-after-drain", "adaptive-limit"} {
		s, err := Preset(n)
		if err != nil {
			t.Fatal(err)
		}
		if d := s.EstimatedDuration(); s.Repeats != 1 || d >= 3*time.Minute {
			t.Errorf("%s: %d repeats, %s expected; want 1 and under 3m", n, s.Repeats, d)
		}
		if s.Expectations.Policy == nil {
			t.Errorf("%s names no policy claim", n)
		}
	}
}

// TestBreakerOpeningClosedForm: breaker-after-drain's breaker (10
// consecutive failures, rejections counted) on a hanging A at 200/s opens
// when the pool has run out (Little's law), its queue filled at the pool's
// arrival rate and 10 rejections followed; a breaker that does not count
// rejections opens 10 calls after the first timeouts; a windowed breaker
// or a fault that lets calls succeed has no closed form.
func TestBreakerOpeningClosedForm(t *testing.T) {
	b, err := PresetSource("breaker-after-drain")
	if err != nil {
		t.Fatal(err)
	}
	s, err := Parse("p.yaml", b)
	if err != nil {
		t.Fatal(err)
	}
	c := &s.Conditions[0]
	mode := func(name string) *Mode {
		for i := range s.Modes {
			if s.Modes[i].Name == name {
				return &s.Modes[i]
			}
		}
		t.Fatalf("no mode %s", name)
		return nil
	}
	near := func(got, want time.Duration) bool {
		return got > want-5*time.Millisecond && got < want+5*time.Millisecond
	}
	sh := s.Preview(c, mode("shared-breaker"))[0].PredictedExhaustion
	want := sh + 20*time.Second/400 + 10*time.Second/200
	if got := s.BreakerOpening(c, mode("shared-breaker"))["A"]; !near(got, want) {
		t.Errorf("shared-breaker: %v, want exhaustion %v + queue 20/400/s + 10/200/s = %v", got, sh, want)
	}
	if got := s.BreakerOpening(c, mode("shared"))["A"]; got != 0 {
		t.Errorf("shared has no breaker but a prediction %v", got)
	}
	m := *mode("shared-breaker")
	pol := m.Policies["A"]
	br := *pol.Breaker
	br.On = []string{"timeout"}
	pol.Breaker = &br
	m.Policies = map[string]Policy{"A": pol}
	if got := s.BreakerOpening(c, &m)["A"]; !near(got, 250*time.Millisecond+50*time.Millisecond) {
		t.Errorf("timeouts only: %v, want T + 10/200/s = 300ms", got)
	}
	br.Of = 20
	if got, ok := s.BreakerOpening(c, &m)["A"]; ok {
		t.Errorf("a breaker over the last 20 calls has no closed form, got %v", got)
	}
	br.Of = 0
	slow := Condition{Name: "slow", Dependency: "A", Faults: []Fault{{Type: "latency", Percent: 100, Params: Params{"latency": Abs(100 * time.Millisecond)}}}}
	if got, ok := s.BreakerOpening(&slow, &m)["A"]; ok {
		t.Errorf("a delay below the timeout lets calls succeed: no closed form, got %v", got)
	}
	failing := Condition{Name: "failing", Dependency: "A", Faults: []Fault{{Type: "error", Percent: 100, Params: Params{"status": 500}}}}
	br.On = nil
	if got := s.BreakerOpening(&failing, &m)["A"]; !near(got, 50*time.Millisecond) {
		t.Errorf("every call an error: %v, want 10/200/s = 50ms", got)
	}
}
