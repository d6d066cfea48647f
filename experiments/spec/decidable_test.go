package spec

import (
	"reflect"
	"strings"
	"testing"

	"github.com/bulkheadlab/bulkheadlab/experiments/plan"
	"github.com/bulkheadlab/bulkheadlab/internal/claims"
)

const extBase = `name: ext
external:
  upstreams: {A: "http://127.0.0.1:9001", B: "http://127.0.0.1:9002"}
  proxies: {A: "127.0.0.1:9101", B: "127.0.0.1:9102"}
  rules: [{status: 503, class: rejected}]
`

// TestDefaultCheckIsDecidable: without a check list, only what the matrix
// can decide is checked; a written list naming an undecidable prediction
// is an error that says what is missing.
func TestDefaultCheckIsDecidable(t *testing.T) {
	for _, tt := range []struct {
		name, yaml string
		want       []string
	}{
		{"built-in default", "name: x\n", []string{"P1", "P2", "RECOVERY", "NO-LEAK", "LIMIT-HOLDS"}},
		{"bulkhead only", "name: x\nmodes: [bulkhead]\n", []string{"P2", "RECOVERY", "NO-LEAK", "LIMIT-HOLDS"}},
		{"shared only", "name: x\nmodes: [shared]\n", []string{"P1", "RECOVERY", "NO-LEAK", "LIMIT-HOLDS"}},
		{"no slow condition", "name: x\nconditions: [healthy, busy]\n", []string{"RECOVERY", "NO-LEAK", "LIMIT-HOLDS"}},
		{"recovery too short", "name: x\nphases: {recovery: 1s}\n", []string{"P1", "P2", "NO-LEAK", "LIMIT-HOLDS"}},
		// A user's service without metrics: a leak that does not make it
		// reject is invisible, and a limit inferred from the slow condition
		// is judged only in its fault phase, which the slow fault leaves
		// out: LIMIT-HOLDS needs a limit that exists.
		{"external one mode", extBase + "  targets: {a: 'http://127.0.0.1:1/a', b: 'http://127.0.0.1:1/b'}\nmodes: [bulkhead]\n", []string{"P2", "RECOVERY"}},
		{"external with declared pools", extBase + "  targets: {a: 'http://127.0.0.1:1/a', b: 'http://127.0.0.1:1/b'}\n  pools: [{name: a, size: 10, endpoints: [a]}, {name: b, size: 10, endpoints: [b]}]\nmodes: [bulkhead]\n", []string{"P2", "RECOVERY", "LIMIT-HOLDS"}},
		{"external with connection-pool metrics", extBase + "  targets: {a: 'http://127.0.0.1:1/a', b: 'http://127.0.0.1:1/b'}\n  metrics: {url: 'http://127.0.0.1:1/metrics', conns: {in_use: c_in_use, limit: c_max}}\nmodes: [bulkhead]\n", []string{"P2", "RECOVERY", "LIMIT-HOLDS"}},
		// Modes of your own names: matched by their layout.
		{"modes of your own names", "name: x\nmodes: [{name: one-pool, pools: shared}, {name: split, pools: bulkhead}]\n", []string{"P1", "P2", "RECOVERY", "NO-LEAK", "LIMIT-HOLDS"}},
		{"external with probes", extBase + "  targets: {a: 'http://127.0.0.1:1/a', b: 'http://127.0.0.1:1/b'}\nmodes: [bulkhead]\nconditions: [failing]\nload: {probe: {}}\n", []string{"RECOVERY", "NO-LEAK", "LIMIT-HOLDS"}},
		{"external failing only", extBase + "  targets: {a: 'http://127.0.0.1:1/a', b: 'http://127.0.0.1:1/b'}\nmodes: [bulkhead]\nconditions: [failing]\n", []string{"RECOVERY"}},
	} {
		s, err := Parse("x.yaml", []byte(tt.yaml))
		if err != nil {
			t.Fatalf("%s: %v", tt.name, err)
		}
		if got := s.Expectations.Check; !reflect.DeepEqual(got, tt.want) {
			t.Errorf("%s: check %v, want %v", tt.name, got, tt.want)
		}
	}
	for in, want := range map[string]string{
		"name: x\nmodes: [bulkhead]\nexpectations: {check: [P1, P2]}\n":    "expectations.check[0]: P1 compares slow × shared, and the matrix has no mode shared",
		"name: x\nconditions: [slow]\nexpectations: {check: [P3]}\n":       "P3 compares busy × shared+bulkhead, and the matrix has no condition busy",
		"name: x\nconditions: [slow, busy]\nexpectations: {check: [P4]}\n": "(decidable here: P1, P2, FAILFAST, P3, EXHAUSTED, RECOVERY, NO-LEAK, LIMIT-HOLDS)",
		extBase + "  targets: {a: 'http://127.0.0.1:1/a', b: 'http://127.0.0.1:1/b'}\nmodes:\n  - shared\n  - name: bulkhead\n    external: {start: [./svc], ready: 'http://127.0.0.1:1/'}\nexpectations: {check: [LIMIT-HOLDS]}\n": "LIMIT-HOLDS needs a limit that exists",
		"name: x\nmodes: [{name: s1, pools: shared}, {name: b1, pools: bulkhead}, {name: b2, pools: bulkhead}]\nexpectations: {check: [P2]}\n":                                                                                      "the matrix has no mode bulkhead (modes with pools: bulkhead: b1, b2; name one as expectations.bulkhead_mode)",
	} {
		_, err := Parse("x.yaml", []byte(in))
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: err %v, want %q", in, err, want)
		}
	}
}

