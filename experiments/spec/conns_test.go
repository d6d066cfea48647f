package spec

import (
	"strings"
	"testing"

	"github.com/bulkheadlab/bulkheadlab/experiments/plan"
	"github.com/bulkheadlab/bulkheadlab/service"
)

// TestConnsLayoutErrors: a bad service.conns_layout is reported with its
// file, line and field.
func TestConnsLayoutErrors(t *testing.T) {
	for _, tc := range []struct{ yaml, want string }{
		{"name: t\nservice:\n  conns: 8\n  conns_layout: pooled\n", `t.yaml:4: service.conns_layout: must be per-dependency or shared, got "pooled"`},
		{"name: t\nservice: {conns_layout: Shared}\n", `t.yaml:2: service.conns_layout: must be per-dependency or shared, got "Shared"`},
		{"name: t\nservice:\n  conns_layout: shared\n  conns: 0\n", "t.yaml:4: service.conns: must be between 1 and 100000, got 0"},
		{"name: t\nservice:\n  conns_layout: [shared]\n", "t.yaml:3: service.conns_layout"},
	} {
		_, err := Parse("t.yaml", []byte(tc.yaml))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Parse(%q) = %v, want an error containing %q", tc.yaml, err, tc.want)
		}
	}
}

// TestConnsLayoutReachesTheService: the layout and K go to every run's
// service config and its flags; a spec that does not name a layout gives
// the service's zero layout (per-dependency) and renders no flag, as
// before.
func TestConnsLayoutReachesTheService(t *testing.T) {
	for _, tc := range []struct {
		service string
		want    service.ConnsLayout
		conns   int
	}{
		{"{conns: 16, conns_layout: shared}", service.ConnsShared, 16},
		{"{conns: 16, conns_layout: per-dependency}", service.ConnsPerDependency, 16},
		{"{pool_size: 20}", "", service.DefaultConns},
	} {
		s, err := Parse("t.yaml", []byte("name: t\nservice: "+tc.service+"\nconditions: [slow]\n"))
		if err != nil {
			t.Fatalf("service %s: %v", tc.service, err)
		}
		p, err := s.Plan()
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range p.Runs {
			var svc *plan.Service
			for _, c := range r.Components {
				if c.Service != nil {
					svc = c.Service
				}
			}
			if svc == nil {
				t.Fatalf("service %s: run %s has no service", tc.service, r.ID)
			}
			c := svc.Config
			args := strings.Join(service.ServeArgs(c), " ")
			if c.ConnsLayout != tc.want || c.Conns != tc.conns || strings.Contains(args, "--conns-layout") != (tc.want != "") {
				t.Errorf("service %s, run %s: conns layout %q, conns %d, flags %s; want %q, %d", tc.service, r.ID, c.ConnsLayout, c.Conns, args, tc.want, tc.conns)
			}
		}
	}
}

// TestModeConnsOverride: a mode's conns_layout and conns replace the
// service's for that mode's runs only; bad values name the mode's field
// and line.
func TestModeConnsOverride(t *testing.T) {
	s, err := Parse("t.yaml", []byte(`name: t
service: {conns: 16}
conditions: [slow]
modes:
  - bulkhead
  - {name: no-wall, pools: bulkhead, conns_layout: shared, conns: 8}
`))
	if err != nil {
		t.Fatal(err)
	}
	p, err := s.Plan()
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]service.Config{}
	for _, r := range p.Runs {
		for _, c := range r.Components {
			if c.Kind == plan.KindService {
				got[r.Mode] = c.Service.Config
			}
		}
	}
	if c := got["bulkhead"]; c.ConnsLayout != "" || c.Conns != 16 {
		t.Errorf("bulkhead: layout %q conns %d, want the service's (per-dependency, 16)", c.ConnsLayout, c.Conns)
	}
	if c := got["no-wall"]; c.ConnsLayout != service.ConnsShared || c.Conns != 8 {
		t.Errorf("no-wall: layout %q conns %d, want shared 8", c.ConnsLayout, c.Conns)
	}
	_, err = Parse("t.yaml", []byte("name: t\nmodes:\n  - {name: x, pools: shared, conns_layout: pooled}\n"))
	if err == nil || !strings.Contains(err.Error(), "t.yaml:3: modes[0].conns_layout") {
		t.Errorf("a bad mode conns_layout: %v", err)
	}
}

// TestConnectionWarnings: seed-002's rule — a bulkhead of one dependency
// above 0.8 × its connections is warned about, naming the mode, the pool
// and the size that would trip first; the presets and a bulkhead within
// the rule are not.
func TestConnectionWarnings(t *testing.T) {
	warn := func(text string) string {
		s, err := Parse("t.yaml", []byte(text))
		if err != nil {
			t.Fatal(err)
		}
		return strings.Join(s.Warnings(), "\n")
	}
	w := warn("name: t\nservice: {conns: 8}\nmodes: [shared, bulkhead, {name: nw, pools: bulkhead, conns_layout: shared}]\n")
	for _, want := range []string{"modes[1] (bulkhead): the bulkhead a holds 10 calls to A against its 8 connections",
		"≈ 0.8 × connections = 6", "modes[2] (nw): the bulkhead b holds 10 calls to B against the 8 connections it shares"} {
		if !strings.Contains(w, want) {
			t.Errorf("warnings lack %q:\n%s", want, w)
		}
	}
	if strings.Contains(w, "modes[0]") {
		t.Errorf("the shared pool (both dependencies) is not a bulkhead of one:\n%s", w)
	}
	if w := warn("name: t\nservice: {conns: 13}\nmodes: [bulkhead]\n"); strings.Contains(w, "connections") {
		t.Errorf("10 ≤ 0.8 × 13 warned:\n%s", w)
	}
	for _, n := range PresetNames() {
		s, err := Preset(n)
		if err != nil {
			t.Fatal(err)
		}
		if w := strings.Join(s.Warnings(), "\n"); strings.Contains(w, "connections run out") {
			t.Errorf("preset %s: %s", n, w)
		}
	}
}
