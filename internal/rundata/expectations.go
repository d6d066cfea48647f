package rundata

import (
	"reflect"
	"strings"

	"github.com/bulkheadlab/bulkheadlab/internal/claims"
)

// Expectations are the thresholds and condition roles the verdicts use. They
// live in the experiment spec under `expectations:`; zero fields take the
// values of DefaultExpectations. The experiment spec embeds this type in its
// model; the analysis gives it meaning.
type Expectations struct {
	// Roles: which condition names play which part of the hypothesis.
	Healthy string `yaml:"healthy" json:"healthy"`
	Slow    string `yaml:"slow" json:"slow"`
	Failing string `yaml:"failing" json:"failing"`
	Busy    string `yaml:"busy" json:"busy"`
	// Victim is the endpoint whose dependency stays healthy ("b"); Culprit is
	// the one whose dependency gets the fault ("a").
	Victim  string `yaml:"victim" json:"victim"`
	Culprit string `yaml:"culprit" json:"culprit"`
	// SharedMode and BulkheadMode are the modes that play the shared pool
	// and the bulkheads: by default the modes of those names, else the one
	// mode whose layout (pools:) is shared, or bulkhead.
	SharedMode   string `yaml:"shared_mode" json:"shared_mode"`
	BulkheadMode string `yaml:"bulkhead_mode" json:"bulkhead_mode"`

	// DegradedP99Factor: a window of the victim is degraded when its p99 is
	// above this factor times its baseline p99 ...
	DegradedP99Factor float64 `yaml:"degraded_p99_factor" json:"degraded_p99_factor"`
	// DegradedErrorRate: ... or its error rate is above this share (0–1).
	DegradedErrorRate float64 `yaml:"degraded_error_rate" json:"degraded_error_rate"`
	// P1MaxTimeToDegrade is the longest time, in units of T, from fault start
	// to the victim's first degraded window for P1 to hold.
	P1MaxTimeToDegrade float64 `yaml:"p1_max_time_to_degrade" json:"p1_max_time_to_degrade"`
	// P2MaxP99RiseT: under bulkheads the victim's fault-phase p99 rises above
	// its baseline p99 by at most this many T (0.25 T = 62.5 ms at T = 250 ms).
	// A rise in units of T, not a ratio, because a ratio of two small p99s
	// (~15 ms on a shared machine) swings with scheduling noise, while the
	// effect P2 guards against is a rise of most of T ...
	P2MaxP99RiseT float64 `yaml:"p2_max_p99_rise_t" json:"p2_max_p99_rise_t"`
	// P2MaxErrorRate: ... and its fault-phase error rate at most this share
	// above its baseline error rate.
	P2MaxErrorRate float64 `yaml:"p2_max_error_rate" json:"p2_max_error_rate"`
	// P2MinFastRejectShare: the share of the culprit's failures that must be
	// fast rejections (bulkhead 503 with latency below P2FastRejectMaxT·T).
	P2MinFastRejectShare float64 `yaml:"p2_min_fast_reject_share" json:"p2_min_fast_reject_share"`
	P2FastRejectMaxT     float64 `yaml:"p2_fast_reject_max_t" json:"p2_fast_reject_max_t"`
	// P3MinThroughputCost: under busy, the culprit's successful throughput
	// with bulkheads must be lower than shared by at least this share (0–1).
	P3MinThroughputCost float64 `yaml:"p3_min_throughput_cost" json:"p3_min_throughput_cost"`
	// P4MaxRatio: the shared-vs-bulkhead difference on the victim under
	// failing must be at most this fraction of the difference under slow.
	P4MaxRatio float64 `yaml:"p4_max_ratio" json:"p4_max_ratio"`
	// RecoveryMaxT is the longest time, in units of T, from the fault's end
	// until every endpoint is back at its baseline by P2's thresholds (and
	// stays there) for RECOVERY to hold; a mode's breaker adds its open
	// delay.
	RecoveryMaxT float64 `yaml:"recovery_max_t" json:"recovery_max_t"`
	// MaxRelativeSpread: a verdict is INCONCLUSIVE when the repeats' spread
	// (CI width over the mean) of a deciding number exceeds this.
	MaxRelativeSpread float64 `yaml:"max_relative_spread" json:"max_relative_spread"`
	// Check lists the claims `run --check` asserts (names of package
	// claims).
	Check []string `yaml:"check" json:"check"`
	// Undecidable says, per prediction the spec's matrix cannot decide,
	// why (written by the spec's defaults, the one judgement validate shows
	// and the verdicts follow: such a verdict is SKIPPED with the reason).
	Undecidable map[string]string `yaml:"undecidable,omitempty" json:"undecidable,omitempty"`
	// Policy names the runs of the policy claims; nil: none judged.
	Policy *PolicyClaims `yaml:"policy,omitempty" json:"policy,omitempty"`
	// Sizing names the swept mode of the sizing claims; nil: none judged.
	Sizing *SizingRoles `yaml:"sizing,omitempty" json:"sizing,omitempty"`
	// Conns names the runs of the connection-pool claims; nil: none judged.
	Conns *ConnsRoles `yaml:"conns,omitempty" json:"conns,omitempty"`
	// CPU names the runs of the CPU claim; nil: not judged.
	CPU *CPURoles `yaml:"cpu,omitempty" json:"cpu,omitempty"`
	// Fleet names the runs of the fleet claims; nil: none judged.
	Fleet *FleetRoles `yaml:"fleet,omitempty" json:"fleet,omitempty"`
	// Priority names the runs of the priority claim; nil: not judged.
	Priority *PriorityRoles `yaml:"priority,omitempty" json:"priority,omitempty"`
	// RateLimit names the runs of the rate-limit claim; nil: not judged.
	RateLimit *RateLimitRoles `yaml:"ratelimit,omitempty" json:"ratelimit,omitempty"`
	// Memory names the runs of the event-loop memory claim; nil: not
	// judged.
	Memory *MemoryRoles `yaml:"memory,omitempty" json:"memory,omitempty"`
	// Tenants names the runs of the tenant claims; nil: none judged.
	Tenants *TenantsRoles `yaml:"tenants,omitempty" json:"tenants,omitempty"`
	// Jobs names the runs of the background-job claims; nil: none judged.
	Jobs *JobsRoles `yaml:"jobs,omitempty" json:"jobs,omitempty"`
	// Processes names the runs of the processes-as-walls claim; nil: not
	// judged.
	Processes *ProcessesRoles `yaml:"processes,omitempty" json:"processes,omitempty"`
}