// TestExternalModes: two modes of a user's service, one started by a
// command and one at its own targets; the plan starts the command after
// the proxies, with the environment naming the proxies; each mode loads its
// own targets.
func TestExternalModes(t *testing.T) {
	y := extBase + `  canary: "http://127.0.0.1:8000/healthz"
modes:
  - name: shared
    external:
      start: [./mysvc, --pool, shared]
      targets: {a: "http://127.0.0.1:8000/a", b: "http://127.0.0.1:8000/b"}
      env: {POOL: "20"}
  - name: bulkhead
    external:
      targets: {a: "http://127.0.0.1:8001/a", b: "http://127.0.0.1:8001/b"}
      canary: "http://127.0.0.1:8001/healthz"
conditions: [slow, failing, busy]
`
	s, err := Parse("ext.yaml", []byte(y))
	if err != nil {
		t.Fatal(err)
	}
	if got := s.Expectations.Check; !reflect.DeepEqual(got, []string{"P1", "P2", "RECOVERY"}) {
		t.Errorf("check %v", got)
	}
	p, err := s.Plan()
	if err != nil {
		t.Fatal(err)
	}
	byID := map[string]plan.Run{}
	for _, r := range p.Runs {
		byID[r.ID] = r
	}
	sh, bh := byID["slow-shared-r1"], byID["slow-bulkhead-r1"]
	last := sh.Components[len(sh.Components)-1]
	if last.Kind != plan.KindCommand || last.Command == nil || !reflect.DeepEqual(last.Command.Argv, []string{"./mysvc", "--pool", "shared"}) {
		t.Fatalf("shared: last component %+v, want the start command", last)
	}
	c := last.Command
	if c.Ready != "http://127.0.0.1:8000/healthz" || c.ReadyTimeout != DefaultReadyTimeout {
		t.Errorf("ready %q within %s, want the canary within the default", c.Ready, c.ReadyTimeout)
	}
	for _, e := range []string{"BULKHEADLAB_MODE=shared", "BULKHEADLAB_RUN=slow-shared-r1", "BULKHEADLAB_PROXY_A=127.0.0.1:9101", "BULKHEADLAB_PROXY_B=127.0.0.1:9102", "POOL=20"} {
		if !strings.Contains(strings.Join(c.Env, " "), e) {
			t.Errorf("env %v lacks %s", c.Env, e)
		}
	}
	for _, cm := range bh.Components {
		if cm.Kind == plan.KindCommand {
			t.Errorf("bulkhead mode has no start command, got %+v", cm)
		}
	}
	if u := bh.Load.Endpoints[0].Target.URL; u != "http://127.0.0.1:8001/a" {
		t.Errorf("bulkhead /a target %q", u)
	}
	if u := sh.Load.Endpoints[1].Target.URL; u != "http://127.0.0.1:8000/b" {
		t.Errorf("shared /b target %q", u)
	}
	if bh.Load.Canary == nil || bh.Load.Canary.Target.URL != "http://127.0.0.1:8001/healthz" {
		t.Errorf("bulkhead canary %+v", bh.Load.Canary)
	}
	if rt := s.RemoteTargets(); len(rt) != 0 {
		t.Errorf("remote targets %v, want none", rt)
	}
	// A remote target in one mode is found.
	s2, err := Parse("ext.yaml", []byte(strings.Replace(y, "http://127.0.0.1:8001/a", "http://10.0.0.1:8001/a", 1)))
	if err != nil {
		t.Fatal(err)
	}
	if rt := s2.RemoteTargets(); !reflect.DeepEqual(rt, []string{"http://10.0.0.1:8001/a"}) {
		t.Errorf("remote targets %v", rt)
	}
	bad := map[string]string{
		strings.Replace(y, "start: [./mysvc, --pool, shared]", "start: []", 1):                      "modes[0].external.start: want the program and its arguments",
		strings.Replace(y, `  canary: "http://127.0.0.1:8000/healthz"`+"\n", "", 1):                 "modes[0].external.ready: required with start",
		strings.Replace(y, `env: {POOL: "20"}`, `env: {"A=B": "1"}`, 1):                             "modes[0].external.env.A=B: not an environment variable name",
		strings.Replace(y, `env: {POOL: "20"}`, `env: {POOL: "2\0"}`, 1):                            "modes[0].external.env.POOL: must not contain a NUL byte",
		strings.Replace(y, "start: [./mysvc, --pool, shared]", `start: [./mysvc, "--pool\0"]`, 1):   "modes[0].external.start[1]: must not contain a NUL byte",
		strings.Replace(y, `"http://127.0.0.1:8001/b"`, `"nope"`, 1):                                `modes[1].external.targets.b: want an http(s) URL, got "nope"`,
		"name: x\nmodes:\n  - name: shared\n    external: {targets: {a: 'http://127.0.0.1:1/a'}}\n": "modes[0].external: configures your own service, in an external spec only",
	}
	for in, want := range bad {
		_, err := Parse("ext.yaml", []byte(in))
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("err %v, want %q; spec:\n%s", err, want, in)
		}
	}
}

