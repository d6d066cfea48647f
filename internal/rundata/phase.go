package rundata

import "time"

// PhaseStats is the record of phases.json: one endpoint over one phase, with
// merged histograms and the load generator's validity verdict. Results belong
// to the phase of their intended send time; Sent and AchievedRate count actual
// send times within the phase span.
type PhaseStats struct {
	Endpoint string `json:"endpoint"`
	Phase    string `json:"phase"`
	// Start and End are the phase span; End is the stop time if interrupted.
	Start time.Time `json:"start"`
	End   time.Time `json:"end"`
	// Counts holds the results per class.
	Counts          Counts    `json:"counts"`
	Latency         Quantiles `json:"latency"`
	LatencyOK       Quantiles `json:"latency_ok"`
	LatencyIntended Quantiles `json:"latency_intended"`
	// Unclassified counts the results that no classification rule matched
	// (class other) by status code ("429"; "no response" without one).
	Unclassified map[string]int64 `json:"unclassified,omitempty"`
	// ByClass holds latency quantiles per non-empty class name.
	ByClass map[string]Quantiles `json:"latency_by_class,omitempty"`
	// TargetRate is the phase's configured rate (phase rates or
	// Target.Rate); AchievedRate is Sent over the span.
	TargetRate   float64 `json:"target_rate"`
	AchievedRate float64 `json:"achieved_rate"`
	// Expected is the number of sends the schedule put in the span; Sent the
	// number actually sent in it; Dropped the scheduled requests that were
	// never sent because the attack ended while the generator was behind.
	Expected int64 `json:"expected"`
	Sent     int64 `json:"sent"`
	Dropped  int64 `json:"dropped,omitempty"`
	// Cancelled counts the requests the client gave up on on purpose (the
	// load generator's Phase.Cancel); they are also in Counts, as
	// client_timeout, but not judged unhealthy.
	Cancelled int64 `json:"cancelled,omitempty"`
	// Overran counts, per class, the requests of the phase (other than
	// Cancelled) answered after the phase had ended; they are also in
	// Counts. The next phase's fault is switched on at the boundary, so a
	// request sent in the phase's last moment may meet it: the health rule
	// leaves them out, on either side.
	Overran Counts `json:"overran,omitzero"`
	// RetryCounts are the client's attempts for the phase's requests, when
	// it retries.
	RetryCounts
	// ServerTiming is what the phase's responses said of their time in
	// their Server-Timing headers; nil when none carried one.
	ServerTiming *ServerTiming `json:"server_timing,omitempty"`
	// LagP99 and LagMax summarise schedule lag over the phase.
	LagP99 time.Duration `json:"lag_p99_ns"`
	LagMax time.Duration `json:"lag_max_ns"`
	// HarnessErrors counts load-generator-side failures (the load generator's IsHarnessError).
	HarnessErrors int64 `json:"harness_errors"`
	// Excluded is set for phases named in the load generator's ExcludeFromValidity; their
	// verdict is computed but does not count towards the run's validity.
	// It is set as well for a paused phase (Paused).
	Excluded bool `json:"excluded,omitempty"`
	// Paused is set when the endpoint's rate in the phase is 0: nothing was
	// due (Expected and TargetRate are 0), nothing is judged (Valid with
	// nothing Broken) and the phase does not count towards the run's
	// validity.
	// Sent is 0 unless a request of the phase before was sent late, past
	// the boundary.
	Paused bool `json:"paused,omitempty"`
	// Valid is set when the phase broke no validity rule; Broken are the
	// rules it broke.
	Valid  bool     `json:"valid"`
	Broken []Broken `json:"broken,omitempty"`
}
