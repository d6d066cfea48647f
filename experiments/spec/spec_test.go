package spec

import (
	"bytes"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/bulkheadlab/bulkheadlab/internal/claims"
	"github.com/bulkheadlab/bulkheadlab/internal/rundata"
)

const minimal = "name: t\n"

func TestParseMalformed(t *testing.T) {
	cases := []struct {
		name, yaml, want string
	}{
		{"unknown field", "name: t\nservice:\n  pool: 3\n", "t.yaml:3: service.pool: unknown field"},
		{"wrong type int", "name: t\nservice:\n  pool_size: many\n", `t.yaml:3: service.pool_size: want a whole number, got "many"`},
		{"float for int", "name: t\nrepeats: 1.5\n", `t.yaml:2: repeats: want a whole number`},
		{"bulkhead needs 2", "name: t\nservice:\n  pool_size: 1\nmodes: [shared, bulkhead]\n", "t.yaml:3: service.pool_size: must be at least 2 in bulkhead mode"},
		{"bad duration", "name: t\nservice:\n  timeout: 250\n", `t.yaml:3: service.timeout: invalid duration "250"`},
		{"relative timeout", "name: t\nservice:\n  timeout: 0.9T\n", "t.yaml:3: service.timeout: must be absolute"},
		{"negative duration", "name: t\nphases:\n  fault: -1s\n", "t.yaml:3: phases.fault: invalid duration"},
		{"short phase", "name: t\nphases:\n  fault: 10ms\n", "t.yaml:3: phases.fault: must be at least 100ms"},
		{"mapping for duration", "name: t\nphases:\n  fault: {a: 1}\n", "t.yaml:3: phases.fault: want a duration"},
		{"missing name", "seed: 1\n", "t.yaml:1: name: required"},
		{"bad name", "name: My Exp\n", `t.yaml:1: name: "My Exp"`},
		{"unknown condition", "name: t\nconditions:\n  - healthy\n  - slw\n", `t.yaml:4: conditions[1]: unknown condition "slw"`},
		{"duplicate condition", "name: t\nconditions: [slow, slow]\n", `conditions[1].name: duplicate condition "slow"`},
		{"duplicate check", "name: t\nexpectations:\n  check: [P1, P2, P1]\n", `t.yaml:3: expectations.check[2]: "P1" is checked already (check[0])`},
		{"latency past the client timeout", "name: t\nload:\n  client_timeout: 2s\nconditions:\n  - name: x\n    faults:\n      - {type: latency, latency: 3s}\n",
			"t.yaml:7: conditions[0].faults[0].latency: 3s (jitter 0s) is never shorter than load.client_timeout (2s)"},
		{"bad fault type", "name: t\nconditions:\n  - name: x\n    faults:\n      - type: slowish\n", `t.yaml:5: conditions[0].faults[0].type: unknown fault type "slowish"`},
		{"status on latency", "name: t\nconditions:\n  - name: x\n    faults:\n      - {type: latency, latency: 0.5T, status: 500}\n", "t.yaml:5: conditions[0].faults[0].status: only valid for type error"},
		{"percent range", "name: t\nconditions:\n  - name: x\n    faults:\n      - type: abort\n        percent: 150\n", "t.yaml:6: conditions[0].faults[0].percent: must be in (0, 100]"},
		{"jitter over latency", "name: t\nconditions:\n  - name: x\n    faults:\n      - type: latency\n        latency: 10ms\n        jitter: 20ms\n", "t.yaml:7: conditions[0].faults[0].jitter: 20ms exceeds latency 10ms"},
		{"dependency C", "name: t\nconditions:\n  - name: x\n    dependency: C\n    rates: {a: 5}\n", `t.yaml:4: conditions[0].dependency: must be one of A, B, got "C"`},
		{"bad mode", "name: t\nmodes: [shared, pooled]\n", `modes[1].name: must be shared or bulkhead, got "pooled"`},
		{"sizes on shared", "name: t\nmodes:\n  - name: shared\n    pool_sizes: {a: 1, b: 1}\n", "t.yaml:3: modes[0]: pool_sizes and queues are for bulkhead mode"},
		{"zero pool size", "name: t\nmodes:\n  - name: bulkhead\n    pool_sizes: {a: 0, b: 3}\n", "t.yaml:4: modes[0].pool_sizes.a: must be between 1 and"},
		{"client timeout", "name: t\nload:\n  client_timeout: 300ms\n", "t.yaml:3: load.client_timeout: 300ms must exceed service.timeout + service.max_wait (500ms)"},
		{"negative rate", "name: t\nload:\n  rates: {a: -5}\n", "t.yaml:3: load.rates.a: must be > 0"},
		{"check name", "name: t\nexpectations:\n  check: [P1, P9]\n", "t.yaml:3: expectations.check[1]: must be one of " + strings.Join(claims.Names(), ", ") + `, got "P9"`},
		{"string for list", "name: t\nconditions: slow\n", "t.yaml:2: conditions: want a list"},
		{"duplicate key", "name: t\nseed: 1\nseed: 2\n", "t.yaml:3"},
		{"syntax", "name: t\n  seed: [\n", "t.yaml:"},
		{"empty", "", "t.yaml:1: empty document"},
		{"explicit zero timeout", "name: t\nservice:\n  timeout: 0\n", "t.yaml:3: service.timeout: must be between 1ms and 1m"},
		{"explicit zero repeats", "name: t\nrepeats: 0\n", "t.yaml:2: repeats: must be between 1 and 100, got 0"},
		{"explicit zero rate", "name: t\nload:\n  rates: {b: 0}\n", "t.yaml:3: load.rates.b: must be > 0"},
		{"explicit zero condition rate", "name: t\nconditions:\n  - {name: x, rates: {a: 0}}\n", "conditions[0].rates.a: must be > 0"},
		{"explicit zero phase", "name: t\nphases:\n  fault: 0\n", "t.yaml:3: phases.fault: must be at least 100ms"},
		{"explicit zero percent", "name: t\nconditions:\n  - name: x\n    faults: [{type: abort, percent: 0}]\n", "conditions[0].faults[0].percent: must be in (0, 100]"},
		{"explicit zero status", "name: t\nconditions:\n  - name: x\n    faults: [{type: error, status: 0}]\n", "conditions[0].faults[0].status: must be an HTTP status"},
		{"zero max wait with a queue", "name: t\nservice:\n  max_wait: 0\n", "service.max_wait: must be positive when the queue is not empty"},
		{"relative max wait unbounded", "name: t\nservice:\n  max_wait: 1000000T\n", "service.max_wait: must be between 0 and 1m"},
		{"two documents", "name: t\n---\nrepeats: -5\n", "t.yaml:2: a second YAML document"},
		{"degraded factor 0", "name: t\nexpectations:\n  degraded_p99_factor: 0\n", "expectations.degraded_p99_factor: must be > 1"},
		{"external proxy port 0", "name: t\nmodes: [shared]\nexternal:\n  targets: {a: 'http://127.0.0.1:1/a', b: 'http://127.0.0.1:1/b'}\n  upstreams: {A: 'http://127.0.0.1:2', B: 'http://127.0.0.1:3'}\n  proxies: {A: '127.0.0.1:0', B: '127.0.0.1:5'}\n", "external.proxies.A: needs a fixed port"},
		{"external proxies share a port", "name: t\nmodes: [shared]\nexternal:\n  targets: {a: 'http://127.0.0.1:1/a', b: 'http://127.0.0.1:1/b'}\n  upstreams: {A: 'http://127.0.0.1:2', B: 'http://127.0.0.1:3'}\n  proxies: {A: '127.0.0.1:7', B: '127.0.0.1:7'}\n", "external.proxies.B: 127.0.0.1:7 is also the proxy of A"},
		{"int for string", "name: 5\n", "t.yaml:1: name: want a string"},
		{"external one mode", "name: t\nexternal:\n  targets: {a: 'http://127.0.0.1:1/a', b: 'http://127.0.0.1:1/b'}\n  upstreams: {A: 'http://127.0.0.1:2', B: 'http://127.0.0.1:3'}\n  proxies: {A: '127.0.0.1:4', B: '127.0.0.1:5'}\n", "modes: name the mode your service is configured as"},
		{"external two modes one service", "name: t\nmodes: [shared, bulkhead]\nexternal:\n  targets: {a: 'http://127.0.0.1:1/a', b: 'http://127.0.0.1:1/b'}\n  upstreams: {A: 'http://127.0.0.1:2', B: 'http://127.0.0.1:3'}\n  proxies: {A: '127.0.0.1:4', B: '127.0.0.1:5'}\n", "modes[1]: configures your service exactly as mode shared does"},
		{"external bad url", "name: t\nmodes: [shared]\nexternal:\n  targets: {a: 'ftp://x/a', b: 'http://127.0.0.1:1/b'}\n  upstreams: {A: 'http://127.0.0.1:2', B: 'http://127.0.0.1:3'}\n  proxies: {A: '127.0.0.1:4', B: 'nope'}\n", `t.yaml:4: external.targets.a: want an http(s) URL, got "ftp://x/a"`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse("t.yaml", []byte(tc.yaml))
			if err == nil {
				t.Fatalf("Parse(%q) = nil error, want %q", tc.yaml, tc.want)
			}
			if !errors.Is(err, ErrInvalidSpec) {
				t.Errorf("Parse(%q) error %v is not ErrInvalidSpec", tc.yaml, err)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Parse(%q) error\n%v\nwant it to contain %q", tc.yaml, err, tc.want)
			}
		})
	}
}

