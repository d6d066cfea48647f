package rundata

import (
	"strconv"
	"strings"
)

// InstanceComponent is the component name of instance i (1-based) of a
// service run as a fleet of more than one process ("service-1"). A service
// of one instance is ServiceComponent, as it always was; the analysis
// rebuilds ServiceComponent's samples of a fleet as the fleet-wide sum of
// its instances' (see RunMeta.Instances).
func InstanceComponent(i int) string { return ServiceComponent + "-" + strconv.Itoa(i) }

// IsInstanceComponent reports whether c names an instance of a fleet
// ("service-1", "service-2", ...).
func IsInstanceComponent(c string) bool {
	rest, ok := strings.CutPrefix(c, ServiceComponent+"-")
	if !ok || rest == "" {
		return false
	}
	n, err := strconv.Atoi(rest)
	return err == nil && n >= 1 && strconv.Itoa(n) == rest
}

// FleetRoles name the runs of the fleet-multiplication claim (seed-004:
// "per-instance limits on a large fleet, so the effective concurrency
// against the dependency is the limit multiplied by instance count").
// Modes are the fleets compared, each of N instances with a per-instance
// bulkhead of L on the culprit's dependency (a mode swept over
// `instances` counts as every one of its variants); Budget, if set, is the
// remedy: a fleet whose per-instance limit is the dependency's capacity
// split over its instances. Condition is the condition under which the
// culprit's demand fills every instance's bulkhead.
type FleetRoles struct {
	Modes     []string `yaml:"modes" json:"modes"`
	Budget    string   `yaml:"budget,omitempty" json:"budget,omitempty"`
	Condition string   `yaml:"condition" json:"condition"`
	// Tolerance is how far a measured concurrency or latency may be from
	// its Little's-law prediction, as a share of the prediction (default
	// 0.25).
	Tolerance float64 `yaml:"tolerance,omitempty" json:"tolerance,omitempty"`
}

// WithDefaults returns r with every zero threshold at its default.
func (r FleetRoles) WithDefaults() FleetRoles {
	if r.Tolerance == 0 {
		r.Tolerance = 0.25
	}
	return r
}
