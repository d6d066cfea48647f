package spec

import (
	"fmt"
	"slices"
	"strings"

	"github.com/bulkheadlab/bulkheadlab/internal/claims"
)

// Undecidable returns why the matrix cannot decide claim pred (a name of
// package claims), or "" when it can or there is no such claim: by the
// claim's needs (claims.Needs), the expectations must name its runs, the
// service must show what it reads (Spec.unseen), and the conditions and
// modes it compares must be in the matrix.
func (s *Spec) Undecidable(pred string) string {
	c, ok := claims.Lookup(pred)
	if !ok {
		return ""
	}
	for _, sec := range c.Needs.Sections {
		if !s.Expectations.Names(sec) {
			return fmt.Sprintf("%s is judged only when %s", pred, sec)
		}
	}
	if why := (aftermathPart{s}).unseen(pred, c.Needs.Sees); why != "" {
		return why
	}
	conds, modes := s.Expectations.Cells(c)
	var missing []string
	for _, c := range conds {
		if !slices.ContainsFunc(s.Conditions, func(x Condition) bool { return x.Name == c }) {
			missing = append(missing, "condition "+c)
		}
	}
	for _, m := range modes {
		if !slices.ContainsFunc(s.Modes, func(x Mode) bool { return x.Name == m }) {
			missing = append(missing, "mode "+m+rolesPart{s}.modeRoleHint(m))
		}
	}
	if len(missing) > 0 {
		return fmt.Sprintf("%s compares %s × %s, and the matrix has no %s", pred,
			strings.Join(conds, "+"), strings.Join(modes, "+"), strings.Join(missing, ", no "))
	}
	return ""
}

// Decidable returns the claims of names that the matrix can decide, in
// order.
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
func (s rolesPart) modeRoles() {
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
func (s rolesPart) modesOfLayout(layout string) []string {
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
func (s rolesPart) modeRoleHint(m string) string {
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