func TestParseDefaults(t *testing.T) {
	s, err := Parse("t.yaml", []byte(minimal))
	if err != nil {
		t.Fatal(err)
	}
	checks := []struct {
		what      string
		got, want any
	}{
		{"timeout", s.Service.Timeout.D, 250 * time.Millisecond},
		{"pool", s.Service.PoolSize, 20},
		{"queue", *s.Service.Queue, 20},
		{"max wait", s.Service.MaxWait.D, 250 * time.Millisecond},
		{"dep A", s.Dependencies["A"].Latency.D, 10 * time.Millisecond},
		{"dep A jitter", s.Dependencies["A"].Jitter.D, 2 * time.Millisecond},
		{"rates", s.Load.Rates, Rates{"a": 200, "b": 200}},
		{"client timeout", s.Load.ClientTimeout.D, time.Second},
		{"phases", []time.Duration{s.Phases.Warmup.D, s.Phases.Baseline.D, s.Phases.Fault.D, s.Phases.Recovery.D}, []time.Duration{time.Second, 2500 * time.Millisecond, 2500 * time.Millisecond, 2 * time.Second}},
		{"conditions", len(s.Conditions), 4},
		{"slow latency", s.Conditions[1].Faults[0].duration("latency").D, 225 * time.Millisecond},
		{"slow jitter", s.Conditions[1].Faults[0].duration("jitter").D, 10 * time.Millisecond},
		{"failing status", s.Conditions[2].Faults[0].Params["status"], 503},
		{"busy rate", s.Conditions[3].Rates["a"], 400.0},
		{"busy extra latency ms", float64(s.Conditions[3].Faults[0].duration("latency").D) / 1e6, 21.0},
		{"modes", []string{s.Modes[0].Name, s.Modes[1].Name}, []string{"shared", "bulkhead"}},
		{"expectations", s.Expectations.Check, []string{"P1", "P2", "RECOVERY", "NO-LEAK", "LIMIT-HOLDS"}},
	}
	for _, c := range checks {
		if !reflect.DeepEqual(c.got, c.want) {
			t.Errorf("default %s = %v, want %v", c.what, c.got, c.want)
		}
	}
}

