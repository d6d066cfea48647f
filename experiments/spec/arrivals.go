package spec

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/bulkheadlab/bulkheadlab/loadgen"
)

// arrivalsPart is a spec as its arrivals family sees it: how requests
// arrive, and what that leaves unjudged.
type arrivalsPart struct{ *Spec }

// defaultArrivals is the arrival process of a spec that names none:
// Poisson for an audit and for a user's own service, and constant for the
// built-in service's other experiments, whose reference results were
// measured so. Evenly spaced streams that share a pool without a queue can
// keep a phase in which one stream always finds the permit the other just
// freed, so that a coupling never shows however often the run is
// repeated; Poisson arrivals cannot hold a phase. A lockstep without
// arrivals asks for constant ones.
func (s arrivalsPart) defaultArrivals() string {
	if (s.Audit != nil || s.External != nil) && !s.Load.Lockstep {
		return loadgen.ArrivalsPoisson
	}
	return loadgen.ArrivalsConstant
}

// ArrivalsDefaulted reports whether the arrivals are the default's
// (the spec does not write load.arrivals), for the previews that show it.
func (s *Spec) ArrivalsDefaulted() bool { return !s.set("load.arrivals") }

// arrivalsWarnings warns when constant arrivals meet a pool that several
// endpoints share without a queue (the built-in layouts), or a service of
// the user's own whose queueing the spec does not declare: there evenly
// spaced arrivals can hide a coupling.
func (s arrivalsPart) arrivalsWarnings() []string {
	if s.Load.Arrivals != loadgen.ArrivalsConstant || len(s.Endpoints) < 2 {
		return nil
	}
	where := ""
	for i := range s.Modes {
		m := &s.Modes[i]
		if l := m.layout(); knownLayout(l) && !pooled(l) {
			continue // declared without a pool: nothing for a phase to lock onto
		}
		if s.External != nil {
			pools := s.ExternalOf(m).Pools
			if len(pools) == 0 {
				where = fmt.Sprintf("your service (mode %s), whose pools and queues the spec does not declare", m.Name)
				break
			}
			for _, p := range pools {
				if p.Queue == 0 && len(p.Endpoints) > 1 {
					where = fmt.Sprintf("the pool %s of mode %s, which %d endpoints share without a queue", p.Name, m.Name, len(p.Endpoints))
					break
				}
			}
		} else {
			for _, p := range s.Pools(m) {
				if !p.Nested && p.Queue == 0 && len(p.Endpoints) > 1 {
					where = fmt.Sprintf("the pool %s of mode %s, which %d endpoints share without a queue", p.Name, m.Name, len(p.Endpoints))
					break
				}
			}
		}
		if where != "" {
			break
		}
	}
	if where == "" {
		return nil
	}
	fix := "write load.arrivals: poisson"
	if s.defaultArrivals() == loadgen.ArrivalsPoisson {
		fix += " (or leave it out: Poisson is the default here)"
	}
	return []string{fmt.Sprintf("load.arrivals: constant arrivals meet %s: evenly spaced streams can keep a phase in which one always "+
		"takes the permit the other just freed, so a coupling may never show however often the run is repeated; %s", where, fix)}
}

// LoadLine describes the load as the previews show it: each endpoint's
// rate and the arrival process, and why when it is the default, e.g. "a
// 60/s, b 60/s; arrivals poisson (the default for an audit and for a
// service of your own: evenly spaced arrivals can hide a coupling)".
func (s *Spec) LoadLine() string {
	var b strings.Builder
	for i, e := range s.Endpoints {
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "%s %s/s", e.Name, strconv.FormatFloat(s.Load.Rates[e.Name], 'g', 6, 64))
	}
	fmt.Fprintf(&b, "; arrivals %s", s.Load.Arrivals)
	switch {
	case !s.ArrivalsDefaulted():
	case s.Load.Arrivals == loadgen.ArrivalsPoisson:
		b.WriteString(" (the default for an audit and for a service of your own: evenly spaced arrivals can hide a coupling)")
	default:
		b.WriteString(" (the default for the built-in service)")
	}
	return b.String()
}
