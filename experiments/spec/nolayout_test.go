package spec

import (
	"errors"
	"math"
	"strings"
	"testing"

	"github.com/bulkheadlab/bulkheadlab/service"
)

// noPoolSpec has a rate-limited mode, an unbounded one whose calls hold
// request state, and bulkheads.
const noPoolSpec = `name: nopool
service: {conns: 12, conns_layout: shared, request_state_bytes: 64KiB}
load: {rates: {a: 200, b: 100}}
conditions:
  - healthy
  - name: tenfold
    faults: [{type: latency, latency: 90ms}]
modes:
  - {name: limited, pools: ratelimit, rates: {a: 220, b: 110.5}}
  - {name: loop, pools: unbounded, request_state_bytes: 256KiB}
  - bulkhead
expectations:
  slow: tenfold
  ratelimit: {mode: limited}
  memory: {mode: loop}
  check: [RATELIMIT-NOT-BULKHEAD, UNBOUNDED-GROWS]
`

// TestNoPoolLayoutsPlan: a mode laid out as ratelimit or unbounded starts
// the built-in service in that layout, with its rates and its request
// state (the mode's, else the service's); it has no pool, so Pools,
// Preview and the runs' pool metadata are empty, and NoPoolPreview gives
// Little's law's calls in flight instead (a rate limit caps their rate).
func TestNoPoolLayoutsPlan(t *testing.T) {
	s, err := Parse("nopool.yaml", []byte(noPoolSpec))
	if err != nil {
		t.Fatal(err)
	}
	p, err := s.Plan()
	if err != nil {
		t.Fatal(err)
	}
	want := map[string][]string{
		"limited":  {"--mode ratelimit", "--rates a=220,b=110.5", "--request-state-bytes 65536", "--conns-layout shared"},
		"loop":     {"--mode unbounded", "--request-state-bytes 262144"},
		"bulkhead": {"--mode bulkhead", "--request-state-bytes 65536"},
	}
	for _, r := range p.Runs {
		for _, c := range r.Components {
			if c.Service == nil {
				continue
			}
			args := strings.Join(c.Args(), " ")
			for _, w := range want[r.Mode] {
				if !strings.Contains(args, w) {
					t.Errorf("run %s: service started with %q, want %q", r.ID, args, w)
				}
			}
			if r.Mode != "limited" && strings.Contains(args, "--rates") {
				t.Errorf("run %s: service started with %q: rates outside ratelimit", r.ID, args)
			}
			if l := c.Service.Config.Layout.Mode; r.Mode == "loop" && l != service.ModeUnbounded {
				t.Errorf("run %s: layout %s, want unbounded", r.ID, l)
			}
		}
		if r.Mode != "bulkhead" && (len(r.Meta.Pools) != 0 || r.Meta.Endpoints[0].Pool != "") {
			t.Errorf("run %s: pools %+v, endpoint pool %q; want none", r.ID, r.Meta.Pools, r.Meta.Endpoints[0].Pool)
		}
	}
	tenfold := s.condition("tenfold")
	for _, m := range []string{"limited", "loop"} {
		if got := s.Pools(s.mode(m)); len(got) != 0 {
			t.Errorf("%s: pools %+v", m, got)
		}
	}
	prev := s.NoPoolPreview(tenfold, s.mode("limited"))
	if len(prev) != 2 || prev[0].Limit != 220 || math.Abs(prev[0].Baseline-2) > 0.01 || math.Abs(prev[0].Fault-20) > 0.01 || math.Abs(prev[1].Fault-1) > 0.01 {
		t.Errorf("ratelimit preview %+v, want a: limit 220, 2 → 20 in flight; b: 1", prev)
	}
	if got := s.NoPoolPreview(tenfold, s.mode("bulkhead")); got != nil {
		t.Errorf("bulkhead has pools, NoPoolPreview %+v", got)
	}
	// A rate limit below the load caps the rate the calls arrive at.
	s.Modes[0].Rates = map[string]float64{"a": 50, "b": 110.5}
	if got := s.NoPoolPreview(tenfold, s.mode("limited")); math.Abs(got[0].Fault-5) > 0.01 {
		t.Errorf("a limit of 50/s: a's calls in flight %g, want 5", got[0].Fault)
	}
}

