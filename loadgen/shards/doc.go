// Package shards sends one load from several processes: an Agent is a
// shard process's HTTP API (what `bulkheadlab shard` serves, on loopback or
// in a pod), and a Fleet is the loadgen.Remote that drives a set of them
// from the runner, as k6-operator's starter drives its runners: every shard
// is armed first (its schedules computed, paused), the clocks are compared,
// and all are released together at one instant; their results stream back
// and loadgen.Run merges them exactly (every result, not summaries).
//
// The protocol, all JSON but the result stream:
//
//	GET  /healthz  → {"ok": true}, to anyone (a readiness probe)
//	GET  /hello    → {"version": …, "index": …}
//	GET  /clock    → {"now": unix ns}
//	POST /arm      {"version": …, "config": the shard's loadgen config}
//	               → 409 if armed or running, 403 for a target not of
//	               the run, 413 beyond loadgen's shard limits
//	POST /disarm   {} → drops the armed load
//	POST /start    {"t0": unix ns by the shard's clock} → a stream of frames
//
// Every request but GET /healthz must carry the run's token (Agent.Token,
// "Authorization: Bearer …"), name the shard by an IP address or localhost
// (Host, Origin), and a POST must be application/json (internal/ctlauth).
// A shard arms once: another arm is refused until the armed load was
// started, disarmed or its arming expired, so that no one can swap the
// load between the runner's arm and its start.
//
// A frame is a type byte, a uvarint length and that many bytes: 'B' a
// batch of results (loadgen's batch format), 'R' the shard's report
// (JSON, last), 'E' an error text (last). A shard whose start request ends
// (the runner gone, Ctrl-C) stops its attack at once.
package shards
