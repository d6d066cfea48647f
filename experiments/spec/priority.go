package spec

import (
	"fmt"
	"strings"

	"github.com/bulkheadlab/bulkheadlab/service"
)

// priorityPart is a spec as its priority family sees it: the classes of
// requests and the reserve for the critical one.
type priorityPart struct{ *Spec }

// Priority is a mode's priority stage of the built-in service
// (service.PriorityConfig): each request has a class, critical or
// sheddable, and a pool may reserve permits for the critical class, so
// that sheddable calls hold at most the rest of it, holding or waiting,
// and are refused at once past that. In YAML:
//
//	priority: {classes: {checkout: critical, recommend: sheddable}, reserved: {shared: 10}}
type Priority struct {
	// Classes fixes an endpoint's class (keyed by endpoint name): its
	// requests' header is ignored.
	Classes map[string]string `yaml:"classes,omitempty"`
	// Reserved is the permits of each pool reserved for the critical class,
	// keyed by pool name ("shared", an endpoint's, a pool group's); a pool
	// not named reserves none.
	Reserved map[string]int `yaml:"reserved,omitempty"`
	// Header names the request header that gives the class of an endpoint
	// without a fixed one (default X-Priority; an endpoint's requests
	// carry it with endpoints[i].headers); Default is the class of a
	// request without it (default critical).
	Header  string `yaml:"header,omitempty"`
	Default string `yaml:"default,omitempty"`
}

// config is p as the service takes it; nil for none.
func (p *Priority) config() *service.PriorityConfig {
	if p == nil {
		return nil
	}
	pc := &service.PriorityConfig{Header: p.Header, Default: service.Class(p.Default), Reserved: p.Reserved}
	if p.Classes != nil {
		pc.Classes = map[string]service.Class{}
		for e, c := range p.Classes {
			pc.Classes[e] = service.Class(c)
		}
	}
	return pc
}

// classOf is the class of endpoint ep's requests in mode m: its fixed
// class, else the class its requests' priority header names, else the
// default; "" when the mode has no priority stage.
func (s priorityPart) classOf(m *Mode, ep string) string {
	p := m.Priority
	if p == nil {
		return ""
	}
	if c, ok := p.Classes[ep]; ok {
		return c
	}
	header := p.Header
	if header == "" {
		header = service.DefaultPriorityHeader
	}
	for _, e := range s.Endpoints {
		if e.Name != ep {
			continue
		}
		for k, v := range e.Headers {
			if strings.EqualFold(k, header) {
				return v
			}
		}
	}
	if p.Default != "" {
		return p.Default
	}
	return string(service.ClassCritical)
}

// poolOf is the pool endpoint ep draws from in mode m (not an endpoint's
// nested limit), nil when it has none.
func (s priorityPart) poolOf(m *Mode, ep string) *PoolLayout {
	for _, pl := range s.Pools(m) {
		if pl.Nested {
			continue
		}
		for _, e := range pl.Endpoints {
			if e == ep {
				return &pl
			}
		}
	}
	return nil
}

// sheddableCaps are, per endpoint of pool pl in mode m whose class is
// sheddable, the most permits it holds when the pool reserves permits for
// the critical class: the pool's size less the reserved ones, shared among
// the pool's sheddable endpoints in proportion to their demand under
// condition c (for Little's-law previews).
func (s priorityPart) sheddableCaps(m *Mode, pl PoolLayout, c *Condition) map[string]float64 {
	if m.Priority == nil || m.Priority.Reserved[pl.Name] <= 0 {
		return nil
	}
	fr := s.FaultRates(c)
	demand := map[string]float64{}
	var total float64
	for _, e := range pl.Endpoints {
		if s.classOf(m, e) == string(service.ClassSheddable) {
			demand[e] = fr[e] * s.holdingTime(s.DependencyOf(e), c, e).Seconds()
			total += demand[e]
		}
	}
	share := float64(max(0, pl.Limit-m.Priority.Reserved[pl.Name]))
	out := map[string]float64{}
	for e, d := range demand {
		if total > 0 {
			out[e] = share * d / total
		} else {
			out[e] = share / float64(len(demand))
		}
	}
	return out
}

// priorityFieldPath maps a service.ConfigError field of the priority stage
// to mode i's field path; false for another field.
func priorityFieldPath(mode int, field string) (string, bool) {
	name, sub, _ := strings.Cut(field, ".")
	key, ok := map[string]string{"priority_header": "header", "priority_default": "default",
		"priority_classes": "classes", "priority_reserved": "reserved"}[name]
	if !ok {
		return "", false
	}
	path := fmt.Sprintf("modes[%d].priority.%s", mode, key)
	if sub != "" {
		path += "." + sub
	}
	return path, true
}

// validatePriority checks the modes' priority stages where the service's
// own rules (validateService) do not: a stage is the built-in service's,
// in a mode of its own name. Then expectations.priority.
func (s priorityPart) validatePriority(p *problems) {
	for i, m := range s.Modes {
		if m.Priority == nil {
			continue
		}
		path := fmt.Sprintf("modes[%d].priority", i)
		switch {
		case s.External != nil:
			p.add(path, "configures the built-in service's priority stage; your own service's classes and reserved permits are its own")
		case m.Pools == "" && (m.Name == ModeShared || m.Name == ModeBulkhead):
			p.add(path, "the built-in modes shared and bulkhead have no priority stage: name your mode (e.g. reserved) and set pools: %s", m.Name)
		}
	}
	s.validatePriorityClaims(p)
}

