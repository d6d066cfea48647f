package rundata

// PriorityRoles name the runs of the priority claim ("isolate by
// criticality, not only by dependency: checkout traffic and recommendation
// traffic can be separate worker sets even in one service"). The victim
// is the critical endpoint and the culprit the sheddable one; they draw
// from one pool. Under Condition (the culprit's load surges), with permits
// of that pool reserved for the critical class (mode Reserved) the victim
// stays at its baseline and the culprit's excess is refused at once; in
// the same pool without a reservation (mode Unreserved) the victim is hurt
// (PRIORITY-RESERVED). What the reservation costs — its permits idle while
// sheddable calls are refused — is measured beside it.
type PriorityRoles struct {
	Condition  string `yaml:"condition" json:"condition"`
	Reserved   string `yaml:"reserved" json:"reserved"`
	Unreserved string `yaml:"unreserved" json:"unreserved"`
}

// Metric names of the built-in service's priority stage (service
// PriorityConfig), each labelled pool: the permits reserved for the
// critical class, those of them no critical call uses (a gauge and its
// time integral, in permit-seconds), the calls of each class (label class)
// admitted and not yet answered, and the requests by class and outcome.
const (
	MetricPriorityReserved    = "bulkheadlab_priority_reserved_permits"
	MetricPriorityIdle        = "bulkheadlab_priority_reserved_idle_permits"
	MetricPriorityIdleSeconds = "bulkheadlab_priority_reserved_idle_permit_seconds_total"
	MetricPriorityInflight    = "bulkheadlab_priority_inflight"
	MetricPriorityClassLimit  = "bulkheadlab_priority_class_limit"
	MetricPriorityRequests    = "bulkheadlab_priority_requests_total"
)

// The priority classes (label class), and the outcome (label outcome of
// MetricPriorityRequests) of a sheddable call refused over its class's
// share of the pool.
const (
	PriorityCritical  = "critical"
	PrioritySheddable = "sheddable"
	PriorityOverShare = "over_share"
)