// TestPreviewReadsTheRegistry: what validate says a matrix can decide is
// the claims' registry read against the spec: for every preset and the
// built-in default, a claim whose sections the expectations do not fill in
// is undecidable for that reason and no other is, and the undecidable and
// the decidable claims together are exactly the registered ones.
func TestPreviewReadsTheRegistry(t *testing.T) {
	specs := map[string]*Spec{}
	for _, name := range PresetNames() {
		s, err := Preset(name)
		if err != nil {
			t.Fatal(err)
		}
		specs[name] = s
	}
	s, err := Parse("x.yaml", []byte("name: x\n"))
	if err != nil {
		t.Fatal(err)
	}
	specs["built-in default"] = s
	for name, s := range specs {
		e := s.Expectations
		for _, c := range claims.All() {
			why := s.Undecidable(c.Name)
			unnamed := strings.HasPrefix(why, c.Name+" is judged only when expectations.")
			if unnamed == e.NamesAll(c) {
				t.Errorf("%s: %s: sections named %v, yet undecidable because %q", name, c.Name, e.NamesAll(c), why)
			}
		}
		if s.Audit != nil {
			continue // an audit's result is its map
		}
		decidable := s.Decidable(claims.Names())
		for _, n := range decidable {
			if e.Undecidable[n] != "" {
				t.Errorf("%s: %s is decidable and undecidable (%s)", name, n, e.Undecidable[n])
			}
		}
		if got, want := len(decidable)+len(e.Undecidable), len(claims.Names()); got != want {
			t.Errorf("%s: %d claims decidable or not, want the %d registered", name, got, want)
		}
	}
}

// TestContainedNeedsItsModes: RETRY-CONTAINED, judged only on the modes
// expectations.policy.retry.contained names, is undecidable without them,
// and a check list naming it is an error.
func TestContainedNeedsItsModes(t *testing.T) {
	src, err := PresetSource("retry-storm")
	if err != nil {
		t.Fatal(err)
	}
	y := strings.Replace(string(src), ", contained: [shared-retry-budget, shared-retry-after]", "", 1)
	_, err = Parse("retry.yaml", []byte(y))
	want := "expectations.check[2]: RETRY-CONTAINED is judged only when expectations.policy.retry.contained names the modes it judges"
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("err %v, want %q", err, want)
	}
	s, err := Parse("retry.yaml", []byte(strings.Replace(y, ", RETRY-CONTAINED]", "]", 1)))
	if err != nil {
		t.Fatal(err)
	}
	if got := s.Decidable([]string{claims.RetryAmplifies, claims.RetryHurts, claims.RetryContained}); !reflect.DeepEqual(got, []string{claims.RetryAmplifies, claims.RetryHurts}) {
		t.Errorf("decidable %v, want RETRY-AMPLIFIES and RETRY-HURTS", got)
	}
}
