package spec

import (
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/bulkheadlab/bulkheadlab/experiments/plan"
	"github.com/bulkheadlab/bulkheadlab/faultproxy"
)

const sweepSpec = `name: sw
service: {timeout: 250ms, pool_size: 20, queue: 20}
conditions: [healthy, slow]
modes:
  - shared
  - name: limited
    pools: shared
    policies:
      A: {limit: 4}
sweep:
  field: modes.limited.policies.A.limit
  values: [2, 8]
expectations: {check: [P1]}
`

func runIDs(s *Spec) []string {
	var ids []string
	for _, r := range s.Expand() {
		ids = append(ids, r.ID)
	}
	return ids
}

// serviceLimit is the limit of /a's stack in a planned run (0: none).
func serviceLimit(t *testing.T, r plan.Run) int {
	t.Helper()
	for _, c := range r.Components {
		if c.Kind == plan.KindService {
			return c.Service.Config.Policies["a"].Limit
		}
	}
	t.Fatalf("run %s has no service", r.ID)
	return 0
}

// TestSweepMakesVariantsOfTheMode: a field under one mode makes variants
// of that mode only, named by the field and value, each planned with its
// value and its place in the sweep in the run's meta; the resolved spec
// parses back to the same matrix.
func TestSweepMakesVariantsOfTheMode(t *testing.T) {
	s, err := Parse("sw.yaml", []byte(sweepSpec))
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"healthy-shared-r1", "healthy-limited.limit2-r1", "healthy-limited.limit8-r1",
		"slow-shared-r1", "slow-limited.limit2-r1", "slow-limited.limit8-r1"}
	if got := runIDs(s); !slices.Equal(got, want) {
		t.Fatalf("runs %v, want %v", got, want)
	}
	p, err := s.Plan()
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range p.Runs {
		lim := serviceLimit(t, r)
		switch {
		case strings.Contains(r.ID, "limit2") && (lim != 2 || r.Meta.Sweep == nil || r.Meta.Sweep.Values[0].Number != 2 || r.Meta.Sweep.Mode != "limited"):
			t.Errorf("%s: limit %d, sweep %+v", r.ID, lim, r.Meta.Sweep)
		case strings.Contains(r.ID, "limit8") && lim != 8:
			t.Errorf("%s: limit %d, want 8", r.ID, lim)
		case strings.Contains(r.ID, "shared") && (lim != 0 || r.Meta.Sweep != nil):
			t.Errorf("%s: limit %d, sweep %+v; the shared mode is not swept", r.ID, lim, r.Meta.Sweep)
		}
		if r.Mode != r.Meta.Mode || !strings.Contains(r.ID, r.Mode) {
			t.Errorf("%s: mode %q, meta mode %q", r.ID, r.Mode, r.Meta.Mode)
		}
	}
	y, err := s.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	back, err := Parse("spec.yaml", y)
	if err != nil {
		t.Fatalf("the resolved spec does not parse: %v\n%s", err, y)
	}
	if got := runIDs(back); !slices.Equal(got, want) {
		t.Errorf("resolved spec expands to %v", got)
	}
}

// TestSweepGlobalFieldAndGrid: a field outside modes and conditions makes
// variants of every mode; two fields make a grid; a condition field makes
// variants of its condition.
func TestSweepGlobalFieldAndGrid(t *testing.T) {
	text := strings.Replace(sweepSpec, "sweep:\n  field: modes.limited.policies.A.limit\n  values: [2, 8]\n",
		"sweep:\n  - {field: load.rates.a, range: {from: 100, to: 300, step: 100}}\n  - {field: modes.limited.policies.A.limit, values: [2, 8]}\n"+
			"  - {field: \"conditions.slow.faults[0].latency\", values: [0.5T, 0.9T]}\n", 1)
	text = strings.Replace(text, "expectations: {check: [P1]}", "expectations: {check: []}", 1)
	text = strings.Replace(text, "conditions: [healthy, slow]", "conditions:\n  - healthy\n  - {name: slow, dependency: A, faults: [{type: latency, latency: 0.9T}]}", 1)
	s, err := Parse("sw.yaml", []byte(text))
	if err != nil {
		t.Fatal(err)
	}
	// shared: 3 rates; limited: 3 rates × 2 limits; healthy once, slow twice.
	if n := len(s.Modes); n != 9 {
		t.Errorf("%d modes, want 3 + 6: %v", n, s.Modes)
	}
	if n := len(s.Conditions); n != 3 {
		t.Errorf("%d conditions, want healthy + 2 slow", n)
	}
	p, err := s.Plan()
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, r := range p.Runs {
		if r.ID != "slow.latency0.5t-limited.rates_a300.limit8-r1" {
			continue
		}
		found = true
		if r.Load.Endpoints[0].Rate != 300 || serviceLimit(t, r) != 8 || r.Faults[0].Faults[0].Params.(faultproxy.Delay).Latency != 125*time.Millisecond {
			t.Errorf("%s: rate %v limit %d fault %+v", r.ID, r.Load.Endpoints[0].Rate, serviceLimit(t, r), r.Faults[0].Faults[0])
		}
		if len(r.Meta.Sweep.Values) != 3 || r.Meta.Sweep.Condition != "slow" {
			t.Errorf("%s: sweep %+v", r.ID, r.Meta.Sweep)
		}
	}
	if !found {
		t.Errorf("no run slow.latency0.5t-limited.rates_a300.limit8-r1 in %v", runIDs(s))
	}
}

func TestSweepErrorsNameTheField(t *testing.T) {
	for _, tc := range []struct{ sweep, path, msg string }{
		{"sweep: {field: modes.nope.pool_sizes.a, values: [2]}", "sweep[0].field", `no element named "nope"`},
		{"sweep: {field: modes.limited.policies.A.limit}", "sweep[0]", "values or a range"},
		{"sweep: {field: modes.limited.policies.A.limit, range: {from: 5, to: 1, step: 1}}", "sweep[0].range", "from ≤ to"},
		{"sweep: {field: modes.limited.policies.A.limit, values: [2, 2]}", "sweep[0].values[1]", "repeated"},
		{"sweep: {field: name, values: [x]}", "sweep[0].field", "cannot be swept"},
		{"sweep: {field: modes.limited.policies, values: [2]}", "sweep[0].field", "not a single value"},
	} {
		text := strings.Replace(sweepSpec, "sweep:\n  field: modes.limited.policies.A.limit\n  values: [2, 8]\n", tc.sweep+"\n", 1)
		_, err := Parse("sw.yaml", []byte(text))
		var se *SpecError
		if !errors.As(err, &se) || !strings.Contains(err.Error(), tc.path+": ") || !strings.Contains(err.Error(), tc.msg) ||
			!strings.Contains(err.Error(), "sw.yaml:10") {
			t.Errorf("%s: %v; want sw.yaml:10 naming %s and %q", tc.sweep, err, tc.path, tc.msg)
		}
	}
	text := strings.Replace(sweepSpec, "values: [2, 8]", "values: [2, many]", 1)
	if _, err := Parse("sw.yaml", []byte(text)); err == nil || !strings.Contains(err.Error(), "at sweep point modes.limited.policies.A.limit=many") ||
		!strings.Contains(err.Error(), "sw.yaml:9: modes[1].policies.A.limit") {
		t.Errorf("a value the field refuses: %v", err)
	}
}
