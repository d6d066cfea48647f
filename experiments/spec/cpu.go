package spec

import (
	"fmt"

	"github.com/bulkheadlab/bulkheadlab/faultproxy"
	"github.com/bulkheadlab/bulkheadlab/service"
)

// cpuPart is a spec as its CPU family sees it: the CPU limits and
// expectations.cpu.
type cpuPart struct{ *Spec }

// validateCPU checks what the CPU claim configures: payload sizes (a
// dependency's payload, a payload fault's size) that the built-in service
// can read whole, service.gomaxprocs, and expectations.cpu's runs.
func (s cpuPart) validateCPU(p *problems) {
	if s.External == nil {
		bodyCap := ByteSize(service.DefaultMaxBodyBytes)
		for _, name := range sortedKeys(s.Dependencies) {
			if d := s.Dependencies[name]; d.Payload > bodyCap {
				p.add("dependencies."+name+".payload", "%s is more than the service reads of a body (%s): every call would fail (502) instead of being decoded", d.Payload, bodyCap)
			}
		}
		for i, c := range s.Conditions {
			for j, f := range c.Faults {
				if size, _ := f.Params["size"].(ByteSize); f.Type == faultproxy.TypePayload && size > bodyCap {
					p.add(fmt.Sprintf("conditions[%d].faults[%d].size", i, j), "%s is more than the service reads of a body (%s): every affected call would fail (502) instead of being decoded", size, bodyCap)
				}
			}
		}
	}
	if n := s.Service.GOMAXPROCS; n < 0 || n > 1024 {
		p.add("service.gomaxprocs", "must be between 0 (the runtime's default) and 1024, got %d", n)
	} else if n > 0 && s.External != nil {
		p.add("service.gomaxprocs", "sets the built-in service's GOMAXPROCS; your own service's is yours to set (external.env: {GOMAXPROCS: ...} for a Go service)")
	}
	s.validateCPURoles(p)
}

// validateCPURoles checks expectations.cpu: its conditions and mode are in
// the matrix.
func (s cpuPart) validateCPURoles(p *problems) {
	c := s.Expectations.CPU
	if c == nil {
		return
	}
	const path = "expectations.cpu."
	r := c.WithDefaults(s.Expectations.Healthy)
	s.checkConditionAndControl(p, path, r.Condition, r.Control, "the condition whose payloads the service decodes")
	if s.mode(r.Mode) == nil {
		p.add(path+"mode", "no mode %q in the matrix (default: bulkhead)", r.Mode)
	}
	if r.MinP99RiseT < 0 || r.MinP99RiseT > 10 {
		p.add(path+"min_p99_rise_t", "must be between 0 (default 0.1) and 10 T, got %g", r.MinP99RiseT)
	}
}

// checkConditionAndControl checks a claim's condition and its healthy
// control under the expectations' path ("expectations.cpu."): the
// condition is given (what says what it is), both are in the matrix, and
// they differ.
func (s *Spec) checkConditionAndControl(p *problems, path, condition, control, what string) {
	s.checkNamedConditionAndControl(p, path, "condition", condition, control, what)
}

// checkNamedConditionAndControl is checkConditionAndControl for a
// condition under another key than "condition" (expectations.processes.cpu).
func (s *Spec) checkNamedConditionAndControl(p *problems, path, key, condition, control, what string) {
	switch {
	case condition == "":
		p.add(path+key, "required: %s", what)
	case s.condition(condition) == nil:
		p.add(path+key, "no condition %q in the matrix", condition)
	case condition == control:
		p.add(path+"control", "must differ from the condition %q", condition)
	}
	if s.condition(control) == nil {
		p.add(path+"control", "no condition %q in the matrix (default: expectations.healthy)", control)
	}
}
