package spec

import (
	"fmt"
	"slices"
	"strings"

	"github.com/bulkheadlab/bulkheadlab/experiments/plan"
	"github.com/bulkheadlab/bulkheadlab/internal/rundata"
	"github.com/bulkheadlab/bulkheadlab/service"
)

// processesPart is a spec as its processes family sees it: pools as
// processes of their own.
type processesPart struct{ *Spec }

// Processes as walls (seed-004: "same-process bulkheads still share
// memory, the event loop and the GC; separate processes do not"). A mode
// with processes: per-endpoint runs the built-in service as one process per
// pool of its bulkhead layout, on the same host: each process serves the
// endpoints of its pool (one endpoint, unless a pool group or load classes
// of one path share the pool) with that pool alone, its own Go runtime,
// heap, GC and GOMAXPROCS. The load sends each endpoint's requests to its
// pool's process, the canary goes to each process in turn, and the sampler
// and the memory guard read every process (they are the run's instances,
// rundata.InstanceComponent, named in RunMeta.Instances with the endpoints
// each serves in RunMeta.InstanceEndpoints). The pools are the bulkhead
// layout's, sized as in one process: Preview, Little's law and the
// aftermath's limits read them as a mode of one process would.
const (
	ProcessesOne         = "one"
	ProcessesPerEndpoint = "per-endpoint"
)

// perEndpoint reports whether mode m runs a process per pool.
func (m *Mode) perEndpoint() bool { return m != nil && m.Processes == ProcessesPerEndpoint }

// ProcessesOf is how many processes the service runs as in mode m: one
// per pool in a mode with processes: per-endpoint, else its instances
// (InstancesOf; 1 for a service of your own, which runs as you start it).
func (s *Spec) ProcessesOf(m *Mode) int {
	if m.perEndpoint() && s.External == nil {
		if n := len(processesPart{s}.processPools(m)); n > 0 {
			return n
		}
	}
	if s.External != nil {
		return 1
	}
	return s.InstancesOf(m)
}

// processPools are mode m's pools as its processes hold them, one process
// each, in the layout's order (the order of their first endpoint); nil
// when the layout does not validate.
func (s processesPart) processPools(m *Mode) []service.PoolSpec {
	specs, err := s.layoutConfig(m).Pools(tenantsPart{s.Spec}.servicePaths())
	if err != nil {
		return nil
	}
	return specs
}

// processConfig is the configuration of the process that holds pool ps of
// mode m: the mode's service with only the pool's endpoints (paths), that
// pool sized as the layout sizes it, and their policies.
func (s processesPart) processConfig(m *Mode, ps service.PoolSpec, full service.Config) service.Config {
	c := full
	l := full.Layout
	c.Layout = service.LayoutConfig{Mode: service.ModeBulkhead, PoolSize: ps.Config.Size, Queue: ps.Config.Queue, MaxWait: l.MaxWait,
		BrokenSharedBulkhead: l.BrokenSharedBulkhead}
	if _, grouped := l.Groups[ps.Name]; grouped {
		c.Layout.Groups = map[string][]string{ps.Name: slices.Clone(ps.Endpoints)}
	}
	c.Endpoints = nil
	for _, e := range full.Endpoints {
		if slices.Contains(ps.Endpoints, e.Name) {
			c.Endpoints = append(c.Endpoints, e)
		}
	}
	c.Policies = nil
	for name, pc := range full.Policies {
		if slices.Contains(ps.Endpoints, name) {
			if c.Policies == nil {
				c.Policies = map[string]service.PolicyConfig{}
			}
			c.Policies[name] = pc
		}
	}
	return c
}

// processComponents are the service's components in run r of a mode with
// processes: per-endpoint: rundata.InstanceComponent(i) holds the layout's
// i-th pool, with the upstreams of its endpoints; and, by service path,
// the component that serves it. A policy's random source is seeded per
// process.
func (s processesPart) processComponents(r Run, svc *plan.Service) ([]plan.Component, map[string]string) {
	pools := s.processPools(r.Mode)
	out := make([]plan.Component, len(pools))
	of := map[string]string{}
	for i, ps := range pools {
		name := rundata.InstanceComponent(i + 1)
		proc := &plan.Service{Config: s.processConfig(r.Mode, ps, svc.Config), Upstreams: map[string]plan.Address{}}
		for _, path := range ps.Endpoints {
			proc.Upstreams[path] = svc.Upstreams[path]
			of[path] = name
		}
		policyPart{s.Spec}.seedPolicies(&proc.Config, Run{ID: r.ID, Seed: deriveSeed(r.Seed, name), Mode: r.Mode, Condition: r.Condition, Repeat: r.Repeat})
		out[i] = plan.Component{Name: name, Kind: plan.KindService, Listen: anyLoopback, Service: proc}
	}
	return out, of
}