// SizingRoles name the sweep of the sizing claims (seed-004): Mode is the
// mode whose culprit bulkhead is swept (a sweep of one numeric field under
// it); the conditions are the expectations' healthy, busy and slow.
type SizingRoles struct {
	Mode string `yaml:"mode" json:"mode"`
	// MaxHealthyRejection is the largest share of the culprit's requests a
	// size may reject in healthy and still be in the good region (default
	// 0.01); Headroom multiplies Little's-law demand into the size it
	// recommends (default 2, seed-000's "doubled for peaks").
	MaxHealthyRejection float64 `yaml:"max_healthy_rejection,omitempty" json:"max_healthy_rejection,omitempty"`
	Headroom            float64 `yaml:"headroom,omitempty" json:"headroom,omitempty"`
}

// WithDefaults returns r with every zero threshold at its default.
func (r SizingRoles) WithDefaults() SizingRoles {
	if r.MaxHealthyRejection == 0 {
		r.MaxHealthyRejection = 0.01
	}
	if r.Headroom == 0 {
		r.Headroom = 2
	}
	return r
}

// DefaultExpectations returns the defaults used for every zero field.
func DefaultExpectations() Expectations {
	return Expectations{
		Healthy: "healthy", Slow: "slow", Failing: "failing", Busy: "busy",
		Victim: "b", Culprit: "a", SharedMode: "shared", BulkheadMode: "bulkhead",
		DegradedP99Factor:    3,
		DegradedErrorRate:    0.05,
		P1MaxTimeToDegrade:   10,
		P2MaxP99RiseT:        0.25,
		P2MaxErrorRate:       0.01,
		P2MinFastRejectShare: 0.9,
		P2FastRejectMaxT:     0.1,
		P3MinThroughputCost:  0.05,
		P4MaxRatio:           0.5,
		RecoveryMaxT:         4,
		MaxRelativeSpread:    1.0,
		Check:                []string{claims.P1, claims.P2, claims.Recovery, claims.NoLeak, claims.LimitHolds},
	}
}

// WithDefaultsFor returns e with the default in every field whose YAML key
// set does not report as written: an explicit zero stays zero.
func (e Expectations) WithDefaultsFor(set func(key string) bool) Expectations {
	d := DefaultExpectations()
	ev, dv := reflect.ValueOf(&e).Elem(), reflect.ValueOf(d)
	for i := 0; i < ev.NumField(); i++ {
		key, _, _ := strings.Cut(ev.Type().Field(i).Tag.Get("yaml"), ",")
		if !set(key) {
			ev.Field(i).Set(dv.Field(i))
		}
	}
	return e
}

// WithDefaults returns e with every zero field replaced by its default.
func (e Expectations) WithDefaults() Expectations {
	d := DefaultExpectations()
	str := func(v *string, def string) {
		if *v == "" {
			*v = def
		}
	}
	num := func(v *float64, def float64) {
		if *v == 0 {
			*v = def
		}
	}
	str(&e.Healthy, d.Healthy)
	str(&e.Slow, d.Slow)
	str(&e.Failing, d.Failing)
	str(&e.Busy, d.Busy)
	str(&e.Victim, d.Victim)
	str(&e.Culprit, d.Culprit)
	str(&e.SharedMode, d.SharedMode)
	str(&e.BulkheadMode, d.BulkheadMode)
	num(&e.DegradedP99Factor, d.DegradedP99Factor)
	num(&e.DegradedErrorRate, d.DegradedErrorRate)
	num(&e.P1MaxTimeToDegrade, d.P1MaxTimeToDegrade)
	num(&e.P2MaxP99RiseT, d.P2MaxP99RiseT)
	num(&e.P2MaxErrorRate, d.P2MaxErrorRate)
	num(&e.P2MinFastRejectShare, d.P2MinFastRejectShare)
	num(&e.P2FastRejectMaxT, d.P2FastRejectMaxT)
	num(&e.P3MinThroughputCost, d.P3MinThroughputCost)
	num(&e.P4MaxRatio, d.P4MaxRatio)
	num(&e.RecoveryMaxT, d.RecoveryMaxT)
	num(&e.MaxRelativeSpread, d.MaxRelativeSpread)
	if e.Check == nil {
		e.Check = d.Check
	}
	return e
}