func TestRelativeDurations(t *testing.T) {
	y := "name: t\nservice: {timeout: 1s}\nphases: {fault: 20T}\nconditions:\n  - name: x\n    faults: [{type: latency, latency: 0.5T, jitter: 0.01T}]\n"
	s, err := Parse("t.yaml", []byte(y))
	if err != nil {
		t.Fatal(err)
	}
	if got := s.Phases.Fault.D; got != 20*time.Second {
		t.Errorf("fault phase 20T with T=1s = %s", got)
	}
	f := s.Conditions[0].Faults[0]
	if f.duration("latency").D != 500*time.Millisecond || f.duration("jitter").D != 10*time.Millisecond || f.Percent != 100 || f.Params["distribution"] != "uniform" {
		t.Errorf("fault = %+v", f)
	}
}

func TestExpandInterleaved(t *testing.T) {
	s, err := Parse("t.yaml", []byte("name: t\nrepeats: 2\nconditions: [healthy, slow]\n"))
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, r := range s.Expand() {
		ids = append(ids, r.ID)
	}
	want := []string{"healthy-shared-r1", "healthy-bulkhead-r1", "slow-shared-r1", "slow-bulkhead-r1",
		"healthy-shared-r2", "healthy-bulkhead-r2", "slow-shared-r2", "slow-bulkhead-r2"}
	if !reflect.DeepEqual(ids, want) {
		t.Errorf("Expand order = %v, want %v", ids, want)
	}
	seeds := map[int64]bool{}
	for _, r := range s.Expand() {
		seeds[r.Seed] = true
		if again := deriveSeed(s.Seed, r.ID); again != r.Seed || r.Seed < 0 {
			t.Errorf("seed of %s = %d, rederived %d", r.ID, r.Seed, again)
		}
	}
	if len(seeds) != len(want) {
		t.Errorf("run seeds not distinct: %v", seeds)
	}
}