// processTargets are path on each of n processes, the canary's: it visits
// them in turn, as it does a fleet's instances (even one: no process is
// rundata.ServiceComponent).
func processTargets(n int, path string) []plan.Address {
	out := make([]plan.Address, n)
	for i := range out {
		out[i] = plan.Of(rundata.InstanceComponent(i+1), path)
	}
	return out
}

// processMeta names the processes of a per-endpoint mode in the run's
// metadata, with the endpoints (load classes) each serves.
func (s processesPart) processMeta(m *rundata.RunMeta, of map[string]string) {
	byComp := map[string][]string{}
	for _, e := range s.Endpoints {
		c := of[e.servicePath()]
		byComp[c] = append(byComp[c], e.Name)
	}
	for i := 1; i <= len(byComp); i++ {
		c := rundata.InstanceComponent(i)
		m.Instances = append(m.Instances, c)
		if m.InstanceEndpoints == nil {
			m.InstanceEndpoints = map[string][]string{}
		}
		m.InstanceEndpoints[c] = byComp[c]
	}
}

// validateProcesses checks every mode's processes: one or per-endpoint;
// per-endpoint splits the built-in service's bulkhead layout into
// processes, so it needs that layout, one instance, and no stage that
// spans the pools (tenants, priority).
func (s processesPart) validateProcesses(p *problems) {
	for i := range s.Modes {
		m := &s.Modes[i]
		path := fmt.Sprintf("modes[%d].processes", i)
		switch {
		case m.Processes == "" || m.Processes == ProcessesOne:
			continue
		case m.Processes != ProcessesPerEndpoint:
			p.add(path, "must be %s (every endpoint in one process, the default) or %s (each pool of a bulkhead layout in a process of its own), got %q",
				ProcessesOne, ProcessesPerEndpoint, m.Processes)
		case s.External != nil:
			p.add(path, "your own service runs as the processes you start: start one per endpoint and give each endpoint its own process's URL (modes[%d].external.targets)", i)
		case m.layout() != ModeBulkhead:
			p.add(path, "%s puts each pool of a bulkhead layout in a process of its own: this mode's layout is %s (give it pools: %s)",
				ProcessesPerEndpoint, m.layout(), ModeBulkhead)
		case s.InstancesOf(m) > 1:
			p.add(path, "%s runs one process per pool; a fleet (instances: %d) runs copies of the whole service: one or the other", ProcessesPerEndpoint, s.InstancesOf(m))
		case m.Tenants != nil:
			p.add(path, "%s with a tenant stage is not supported: the stage divides the service among tenants across its pools", ProcessesPerEndpoint)
		case m.Priority != nil:
			p.add(path, "%s with a priority stage is not supported: the stage reserves permits of the pools from one process", ProcessesPerEndpoint)
		}
	}
	s.validateProcessRoles(p)
}

