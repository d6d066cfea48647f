package spec

import (
	"fmt"
	"slices"
)

// rolesPart is a spec as its roles family sees it: which cells play which
// part in a claim.
type rolesPart struct{ *Spec }

// inferRoles gives the expectations a victim and a culprit the spec does
// not write when the endpoints leave one choice: with two endpoints, the
// other of the one written; with neither written and no endpoints named
// like the defaults (a and b), the endpoint whose dependency every
// condition that names one faults is the culprit, the other the victim —
// two endpoints calling two dependencies. Otherwise the defaults stay,
// and validation names what is missing. It runs after the expectations'
// defaults and before the conditions take the culprit's dependency; an
// audit has roles of its own (auditRoles).
func (s rolesPart) inferRoles() {
	s.rolesWhy = ""
	if s.Audit != nil {
		return
	}
	setV, setC := s.set("expectations.victim"), s.set("expectations.culprit")
	ex := &s.Expectations
	switch {
	case setV && setC:
		s.rolesWhy = "written"
		return
	case len(s.Endpoints) != 2:
		return
	}
	a, b := s.Endpoints[0], s.Endpoints[1]
	other := func(name string) string {
		if name == a.Name {
			return b.Name
		}
		return a.Name
	}
	switch {
	case setV && s.hasEndpoint(ex.Victim):
		ex.Culprit = other(ex.Victim)
		s.rolesWhy = "culprit inferred: the other endpoint"
		return
	case setC && s.hasEndpoint(ex.Culprit):
		ex.Victim = other(ex.Culprit)
		s.rolesWhy = "victim inferred: the other endpoint"
		return
	case setV || setC:
		return
	case s.hasEndpoint(ex.Victim) && s.hasEndpoint(ex.Culprit):
		s.rolesWhy = "the defaults"
		return
	case a.Dependency == "" || b.Dependency == "" || a.Dependency == b.Dependency:
		return
	}
	var faulted []string
	for _, c := range s.Conditions {
		if c.Dependency != "" && !slices.Contains(faulted, c.Dependency) {
			faulted = append(faulted, c.Dependency)
		}
	}
	if len(faulted) != 1 {
		return
	}
	for _, e := range s.Endpoints {
		if e.Dependency == faulted[0] {
			ex.Culprit, ex.Victim = e.Name, other(e.Name)
			s.rolesWhy = fmt.Sprintf("inferred: the conditions fault %s, which /%s calls", faulted[0], e.Name)
			return
		}
	}
}

// RolesLine names the victim and the culprit and where they come from
// (written, the defaults, inferred), as validate shows them; "" for an
// audit, whose every endpoint is both in turn.
func (s *Spec) RolesLine() string {
	if s.Audit != nil {
		return ""
	}
	ex := s.Expectations
	name := func(ep string) string {
		if d := s.DependencyOf(ep); d != "" {
			return fmt.Sprintf("/%s (calls %s)", ep, d)
		}
		return "/" + ep
	}
	line := fmt.Sprintf("victim %s, culprit %s", name(ex.Victim), name(ex.Culprit))
	if s.rolesWhy != "" {
		line += " — " + s.rolesWhy
	}
	return line
}