func TestPresetsValidateAndRoundTrip(t *testing.T) {
	names := PresetNames()
	if len(names) < 3 {
		t.Fatalf("presets = %v", names)
	}
	for _, n := range names {
		s, err := Preset(n)
		if err != nil {
			t.Fatalf("preset %s: %v", n, err)
		}
		if s.Description == "" || s.Name != n {
			t.Errorf("preset %s: name %q, description %q", n, s.Name, s.Description)
		}
		b, err := s.Marshal()
		if err != nil {
			t.Fatalf("preset %s: marshal: %v", n, err)
		}
		s2, err := Parse("resolved.yaml", b)
		if err != nil {
			t.Fatalf("preset %s: resolved spec does not parse: %v\n%s", n, err, b)
		}
		if s.sweep != nil {
			// A swept spec holds its points (with their decoding lines):
			// compare what it writes and the matrix it expands to.
			b2, _ := s2.Marshal()
			if !bytes.Equal(b, b2) || !slices.Equal(runIDs(s), runIDs(s2)) {
				t.Errorf("preset %s: round trip differs:\n%s\n%s", n, b, b2)
			}
			continue
		}
		// Where the decoding found things (lines, the roles' source) is not the spec.
		s.file, s.lines, s2.file, s2.lines = "", nil, "", nil
		s.rolesWhy, s2.rolesWhy = "", ""
		if !reflect.DeepEqual(s, s2) {
			t.Errorf("preset %s: round trip differs:\n%+v\n%+v", n, s, s2)
		}
	}
	ci, _ := Preset("ci-regression")
	if d := time.Duration(len(ci.Expand())) * ci.RunDuration(); d > 40*time.Second {
		t.Errorf("ci-regression has %s of load; want well under 60 s", d)
	}
}

func TestMonthEndPreview(t *testing.T) {
	s, err := Preset("month-end-close")
	if err != nil {
		t.Fatal(err)
	}
	var burst *Condition
	for i := range s.Conditions {
		if s.Conditions[i].Name == "month-end" {
			burst = &s.Conditions[i]
		}
	}
	shared := s.Preview(burst, &s.Modes[0])
	if d := shared[0].PredictedDemand["fault"]; d != 34 || shared[0].Limit != 10 || shared[0].PredictedExhaustion <= 0 {
		t.Errorf("shared month-end preview = %+v; want demand 34 > 10, exhausted", shared[0])
	}
	bh := s.Preview(burst, &s.Modes[1])
	if b := bh[1]; b.Name != "b" || b.Limit != 8 || b.PredictedDemand["fault"] != 4 || b.PredictedExhaustion != 0 {
		t.Errorf("bulkhead b preview = %+v; want 4 of 8, never exhausted", b)
	}
}