// validatePriorityClaims checks expectations.priority: its condition and
// modes are in the matrix; in both modes the victim (the critical class)
// and the culprit (the sheddable one) draw from one pool, which the
// reserved mode reserves permits of for the victim's class and the
// unreserved mode does not.
func (s priorityPart) validatePriorityClaims(p *problems) {
	pr := s.Expectations.Priority
	if pr == nil {
		return
	}
	const path = "expectations.priority."
	ex := s.Expectations
	if s.External != nil {
		p.add(path+"reserved", "the priority claim needs the built-in service's priority stage (modes[i].priority)")
		return
	}
	if s.condition(pr.Condition) == nil {
		p.add(path+"condition", "no condition %q in the matrix (the one whose load on /%s surges)", pr.Condition, ex.Culprit)
	}
	if pr.Reserved != "" && pr.Reserved == pr.Unreserved {
		p.add(path+"unreserved", "must differ from the reserved mode %q: the claim compares the pool with and without a reservation", pr.Reserved)
	}
	if !s.hasEndpoint(ex.Victim) || !s.hasEndpoint(ex.Culprit) || ex.Victim == ex.Culprit {
		return // validateExpectations names the roles
	}
	for _, r := range []struct {
		field, mode string
		reserves    bool
	}{{"reserved", pr.Reserved, true}, {"unreserved", pr.Unreserved, false}} {
		m := s.mode(r.mode)
		if m == nil {
			p.add(path+r.field, "no mode %q in the matrix", r.mode)
			continue
		}
		pv, pc := s.poolOf(m, ex.Victim), s.poolOf(m, ex.Culprit)
		if pv == nil || pc == nil || pv.Name != pc.Name {
			p.add(path+r.field, "mode %q: /%s and /%s draw from different pools; the claim is about one pool both draw from (pools: shared, or a pool group)",
				r.mode, ex.Victim, ex.Culprit)
			continue
		}
		reserved := 0
		if m.Priority != nil {
			reserved = m.Priority.Reserved[pv.Name]
		}
		switch {
		case !r.reserves && reserved > 0:
			p.add(path+r.field, "mode %q reserves %d permits of pool %s: the unreserved mode is the same pool without a reservation", r.mode, reserved, pv.Name)
		case !r.reserves:
		case m.Priority == nil:
			p.add(path+r.field, "mode %q has no priority stage: give it priority: {classes: {%s: critical, %s: sheddable}, reserved: {%s: N}}",
				r.mode, ex.Victim, ex.Culprit, pv.Name)
		case s.classOf(m, ex.Victim) != string(service.ClassCritical):
			p.add(path+r.field, "mode %q: /%s (the victim) is %s; the claim's victim is the critical class", r.mode, ex.Victim, s.classOf(m, ex.Victim))
		case s.classOf(m, ex.Culprit) != string(service.ClassSheddable):
			p.add(path+r.field, "mode %q: /%s (the culprit) is %s; the claim's culprit is the sheddable class", r.mode, ex.Culprit, s.classOf(m, ex.Culprit))
		case reserved <= 0:
			p.add(path+r.field, "mode %q reserves no permits of pool %s for the critical class (priority.reserved.%s)", r.mode, pv.Name, pv.Name)
		}
	}
}

// priorityWarnings warns about a reservation smaller than the critical
// class's demand by Little's law (its endpoints' rate × holding time) in a
// condition: the critical calls beyond it compete with sheddable ones for
// the rest of the pool, and without a queue they are refused.
func (s priorityPart) priorityWarnings() []string {
	if s.External != nil {
		return nil
	}
	var out []string
	for i := range s.Modes {
		m := &s.Modes[i]
		if m.Priority == nil {
			continue
		}
		for _, pool := range sortedKeys(m.Priority.Reserved) {
			r := m.Priority.Reserved[pool]
			var pl *PoolLayout
			for _, x := range s.Pools(m) {
				if x.Name == pool && !x.Nested {
					pl = &x
				}
			}
			if r <= 0 || pl == nil {
				continue
			}
			worst, in := 0.0, ""
			for j := range s.Conditions {
				c := &s.Conditions[j]
				fr := s.FaultRates(c)
				var d float64
				for _, e := range pl.Endpoints {
					if s.classOf(m, e) == string(service.ClassCritical) {
						d += fr[e] * s.holdingTime(s.DependencyOf(e), c, e).Seconds()
					}
				}
				if d > worst {
					worst, in = d, c.Name
				}
			}
			if worst > float64(r) {
				out = append(out, fmt.Sprintf("modes[%d].priority.reserved.%s: %d permits reserved for the critical class, whose demand under %s is %.3g by Little's law: "+
					"its calls beyond the reservation compete with sheddable ones for the rest of the pool", i, pool, r, in, worst))
			}
		}
	}
	return out
}
