package spec

import (
	"fmt"
	"time"

	"github.com/bulkheadlab/bulkheadlab/faultproxy"
)

// scalePart is a spec as its phase-scale family sees it: how long the phases
// are against the holding time.
type scalePart struct{ *Spec }

// MinFaultPhaseT is the shortest fault phase, in units of the longest time
// a call is held under a fault, that is not warned about: a pool fills
// within a few holding times (Little's law: demand builds up over one),
// and the verdicts judge spans of the phase after that, so a shorter phase
// leaves a slow coupling little time to show.
const MinFaultPhaseT = 4

// holdUnderFault is the longest a call is held under the spec's faults:
// T, the service's call timeout; for a service of the user's own, whose
// real timeout the harness does not set, the longest latency fault if it
// (from each fault type's own holding time) is longer. It also says where it comes from.
func (s scalePart) holdUnderFault() (time.Duration, string) {
	t := s.Service.Timeout.D
	hold, why := t, fmt.Sprintf("T = service.timeout %s", t)
	if s.External == nil {
		return hold, why
	}
	for _, c := range s.Conditions {
		for _, f := range c.Faults {
			h := f.proxyFault().Hold(0)
			if h.Kind != faultproxy.HoldAdds {
				continue
			}
			d := h.Most
			if d == faultproxy.Unbounded {
				d = h.Mean
			}
			if d > hold {
				hold, why = d, fmt.Sprintf("a call to %s held up to %s under %s, longer than service.timeout %s", c.Dependency, d, c.Name, t)
			}
		}
	}
	return hold, why
}

// phaseWarnings warns when the fault phase is shorter than MinFaultPhaseT
// holding times, and says the value to use.
func (s scalePart) phaseWarnings() []string {
	hold, why := s.holdUnderFault()
	fault := s.Phases.Fault.D
	if hold <= 0 || fault >= MinFaultPhaseT*hold || (noPoolPart{s.Spec}).checksOnlyGrowth() {
		return nil
	}
	want := MinFaultPhaseT * hold
	return []string{fmt.Sprintf("phases.fault: %s is %.3g T (%s): a pool fills within a few holding times and the verdicts judge what follows, "+
		"so a coupling has little time to show; use phases.fault: %s (%dT) or more", fault, float64(fault)/float64(hold), why, want, MinFaultPhaseT)}
}