func TestPoolSizeAndExhaustion(t *testing.T) {
	cases := []struct {
		rate     float64
		lat      time.Duration
		headroom float64
		demand   float64
		size     int
		ok       bool
	}{
		{200, 20 * time.Millisecond, 2, 4, 8, true},
		{1, 1500 * time.Millisecond, 1, 1.5, 2, true},
		{0.1, time.Millisecond, 1, 0.0001, 1, true},
		{0, time.Second, 1, 0, 0, false},
		{10, 0, 1, 0, 0, false},
		{10, time.Second, 0.5, 0, 0, false},
	}
	for _, c := range cases {
		d, n, err := PoolSize(c.rate, c.lat, c.headroom)
		if (err == nil) != c.ok || (c.ok && (n != c.size || d < c.demand-1e-9 || d > c.demand+1e-9)) {
			t.Errorf("PoolSize(%g, %s, %g) = %g, %d, %v; want %g, %d, ok=%v", c.rate, c.lat, c.headroom, d, n, err, c.demand, c.size, c.ok)
		}
	}
	// docs/design.md §1: a shared pool of P is exhausted ≈ P/λ_A after a slow fault
	// starts (less the permits /b holds).
	s, _ := Parse("t.yaml", []byte(minimal))
	p := s.Preview(&s.Conditions[1], &s.Modes[0])[0]
	want := time.Duration((20.0 - 200*0.010) / 200 * float64(time.Second))
	if diff := p.PredictedExhaustion - want; diff < -2*time.Millisecond || diff > 2*time.Millisecond {
		t.Errorf("shared/slow exhaustion = %s, want ≈ %s", p.PredictedExhaustion, want)
	}
	if got := s.HoldingTime("A", &s.Conditions[2]); got != 0 {
		t.Errorf("failing holding time = %s, want 0", got)
	}
}

// TestRunPhasesFaultRates: a condition's rate overrides apply in its fault
// phase only, and a condition without overrides sets none.
func TestRunPhasesFaultRates(t *testing.T) {
	s, err := Preset("month-end-close")
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range s.Conditions {
		for _, p := range s.runPhases(&c) {
			want := map[string]float64(nil)
			if p.Name == rundata.PhaseFault && c.Name == "month-end" {
				want = map[string]float64{"a": 20, "b": 200}
			}
			if fmt.Sprint(p.Rates) != fmt.Sprint(want) {
				t.Errorf("condition %s phase %s: rates %v, want %v", c.Name, p.Name, p.Rates, want)
			}
		}
	}
}

// TestExplicitZerosKeptWhereMeaningful: a queue of 0, a dependency that
// answers at once and an empty body are real settings, not "use the default".
func TestExplicitZerosKeptWhereMeaningful(t *testing.T) {
	s, err := Parse("t.yaml", []byte("name: t\nservice: {queue: 0, max_wait: 0}\ndependencies:\n  A: {latency: 0, size: 0}\nexpectations: {p2_max_error_rate: 0}\n"))
	if err != nil {
		t.Fatal(err)
	}
	if *s.Service.Queue != 0 || s.Service.MaxWait.D != 0 || s.Dependencies["A"].Latency.D != 0 || s.Dependencies["A"].Size != 0 ||
		s.Expectations.P2MaxErrorRate != 0 {
		t.Errorf("explicit zeros changed: queue %d, max_wait %s, A %+v, p2_max_error_rate %g",
			*s.Service.Queue, s.Service.MaxWait.D, s.Dependencies["A"], s.Expectations.P2MaxErrorRate)
	}
	if s.Dependencies["B"].Latency.D != 10*time.Millisecond {
		t.Errorf("B (not written) latency %s, want the default", s.Dependencies["B"].Latency.D)
	}
}

// TestUnfairPoolsWarned: bulkheads of 50 + 50 beside a shared pool of 20
// compare unlike things; validate says so.
func TestUnfairPoolsWarned(t *testing.T) {
	s, err := Parse("t.yaml", []byte("name: t\nservice: {pool_size: 20, queue: 20}\nmodes:\n  - shared\n  - {name: bulkhead, pool_sizes: {a: 50, b: 50}}\n"))
	if err != nil {
		t.Fatal(err)
	}
	if w := strings.Join(s.Warnings(), "\n"); !strings.Contains(w, "hold 100 permits") {
		t.Errorf("warnings %q, want the unfair comparison named", w)
	}
	fair, _ := Parse("t.yaml", []byte(minimal))
	if w := fair.Warnings(); len(w) != 0 {
		t.Errorf("default spec warned: %v", w)
	}
}
