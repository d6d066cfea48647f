package spec

import (
	"fmt"
	"slices"
	"strings"

	"github.com/bulkheadlab/bulkheadlab/internal/rundata"
)

// needs is what the matrix must hold for a prediction to be decided: the
// conditions (by their role in the expectations) and the modes it
// compares.
func (s *Spec) needs(pred string) (conds []string, modes []string) {
	e := s.Expectations
	both := []string{e.SharedMode, e.BulkheadMode}
	switch pred {
	case "P1":
		return []string{e.Slow}, []string{e.SharedMode}
	case "P2", "FAILFAST":
		return []string{e.Slow}, []string{e.BulkheadMode}
	case "P3":
		return []string{e.Busy}, both
	case "P4":
		return []string{e.Slow, e.Failing}, both
	case "EXHAUSTED":
		return []string{e.Slow}, both
	case "CPU-NOT-ISOLATED":
		if e.CPU == nil {
			return nil, nil
		}
		c := e.CPU.WithDefaults(e.Healthy)
		return []string{c.Condition, c.Control}, []string{c.Mode}
	}
	return nil, nil
}

// Undecidable returns why the matrix cannot decide prediction pred (a name
// of rundata.Predictions), or "" when it can: the conditions and modes it
// compares must be in the matrix, and the exhausted resource must be
// observable (an external service's pools are only through
// external.metrics).
func (s *Spec) Undecidable(pred string) string {
	if claim, ok := policyClaimOf[pred]; ok && !s.namesPolicyClaim(claim) {
		return fmt.Sprintf("%s is judged only when expectations.policy.%s names its runs", pred, claim)
	}
	if slices.Contains(rundata.SizingPredictions, pred) && s.Expectations.Sizing == nil {
		return fmt.Sprintf("%s is judged only when expectations.sizing names a swept mode", pred)
	}
	if slices.Contains(rundata.ConnsPredictions, pred) {
		switch cr := s.Expectations.Conns; {
		case cr == nil:
			return fmt.Sprintf("%s is judged only when expectations.conns names its runs", pred)
		case pred == "CONNS-SIZED" && cr.Sized == "":
			return "CONNS-SIZED is judged only when expectations.conns names its sized and over modes"
		}
	}
	if slices.Contains(rundata.CPUPredictions, pred) && s.Expectations.CPU == nil {
		return fmt.Sprintf("%s is judged only when expectations.cpu names its condition", pred)
	}
	if why, ok := s.fleetUndecidable(pred); ok {
		return why
	}
	if why, ok := s.aftermathUndecidable(pred); ok {
		return why
	}
	conds, modes := s.needs(pred)
	var missing []string
	for _, c := range conds {
		if !slices.ContainsFunc(s.Conditions, func(x Condition) bool { return x.Name == c }) {
			missing = append(missing, "condition "+c)
		}
	}
	for _, m := range modes {
		if !slices.ContainsFunc(s.Modes, func(x Mode) bool { return x.Name == m }) {
			missing = append(missing, "mode "+m+s.modeRoleHint(m))
		}
	}
	if len(missing) > 0 {
		return fmt.Sprintf("%s compares %s × %s, and the matrix has no %s", pred,
			strings.Join(conds, "+"), strings.Join(modes, "+"), strings.Join(missing, ", no "))
	}
	// EXHAUSTED of a service without metrics reads the limits inferred from
	// the proxies in the slow condition (a run where no cap showed is
	// INCONCLUSIVE, named).
	return ""
}

// policyClaimOf maps a policy prediction to its claim in
// expectations.policy (whose validation checks the runs it names).
var policyClaimOf = map[string]string{
	"BREAKER-LATE": "breaker", "BREAKER-ISOLATED": "breaker",
	"ADAPTIVE-ISOLATES": "adaptive", "ADAPTIVE-COST": "adaptive",
	"RETRY-AMPLIFIES": "retry", "RETRY-HURTS": "retry", "RETRY-CONTAINED": "retry",
}

