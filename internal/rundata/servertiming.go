package rundata

import (
	"slices"
	"strings"
)

// ServerTimingHeader is the response header of the W3C Server Timing
// specification (https://www.w3.org/TR/server-timing/): a service's own
// account of where a request's time went, e.g.
// `Server-Timing: pool;desc="wait";dur=85.2, db;dur=10.8`.
const ServerTimingHeader = "Server-Timing"

// Limits of a ServerTiming record, so that its memory is bounded whatever
// a service sends: at most MaxTimingMetrics distinct metric names per
// endpoint and phase (later names are counted in Dropped), at most
// MaxTimingEntries metrics read from one response (the rest counted in
// Dropped), names and descriptions at most MaxTimingText bytes (a longer
// name is a malformed entry; a longer description is cut).
const (
	MaxTimingMetrics = 16
	MaxTimingEntries = 32
	MaxTimingText    = 64
)

// ServerTiming is what the responses of one endpoint in one phase said in
// their Server-Timing headers (PhaseStats.ServerTiming). The load
// generator records it for every response, successful or failed, that
// carried the header; a phase none of whose responses did has none.
type ServerTiming struct {
	// With counts the phase's results whose response carried a
	// Server-Timing header; Without those that did not (a response without
	// it, or no response at all). With + Without is every result of the
	// phase.
	With    int64 `json:"with"`
	Without int64 `json:"without"`
	// Bad counts the malformed metric entries (a name that is no token, an
	// unterminated quoted string, a dur that is no finite number ≥ 0):
	// each was ignored, the rest of its header read.
	Bad int64 `json:"bad,omitempty"`
	// Dropped counts the well-formed metric entries left out by the limits
	// (MaxTimingMetrics names, MaxTimingEntries per response).
	Dropped int64 `json:"dropped,omitempty"`
	// Metrics are the distributions of each metric name's dur, sorted by
	// name. A metric entry without dur (a flag such as `miss`) is not a
	// time and is not recorded.
	Metrics []TimingMetric `json:"metrics,omitempty"`
}

// TimingMetric is the distribution of one Server-Timing metric's dur over
// the responses that carried it (once per response: a name repeated in one
// response counts with each of its entries).
type TimingMetric struct {
	Name string `json:"name"`
	// Desc is the first description the metric came with, if any.
	Desc string `json:"desc,omitempty"`
	// Dur is the distribution of its dur (sent in milliseconds, recorded
	// as a duration) from an HDR histogram of 2 significant digits.
	Dur Quantiles `json:"dur"`
}

// Metric returns the metric of that name, if recorded.
func (t *ServerTiming) Metric(name string) (TimingMetric, bool) {
	if t == nil {
		return TimingMetric{}, false
	}
	for _, m := range t.Metrics {
		if m.Name == name {
			return m, true
		}
	}
	return TimingMetric{}, false
}

// The roles of a Server-Timing metric: time spent waiting for something
// (a pool's connection, a queue, a lock), time spent working (a query, a
// call, a computation), or time the report leaves out (the whole request,
// which holds both).
const (
	TimingWait   = "wait"
	TimingWork   = "work"
	TimingIgnore = "ignore"
)

// timingWaitWords make a metric a wait by default when its name or
// description contains one of them (case-insensitively).
var timingWaitWords = []string{"wait", "queue", "acquire", "pool"}

// TimingRoles are the Server-Timing metric names a spec declares as wait,
// work or left out (external.timing); RunMeta records them. A name not
// listed takes its role from DefaultTimingRole.
type TimingRoles struct {
	Wait   []string `json:"wait,omitempty"`
	Work   []string `json:"work,omitempty"`
	Ignore []string `json:"ignore,omitempty"`
}

// RoleOf is the role of a metric: the one its name is declared with in r
// (r may be nil), else DefaultTimingRole.
func (r *TimingRoles) RoleOf(name, desc string) string {
	if r != nil {
		switch {
		case slices.Contains(r.Wait, name):
			return TimingWait
		case slices.Contains(r.Work, name):
			return TimingWork
		case slices.Contains(r.Ignore, name):
			return TimingIgnore
		}
	}
	return DefaultTimingRole(name, desc)
}

// DefaultTimingRole is a metric's role when no spec declares it: a wait
// when its name or description contains "wait", "queue", "acquire" or
// "pool" (in any case); left out when it is named "total" (the whole
// request, wait and work together); work otherwise.
func DefaultTimingRole(name, desc string) string {
	n, d := strings.ToLower(name), strings.ToLower(desc)
	for _, w := range timingWaitWords {
		if strings.Contains(n, w) || strings.Contains(d, w) {
			return TimingWait
		}
	}
	if n == "total" {
		return TimingIgnore
	}
	return TimingWork
}
