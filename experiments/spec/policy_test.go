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
		{"name: t\nmodes:\n  - name: x\n    pools: sharded\n", `t.yaml:4: modes[0].pools: must be shared or bulkhead, got "sharded"`},
		{"name: t\nmodes:\n  - name: x\n", `t.yaml:3: modes[0].name: must be shared or bulkhead, got "x" (a mode of your own name needs pools`},
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