// namesPolicyClaim reports whether expectations.policy sets claim's roles.
func (s *Spec) namesPolicyClaim(claim string) bool {
	pc := s.Expectations.Policy
	switch {
	case pc == nil:
		return false
	case claim == "breaker":
		return pc.Breaker != nil
	case claim == "adaptive":
		return pc.Adaptive != nil
	case claim == "retry":
		return pc.Retry != nil
	}
	return false
}

// AllPredictions are the base and the policy predictions, in report order.
func AllPredictions() []string {
	return slices.Concat(rundata.Predictions, rundata.AftermathPredictions, rundata.PolicyPredictions, rundata.SizingPredictions, rundata.ConnsPredictions, rundata.CPUPredictions, rundata.FleetPredictions)
}

// Decidable returns the predictions of names that the matrix can decide,
// in order.
func (s *Spec) Decidable(names []string) []string {
	var out []string
	for _, n := range names {
		if s.Undecidable(n) == "" {
			out = append(out, n)
		}
	}
	return out
}

// ExternalOf returns the user's service as configured in mode m: the
// external section's fields with m's overrides (each field replaced, but
// env merged, the mode's keys winning). It is zero for a built-in spec.
func (s *Spec) ExternalOf(m *Mode) ExternalService {
	if s.External == nil {
		return ExternalService{}
	}
	x := s.External.ExternalService
	o := m.External
	if o == nil {
		return x
	}
	if o.Targets != nil {
		x.Targets = o.Targets
	}
	if o.Canary != "" {
		x.Canary = o.Canary
	}
	if o.Metrics != nil {
		x.Metrics = o.Metrics
	}
	if o.Pools != nil {
		x.Pools = o.Pools
	}
	if o.Start != nil {
		x.Start = o.Start
	}
	if o.Ready != "" {
		x.Ready = o.Ready
	}
	if o.ReadyTimeout.D != 0 || o.ReadyTimeout.Rel != 0 {
		x.ReadyTimeout = o.ReadyTimeout
	}
	if o.Env != nil {
		env := make(map[string]string, len(x.Env)+len(o.Env))
		for k, v := range x.Env {
			env[k] = v
		}
		for k, v := range o.Env {
			env[k] = v // the mode's keys win
		}
		x.Env = env
	}
	if o.Dir != "" {
		x.Dir = o.Dir
	}
	return x
}

// modeRoles gives the expectations the modes that play the shared pool and
// the bulkheads unless the spec names them (expectations.shared_mode,
// bulkhead_mode): the mode of that name, else the one mode whose layout
// (pools:) it is. A mode is matched by its layout, not its name.
func (s *Spec) modeRoles() {
	for _, r := range []struct {
		key, layout string
		field       *string
	}{{"expectations.shared_mode", ModeShared, &s.Expectations.SharedMode}, {"expectations.bulkhead_mode", ModeBulkhead, &s.Expectations.BulkheadMode}} {
		if s.set(r.key) || slices.ContainsFunc(s.Modes, func(m Mode) bool { return m.Name == r.layout }) {
			continue
		}
		if of := s.modesOfLayout(r.layout); len(of) == 1 {
			*r.field = of[0]
		}
	}
}

// modesOfLayout names the modes whose pools are laid out as layout.
func (s *Spec) modesOfLayout(layout string) []string {
	var of []string
	for i := range s.Modes {
		if s.Modes[i].layout() == layout {
			of = append(of, s.Modes[i].Name)
		}
	}
	return of
}

// modeRoleHint says, for a role's mode missing from the matrix, which modes
// could play it: " (modes with pools: bulkhead: split, split-b; name one as
// expectations.bulkhead_mode)".
func (s *Spec) modeRoleHint(m string) string {
	for _, r := range []struct{ role, layout, key string }{
		{s.Expectations.SharedMode, ModeShared, "shared_mode"}, {s.Expectations.BulkheadMode, ModeBulkhead, "bulkhead_mode"}} {
		if m != r.role {
			continue
		}
		if of := s.modesOfLayout(r.layout); len(of) > 1 {
			return fmt.Sprintf(" (modes with pools: %s: %s; name one as expectations.%s)", r.layout, strings.Join(of, ", "), r.key)
		}
	}
	return ""
}
