package rundata

import "time"

// BurstStats is the record of bursts.json (a JSON array, one per burst of
// the load generator's Config.Bursts, in that order): the requests one
// burst released to one endpoint at one instant, on top of the endpoint's
// schedule. Burst results are in no Window and no PhaseStats, so they never
// affect a run's validity, rates or latency percentiles. Offsets are from
// At, the intended instant; an offset is zero when nothing it measures
// happened (no request was written, no response came).
type BurstStats struct {
	// Label names the burst ("probe-before").
	Label string `json:"label"`
	// Target is the endpoint's name (the load generator's Target.Name).
	Target string `json:"target"`
	// At is the intended instant of the release; Offset is At minus the
	// attack start.
	At     time.Time     `json:"at"`
	Offset time.Duration `json:"offset_ns"`
	// Requests is the number of requests of the burst, one connection each.
	Requests int `json:"requests"`
	// Counts holds the results per class, classified as the endpoint's
	// scheduled results are; Counts.Total() is Requests unless Abandoned.
	Counts Counts `json:"counts"`
	// Written counts the requests whose write was attempted (every request
	// whose connection opened).
	Written int64 `json:"written"`
	// Release is when the requests were released, FirstWrite and LastWrite
	// when the first and the last write began, and LastResponse when the
	// last response was read whole. LastWrite − FirstWrite is the spread.
	Release      time.Duration `json:"release_ns"`
	FirstWrite   time.Duration `json:"first_write_ns"`
	LastWrite    time.Duration `json:"last_write_ns"`
	LastResponse time.Duration `json:"last_response_ns"`
	// Latency is from each request's write to the end of its response (or
	// its failure), over the written requests; ByClass splits it by class
	// name, non-empty classes only.
	Latency Quantiles            `json:"latency"`
	ByClass map[string]Quantiles `json:"latency_by_class,omitempty"`
	// DialErrors counts connections that could not be opened (their
	// requests are results of the class their error gives, normally
	// transport_error); WriteErrors requests whose write failed;
	// HarnessErrors results that failed on the load generator's side (also
	// counted in Counts); LateDials connections that opened only after
	// At, whose requests were written late.
	DialErrors    int64 `json:"dial_errors,omitempty"`
	WriteErrors   int64 `json:"write_errors,omitempty"`
	HarnessErrors int64 `json:"harness_errors,omitempty"`
	LateDials     int64 `json:"late_dials,omitempty"`
	// Abandoned is set when the run was stopped before all of the burst's
	// results were in; the results that were in are counted.
	Abandoned bool `json:"abandoned,omitempty"`
}

// Spread is the time from the first write of the burst to the last.
func (b BurstStats) Spread() time.Duration { return b.LastWrite - b.FirstWrite }
