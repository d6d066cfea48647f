package rundata

import "time"

// ShardStats is one shard's record in a run whose load several processes
// sent (run.json's "shards"): its clock against the runner's, how late it
// started, what it sent, and what went wrong.
type ShardStats struct {
	Index int `json:"index"`
	// Offset is the shard's clock minus the runner's; OffsetError the
	// bound on that measurement (half the best round trip).
	Offset      time.Duration `json:"offset_ns"`
	OffsetError time.Duration `json:"offset_error_ns"`
	// Late is how long after t0 the shard's attack began, by its clock.
	Late time.Duration `json:"late_ns"`
	// Sent is the requests its pacers released; Samples the results and
	// attempt records it sent back.
	Sent    int64 `json:"sent"`
	Samples int64 `json:"samples"`
	// LateShare is, per phase, the share of its results whose schedule lag
	// reached the lag threshold (above 1 %: its lag p99 did).
	LateShare   []PhaseShare `json:"late_share,omitempty"`
	Interrupted bool         `json:"interrupted,omitempty"`
	// Error is why its stream failed.
	Error string `json:"error,omitempty"`
}

// PhaseShare is a share of something in one phase.
type PhaseShare struct {
	Phase string  `json:"phase"`
	Share float64 `json:"share"`
}
