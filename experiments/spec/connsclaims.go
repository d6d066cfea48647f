package spec

import (
	"fmt"
	"slices"

	"github.com/bulkheadlab/bulkheadlab/service"
)

// connsPart is a spec as its connections family sees it: each mode's
// connections and expectations.conns.
type connsPart struct{ *Spec }

// connsOf returns the connections of mode m and how they are pooled: the
// mode's own conns and conns_layout where set, else the service's.
func (s connsPart) connsOf(m *Mode) (conns int, layout service.ConnsLayout) {
	conns, layout = s.Service.Conns, service.ConnsLayout(s.Service.ConnsLayout)
	if m.Conns > 0 {
		conns = m.Conns
	}
	if m.ConnsLayout != "" {
		layout = service.ConnsLayout(m.ConnsLayout)
	}
	if layout == "" {
		layout = service.ConnsPerDependency
	}
	return conns, layout
}

// soleBulkhead returns the limit of mode m's pool that serves endpoint ep
// alone (a bulkhead of one dependency), 0 when it has none.
func (s connsPart) soleBulkhead(m *Mode, ep string) int {
	for _, pl := range s.Pools(m) {
		if len(pl.Endpoints) == 1 && pl.Endpoints[0] == ep {
			return pl.Limit
		}
	}
	return 0
}

// validateConnsClaims checks expectations.conns: its condition and modes are
// in the matrix, each mode has a bulkhead for the culprit, the no-wall mode
// shares one connection pool and the others do not, the sized mode keeps
// the culprit's bulkhead within 0.8 × its connections and the over mode
// holds it above them.
func (s connsPart) validateConnsClaims(p *problems) {
	cr := s.Expectations.Conns
	if cr == nil {
		return
	}
	const path = "expectations.conns."
	if !slices.ContainsFunc(s.Conditions, func(c Condition) bool { return c.Name == cr.Condition }) {
		p.add(path+"condition", "no condition %q in the matrix", cr.Condition)
	}
	if (cr.Sized == "") != (cr.Over == "") {
		p.add(path+"sized", "sized and over go together (CONNS-SIZED compares them)")
	}
	culprit := s.Expectations.Culprit
	for _, r := range []struct {
		field, mode string
		shared      bool
		check       func(limit, conns int) bool
		want        string
	}{
		{"no_wall", cr.NoWall, true, nil, ""},
		{"walled", cr.Walled, false, nil, ""},
		{"sized", cr.Sized, false, func(l, c int) bool { return float64(l) <= 0.8*float64(c) }, "at most 0.8 × its connections"},
		{"over", cr.Over, false, func(l, c int) bool { return l > c }, "above its connections"},
	} {
		if r.mode == "" && (r.field == "sized" || r.field == "over") {
			continue
		}
		i := slices.IndexFunc(s.Modes, func(m Mode) bool { return m.Name == r.mode })
		if i < 0 {
			p.add(path+r.field, "no mode %q in the matrix", r.mode)
			continue
		}
		m := &s.Modes[i]
		conns, layout := s.connsOf(m)
		limit := s.soleBulkhead(m, culprit)
		switch {
		case limit == 0:
			p.add(path+r.field, "mode %q has no bulkhead of /%s alone (pools: bulkhead, or a pool of its own)", r.mode, culprit)
		case r.shared && layout != service.ConnsShared:
			p.add(path+r.field, "mode %q pools its connections %s; the no-wall mode needs conns_layout: shared", r.mode, layout)
		case !r.shared && layout == service.ConnsShared:
			p.add(path+r.field, "mode %q shares one connection pool; this role needs conns_layout: per-dependency", r.mode)
		case r.check != nil && !r.check(limit, conns):
			p.add(path+r.field, "mode %q: /%s's bulkhead of %d must be %s (%d)", r.mode, culprit, limit, r.want, conns)
		}
	}
	for _, x := range []struct {
		field string
		v     float64
	}{{"sized_max_wait_t", cr.SizedMaxWaitT}, {"over_min_wait_t", cr.OverMinWaitT}} {
		if x.v < 0 || x.v > 10 {
			p.add(path+x.field, "must be between 0 and 10 (T), got %g", x.v)
		}
	}
}

// connectionWarnings applies seed-002's rule to every mode of a built-in
// spec: a bulkhead of one dependency should hold at most ≈ 0.8 × the
// connections that dependency can use, so that it trips before they run
// out; a larger one leaves the connection pool as the wall that gives.
// Modes that expectations.conns names as breaking it on purpose (no_wall,
// walled, over: the layouts under test) are not warned about.
func (s connsPart) connectionWarnings() []string {
	if s.External != nil {
		return nil
	}
	var onPurpose []string
	if cr := s.Expectations.Conns; cr != nil {
		onPurpose = []string{cr.NoWall, cr.Walled, cr.Over}
	}
	var out []string
	for i := range s.Modes {
		m := &s.Modes[i]
		if slices.Contains(onPurpose, m.Name) {
			continue
		}
		conns, layout := s.connsOf(m)
		for _, pl := range s.Pools(m) {
			if len(pl.Endpoints) != 1 {
				continue // a pool shared by several dependencies is not a bulkhead of one
			}
			dep := s.DependencyOf(pl.Endpoints[0])
			if float64(pl.Limit) <= 0.8*float64(conns) {
				continue
			}
			where := fmt.Sprintf("its %d connections", conns)
			if layout == service.ConnsShared {
				where = fmt.Sprintf("the %d connections it shares with every dependency", conns)
			}
			out = append(out, fmt.Sprintf("modes[%d] (%s): the bulkhead %s holds %d calls to %s against %s: it cannot trip before the connections run out "+
				"(size it at ≈ 0.8 × connections = %d, or give %s more connections)",
				i, m.Name, pl.Name, pl.Limit, dep, where, int(0.8*float64(conns)), dep))
		}
	}
	return out
}
