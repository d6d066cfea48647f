package spec

import (
	"fmt"
	"slices"
	"strings"

	"github.com/bulkheadlab/bulkheadlab/experiments/plan"
	"github.com/bulkheadlab/bulkheadlab/internal/rundata"
)

// fleetPart is a spec as its fleet family sees it: instances of the service
// and expectations.fleet.
type fleetPart struct{ *Spec }

// MaxInstances bounds service.instances and a mode's instances: each is a
// process of its own on the machine that also runs the load.
const MaxInstances = 64

// InstancesOf is how many instances of the service run in mode m: the
// mode's instances, else service.instances, else 1.
func (s *Spec) InstancesOf(m *Mode) int {
	switch {
	case m != nil && m.Instances > 0:
		return m.Instances
	case s.Service.Instances > 0:
		return s.Service.Instances
	}
	return 1
}

// validateInstances checks service.instances and every mode's instances:
// 1–MaxInstances (a mode's 0 is service.instances), and one instance for a
// user's service, which runs as it is started.
func (s fleetPart) validateInstances(p *problems) {
	n := s.Service.Instances
	if (s.set("service.instances") || n != 0) && (n < 1 || n > MaxInstances) {
		p.add("service.instances", "must be between 1 and %d, got %d", MaxInstances, n)
	}
	if s.External != nil && n > 1 {
		p.add("service.instances", "your own service runs as many instances as you start: give each its targets, the harness cannot multiply it")
	}
	for i, m := range s.Modes {
		path := fmt.Sprintf("modes[%d].instances", i)
		switch {
		case m.Instances < 0 || m.Instances > MaxInstances:
			p.add(path, "must be between 1 and %d (0: service.instances), got %d", MaxInstances, m.Instances)
		case s.External != nil && m.Instances > 1:
			p.add(path, "your own service runs as many instances as you start: the harness cannot multiply it")
		}
	}
}

// serviceComponents are the service's components in run r: one named
// rundata.ServiceComponent, as always, or n > 1 named
// rundata.InstanceComponent(1..n), each its own process with its own pools,
// the same configuration and the same upstreams (the same proxies). A
// policy's random source is seeded per instance.
func (s fleetPart) serviceComponents(r Run, svc *plan.Service) []plan.Component {
	n := s.InstancesOf(r.Mode)
	if n == 1 {
		policyPart{s.Spec}.seedPolicies(&svc.Config, r)
		return []plan.Component{{Name: rundata.ServiceComponent, Kind: plan.KindService, Listen: anyLoopback, Service: svc}}
	}
	out := make([]plan.Component, n)
	for i := range out {
		name := rundata.InstanceComponent(i + 1)
		inst := *svc
		inst.Config.Policies = policyPart{s.Spec}.servicePolicies(r.Mode, func(string) uint64 { return 0 })
		policyPart{s.Spec}.seedPolicies(&inst.Config, Run{ID: r.ID, Seed: deriveSeed(r.Seed, name), Mode: r.Mode, Condition: r.Condition, Repeat: r.Repeat})
		out[i] = plan.Component{Name: name, Kind: plan.KindService, Listen: anyLoopback, Service: &inst}
	}
	return out
}

// fleetTargets are path on each instance of a fleet of n > 1, loaded
// round-robin; nil for one instance (the endpoint's Target is used).
func fleetTargets(n int, path string) []plan.Address {
	if n <= 1 {
		return nil
	}
	out := make([]plan.Address, n)
	for i := range out {
		out[i] = plan.Of(rundata.InstanceComponent(i+1), path)
	}
	return out
}

// fleetMeta names the instances' components of a fleet of n > 1 in the
// run's metadata (its pools are the fleet's already: see Preview).
func fleetMeta(m *rundata.RunMeta, n int) {
	if n <= 1 {
		return
	}
	for i := 1; i <= n; i++ {
		m.Instances = append(m.Instances, rundata.InstanceComponent(i))
	}
}

// fleetModeNamed reports whether name is a mode of the matrix or the
// original of swept variants.
func (s fleetPart) fleetModeNamed(name string) bool {
	if s.mode(name) != nil {
		return true
	}
	return s.sweep != nil && slices.ContainsFunc(s.Modes, func(m Mode) bool { return strings.HasPrefix(m.Name, name+".") })
}

// validateFleet checks expectations.fleet: its modes and budget are in the
// matrix (a swept mode counts by its original name), its condition too,
// and its tolerance is a share.
func (s fleetPart) validateFleet(p *problems) {
	f := s.Expectations.Fleet
	if f == nil {
		return
	}
	const path = "expectations.fleet."
	if len(f.Modes) == 0 {
		p.add(path+"modes", "name the fleets compared (modes with instances: N, or one swept over instances)")
	}
	for i, m := range f.Modes {
		if !s.fleetModeNamed(m) {
			p.add(fmt.Sprintf("%smodes[%d]", path, i), "no mode %q in the matrix", m)
		}
	}
	if f.Budget != "" && !s.fleetModeNamed(f.Budget) {
		p.add(path+"budget", "no mode %q in the matrix", f.Budget)
	}
	if s.condition(f.Condition) == nil {
		p.add(path+"condition", "no condition %q in the matrix", f.Condition)
	}
	if f.Tolerance < 0 || f.Tolerance >= 1 {
		p.add(path+"tolerance", "must be a share in [0, 1) (0: 0.25), got %v", f.Tolerance)
	}
	if s.External != nil {
		p.add(path+"modes", "the fleet claims need the built-in service (the harness starts its instances)")
	}
}