// TestNoPoolErrors: every mistake of a layout without pools, and of its
// claims' roles, names its file, line and field.
func TestNoPoolErrors(t *testing.T) {
	base := strings.Split(noPoolSpec, "modes:\n")[0]
	exp := "expectations:\n  slow: tenfold\n"
	for _, tc := range []struct{ rest, want string }{
		{"modes:\n  - {name: limited, pools: ratelimit, rates: {a: 220}}\n  - bulkhead\n",
			"nopool.yaml:9: modes[0].rates: a ratelimit mode needs each endpoint's rate limit in calls per second, e.g. rates: {a: 220, b: 110}; missing: b"},
		{"modes:\n  - {name: limited, pools: ratelimit, rates: {a: 220, b: 100, c: 5}}\n",
			`nopool.yaml:9: modes[0].rates.c: no endpoint "c" (endpoints: a, b)`},
		{"modes:\n  - name: limited\n    pools: ratelimit\n    rates: {a: 0, b: 100}\n",
			"nopool.yaml:11: modes[0].rates.a: must be between 0.001 and 1e+06 calls per second, got 0"},
		{"modes:\n  - name: split\n    pools: bulkhead\n    rates: {a: 220, b: 100}\n",
			"nopool.yaml:11: modes[0].rates: are a rate limiter's, for a mode with pools: ratelimit (this mode's layout is bulkhead)"},
		{"modes:\n  - name: loop\n    pools: unbounded\n    pool_sizes: {a: 2, b: 2}\n",
			"nopool.yaml:11: modes[0].pool_sizes: only applies to bulkhead mode (unbounded has no pools)"},
		{"modes:\n  - name: loop\n    pools: unbounded\n    request_state_bytes: 65MiB\n",
			"nopool.yaml:11: modes[0].request_state_bytes: must be between 0 and 64MiB, got 65MiB"},
		{"modes:\n  - name: loop\n    pools: eventloop\n",
			`nopool.yaml:10: modes[0].pools: must be shared, bulkhead, unbounded or ratelimit, got "eventloop"`},
		{"modes:\n  - {name: limited, pools: ratelimit, rates: {a: 220, b: 100}}\n  - bulkhead\n" + exp + "  ratelimit: {mode: bulkhead}\n",
			"nopool.yaml:13: expectations.ratelimit.mode: mode \"bulkhead\" is laid out as bulkhead: the claim judges a mode with pools: ratelimit"},
		{"modes:\n  - bulkhead\n" + exp + "  ratelimit: {max_limited_share: 2}\n",
			`expectations.ratelimit.mode: no mode "ratelimit" in the matrix (default: ratelimit)`},
		{"modes:\n  - bulkhead\n" + exp + "  ratelimit: {max_limited_share: 2}\n",
			"nopool.yaml:12: expectations.ratelimit.max_limited_share: must be a share between 0 (default 0.01) and 1, got 2"},
		{"modes:\n  - {name: loop, pools: unbounded}\n" + exp + "  memory: {mode: loop}\n",
			`nopool.yaml:12: expectations.memory.control: no mode "bulkhead" in the matrix (default: expectations.bulkhead_mode)`},
		{"modes:\n  - {name: loop, pools: unbounded}\n  - bulkhead\n" + exp + "  memory: {mode: loop, condition: stall, tolerance: 1}\n",
			`nopool.yaml:13: expectations.memory.condition: no condition "stall" in the matrix (default: expectations.slow)`},
		{"modes:\n  - {name: loop, pools: unbounded}\n  - bulkhead\n" + exp + "  memory: {mode: loop, tolerance: 1}\n",
			"nopool.yaml:13: expectations.memory.tolerance: must be a share between 0 (default 0.25) and 1, got 1"},
	} {
		_, err := Parse("nopool.yaml", []byte(base+tc.rest))
		if err == nil || !errors.Is(err, ErrInvalidSpec) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want %q", tc.rest, err, tc.want)
		}
	}
	// An external spec's service lays itself out: pools: ratelimit or
	// unbounded declares it, rates cannot set it.
	x := "name: t\nmodes:\n  - name: limited\n    pools: ratelimit\n    rates: {a: 1, b: 1}\n    external:\n      targets: {a: 'http://127.0.0.1:1/a', b: 'http://127.0.0.1:1/b'}\n" +
		"external:\n  upstreams: {A: 'http://127.0.0.1:2', B: 'http://127.0.0.1:3'}\n  proxies: {A: '127.0.0.1:4', B: '127.0.0.1:5'}\n"
	if _, err := Parse("t.yaml", []byte(x)); err == nil || !strings.Contains(err.Error(), "t.yaml:5: modes[0].rates: set the built-in service's rate limiters") {
		t.Errorf("rates in an external spec: %v", err)
	}
	for _, l := range []string{"ratelimit", "unbounded"} {
		y := strings.Replace(strings.Replace(x, "    rates: {a: 1, b: 1}\n", "", 1), "pools: ratelimit", "pools: "+l, 1)
		if _, err := Parse("t.yaml", []byte(y)); err != nil {
			t.Errorf("pools: %s declared by an external spec: %v", l, err)
		}
	}
}