// validateProcessRoles checks expectations.processes: its conditions and
// modes are in the matrix, the conditions differ from their control and
// the modes from each other, and the thresholds are in range.
func (s processesPart) validateProcessRoles(p *problems) {
	if s.Expectations.Processes == nil {
		return
	}
	const path = "expectations.processes."
	r := s.Expectations.ProcessRoles()
	s.checkNamedConditionAndControl(p, path, "cpu", r.CPU, r.Control, "the condition whose calls cost the service CPU (a payload it decodes)")
	switch {
	case s.condition(r.Slow) == nil:
		p.add(path+"slow", "no condition %q in the matrix (default: expectations.slow)", r.Slow)
	case r.Slow == r.CPU:
		p.add(path+"slow", "must differ from the CPU condition %q", r.CPU)
	case r.Slow == r.Control:
		p.add(path+"slow", "must differ from the control %q", r.Control)
	}
	modes := []struct{ key, name, def string }{
		{"mode", r.Mode, "default: " + rundata.DefaultProcessesMode},
		{"in_process", r.InProcess, "default: expectations.bulkhead_mode"},
		{"shared", r.Shared, "default: expectations.shared_mode"},
	}
	for _, m := range modes {
		if s.mode(m.name) == nil {
			p.add(path+m.key, "no mode %q in the matrix (%s)%s", m.name, m.def, s.processModeHint(m.key))
		}
	}
	if m := s.mode(r.Mode); m != nil && !m.perEndpoint() && m.layout() != ModeBulkhead {
		p.add(path+"mode", "mode %q has no walls to judge (layout %s): name a mode with processes: %s, or one with pools: %s to see it fail",
			r.Mode, m.layout(), ProcessesPerEndpoint, ModeBulkhead)
	}
	if m := s.mode(r.InProcess); m != nil && (m.perEndpoint() || m.layout() != ModeBulkhead) {
		p.add(path+"in_process", "mode %q is not a bulkhead layout in one process (pools: %s, processes: %s)", r.InProcess, m.layout(), orDefaultWord(m.Processes, ProcessesOne))
	}
	if m := s.mode(r.Shared); m != nil && (m.perEndpoint() || m.layout() != ModeShared) {
		p.add(path+"shared", "mode %q is not one shared pool (pools: %s)", r.Shared, m.layout())
	}
	if r.MinP99RiseT < 0 || r.MinP99RiseT > 10 {
		p.add(path+"min_p99_rise_t", "must be between 0 (default %g) and 10 T, got %g", rundata.DefaultProcessesMinRiseT, r.MinP99RiseT)
	}
	switch {
	case r.MaxP99RiseT < 0 || r.MaxP99RiseT > 10:
		p.add(path+"max_p99_rise_t", "must be between 0 (default %g) and 10 T, got %g", rundata.DefaultProcessesMaxRiseT, r.MaxP99RiseT)
	case r.MaxP99RiseT > r.MinP99RiseT:
		p.add(path+"max_p99_rise_t", "must be at most min_p99_rise_t (%g T): a rise that counts as held cannot count as hurt too, got %g", r.MinP99RiseT, r.MaxP99RiseT)
	}
}

// processModeHint names, for a missing mode of expectations.processes,
// the modes that could play it.
func (s processesPart) processModeHint(key string) string {
	var of []string
	for i := range s.Modes {
		m := &s.Modes[i]
		switch {
		case key == "mode" && m.perEndpoint(), key == "in_process" && !m.perEndpoint() && m.layout() == ModeBulkhead,
			key == "shared" && m.layout() == ModeShared:
			of = append(of, m.Name)
		}
	}
	if len(of) == 0 {
		if key == "mode" {
			return fmt.Sprintf("; add a mode such as {name: %s, pools: %s, processes: %s}", rundata.DefaultProcessesMode, ModeBulkhead, ProcessesPerEndpoint)
		}
		return ""
	}
	return "; modes that could: " + strings.Join(of, ", ")
}

// orDefaultWord is v, or def when v is empty.
func orDefaultWord(v, def string) string {
	if v == "" {
		return def
	}
	return v
}

// ProcessesLine describes, for validate, the processes of a mode with
// processes: per-endpoint: each with the endpoints it serves and its pool;
// "" for a mode of one process.
func (s *Spec) ProcessesLine(m *Mode) string {
	if !m.perEndpoint() || s.External != nil {
		return ""
	}
	var parts []string
	for i, ps := range (processesPart{s}).processPools(m) {
		var eps []string
		for _, path := range ps.Endpoints {
			for _, e := range (tenantsPart{s}).loadClasses(path) {
				eps = append(eps, "/"+e)
			}
		}
		parts = append(parts, fmt.Sprintf("%s serves %s (pool %s of %d)", rundata.InstanceComponent(i+1), strings.Join(eps, ", "), ps.Name, ps.Config.Size))
	}
	line := fmt.Sprintf("%d processes on this host: %s", len(parts), strings.Join(parts, "; "))
	if n := s.Service.GOMAXPROCS; n > 0 {
		line += fmt.Sprintf("; GOMAXPROCS %d each (%d in all)", n, n*len(parts))
	}
	return line
}
